"""The GRN section of benchmarks/kernel_routes.py: ``foxhunt::grn_cells`` computed by its C++
kernel against the maintained routes, on the past variable selection network (the op's
largest user: 220 inputs at both presets) or the whole TFT, for inference and training.

Routes (each on its own copy of the same module, same weights):

- ``eager-kernel``: as a run trains, the op's CPU float32 implementation, grn_cells.cpp;
- ``eager-aten``: the op with the kernel off (``FOXHUNT_FUSED_KERNEL=0``): its Python math,
  ``fused_grns.weighted_grns``, block by block (its backward: ``torch.func.vjp`` per block);
- ``compile-aten``: ``torch.compile`` (inductor, default mode) with the op replaced by its
  decomposition (``fused_grns.DECOMPOSITIONS``, through :class:`DecomposedGRNs`): inductor
  fuses the math on the whole tensors and AOTAutograd differentiates it (the mode, active
  at each call since dynamo guards on it, also sees the compiled code's dozen or so extern
  calls, about 3 us each: nothing at the presets' shapes, a few percent at ``tiny``);
- ``compile-kernel``: ``torch.compile`` with the op opaque (its fake and autograd
  registrations): inductor compiles what is around the kernel.

The reference of the error column is ``eager-aten``'s output and gradients (the Python math,
float32) on the same inputs and the same dropout masks (each check seeds the RNG alike; the
compiled routes draw with ATen's generator, ``torch._inductor.config.fallback_random``).
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, cast

import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from _routes_common import KERNEL, MAINTAINED, Route, calibrate, environment
from foxhunt import apply_model_transforms
from foxhunt.bench.memory import random_batch
from foxhunt.bench.presets import PRESETS, Preset
from foxhunt.build_lock import SWITCH_ENV
from foxhunt.model import fused_grns, grn_cells
from foxhunt.model.factory import DEFAULT_MODEL, build_model

_REFERENCE = PRESETS["cpu-reference"]
SHAPES: dict[str, Preset] = {
    "reference": _REFERENCE,
    "tft-225": PRESETS["tft-225"],
    # a smoke run's: the same kinds of inputs at a size that steps in milliseconds
    "tiny": Preset(
        dataclasses.replace(
            _REFERENCE.config,
            num_static=2,
            num_past=6,
            num_future=2,
            hidden_size=8,
            variable_hidden_size=4,
            lookback=8,
            horizon=2,
        ),
        batch_size=4,
    ),
}
ROUTES = ("eager-kernel", "eager-aten", "compile-aten", "compile-kernel")
KINDS = {"eager-kernel": KERNEL, "eager-aten": MAINTAINED, "compile-aten": MAINTAINED}
KINDS["compile-kernel"] = KERNEL
COMPILED = ("compile-aten", "compile-kernel")
REFERENCE_ROUTE = "eager-kernel"  # the ratio column's denominator
MODES = ("inference", "training")
#: the decomposed op's autograd keeps about this many [variables, rows, 2 * hidden] float32
#: tensors at once (forward activations and their gradients); compile-aten is skipped at a
#: shape where that passes 80% of the memory available
DECOMPOSED_TENSORS = 8


class DecomposedGRNs(TorchFunctionMode):
    """While active, ``foxhunt::grn_cells`` runs its decomposition (the Python math on the
    whole tensors) instead of the op; ``torch.compile`` traces through it (and guards on it)."""

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        decomposition = fused_grns.DECOMPOSITIONS.get(func)
        if decomposition is not None:
            return decomposition(*args, **(kwargs or {}))
        return func(*args, **(kwargs or {}))


def kernel_off() -> AbstractContextManager[None]:
    """``FOXHUNT_FUSED_KERNEL=0`` for the block (read at each call of the op)."""
    return environment(SWITCH_ENV, "0")


CONTEXTS: dict[str, Callable[[], AbstractContextManager[Any]]] = {
    "eager-kernel": nullcontext,
    "eager-aten": kernel_off,
    "compile-aten": DecomposedGRNs,
    "compile-kernel": nullcontext,
}


@dataclasses.dataclass
class Unit:
    """What one call runs: ``forward(module)`` -> a float tensor; training adds a scalar loss
    of it and backward (cheap: the step's cost is the module's)."""

    module: nn.Module
    forward: Callable[[nn.Module], Tensor]


def build_unit(shape: str, unit: str, batch_size: int | None) -> Unit:
    preset = SHAPES[shape]
    cfg = preset.config
    batch = batch_size or preset.batch_size
    torch.manual_seed(0)
    model = apply_model_transforms(build_model(DEFAULT_MODEL, cfg), cfg)  # as a run builds it
    if unit == "model":
        # the output head starts at zero, and the forecast then at the baseline whatever the
        # rest computes: drawn weights, so that the error column sees the VSNs
        nn.init.normal_(model.output_head.weight, std=0.1)
        data = random_batch(cfg, batch)
        return Unit(model, lambda m: m(data).quantiles)
    real = torch.randn(batch, cfg.lookback, cfg.num_past)
    context = torch.randn(batch, cfg.hidden_size)
    return Unit(model.past_vsn, lambda m: m(real, None, context)[0])


def decomposed_bytes(shape: str, batch_size: int | None, unit: str) -> int:
    """The estimate behind :data:`DECOMPOSED_TENSORS`, from the past VSN's widest tensor
    (the whole model's other VSNs are much smaller)."""
    preset = SHAPES[shape]
    cfg, batch = preset.config, batch_size or preset.batch_size
    widest = cfg.num_past * batch * cfg.lookback * 2 * cfg.hidden_size * 4
    return DECOMPOSED_TENSORS * widest


def available_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _result(unit: Unit, module: nn.Module, mode: str) -> list[Tensor]:
    """One seeded call's output (and, training, every parameter's gradient)."""
    torch.manual_seed(1234)
    if mode == "inference":
        with torch.no_grad():
            return [unit.forward(module)]
    module.zero_grad(set_to_none=True)
    out = unit.forward(module)
    out.float().square().mean().backward()
    grads = [p.grad for p in module.parameters() if p.grad is not None]
    return [out.detach(), *grads]


def _error(got: list[Tensor], want: list[Tensor]) -> str:
    if len(got) != len(want):
        return f"MISMATCH: {len(got)} tensors against {len(want)}"
    out = (got[0] - want[0]).abs().max().item()
    text = f"out {out:.1e} (of {want[0].abs().max().item():.1e})"
    if len(got) > 1:
        grad = max((g - w).abs().max().item() for g, w in zip(got[1:], want[1:], strict=True))
        scale = max(w.abs().max().item() for w in want[1:])
        text += f", grads {grad:.1e} (of {scale:.1e})"
    return text


def _call(
    unit: Unit, module: nn.Module, mode: str, context: Callable[[], Any]
) -> Callable[[], object]:
    params = [p for p in module.parameters() if p.requires_grad]

    def infer() -> object:
        with torch.no_grad(), context():
            return unit.forward(module)

    def train() -> object:
        for p in params:
            p.grad = None
        with context():
            unit.forward(module).float().square().mean().backward()
        return None

    return infer if mode == "inference" else train


def grn_routes(
    shapes: list[str],
    unit_name: str,
    batch_size: int | None,
    selected: list[str],
    modes: list[str],
    target_s: float,
    say: Callable[[str], None],
) -> tuple[list[Route], dict[str, str]]:
    """Every selected route of every (shape, mode), set up (compiled, checked, calibrated)."""
    routes: list[Route] = []
    names = [r for r in ROUTES if r in selected]
    if grn_cells.load() is None and any(KINDS[r] == KERNEL for r in names):
        print("foxhunt's grn_cells kernel is not available here: its routes are skipped")
        names = [r for r in names if KINDS[r] != KERNEL]
    for shape in shapes:
        unit = build_unit(shape, unit_name, batch_size)
        memory, need = available_bytes(), decomposed_bytes(shape, batch_size, unit_name)
        for mode in (m for m in MODES if m in modes):
            cell = f"GRN {unit_name} {shape} {mode}"
            module = unit.module.train(mode == "training")
            with kernel_off():
                want = _result(unit, module, mode)
            for name in names:
                if name == "compile-aten" and memory is not None and need > 0.8 * memory:
                    print(
                        f"{cell}: compile-aten skipped: about {need / 2**30:.1f} GiB of "
                        f"decomposed activations, {memory / 2**30:.1f} GiB available"
                    )
                    continue
                try:
                    routes.append(_setup(cell, name, unit, module, mode, want, target_s, say))
                except Exception as exc:  # a route that fails here is reported, not timed
                    print(f"{cell} {name}: FAILED ({type(exc).__name__}: {str(exc)[:300]})")
    return routes, {r.cell: REFERENCE_ROUTE for r in routes}


def _setup(
    cell: str,
    name: str,
    unit: Unit,
    module: nn.Module,
    mode: str,
    want: list[Tensor],
    target_s: float,
    say: Callable[[str], None],
) -> Route:
    copy_ = copy.deepcopy(module)
    target = cast(nn.Module, torch.compile(copy_)) if name in COMPILED else copy_
    context = CONTEXTS[name]
    start = time.perf_counter()
    with context():
        got = _result(unit, target, mode)  # the first call: compiles a compiled route
    first = time.perf_counter() - start
    route = Route(
        cell=cell,
        name=name,
        kind=KINDS[name],
        call=_call(unit, target, mode, context),
        compile_s=first if name in COMPILED else None,
        error=_error(got, want),
        grad=mode == "training",
    )
    calibrate(route, target_s)
    say(f"{cell} {name}: first call {first:.1f} s, {route.reps} call(s) per round, {route.error}")
    return route
