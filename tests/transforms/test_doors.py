"""A config that says checkpointing checkpoints, whichever door built the model: the bare
constructor, ``build_model``, a YAML ``--config``, the CLI flags and QAT, each measured at the
CPU reference config (bytes saved for backward, net of what checkpointing keeps). The run
folder door: tests/memory/test_checkpointing_job.py and tests/quant/test_export.py (QAT);
DDP: tests/distributed/ddp_workers.py."""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

import foxhunt
from foxhunt import TemporalFusionTransformer, TFTConfig
from foxhunt.bench.memory import PRESETS, random_batch
from foxhunt.cli.resolve import resolve
from foxhunt.cli.train_config import run_config, train_command
from foxhunt.memory.saved import SavedReport, measure_saved
from foxhunt.model import SEGMENTS
from foxhunt.model.config import DATA_FIELDS
from foxhunt.model.factory import build_model
from foxhunt.quant import QATConfig
from foxhunt.task import batch_loss
from foxhunt.transforms import apply_model_transforms, checkpointed_segments

PRESET = PRESETS["cpu-reference"]
FULL = dataclasses.replace(PRESET.config, checkpointing="full")


def from_cli(argv: list[str]) -> TFTConfig:
    """The model config ``foxhunt train ARGV`` would build, its data fields the preset's."""
    _, namespace, _ = resolve(train_command(), ["--preset", "cpu-reference", *argv])
    model = run_config(namespace).model
    data = {name: getattr(PRESET.config, name) for name in DATA_FIELDS}
    return dataclasses.replace(model, **data)


def saved(build: Callable[[], nn.Module]) -> SavedReport:
    torch.manual_seed(0)
    model = build().train()
    batch = random_batch(PRESET.config, PRESET.batch_size, seed=0)
    return measure_saved(model, lambda: batch_loss(model, batch, PRESET.config.quantiles))


@pytest.fixture(scope="module")
def plain() -> SavedReport:
    return saved(lambda: TemporalFusionTransformer(PRESET.config))


def yaml_door(tmp_path: Path) -> nn.Module:
    path = tmp_path / "run.yaml"
    path.write_text("model:\n  checkpointing: full\n")
    return TemporalFusionTransformer(from_cli(["--config", str(path)]))


DOORS: dict[str, Callable[[Path], nn.Module]] = {
    "constructor": lambda _: TemporalFusionTransformer(
        dataclasses.replace(PRESET.config, checkpointing="full")
    ),
    "build_model": lambda _: build_model(
        "tft", dataclasses.replace(PRESET.config, checkpointing="full")
    ),
    "yaml": yaml_door,
    "cli": lambda _: build_model("tft", from_cli(["--use-gradient-checkpointing"])),
    # QAT prepares the model the constructor checkpointed (apply_model_transforms does not
    # apply the switch again): its swapped layers sit inside the wrapped segments
    "qat": lambda _: apply_model_transforms(TemporalFusionTransformer(FULL), FULL, qat=QATConfig()),
}


@pytest.mark.parametrize("door", sorted(DOORS))
def test_full_checkpointing_saves_memory_through_every_door(
    door: str, plain: SavedReport, tmp_path: Path
) -> None:
    model = DOORS[door](tmp_path)
    assert checkpointed_segments(model) == list(SEGMENTS)
    report = saved(lambda: model)
    assert report.checkpoint_inputs > 0  # the meter saw what checkpointing keeps
    # at this config plain saves 49.0 MiB, full checkpointing 5.8 (docs/memory.md)
    assert report.total <= 0.2 * plain.total, (door, report.total, plain.total)


def test_the_cli_and_yaml_doors_build_the_reference_model() -> None:
    """The doors above differ from the plain reference model in the switch alone."""
    cli = from_cli(["--use-gradient-checkpointing"])
    assert dataclasses.replace(cli, checkpointing="none") == PRESET.config
    assert cli.checkpointing == "full"


def test_a_segment_list_checkpoints_exactly_those_segments() -> None:
    cfg = from_cli(["--checkpoint-segments", "lstm_encoder,past_vsn"])
    assert checkpointed_segments(TemporalFusionTransformer(cfg)) == ["past_vsn", "lstm_encoder"]


def test_the_switch_is_applied_at_one_call_site() -> None:
    """``TFTConfig.checkpointing`` reaches ``apply_checkpointing`` from the constructor only:
    no second place (a transform, a loader) re-applies it, so there is one way it holds. The
    planner and the benchmarks apply policies of their own (a plan's, a measured mode's)."""
    package = Path(foxhunt.__file__).parent
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not (isinstance(node, ast.Call) and _called(node) == "apply_checkpointing"):
                continue
            args = [ast.unparse(a) for a in [*node.args, *(k.value for k in node.keywords)]]
            # a config's switch (cfg.checkpointing, config.model.checkpointing, ...), not a
            # plan's or a benchmark case's policy
            if any(re.search(r"(cfg|config)\b.*\.checkpointing$", a) for a in args):
                found.append(str(path.relative_to(package)))
    assert found == ["model/tft.py"], found


def _called(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
