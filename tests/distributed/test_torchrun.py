"""The documented launch, end to end: `torchrun --nproc_per_node=2 -m foxhunt train ...`."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from ddp_harness import cli_args


def torchrun() -> list[str]:
    script = Path(sys.executable).parent / "torchrun"
    if script.is_file():
        return [str(script)]
    found = shutil.which("torchrun")
    return [found] if found else [sys.executable, "-m", "torch.distributed.run"]


def run_torchrun(tmp_path: Path, device: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path / "run"
    command = [
        *torchrun(), "--standalone", "--nproc_per_node=2", "-m", "foxhunt",
        # the head fallback as it ships (TINY_CLI turns it off): rank 0 alone prepares it
        *cli_args("--epochs", "1", "--head-fallback", "--dist-timeout", "60", "--output-dir", str(out)),
        "--device", device,
        # the ranks share one feature store: each computes its share of the symbols, one writes
        "--feature-store", str(tmp_path / "store"),
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("run saved to") == 1  # rank 0 alone prints
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["training"]["steps"] == 4
    assert set(metrics["base"]["head_validation_loss_bp"]) == {
        "realized_vol",
        "ewma",
        "har",
        "garch_t",
    }
    assert (out / "checkpoints").is_dir()
    entries = [p for p in (tmp_path / "store").iterdir() if not p.name.startswith(".")]
    assert len(entries) == 1 and (entries[0] / "manifest.json").is_file()
    return done, out


def test_torchrun_two_cpu_processes_train_end_to_end(tmp_path: Path) -> None:
    done, _ = run_torchrun(tmp_path, "cpu")
    assert "distributed: 2 processes, gloo backend" in done.stderr


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA devices")
def test_torchrun_two_gpus_train_end_to_end_with_nccl(tmp_path: Path) -> None:
    done, out = run_torchrun(tmp_path, "cuda")
    assert "distributed: 2 processes, nccl backend" in done.stderr
    assert json.loads((out / "metrics.json").read_text())["training"]["device"] == "cuda:0"
