"""The raw window arrays a desk would have (unscaled features, symbols, the next bars' minutes,
the volatilities in log return), prepared by foxhunt for the windows of a dataset, and the
run of ``onnx_consumer.py`` on them in a process of its own (no foxhunt, no torch there)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from foxhunt.batch import TFTBatch
from foxhunt.data.preprocess import Preprocessor
from foxhunt.data.volatility import minute_of_day

CONSUMER = Path(__file__).resolve().with_name("onnx_consumer.py")


def raw_windows(
    pre: Preprocessor, frame: pd.DataFrame, *, step: int
) -> tuple[TFTBatch, dict[str, np.ndarray]]:
    """Every ``step``-th window of ``pre.dataset(frame)``: as foxhunt's scaled batch and as
    the raw arrays of onnx_consumer.py's RAW.npz."""
    dataset = pre.dataset(frame)
    batch = dataset.__getitems__(list(range(0, len(dataset), step)))
    encoded = pre.encode(frame, min_rows=pre.lookback)
    anchor = batch.anchor.numpy()
    inputs = encoded.features.inputs
    h, lb, f = pre.horizon, pre.lookback, batch.future.shape[-1]
    future_rows = anchor[:, None] + np.arange(1, h + 1)  # [B, H]
    minutes = minute_of_day(encoded.times[future_rows.ravel()], pre.timezone)
    raw = {
        "past": inputs[anchor[:, None] + np.arange(-lb + 1, 1)],
        "future": inputs[future_rows][..., inputs.shape[-1] - f :],
        "symbols": np.array([pre.symbols.categories[c] for c in encoded.symbol_codes[anchor]]),
        "future_minutes": np.asarray(minutes).reshape(-1, h),
    }
    baseline = pre.baseline(encoded)
    if baseline is not None:
        raw["base_rms"] = baseline.volatility[anchor] * pre.target_scale
        if baseline.signal is not None:
            raw["fast_rms"] = raw["base_rms"] * np.exp(baseline.signal[anchor])
    return batch, raw


def run_consumer(folder: Path, raw: dict[str, np.ndarray], work: Path) -> np.ndarray:
    """onnx_consumer.py's forecast of ``raw`` from the export ``folder``, run with this
    interpreter in a fresh process (``work``: a folder for its input and output files)."""
    raw_file, out_file = work / "raw.npz", work / "forecast.npy"
    np.savez(raw_file, allow_pickle=False, **raw)  # plain arrays, as a desk would write
    command = [sys.executable, str(CONSUMER), str(folder), str(raw_file), str(out_file)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return np.load(out_file)
