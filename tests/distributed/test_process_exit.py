"""A process that lost a distributed peer leaves with its code, its output flushed, and no
interpreter teardown (where gloo's waiting threads would abort it with -6)."""

import subprocess
import sys

SCRIPT = """
import atexit, logging, sys
from foxhunt.process_exit import exit_process, mark_peer_lost
atexit.register(lambda: print("teardown ran", flush=True))
logging.basicConfig(stream=sys.stderr)
print("buffered line")  # not flushed by hand
logging.getLogger("x").error("logged line")
if sys.argv[1] == "lost":
    mark_peer_lost()
exit_process(3)
"""


def run(mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=60
    )


def test_after_a_lost_peer_the_process_skips_teardown_but_keeps_its_code_and_output() -> None:
    lost = run("lost")
    assert lost.returncode == 3
    assert "buffered line" in lost.stdout and "logged line" in lost.stderr
    assert "teardown ran" not in lost.stdout


def test_otherwise_the_process_exits_normally() -> None:
    normal = run("normal")
    assert normal.returncode == 3
    assert "buffered line" in normal.stdout and "teardown ran" in normal.stdout
