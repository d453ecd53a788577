"""Dependencies point down, and nothing imports itself back.

Every import in the package is read from the source (module level, inside functions and under
TYPE_CHECKING alike), so a lazy import cannot hide an upward edge or a circle. Three checks:
the lower layers import nothing above them (ALLOWED); no module imports itself back through
any chain of imports; and the layers form no ring once the few upward edges still owed to the
architecture issue (UPWARD_DEBTS, each confined to the modules named) are set aside. ``transforms`` sits on ``model`` and
``quant``'s transforms; nothing in ``model/`` imports it. The checkpointing transform itself
lives in ``model/checkpointing.py`` (the constructor applies the config's switch through it)
and is the only module that imports ``torch.utils.checkpoint``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "foxhunt"

#: what each lower layer may import, by the first name under foxhunt (its own name included)
ALLOWED = {
    "errors": set(),
    "lazy": set(),  # a package's names imported on first use (PEP 562)
    "process_exit": set(),  # how the process ends (after a lost distributed peer: at once)
    "config_fields": {"errors"},
    "migrations": {"errors"},  # saved configs of earlier formats, brought to today's
    "batch": set(),
    "build_lock": {"errors"},
    "cpp_kernels": {"build_lock", "errors"},  # the C++ kernel builder, a leaf utility
    "input_path": {"errors"},
    "storage": {"errors"},
    "model": {"batch", "config_fields", "cpp_kernels", "errors", "lazy"},
    "data": {"batch", "config_fields", "errors", "input_path", "lazy", "migrations", "storage"},
    "baselines": {"data", "errors"},
    # the loss, the units and the scoring: on top of the data and baselines it scores
    "task": {"baselines", "batch", "config_fields", "data", "errors", "model", "storage"},
    # the memory tools know models, batches and a loss callable, never the trainer
    "memory": {
        "batch",
        "config_fields",
        "cpp_kernels",
        "errors",
        "model",
        "storage",
        "task",
        "transforms",
    },
    # transforms of a built model (checkpointing re-exported from model, QAT from quant):
    # applied from outside the model, which imports none of them
    "transforms": {"batch", "config_fields", "cpp_kernels", "errors", "model", "quant"},
    # the run folder knows no quantization: trained_run.py loads a run's model with the
    # transforms it trained with (QAT's among them) and reads its QAT marker; the exporters
    # load runs through it, and serving.py (above all three) chooses the folder kind
    "runs": {
        "baselines",
        "config_fields",
        "data",
        "errors",
        "migrations",
        "model",
        "storage",
        "training",
    },
    "trained_run": {"errors", "quant", "runs", "transforms"},
    "serving": {"exports", "runs", "trained_run"},
    # the one scoring path: a run's baselines (fitted, or read from its baseline.json) and the
    # model's forecasts on the same windows; it runs no model and imports no training code
    "scoring": {"baselines", "data", "errors", "runs", "storage", "task"},
    # loggers on the training callback seam: they read the trainer, the run folder's files
    # and memory; the job never imports them (the doors wire them in)
    "tracking": {"errors", "lazy", "memory", "runs", "training"},
}

#: upward edges between layers still owed to the architecture issue, as (importer, imported):
#: the only modules allowed to carry each. Remove an entry when its edge is cut.
UPWARD_DEBTS: dict[tuple[str, str], set[str]] = {}  # none owed: add one only with a reason

#: the backtest runs training jobs: nothing but the doors (cli) and the tuner may import it
BACKTEST_IMPORTERS = {"backtest", "cli", "tune"}

#: a job ties data, model, trainer and run folder together: only what runs jobs imports it
JOB_IMPORTERS = {"jobs", "backtest", "cli", "report", "tune"}

#: the scoring path serves what scores a run: the train job, evaluate, the backtest
SCORING_IMPORTERS = {"scoring", "jobs", "backtest", "cli", "report", "tune"}

#: the tuner runs jobs and backtests (and needs Optuna): only the doors (cli) import it
TUNE_IMPORTERS = {"tune", "cli"}

#: the benchmark tools (``foxhunt.bench``) are off the training path: none of these (nor any
#: run-folder module, ``run*``) imports them
#: the part of ``quant`` that ``transforms`` may import: the transforms themselves, not the
#: int8 export (which reads run folders, a layer above)
QUANT_TRANSFORMS = ("quant", "quant.config", "quant.schedule", "quant.transform")

TRAINING_PATH = ("memory", "task", "training", "transforms")


def layer_of(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def is_module(path: Path) -> bool:
    """A package folder or a .py file (`from foxhunt import __version__` names neither)."""
    return path.is_dir() or path.with_suffix(".py").is_file()


def foxhunt_imports(path: Path) -> set[str]:
    """First names under foxhunt that ``path`` imports, anywhere in the file."""
    first = {module.split(".")[0] for module in foxhunt_modules(path)}
    return {name for name in first if is_module(PACKAGE / name)}


def foxhunt_modules(path: Path) -> set[str]:
    """Dotted names under foxhunt (without ``foxhunt.``) that ``path`` imports, anywhere."""
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
            if parts[0] == "foxhunt" and len(parts) > 1 and is_module(PACKAGE / parts[1]):
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


def test_transforms_take_from_quant_only_its_transforms() -> None:
    files = [p for p in PACKAGE.rglob("*.py") if layer_of(p) == "transforms"]
    found = {
        f"{p.relative_to(PACKAGE)} -> foxhunt.{name}"
        for p in files
        for name in foxhunt_modules(p)
        if name.split(".")[0] == "quant" and name not in QUANT_TRANSFORMS
    }
    assert not found, sorted(found)


def test_only_the_checkpointing_transform_calls_torch_checkpoint() -> None:
    """Activation checkpointing is one transform (``model/checkpointing.py``) that wraps
    segments from outside: it is the only module of the package that imports
    ``torch.utils.checkpoint``, so no block's forward checkpoints itself."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            if any(n.startswith("torch.utils.checkpoint") for n in names):
                found.append(str(path.relative_to(PACKAGE)))
    assert found == ["model/checkpointing.py"], found


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
        "def f():\n    from foxhunt.jobs.train import train\n    import foxhunt.cli\n"
    )
    assert foxhunt_imports(source) == {"jobs", "cli"}


# --- circles -------------------------------------------------------------------------------


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, modules: set[str], root: Path = PACKAGE) -> Iterator[str]:
    """The package modules that importing ``path`` runs, anywhere in the file: each one
    named (``from a.b import c``: ``a.b.c`` if a module, else ``a.b``), and the __init__
    of each package entered from outside (importing foxhunt.runs.store runs
    foxhunt/runs/__init__.py first)."""
    importer = module_name(path, root)
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            while parts and ".".join(parts) not in modules:
                parts.pop()  # a.b.func -> a.b
            for depth in range(2, len(parts) + 1):  # the root package is always loaded first
                target = ".".join(parts[:depth])
                if target in modules and not importer.startswith(target + "."):
                    yield target


def module_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    return {
        name: set(imported_modules(path, set(files), root)) - {name} for name, path in files.items()
    }


def layer_graph() -> dict[str, set[str]]:
    """Layer -> the layers it imports, without the edges UPWARD_DEBTS allows."""
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        layer, where = layer_of(path), str(path.relative_to(PACKAGE))
        graph.setdefault(layer, set()).update(
            name
            for name in foxhunt_imports(path) - {layer}
            if where not in UPWARD_DEBTS.get((layer, name), set())
        )
    return graph


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of ``graph`` (its first node repeated at the end), or None."""
    done: set[str] = set()
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in done and (found := visit(nxt)):
                return found
        path.pop()
        done.add(node)
        return None

    for start in sorted(graph):
        if start not in done and (found := visit(start)):
            return found
    return None


def test_no_module_imports_itself_back() -> None:
    circle = find_circle(module_graph())
    assert circle is None, " -> ".join(circle or [])


def test_the_layers_form_no_ring_beyond_the_named_debts() -> None:
    circle = find_circle(layer_graph())
    assert circle is None, (
        "layers import each other back: " + " -> ".join(circle or []) + "; an upward edge "
        "from a module UPWARD_DEBTS does not name is new"
    )


def test_the_circle_finder(tmp_path: Path) -> None:
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
    # a lazy import closes a circle, and importing a submodule runs its package's __init__
    pkg = tmp_path / "foxhunt"
    (pkg / "runs").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "runs" / "__init__.py").write_text("from foxhunt.runs.store import save\n")
    (pkg / "runs" / "store.py").write_text("def save():\n    import foxhunt.quant\n")
    (pkg / "quant.py").write_text("def f():\n    from foxhunt.runs.store import save\n")
    graph = module_graph(pkg)
    assert graph["foxhunt.quant"] == {"foxhunt.runs", "foxhunt.runs.store"}
    assert graph["foxhunt.runs.store"] == {"foxhunt.quant"}  # its own package is loading
    assert find_circle(graph) == [
        "foxhunt.quant",
        "foxhunt.runs",
        "foxhunt.runs.store",
        "foxhunt.quant",
    ]


#: who may import the exporters: the door that opens a model folder and the doors; nothing
#: below them (the job takes its QAT marker from trained_run.py)
EXPORTS_IMPORTERS = {"exports", "serving", "cli"}

#: the loggers: wired in by the doors, passed to the job as callbacks (never imported by it)
TRACKING_IMPORTERS = {"tracking", "cli"}


@pytest.mark.parametrize(
    ("layer", "importers"),
    [
        ("backtest", BACKTEST_IMPORTERS),
        ("jobs", JOB_IMPORTERS),
        ("scoring", SCORING_IMPORTERS),
        ("exports", EXPORTS_IMPORTERS),
        ("tune", TUNE_IMPORTERS),
        ("tracking", TRACKING_IMPORTERS),
    ],
)
def test_only_its_callers_import_a_layer(layer: str, importers: set[str]) -> None:
    found = sorted(
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if layer_of(p) not in importers and layer in foxhunt_imports(p)
    )
    assert not found, found


def test_only_serving_and_the_doors_import_the_onnx_exporter() -> None:
    onnx = sorted(  # the ONNX exporter: only serving.py and `foxhunt export`
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if "foxhunt.exports.onnx" in p.read_text() and layer_of(p) not in {"exports"}
    )
    assert onnx == ["cli/export.py", "serving.py"], onnx


def test_only_the_tuner_imports_optuna() -> None:
    """Optuna is an optional dependency (the tune extra): nothing else may need it."""
    found = sorted(
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if layer_of(p) != "tune" and re.search(r"^\s*(import|from) optuna", p.read_text(), re.M)
    )
    assert found == ["cli/tune.py"], found  # its check that Optuna is installed
