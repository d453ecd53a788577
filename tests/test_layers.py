"""Dependencies point down: the lower layers import nothing above them.

Every import in the package is read from the source (module level, inside functions and under
TYPE_CHECKING alike), so a lazy import cannot hide an upward edge. The rules below are those
that hold today and must keep holding; the architecture issue's remaining edges (run <-> quant)
are not covered yet.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "foxhunt"

#: what each lower layer may import, by the first name under foxhunt (its own name included)
ALLOWED = {
    "errors": set(),
    "config_fields": {"errors"},
    "batch": set(),
    "build_lock": {"errors"},
    "cpp_kernels": {"build_lock", "errors"},  # the C++ kernel builder, a leaf utility
    "input_path": {"errors"},
    "storage": {"errors"},
    "model": {"batch", "config_fields", "cpp_kernels", "errors"},
    "data": {"batch", "config_fields", "errors", "input_path", "storage"},
    "baselines": {"data", "errors"},
    # the loss, the units and the scoring: on top of the data and baselines it scores
    "task": {"baselines", "batch", "config_fields", "data", "errors", "model", "storage"},
    # the memory tools know models, batches and a loss callable, never the trainer
    "memory": {"batch", "config_fields", "cpp_kernels", "errors", "model", "storage", "task"},
}

#: the backtest runs training jobs: nothing but the doors (cli) may import it
BACKTEST_IMPORTERS = {"backtest", "cli"}

#: the benchmark tools (``foxhunt.bench``) are off the training path: none of these (nor any
#: run-folder module, ``run*``) imports them
TRAINING_PATH = ("identity", "memory", "task", "training")


def layer_of(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def foxhunt_imports(path: Path) -> set[str]:
    """First names under foxhunt that ``path`` imports, anywhere in the file."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module == "foxhunt":  # from foxhunt import x
            names = [f"foxhunt.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "foxhunt" and len(parts) > 1:
                found.add(parts[1])
    return found


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_lower_layers_import_nothing_above_them(layer: str) -> None:
    files = [p for p in PACKAGE.rglob("*.py") if layer_of(p) == layer]
    assert files, f"no module of layer {layer!r}: update ALLOWED"
    upward = {
        f"{p.relative_to(PACKAGE)} -> foxhunt.{name}"
        for p in files
        for name in foxhunt_imports(p) - ALLOWED[layer] - {layer}
    }
    assert not upward, sorted(upward)


def test_the_training_path_does_not_import_the_benchmarks() -> None:
    layers = {layer_of(p) for p in PACKAGE.rglob("*.py")}
    assert set(TRAINING_PATH) <= layers, "update TRAINING_PATH"
    path = [p for p in PACKAGE.rglob("*.py") if layer_of(p) in TRAINING_PATH or
            layer_of(p).startswith("run")]  # fmt: skip
    found = sorted(str(p.relative_to(PACKAGE)) for p in path if "bench" in foxhunt_imports(p))
    assert not found, found


def test_the_walker_sees_lazy_imports(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "def f():\n    from foxhunt.training.job import train\n    import foxhunt.cli\n"
    )
    assert foxhunt_imports(source) == {"training", "cli"}


def test_only_the_doors_import_the_backtest() -> None:
    found = sorted(
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if layer_of(p) not in BACKTEST_IMPORTERS and "backtest" in foxhunt_imports(p)
    )
    assert not found, found
