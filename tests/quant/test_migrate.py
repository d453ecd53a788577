"""QAT off torch.ao: old runs still load, the whole QAT path warns of nothing, no torch.ao."""

from __future__ import annotations

import ast
import shutil
import warnings
from pathlib import Path

import pandas as pd
import torch
from safetensors.torch import load_file

import foxhunt
from foxhunt.cli import main
from foxhunt.data import generate_bars
from foxhunt.exports.int8 import export_run, load_export
from foxhunt.quant import convert
from foxhunt.quant.kernel import available
from foxhunt.quant.migrate import legacy_names
from foxhunt.serving import load_run
from foxhunt.training.inference import predict_windows

#: a QAT run (hidden size 8, backend onednn, int8-weights LSTM) trained by foxhunt 6993cb3,
#: the last version on torch.ao, with the forecasts its fake-quant model made of every 16th
#: window of ``generate_bars(days=8, seed=1)``
LEGACY = Path(__file__).with_name("legacy_qat_run")
SMALL = [
    "--lookback", "16", "--horizon", "4", "--hidden-size", "8", "--variable-hidden-size", "4",
    "--attention-heads", "2", "--batch-size", "32", "--max-steps-per-epoch", "3",
    "--patience", "0", "--seed", "3", "--no-report", "--epochs", "1",
]  # fmt: skip


def test_a_torch_ao_era_qat_run_loads_every_value_and_forecasts_as_it_did(
    tmp_path: Path,
) -> None:
    """Every tensor of the old state lands, renamed, in today's model, bit for bit; its
    forecasts match those it made, and it converts and exports to int8 models that compute
    exactly the fake-quant model on this CPU.

    The stored forecasts came from an AMD EPYC with AVX-512, and float kernels sum in another
    order on other CPUs, so not bitwise: within 1e-4 of the spread (measured 3e-7 on the
    same EPYC limited to AVX2). A value that lands on a fake quantizer's rounding boundary
    can also round the other way, moving the forecasts after it by about one quantum: seen on
    an Intel Xeon (Sapphire Rapids), 3 of 1512 values, one window's last step, 7.5e-4 of the
    spread. So a few values may move, by less than 1e-2 of the spread."""
    run = load_run(LEGACY)
    old = load_file(LEGACY / "model.safetensors")
    state = run.model.state_dict()
    renamed = legacy_names(list(old), set(state))
    kept = {k: k for k in old if k in state} | {k: v for k, v in renamed.items() if v}
    assert set(kept.values()) == set(state)  # nothing left at its initial value
    assert set(old) == set(kept) | {k for k, v in renamed.items() if v is None}
    assert all(torch.equal(old[k], state[new]) for k, new in kept.items())
    expected = load_file(LEGACY / "expected_forecasts.safetensors")
    dataset = run.preprocessor.dataset(generate_bars(days=8, seed=1))
    batch = dataset.__getitems__(expected["windows"].tolist())
    with torch.no_grad():
        got = run.model.eval()(batch).quantiles
    want = expected["quantiles"]
    moved = (got - want).abs() / (want.max() - want.min())
    assert (moved > 1e-4).float().mean() <= 0.01 and moved.max() <= 1e-2
    with torch.no_grad():  # the int8 model computes what the fake-quant model does, here
        assert torch.equal(convert(load_run(LEGACY).model)(batch).quantiles, got)
    folder = tmp_path / "legacy"
    shutil.copytree(LEGACY, folder)
    export_run(folder, tmp_path / "e", mode="qat")
    with torch.no_grad():
        exported = load_export(tmp_path / "e", kernel=False).model(batch).quantiles
    assert torch.equal(exported, got)


def test_qat_training_export_and_serving_warn_of_nothing(tmp_path: Path) -> None:
    """``train --qat``, ``export --int8`` (foxhunt's format and ONNX) and serving both, with
    every warning shown: none may say deprecated (torch.ao's eager API warned on each use)."""
    bars = tmp_path / "bars.parquet"
    generate_bars(days=6, seed=2).to_parquet(bars)
    run, export = tmp_path / "r", tmp_path / "e"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train = ["train", "--parquet-file", str(bars), *SMALL, "--qat", "--qat-freeze-after", "2"]
        assert main([*train, "--output-dir", str(run)]) == 0
        assert main(["export", "--int8", str(run), "--output", str(export)]) == 0
        dataset = load_run(run).preprocessor.dataset(pd.read_parquet(bars))
        for kernel in (False, available() is not None):
            predict_windows(load_export(export, kernel=kernel).model, dataset)
    deprecated = [
        f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})"
        for w in caught
        if issubclass(w.category, DeprecationWarning | FutureWarning)
        or "deprecat" in str(w.message).lower()
    ]
    assert not deprecated, deprecated


def _torch_ao_uses(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            names = [f"{node.value.id}.{node.attr}"]
        for name in names:
            if name.split(".")[:2] in (["torch", "ao"], ["torch", "quantization"]):
                found.append(f"{path.name}:{node.lineno} {name}")
    return found


def test_foxhunt_uses_no_torch_ao(tmp_path: Path) -> None:
    package = Path(foxhunt.__file__).parent
    uses = [use for path in sorted(package.rglob("*.py")) for use in _torch_ao_uses(path)]
    assert not uses, uses
    probe = tmp_path / "probe.py"  # the check sees a use when there is one
    probe.write_text("import torch.ao.quantization\nfrom torch.ao import nn\ntorch.ao.x()\n")
    assert len(_torch_ao_uses(probe)) == 3


def test_the_legacy_fixture_is_what_the_test_says() -> None:
    state = load_file(LEGACY / "model.safetensors")
    assert any(".activation_post_process." in k for k in state)  # torch.ao's names
    assert torch.isfinite(load_file(LEGACY / "expected_forecasts.safetensors")["quantiles"]).all()
