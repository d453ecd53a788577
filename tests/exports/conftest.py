"""The FP32 run and its ONNX export, built once per session: test_onnx.py checks them, and
test_onnx_int8.py's mismatched folder takes the export's model.onnx (an export traces the
model: about 25 CPU s, the most of any step here)."""

from pathlib import Path

import pytest

from foxhunt.cli import main
from helpers import TINY_CLI, write_bars

SMALL = [*TINY_CLI, "--max-steps-per-epoch", "4", "--seed", "3", "--no-report", "--epochs", "1"]


@pytest.fixture(scope="session")
def fp32_onnx_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The suite's bars (written here: test_onnx_int8.py's ``bars_file`` is other bars)."""
    root = tmp_path_factory.mktemp("fp32_onnx")
    bars = write_bars(root / "bars.parquet")
    args = ["train", "--parquet-file", str(bars), *SMALL, "--output-dir", str(root / "r")]
    assert main(args) == 0
    return root / "r"


@pytest.fixture(scope="session")
def fp32_onnx_export(fp32_onnx_run: Path) -> Path:
    folder = fp32_onnx_run.parent / "onnx"
    assert main(["export", "--onnx", str(fp32_onnx_run), "--output", str(folder)]) == 0
    return folder
