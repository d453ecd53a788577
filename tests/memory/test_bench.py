"""The memory benchmark: its peak tracker, presets, report and command line."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from foxhunt import TemporalFusionTransformer, TFTConfig
from foxhunt.bench.memory import (
    PRESETS,
    QUANTILES_7,
    default_modes,
    mode_policy,
    random_batch,
    run_benchmark,
)
from foxhunt.bench.table import format_table
from foxhunt.cli import main
from foxhunt.data import generate_bars
from foxhunt.memory.moments import batch_tensors
from foxhunt.memory.peak import LiveStorageTracker
from foxhunt.model.checkpointing import apply_checkpointing
from foxhunt.model.config import SEGMENTS
from foxhunt.task import batch_loss

SMALL = {"batch_size": 4, "hidden_size": 16, "lookback": 8, "horizon": 2}


def small_reference() -> tuple[TFTConfig, int]:
    """The reference's 5 / 220 / 10 inputs and 7 quantiles, narrow and short."""
    cfg = replace(PRESETS["cpu-reference"].config, hidden_size=16, lookback=8, horizon=2)
    return cfg, SMALL["batch_size"]


def test_tracker_counts_live_storages_by_hand() -> None:
    tracker = LiveStorageTracker()
    outside = torch.ones(250)  # 1000 bytes, existing before the block
    tracker.track(outside, outside[:10])  # a view: the same storage, counted once
    with tracker:
        a = torch.ones(1000)  # +4000
        b = a * 2  # +4000: 9000 live
        a.add_(1)  # in place: nothing new
        del a  # -4000
        c = b[:500] + 1  # +2000: 7000 live
    assert tracker.peak == 9000
    assert tracker.live == 1000 + 4000 + 2000
    del b, c
    assert tracker.live == 1000


def test_tracker_agrees_with_torch_memtracker() -> None:
    mem_tracker = pytest.importorskip("torch.distributed._tools.mem_tracker")
    cfg, batch_size = small_reference()
    torch.manual_seed(0)
    model = TemporalFusionTransformer(cfg).train()
    batch = random_batch(cfg, batch_size)
    apply_checkpointing(model, "full")
    theirs = mem_tracker.MemTracker()
    theirs.track_external(model, *batch_tensors(batch))
    ours = LiveStorageTracker()
    ours.track(*model.parameters(), *model.buffers(), *batch_tensors(batch))
    with theirs, ours:  # both watch the same step (MemTracker's hooks hold tensors a bit longer)
        batch_loss(model, batch, cfg.quantiles).backward()
    assert ours.peak == theirs.get_tracker_snapshot("peak")[torch.device("cpu")]["Total"]


def test_presets_are_the_issue_configs() -> None:
    ref, big = PRESETS["cpu-reference"], PRESETS["tft-225"]
    for preset in (ref, big):
        cfg = preset.config
        assert (cfg.num_static, cfg.num_past, cfg.num_future) == (5, 220, 10)
        assert preset.batch_size == 32 and cfg.quantiles == QUANTILES_7
        assert cfg.checkpointing == "none" and cfg.dropout > 0
    assert (ref.config.hidden_size, ref.config.variable_hidden_size) == (64, 16)
    assert (ref.config.lookback, ref.config.horizon) == (64, 8)
    assert (big.config.hidden_size, big.config.lookback, big.config.horizon) == (256, 128, 16)


def test_modes() -> None:
    assert default_modes() == ["none", *SEGMENTS, "full"]
    assert mode_policy("past_vsn") == ("past_vsn",)
    assert mode_policy("past_vsn+lstm_encoder") == ("past_vsn", "lstm_encoder")
    assert mode_policy("full") == "full"


def test_run_benchmark_measures_every_mode() -> None:
    cfg, batch_size = small_reference()
    report = run_benchmark(
        cfg,
        batch_size,
        modes=["none", "past_vsn", "full"],
        steps=1,
        warmup=0,
    )
    plain, past, full = report.results
    assert [r.segments for r in report.results] == [[], ["past_vsn"], list(SEGMENTS)]
    assert plain.saved_bytes is not None and past.saved_bytes is not None
    assert full.saved_bytes is not None and full.kept_input_bytes is not None
    assert full.saved_bytes < past.saved_bytes < plain.saved_bytes
    assert plain.kept_input_bytes == 0 < full.kept_input_bytes < full.saved_bytes
    assert sum(full.saved_by_owner.values()) == full.saved_bytes
    assert all(r.peak_bytes and r.step_ms and r.time_ratio for r in report.results)
    assert plain.time_ratio == 1.0 and not any(r.oom for r in report.results)
    json.dumps(report.to_dict())
    table = format_table(report)
    assert "past_vsn" in table and "still saved under full" in table


def test_cli_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    args = [f"--{k.replace('_', '-')}={v}" for k, v in SMALL.items()]
    code = main(["bench-memory", *args, "--modes", "none,full", "--no-time", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["mode"] for r in data["results"]] == ["none", "full"]
    assert data["batch_size"] == 4 and data["config"]["hidden_size"] == 16
    assert data["results"][1]["saved_bytes"] < data["results"][0]["saved_bytes"]
    assert data["results"][0]["step_ms"] is None


def test_cli_measures_a_batch_of_real_windows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--parquet-file: the model's input counts come from the bars (13 past inputs today),
    and the batch is their first training windows, not random numbers."""
    bars = tmp_path / "bars.parquet"
    generate_bars(days=8, seed=0).to_parquet(bars)
    args = [f"--{k.replace('_', '-')}={v}" for k, v in SMALL.items()]
    code = main(
        [
            "bench-memory",
            *args,
            "--parquet-file",
            str(bars),
            "--modes",
            "none,full",
            "--no-time",
            "--json",
        ]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["preset"] == "cpu-reference on bars.parquet"
    assert data["config"]["num_past"] == 13 and data["config"]["num_static"] == 0
    assert data["results"][1]["saved_bytes"] < data["results"][0]["saved_bytes"]


def test_cli_prints_predicted_vs_measured_peaks(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--batch-size=8", "--hidden-size=16", "--lookback=8", "--horizon=2"]
    assert main(["bench-memory", *args, "--predictions"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0] == "| plan | predicted | measured | error |"
    assert [row.split(" | ")[0] for row in rows[2:]] == [
        "| no checkpointing, batch 8",
        "| past_vsn, batch 8",
        "| every segment, batch 8",
        "| past_vsn, batch 8",  # micro-batches of 8 are the whole batch
        "| every segment, micro-batches of 4 x 2",
    ]


def test_cli_rejects_unknown_mode_and_cuda_without_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench-memory", "--modes", "none,post_lstm_gate"]) == 2
    assert "unknown segments" in capsys.readouterr().err
    if not torch.cuda.is_available():
        assert main(["bench-memory", "--device", "cuda"]) == 2


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_peak_and_memory_cap() -> None:
    cfg, batch_size = small_reference()
    report = run_benchmark(
        cfg,
        batch_size,
        modes=["none", "full"],
        device="cuda",
        steps=1,
        warmup=1,
        memory_limit_gb=4,
    )
    plain, full = report.results
    assert plain.peak_bytes and full.peak_bytes and full.peak_bytes <= plain.peak_bytes
    assert report.memory_limit_gb == 4
