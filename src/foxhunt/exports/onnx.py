"""The FP32 ONNX export of a run folder: the trace, the folder and its onnx_export.json.

    EXPORT_DIR/
      config.json          the run's config (data, model, training)
      preprocessor.json    the run's fitted preprocessing
      baseline.json        the run's historical baseline (for evaluate)
      model.onnx           the FP32 graph: dynamic batch axis, output ``quantiles`` [B, H, Q]
      onnx_export.json     what a consumer in another language needs (docs/export.md)

The graph is traced from the model built by ``build_model`` with its weights, in eval mode;
the variable selection's per-variable GRNs run as plain, out-of-place tensor ops for the trace
(the same math as the fused C++ kernel and its blocked ATen twin, whose row blocks and
in-place writes a trace would freeze at the example's batch size). ``foxhunt predict`` and
``foxhunt evaluate`` take the folder in place of the run folder (``foxhunt.serving``); its
loader under ONNX Runtime is ``onnx_runtime.py``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import types
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from foxhunt.batch import TFTBatch
from foxhunt.data.volatility import SIGNAL_LIMIT
from foxhunt.errors import FoxhuntError
from foxhunt.model.variable_grns import VariableGRNs
from foxhunt.runs import (
    BASELINE_FILE,
    CONFIG_FILE,
    ONNX_MODEL_FILE,
    ONNX_SPEC_FILE,
    PREPROCESSOR_FILE,
    LoadedRun,
    RunConfig,
    is_export,
    is_onnx_export,
    read_qat_state,
    versions,
)
from foxhunt.storage import atomic_write_bytes, atomic_write_json
from foxhunt.trained_run import load_trained_run

FORMAT = 1
DEFAULT_OPSET = 18
#: the opsets written as asked and run by ONNX Runtime (torch 2.13, onnxruntime 1.32): below
#: 18 the exporter warned and wrote 18, at 26 ONNX Runtime refused the graph, at 30 the
#: exporter printed a traceback and wrote 18
OPSETS = range(18, 26)
OUTPUT = "quantiles"
PRECISIONS = ("fp32", "int8")
#: every input the model may take, in this order
INPUTS = ("static", "past", "future", "static_categorical", "scale", "vol_signal")


def used_inputs(config: RunConfig) -> tuple[str, ...]:
    """The inputs this model reads: empty static/future tensors and the absent optional ones
    are left out of the graph."""
    m = config.model.inputs
    used = {
        "static": m.num_static > 0,
        "past": True,
        "future": m.num_future > 0,
        "static_categorical": len(m.static_cardinalities) > 0,
        "scale": config.model.output == "baseline",
        "vol_signal": m.vol_signals > 0,
    }
    return tuple(name for name in INPUTS if used[name])


def input_shapes(config: RunConfig) -> dict[str, list[int | str]]:
    m = config.model.inputs
    return {
        "static": ["batch", m.num_static],
        "past": ["batch", m.lookback, m.num_past],
        "future": ["batch", m.horizon, m.num_future],
        "static_categorical": ["batch", len(m.static_cardinalities)],
        "scale": ["batch", m.horizon],
        "vol_signal": ["batch", m.vol_signals],
    }


class _Graph(nn.Module):
    """The model as a function of named tensors (what the trace sees)."""

    def __init__(self, model: nn.Module, names: tuple[str, ...], config: RunConfig) -> None:
        super().__init__()
        self.model, self.names, self.config = model, names, config

    def forward(self, *tensors: Tensor) -> Tensor:
        given = dict(zip(self.names, tensors, strict=True))
        past = given["past"]
        m = self.config.model.inputs
        static = given.get("static")
        if static is None:
            static = past.new_zeros(past.shape[0], 0)
        future = given.get("future")
        if future is None:
            future = past.new_zeros(past.shape[0], m.horizon, 0)
        batch = TFTBatch(
            static=static,
            past=past,
            future=future,
            static_categorical=given.get("static_categorical"),
            scale=given.get("scale"),
            vol_signal=given.get("vol_signal"),
        )
        quantiles: Tensor = self.model(batch).quantiles
        return quantiles


def _plain_grns(self: VariableGRNs, z: Tensor, in_weight: Tensor, weights: Tensor) -> Tensor:
    """VariableGRNs.forward in eval mode as out-of-place ops on the whole batch (fused_grns'
    math: [eta_2, 1] = ELU(z W), [eta_1, 1] = [eta_2, 1] fc2, GLU + skip, LayerNorm, sum)."""
    g, d = self.hidden_size, self.output_size
    ones = torch.ones_like(self.fc2_bias[:, :1]).unsqueeze(1)  # [n, 1, 1]
    fc2 = torch.cat([self.fc2_weight, self.fc2_bias.unsqueeze(1)], 1)  # [n, g + 1, g]
    carry = torch.cat([torch.zeros_like(fc2[..., :g, :1]), ones], 1)  # [n, g + 1, 1]
    fc2 = torch.cat([fc2, carry], -1)  # [n, g + 1, g + 1]
    glu = torch.cat([self.glu_weight, self.glu_bias.unsqueeze(1)], 1)  # [n, g + 1, 2d]
    a2 = F.elu(torch.bmm(z, in_weight[..., : g + 1]))
    gl = torch.bmm(torch.bmm(a2, fc2), glu)  # [n, R, 2d]
    y = F.glu(gl, dim=-1) + torch.bmm(z, in_weight[..., g + 1 :])  # [n, R, d]
    normed = F.layer_norm(y, (d,), None, None, 1e-5) * self.norm_weight.unsqueeze(1)
    out = (normed * weights.t().unsqueeze(-1)).sum(0)  # [R, d]
    return out + weights @ self.norm_bias


@contextlib.contextmanager
def _traceable(model: nn.Module) -> Iterator[None]:
    """Swap the plain GRNs in for the fused op while tracing; the C++ kernels stay off."""
    swapped = [m for m in model.modules() if isinstance(m, VariableGRNs)]
    old = os.environ.get("FOXHUNT_FUSED_KERNEL")
    os.environ["FOXHUNT_FUSED_KERNEL"] = "0"
    for m in swapped:
        m.forward = types.MethodType(_plain_grns, m)  # type: ignore[method-assign]
    try:
        yield
    finally:
        for m in swapped:
            del m.forward
        if old is None:
            os.environ.pop("FOXHUNT_FUSED_KERNEL", None)
        else:
            os.environ["FOXHUNT_FUSED_KERNEL"] = old


def _example(config: RunConfig, names: tuple[str, ...], batch: int) -> tuple[Tensor, ...]:
    shapes = input_shapes(config)
    gen = torch.Generator().manual_seed(0)
    tensors = []
    for name in names:
        shape = [batch, *(int(s) for s in shapes[name][1:])]
        if name == "static_categorical":
            cards = torch.tensor(config.model.static_cardinalities).expand(batch, -1)
            tensors.append((torch.rand(shape, generator=gen) * cards).long())
        elif name == "scale":
            tensors.append(torch.rand(shape, generator=gen) + 0.5)
        else:
            tensors.append(torch.randn(shape, generator=gen))
    return tuple(tensors)


def export_onnx(run_dir: Path, output: Path, *, opset: int = DEFAULT_OPSET) -> dict[str, Any]:
    """Write the FP32 ONNX export of the run folder ``run_dir`` to ``output``; returns its
    onnx_export.json."""
    run_dir, output = Path(run_dir), Path(output)
    if is_export(run_dir) or is_onnx_export(run_dir):
        raise FoxhuntError(f"{run_dir} is already an export; pass the run folder")
    if read_qat_state(run_dir) is not None:
        raise FoxhuntError(
            f"{run_dir} is a QAT run: export it with `foxhunt export --onnx --int8` (int8 "
            "from its QAT scales; the FP32 ONNX export takes FP32 runs)"
        )
    if output.resolve() == run_dir.resolve():
        raise FoxhuntError("--output must differ from the run folder")
    loaded = load_trained_run(run_dir)
    blob = trace(loaded.model, loaded.config, opset=opset)
    return write_folder(run_dir, output, loaded, blob, precision="fp32")


def trace(
    model: nn.Module,
    config: RunConfig,
    *,
    opset: int = DEFAULT_OPSET,
    translations: dict[Any, Any] | None = None,
) -> bytes:
    """The ONNX graph (serialized ModelProto) of ``model`` in eval mode, batch axis dynamic;
    ``translations``: the exporter's ``custom_translation_table`` (foxhunt's own ops)."""
    names = used_inputs(config)
    graph = _Graph(model.eval(), names, config).eval()
    batch = torch.export.Dim("batch", min=1)
    with _traceable(model), torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            graph,
            _example(config, names, 3),
            input_names=list(names),
            output_names=[OUTPUT],
            dynamic_shapes=(tuple({0: batch} for _ in names),),
            opset_version=opset,
            dynamo=True,
            optimize=True,
            verbose=False,
            custom_translation_table=translations,
        )
    assert program is not None
    with tempfile.TemporaryDirectory() as tmp:
        program.save(Path(tmp) / ONNX_MODEL_FILE)
        return (Path(tmp) / ONNX_MODEL_FILE).read_bytes()


def write_folder(
    run_dir: Path, output: Path, loaded: LoadedRun, blob: bytes, **extra: Any
) -> dict[str, Any]:
    """Write ``blob`` as model.onnx, the run's files and onnx_export.json (plus ``extra``
    keys) to ``output``; returns the JSON."""
    output.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(output / ONNX_MODEL_FILE, blob)
    for name in (CONFIG_FILE, PREPROCESSOR_FILE, BASELINE_FILE):
        if (run_dir / name).is_file():
            atomic_write_bytes(output / name, (run_dir / name).read_bytes())
    names = used_inputs(loaded.config)
    pre = loaded.preprocessor.state_dict()
    spec = _spec(loaded.config, pre, names, _opset(blob), run_dir) | extra
    atomic_write_json(output / ONNX_SPEC_FILE, spec)
    return spec


def _opset(blob: bytes) -> int:
    import onnx

    proto = onnx.load_model_from_string(blob)
    return max(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))


def _spec(
    config: RunConfig, pre: dict[str, Any], names: tuple[str, ...], opset: int, source: Path
) -> dict[str, Any]:
    m = config.model
    shapes = input_shapes(config)
    observed = pre["scaler"]["names"]
    known = observed[len(observed) - m.num_future :] if m.num_future else []
    profile = pre.get("profile")
    return {
        "format": FORMAT,
        "opset": opset,
        "source": str(source),
        "versions": versions(),
        "inputs": [
            {
                "name": n,
                "shape": shapes[n],
                "dtype": "int64" if n == "static_categorical" else "float32",
            }
            for n in names
        ],
        "output": {
            "name": OUTPUT,
            "shape": ["batch", m.horizon, len(m.quantiles)],
            "dtype": "float32",
        },
        "lookback": m.lookback,
        "horizon": m.horizon,
        "quantiles": list(m.quantiles),
        "output_form": m.output,
        "features": {"past": list(observed), "future": list(known), "target": "log_return"},
        "scaler": {
            "names": list(observed),
            "mean": pre["scaler"]["mean"],
            "std": pre["scaler"]["std"],
        },
        "target_scale": pre["target_scaler"]["scale"],
        "symbols": pre["symbols"]["categories"],
        "bar_spacing_ns": pre["bar_spacing_ns"],
        "max_gap_ns": pre["max_gap_ns"],
        "timezone": pre["timezone"],
        # the exchange calendar of the session features and forecast times (docs/calendars.md):
        # a name, a {symbol: name} object (per-symbol calendars) or None
        "calendar": pre["spec"].get("calendar"),
        "volatility": {
            "profile": profile,
            "baseline_window": pre.get("baseline_window"),
            "fast_window": pre.get("fast_window", 0),
            "signal_limit": SIGNAL_LIMIT,
            "formulas": {
                "past": "(x - mean) / std per feature, features in features.past order; "
                "when mean/std hold one list per symbol, the row of the bar's symbol (its "
                "index in symbols)",
                "future": "the known (calendar) features of the next H bars that trade on "
                "`calendar` (or, when it is an object, calendar[symbol]; session features 0 "
                "for a symbol not in it; docs/calendars.md), scaled likewise",
                "adjusted": "r[t] / profile.values[minute_of_day(t) // bucket_minutes] (with "
                "one curve per symbol: profile.values[symbol][...]); "
                "r = log return, NaN across a gap > max_gap_ns",
                "base_vol": "sqrt(mean of adjusted^2 over the last baseline_window bars, "
                ">= baseline_window // 2 finite) / target_scale",
                "scale": "scale[b, h] = base_vol[anchor] * profile(minute of bar anchor+1+h)",
                "vol_signal": "clip(log(fast_vol / base_vol), -signal_limit, signal_limit), "
                "fast_vol as base_vol over fast_window bars; 0 where not finite",
                "quantiles": "log-return quantiles = output * target_scale (basis points: * 1e4)",
                **_base_formulas(pre.get("base", "realized_vol")),
            },
        },
        "preprocessor": PREPROCESSOR_FILE,
    }


def _base_formulas(base: str) -> dict[str, str]:
    """The formulas that change when the run's scale is a fitted baseline (`DataConfig.base`)."""
    if base == "realized_vol":
        return {"base": "realized_vol: base_vol as above"}
    return {
        "base": f"{base}: base_vol is the {base} baseline fitted on the training span "
        f"(baseline.json, volatility.{base}[symbol code]) "
        "run forward over adjusted * 1e4 from each symbol's first bar (docs/forecasting.md, "
        "'The base'; foxhunt.baselines.base): the sd of the next return / 1e4 / "
        "target_scale, at the rows where the rolling base_vol above is finite",
        "vol_signal": "clip(log(fast_vol / rolling_vol), -signal_limit, signal_limit), "
        "rolling_vol the base_vol formula above, fast_vol it over fast_window bars; 0 where "
        "not finite",
    }
