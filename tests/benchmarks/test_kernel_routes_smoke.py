"""benchmarks/kernel_routes.py at tiny shapes with its eager routes only (no compile, no
torchao, no ONNX export): every cell's routes are timed, checked against their reference and
tabled, and each kernel gets its 15% verdict. Timings are not asserted; errors are.

A missing optional package is one line naming its extra, and its routes are skipped."""

from __future__ import annotations

import importlib.util
import platform
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from foxhunt.model import grn_cells
from foxhunt.quant import kernel as int8_kernel

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "kernel_routes.py"
EAGER = ["eager-kernel", "eager-aten", "fp32", "fox-static", "fox-dynamic"]
TINY = ["--grn-shapes", "tiny", "--int8-shapes", "8x64", "--rows", "1", "5"]
QUICK = ["--rounds", "2", "--target-ms", "2", "--threads", "1", "--quiet-setup"]


@pytest.fixture(scope="module")
def kernel_routes() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kernel_routes", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["kernel_routes"] = module
    spec.loader.exec_module(module)
    return module


def _numbers(text: str) -> list[float]:
    return [float(v) for v in re.findall(r"\d\.\de[+-]\d\d", text)]


def test_the_eager_routes_are_timed_checked_and_judged(
    kernel_routes: ModuleType,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    require_kernel: Callable[[ModuleType | None, str], ModuleType],
) -> None:
    require_kernel(grn_cells.load(), "the grn_cells kernel")
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("foxhunt's int8 kernel is x86-64 only")
    if require_kernel(int8_kernel.load(), "the int8 kernel").simd() == "none":
        pytest.skip("this CPU has neither AVX2 nor AVX-512 VNNI: the int8 kernel does nothing")
    routes = kernel_routes.main([*TINY, *QUICK, "--routes", *EAGER])
    out = capsys.readouterr().out
    assert out.startswith("CPU: ") and "avx2 " in out.splitlines()[0]
    assert "load average at start: " in out and "load average at end: " in out
    cells = {
        "GRN vsn tiny inference": ("eager-kernel", "eager-aten"),
        "GRN vsn tiny training": ("eager-kernel", "eager-aten"),
        "int8 8x64 rows 1": ("fp32", "fox-static", "fox-dynamic"),
        "int8 8x64 rows 5": ("fp32", "fox-static", "fox-dynamic"),
    }
    assert [(r.cell, r.name) for r in routes] == [(c, n) for c, ns in cells.items() for n in ns]
    for route in routes:
        assert len(route.rounds) == 2 and all(t > 0 for t in route.rounds)
        row = next(
            line for line in out.splitlines() if line.startswith(f"| {route.cell} | {route.name} |")
        )
        assert route.error and row.endswith(f"| {route.error} |")
        error, scale, *grads = _numbers(route.error)
        if route.cell.startswith("GRN"):  # the kernel computes the Python math
            assert "grads" in route.error if "training" in route.cell else not grads
            assert error <= 1e-5 * scale and (not grads or grads[0] <= 1e-5 * grads[1])
        else:  # int8 rounding, but the same layer
            assert error <= (0 if route.name == "fp32" else 0.05) * scale
    _assert_only_the_kernel_routes_run_the_kernel(routes, monkeypatch)
    assert "| / kernel (rounds) |" in out and "| 1.00x (1.00 - 1.00) |" in out
    for title in ("GRN kernel (grn_cells.cpp)", "int8 kernel (int8_linear.cpp)"):
        section = out.split(f"{title}: the 15% rule on this CPU")[1]
        assert "  verdict: " in section and "column is not measured here" in section
    # no maintained int8 route was timed: no verdict there, and FP32 is not one
    assert "int8 8x64 rows 1: n/a" in out


def _assert_only_the_kernel_routes_run_the_kernel(
    routes: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each GRN route called once more: the C++ kernel's forward (and backward) run in the
    kernel's route, never in eager-aten's."""
    calls: list[str] = []
    for name in ("forward", "backward"):
        original = getattr(grn_cells, name)

        def counted(*args: Any, _original: Any = original, _name: str = name) -> Any:
            calls.append(_name)
            return _original(*args)

        monkeypatch.setattr(grn_cells, name, counted)
    for route in routes:
        if route.cell.startswith("GRN"):
            calls.clear()
            route.call()
            want = ["forward", "backward"] if "training" in route.cell else ["forward"]
            assert calls == (want if route.kind == "kernel" else []), route.name


@pytest.mark.parametrize(
    ("module", "extra", "routes"),
    [
        ("torchao", "bench", ["torchao-da8w8", "pt2e-static"]),
        ("onnxruntime", "onnx", ["ort-static"]),
    ],
)
def test_a_missing_package_is_one_line_and_its_routes_are_skipped(
    kernel_routes: ModuleType,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    module: str,
    extra: str,
    routes: list[str],
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    args = ["--grn-shapes", "--int8-shapes", "8x64", "--rows", "1", *QUICK]
    timed = kernel_routes.main([*args, "--routes", "fp32", *routes])
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if module in line]
    assert len(lines) == 1, out
    assert f"[{extra}]" in lines[0] and "skipping" in lines[0]
    assert all(route in lines[0] for route in routes)
    assert "Traceback" not in out and "FAILED" not in out
    assert [r.name for r in timed] == ["fp32"]


def test_the_rule_keeps_a_kernel_only_past_15_percent(kernel_routes: ModuleType) -> None:
    from _routes_common import KERNEL, MAINTAINED, Route, verdict

    def route(cell: str, name: str, kind: str, seconds: float) -> Route:
        return Route(cell=cell, name=name, kind=kind, call=lambda: None, rounds=[seconds] * 3)

    routes = [
        route("a", "k", KERNEL, 1.0),
        route("a", "m", MAINTAINED, 1.1),  # within 15%: the kernel does not pay
        route("b", "k", KERNEL, 1.0),
        route("b", "m", MAINTAINED, 2.0),
        route("b", "slow", MAINTAINED, 3.0),
    ]
    lines = verdict("t", routes, {"avx2"})
    assert "within 15%" in lines[1] and "beats it by more than 15%" in lines[2]
    assert "best maintained m " in lines[2]  # the fastest maintained route, not the slowest
    assert "MIXED on this CPU" in lines[3] and "1 of 2 cells (b)" in lines[3]
    assert "KEEP" in verdict("t", routes[2:], {"avx2"})[2]
    assert "DELETE" in verdict("t", routes[:2], {"avx2"})[2]
    assert "Intel / AVX-512 column is not measured" in lines[4]
