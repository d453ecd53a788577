"""--refit none: the first fold's run (its model, scalers and fitted baselines) forecasts a
later fold's test span, scored as `foxhunt evaluate` scores a file (`foxhunt.scoring`)."""

from __future__ import annotations

from pathlib import Path

from foxhunt.data import prepare_data
from foxhunt.runs import RunConfig
from foxhunt.scoring import WindowForecasts, read_run_baselines, score_windows
from foxhunt.serving import load_run
from foxhunt.training.inference import predict_windows


def forecast_with_run(first: Path, config: RunConfig, path: Path) -> None:
    """Write the forecasts frame of `config`'s test span, forecast by the run in `first`."""
    loaded = load_run(first)
    data = prepare_data(config.data, preprocessor=loaded.preprocessor)
    pred, target, _ = predict_windows(loaded.model, data.test)
    assert target is not None
    quantiles = loaded.config.model.quantiles
    horizon = loaded.config.model.inputs.horizon
    # the fitted state of the first fold, filtered forward over this span without refitting
    baselines = read_run_baselines(first, horizon=horizon, quantiles=len(quantiles))
    forecasts = WindowForecasts(dataset=data.test, pred=pred, target=target)
    score_windows(forecasts, baselines, loaded.preprocessor, quantiles).write_forecasts(path)
