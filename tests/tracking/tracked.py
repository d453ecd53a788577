import contextlib
import io
from pathlib import Path

from foxhunt.cli import main
from helpers import SYNTHETIC_CLI, TINY_CLI

#: two epochs of three steps on the tiny model, a step scalar every step
TRACKED = [*SYNTHETIC_CLI, *TINY_CLI, "--max-steps-per-epoch", "3", "--seed", "3"]
TRACKED += ["--device", "cpu", "--log-every", "1"]


def train(run: Path, *flags: str, epochs: int = 2) -> int:
    """`foxhunt train` of the tiny run into `run` (or --resume it), its table not printed."""
    where = [] if "--resume" in flags else ["--output-dir", str(run)]
    with contextlib.redirect_stdout(io.StringIO()):
        return main(["train", *TRACKED, "--epochs", str(epochs), *where, *flags])
