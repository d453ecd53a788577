"""foxhunt's int8 kernel (int8_linear.cpp) for the Linear layers of converted models.

A converted model's ``QuantizedLinear`` computes its layer in float32 on the int8 grids (the
reference, exact on any CPU); the kernel, as the custom op ``foxhunt::int8_linear``
(``int8_op.py``: its Python math is that reference, its decomposition for ``torch.export``
and ONNX, and its implementation where no build is registered), computes the same values with an int8 GEMM in one
call, float32 in and float32 out, with an AVX-512 VNNI micro-kernel (or an AVX2 one on CPUs
without it), and fuses what follows a gate's projection: the GLU, and in a ``GateAddNorm``
the residual add and LayerNorm. Inputs and outputs are rounded exactly as the reference
(ATen's fake quantization) rounds them; the int32 sums are exact; only the float32 rescale
of the sums differs from the reference's float GEMM, by float rounding (tests compare every
fused module with the modules it replaces).

:func:`accelerate` swaps the kernel in (the export loader does). Without it (no C++
compiler, a CPU without AVX2, ``FOXHUNT_FUSED_KERNEL=0``) the model keeps its reference
layers and computes the same values, slower.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from foxhunt import cpp_kernels
from foxhunt.model.layers import GateAddNorm, GatedLinearUnit
from foxhunt.quant.int8_op import BUILDS, GLU_TILE, GROUP, LANES, register_build
from foxhunt.quant.linear import QuantizedLinear, plain_eager

SOURCE = Path(__file__).with_name("int8_linear.cpp")


def load(isa: str | None = None) -> ModuleType | None:
    """The compiled kernel, or None (disabled, or the build failed: warned once). ``isa``:
    ``native`` or ``avx2``, by default ``FOXHUNT_CPU_ISA`` (:func:`cpp_kernels.cpu_isa`)."""
    return cpp_kernels.load(SOURCE, "int8_linear", isa)


def available() -> ModuleType | None:
    """The kernel where it is worth using: built, with AVX-512 VNNI or AVX2 (``simd()``).
    ``FOXHUNT_CPU_ISA=avx2`` builds the AVX2 path on an AVX-512 machine."""
    kernel = load()
    return kernel if kernel is not None and kernel.simd() != "none" else None


def pack_weight(int8: Tensor) -> Tensor:
    """[N, K] int8 -> [ceil(N/16), ceil(K/4), 16, 4], zero padded: the kernel's layout."""
    n, k = int8.shape
    padded = F.pad(int8, (0, -k % GROUP, 0, -n % LANES))
    blocks, groups = padded.shape[0] // LANES, padded.shape[1] // GROUP
    return padded.view(blocks, LANES, groups, GROUP).permute(0, 2, 1, 3).contiguous()


def glu_order(n: int) -> Tensor:
    """Output channels of a GLU projection (values then gates, n of them) in the kernel's
    glu order: 32 values, their 32 gates, the next 32 values, ..."""
    half = n // 2
    tiles = torch.arange(half).view(-1, GLU_TILE)
    return torch.cat([tiles, tiles + half], dim=1).flatten()


class Int8Linear(nn.Module):
    """A :class:`QuantizedLinear` (static: ``input_qparams`` given, or dynamic: None) as one
    call of the op ``foxhunt::int8_linear``, computed by ``kernel``. forward(x [..., K]) -> [..., N], or with ``glu`` the ``F.glu`` of that,
    [..., N/2] (a whole ``GatedLinearUnit``)."""

    def __init__(
        self,
        int8: Tensor,
        scale: Tensor,
        bias: Tensor | None,
        *,
        input_qparams: tuple[float, int] | None,
        output_qparams: tuple[float, int] | None,
        kernel: ModuleType,
        glu: bool = False,
        activation_max: int = 255,
    ) -> None:
        super().__init__()
        self.out_features, self.in_features = int8.shape
        self.glu = glu
        self.build = register_build(kernel)  # the op's name for this build of the kernel
        scale = scale.reshape(-1).expand(self.out_features)
        if glu:
            if self.out_features % (2 * GLU_TILE):
                raise ValueError(f"a fused GLU needs 2 * output a multiple of {2 * GLU_TILE}")
            order = glu_order(self.out_features)
            int8, scale = int8[order], scale[order]
            bias = None if bias is None else bias[order]
        self.register_buffer("packed", pack_weight(int8))
        self.register_buffer("col_sum", int8.sum(dim=1, dtype=torch.int32))
        self.register_buffer("w_scale", scale.float().contiguous())
        self.register_buffer("bias", None if bias is None else bias.detach().float().contiguous())
        self.input_qparams = input_qparams
        self.output_qparams = output_qparams or (0.0, 0)  # scale 0: output stays float
        self.activation_max = activation_max
        self._refresh()

    @classmethod
    def from_converted(
        cls, layer: QuantizedLinear, kernel: ModuleType, *, glu: bool = False
    ) -> Int8Linear:
        """From a converted layer; ``glu``: the layer is a GatedLinearUnit's projection, fuse
        its F.glu."""
        static = layer.static
        return cls(
            layer.weight,
            layer.weight_scale,
            layer.bias,
            input_qparams=layer.input_qparams() if static else None,
            output_qparams=layer.output_qparams(),
            kernel=kernel,
            glu=glu,
            activation_max=layer.activation_max,
        )

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        kernel = available()  # a copy in another process: this process's build
        if kernel is None:
            raise RuntimeError(
                "foxhunt's int8 kernel is not available here; load the export with "
                "foxhunt.exports.int8.load_export, which falls back to the reference layers"
            )
        self.build = register_build(kernel)

    def _refresh(self) -> None:
        # the tensors the kernel reads, as one plain tuple: Module.__getattr__ on four
        # buffers costs more than the kernel at one window
        self._args = (self.packed, self.col_sum, self.w_scale, self.bias)

    def _apply(self, fn, recurse=True):  # type: ignore[no-untyped-def]
        out = super()._apply(fn, recurse)
        self._refresh()
        return out

    def forward(
        self,
        x: Tensor,
        skip: Tensor | None = None,
        norm: tuple[Tensor, Tensor, float] | None = None,
    ) -> Tensor:
        """With ``skip`` and ``norm`` (LayerNorm weight, bias, eps): LayerNorm(skip + out)."""
        x = x if x.dtype == torch.float32 and x.is_contiguous() else x.float().contiguous()
        if self.input_qparams is None:  # dynamic: QuantizedLinear's 7-bit grid per call
            x_scale, x_zp = torch._choose_qparams_per_tensor(x, True)
        else:
            x_scale, x_zp = self.input_qparams
        layer_norm: tuple[Tensor | None, Tensor | None, float] = (None, None, 1e-5)
        if skip is None or norm is None:
            skip = None
        else:
            layer_norm = norm
            shape = (*x.shape[:-1], self.out_features // 2 if self.glu else self.out_features)
            if skip.shape != shape or skip.dtype != torch.float32 or not skip.is_contiguous():
                skip = skip.float().expand(shape).contiguous()
        if plain_eager(x):  # the op's CPU implementation, called without the dispatcher
            out = BUILDS[self.build].linear(
                x, *self._args, x_scale, x_zp, *self.output_qparams, self.glu, skip,
                *layer_norm, qmax=self.activation_max,
            )  # fmt: skip
        else:  # traced, compiled, exported or counted: the op itself
            out = torch.ops.foxhunt.int8_linear(
                x, *self._args, x_scale, x_zp, *self.output_qparams, self.activation_max,
                self.glu, skip, *layer_norm, self.build,
            )  # fmt: skip
        return cast(Tensor, out)

    def extra_repr(self) -> str:
        mode = "dynamic" if self.input_qparams is None else "static"
        glu = ", glu" if self.glu else ""
        return f"in_features={self.in_features}, out_features={self.out_features}, {mode}{glu}"


class Int8GateAddNorm(nn.Module):
    """A converted ``GateAddNorm``, LayerNorm(skip + GLU(x)), as one kernel call; for
    inference (its dropout is off). forward(x [..., K], skip [..., d]) -> [..., d]."""

    def __init__(self, glu: Int8Linear, norm: nn.LayerNorm) -> None:
        super().__init__()
        if not glu.glu or norm.weight is None or norm.bias is None:
            raise ValueError("fuses a GLU projection with an affine LayerNorm")
        self.glu, self.norm = glu, norm
        self._norm = (norm.weight.detach(), norm.bias.detach(), float(norm.eps))

    def _apply(self, fn, recurse=True):  # type: ignore[no-untyped-def]
        out = super()._apply(fn, recurse)
        assert self.norm.weight is not None and self.norm.bias is not None
        self._norm = (self.norm.weight.detach(), self.norm.bias.detach(), float(self.norm.eps))
        return out

    def forward(self, x: Tensor, skip: Tensor) -> Tensor:
        return cast(Tensor, self.glu(x, skip, self._norm))


def accelerate(model: nn.Module, kernel: ModuleType | None = None) -> int:
    """Swap foxhunt's int8 kernel in for the converted Linear layers of ``model`` (in place);
    returns how many modules it replaced. A ``GateAddNorm`` whose GLU projection is int8 and
    whose GLU size is a multiple of 32 becomes one call (projection, GLU, residual and
    LayerNorm); otherwise a ``GatedLinearUnit`` fuses its GLU where it can, and every other
    int8 Linear becomes a kernel call. 0 when the kernel is unavailable: the reference
    layers stay. For inference: fused gates skip their (eval-mode) dropout. ``kernel``: a build
    from :func:`load` (default: :func:`available`)."""
    kernel = kernel or available()
    if kernel is None:
        return 0
    swaps: list[tuple[str, nn.Module]] = []
    for name, module in model.named_modules():
        if any(name.startswith(f"{done}.") for done, _ in swaps):
            continue  # inside a module already replaced
        proj = getattr(getattr(module, "glu", module), "proj", None)
        if not isinstance(proj, QuantizedLinear) or proj.out_features % (2 * GLU_TILE):
            proj = None  # no int8 GLU projection the kernel can fuse
        if isinstance(module, GateAddNorm) and proj is not None:
            norm = module.add_norm.norm
            glu = Int8Linear.from_converted(proj, kernel, glu=True)
            if norm.weight is not None and norm.bias is not None:
                swaps.append((name, Int8GateAddNorm(glu, norm)))
            else:
                swaps.append((f"{name}.glu", glu))
        elif isinstance(module, GatedLinearUnit) and proj is not None:
            swaps.append((name, Int8Linear.from_converted(proj, kernel, glu=True)))
        elif name and isinstance(module, QuantizedLinear):
            swaps.append((name, Int8Linear.from_converted(module, kernel)))
    for name, new in swaps:
        parent, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent) if parent else model, child, new)
    return len(swaps)
