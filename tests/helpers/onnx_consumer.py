"""A consumer of a foxhunt ONNX export folder without foxhunt: onnxruntime, numpy and
onnx_export.json alone turn a desk's raw window arrays into forecasts (docs/export.md,
"Feeding the inputs from another language"). FP32 and int8 QDQ folders alike.

    python onnx_consumer.py EXPORT_DIR RAW.npz OUT.npy

RAW.npz holds, for B windows: ``past`` [B, L, P] and ``future`` [B, H, F] unscaled features
(``features.past`` / ``features.future`` order), ``symbols`` [B] names, ``future_minutes``
[B, H] minute of day of the next H bars, ``base_rms`` and ``fast_rms`` [B] the base and fast
volatility (log return) at the anchor. OUT.npy: the model's output [B, H, Q]. Run as its own
process (the tests do), it checks at the end that neither foxhunt nor torch was imported.
Imports only json, sys, pathlib, numpy and onnxruntime; never import foxhunt here.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort


def _by_symbol(values: list, codes: np.ndarray) -> np.ndarray:
    """One list for all symbols, or one row per symbol (``symbols`` order): [B, n]."""
    array = np.asarray(values, dtype=np.float64)
    return array[codes] if array.ndim == 2 else np.broadcast_to(array, (len(codes), len(array)))


def feeds(spec: dict, raw: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The graph's inputs (``spec["inputs"]``) from the raw window arrays."""
    codes = np.array([spec["symbols"].index(str(s)) for s in raw["symbols"]], dtype=np.int64)
    mean = _by_symbol(spec["scaler"]["mean"], codes)[:, None, :]  # [B, 1, P]
    std = _by_symbol(spec["scaler"]["std"], codes)[:, None, :]
    known = slice(mean.shape[-1] - len(spec["features"]["future"]), None)  # last F of past
    built: dict[str, np.ndarray] = {
        "past": (raw["past"] - mean) / std,
        "future": (raw["future"] - mean[..., known]) / std[..., known],
        "static_categorical": codes[:, None],
    }
    vol = spec["volatility"]
    profile = vol["profile"]
    if profile is not None:  # the baseline head's scale and the volatility signal
        base = raw["base_rms"] / spec["target_scale"]  # [B]
        buckets = raw["future_minutes"] // profile["bucket_minutes"]  # [B, H]
        curve = _by_symbol(profile["values"], codes)  # [B, 1440 / bucket_minutes]
        built["scale"] = base[:, None] * np.take_along_axis(curve, buckets, axis=1)
    if profile is not None and "fast_rms" in raw:
        with np.errstate(divide="ignore", invalid="ignore"):
            signal = np.log(raw["fast_rms"] / spec["target_scale"] / base)
        limit = vol["signal_limit"]
        signal = np.clip(np.where(np.isfinite(signal), signal, 0.0), -limit, limit)
        built["vol_signal"] = signal[:, None]  # [B, 1]
    if "static" in raw:
        built["static"] = raw["static"]
    return {i["name"]: built[i["name"]].astype(i["dtype"]) for i in spec["inputs"]}


def forecast(folder: Path, raw: dict[str, np.ndarray]) -> np.ndarray:
    """The export's output [B, H, Q] for the raw windows (log-return quantiles are this times
    ``target_scale``)."""
    folder = Path(folder)
    spec = json.loads((folder / "onnx_export.json").read_text())
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # a handful of windows; the test machine is shared
    session = ort.InferenceSession(
        str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"]
    )
    (out,) = session.run([spec["output"]["name"]], feeds(spec, raw))
    return np.asarray(out)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: onnx_consumer.py EXPORT_DIR RAW.npz OUT.npy", file=sys.stderr)
        return 2
    folder, raw_file, out_file = (Path(a) for a in argv)
    with np.load(raw_file) as stored:  # plain arrays: no pickle
        raw = {name: stored[name] for name in stored.files}
    np.save(out_file, forecast(folder, raw))
    imported = sorted({m.split(".")[0] for m in sys.modules} & {"foxhunt", "torch"})
    assert not imported, f"the consumer imported {imported}"
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
