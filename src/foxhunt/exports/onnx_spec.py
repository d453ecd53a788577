"""What onnx_export.json tells a consumer in another language (docs/export.md): the graph's
inputs and output, the features and their scaling, the volatility inputs' formulas.

Read by the exporters (FP32 and int8) and by the ONNX Runtime loader (``onnx_runtime.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from foxhunt.data.volatility import SIGNAL_LIMIT
from foxhunt.runs import PREPROCESSOR_FILE, RunConfig, versions

FORMAT = 1
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


def onnx_spec(
    config: RunConfig, pre: dict[str, Any], names: tuple[str, ...], opset: int, source: Path
) -> dict[str, Any]:
    """onnx_export.json of the graph of inputs ``names`` at ``opset``, exported from the run
    folder ``source`` whose fitted preprocessor state is ``pre``."""
    m = config.model
    shapes = input_shapes(config)
    observed = pre["scaler"]["names"]
    known = observed[len(observed) - m.num_future :] if m.num_future else []
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
        "volatility": _volatility(pre),
        "preprocessor": PREPROCESSOR_FILE,
    }


def _volatility(pre: dict[str, Any]) -> dict[str, Any]:
    """The volatility inputs' settings and the formulas a consumer computes scale and
    vol_signal with, from the bars and the fitted preprocessor."""
    return {
        "profile": pre.get("profile"),
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
