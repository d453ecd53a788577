"""--refit none: the first fold's run (its model, scalers and fitted baselines) forecasts a
later fold's test span, as `foxhunt evaluate` does for a file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from foxhunt.baselines import FittedBaselines
from foxhunt.data import prepare_data
from foxhunt.runs import BASELINE_FILE, RunConfig, read_baseline_state
from foxhunt.serving import load_run
from foxhunt.task import all_baselines, bp_per_unit
from foxhunt.training.comparison import bar_returns, forecast_frame, vol_baselines, write_forecasts
from foxhunt.training.inference import predict_windows


def forecast_with_run(first: Path, config: RunConfig, path: Path) -> None:
    """Write the forecasts frame of `config`'s test span, forecast by the run in `first`."""
    loaded = load_run(first)
    data = prepare_data(config.data, preprocessor=loaded.preprocessor)
    pred, target, _ = predict_windows(loaded.model, data.test)
    assert target is not None
    scale = bp_per_unit(loaded.preprocessor)
    pred, target = pred * scale, target * scale
    quantiles = loaded.config.model.quantiles
    horizon = loaded.config.model.inputs.horizon
    saved = read_baseline_state(first / BASELINE_FILE, horizon=horizon, quantiles=len(quantiles))
    historical = np.asarray(saved["historical_quantiles"], dtype=np.float64)
    # the fitted state of the first fold, filtered forward over this file without refitting
    fitted = FittedBaselines.from_state_dict(saved["volatility"])
    bars = bar_returns(data.test, loaded.preprocessor, train_end=None)
    vol = vol_baselines(fitted, bars, data.test, quantiles)
    everyone = all_baselines(historical, pred.shape, vol)
    write_forecasts(path, forecast_frame(data.test, pred, target, quantiles, everyone))
