"""The one scoring path (`foxhunt.scoring`): scoring a finished run's test windows again,
as `evaluate` and a frozen backtest fold do, gives what `train` wrote; a baseline.json whose
state only fails once it forecasts is refused the same way wherever it is read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from foxhunt.backtest.frozen import forecast_with_run
from foxhunt.baselines import NAMES
from foxhunt.jobs import JobResult
from foxhunt.runs import (
    BASELINE_FILE,
    FORECASTS_FILE,
    METRICS_FILE,
    RunFileError,
    read_metrics,
    save_metrics,
)
from foxhunt.scoring import WindowForecasts, read_run_baselines, score_windows
from foxhunt.serving import load_run
from foxhunt.task import results_table, score
from foxhunt.training.inference import predict_windows
from helpers.configs import tiny_run, tiny_training
from helpers.jobs import tiny_job

RUN = tiny_run(training=tiny_training(epochs=1, max_steps_per_epoch=2))


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, JobResult]:
    folder = tmp_path_factory.mktemp("scoring") / "run"
    return folder, tiny_job(folder, RUN)


def as_json(metrics: dict[str, Any]) -> str:
    """NaN (a baseline without a forecast) compares equal to NaN as text; metrics.json is
    written with sorted keys."""
    sections = {key: metrics[key] for key in ("unit", "test", "baselines")}
    return json.dumps(sections, indent=1, sort_keys=True)


def test_scoring_the_test_windows_again_gives_what_train_wrote(
    finished: tuple[Path, JobResult],
) -> None:
    folder, job = finished
    assert job.data is not None
    loaded = load_run(folder)
    quantiles = loaded.config.model.quantiles
    pred, target, _ = predict_windows(loaded.model, job.data.test)
    assert target is not None
    baselines = read_run_baselines(
        folder, horizon=loaded.config.model.inputs.horizon, quantiles=len(quantiles)
    )
    assert baselines.volatility is not None and baselines.source == folder / BASELINE_FILE
    forecasts = WindowForecasts(dataset=job.data.test, pred=pred, target=target)
    scored = score_windows(forecasts, baselines, loaded.preprocessor, quantiles)
    written = json.loads((folder / METRICS_FILE).read_text())
    assert list(scored.metrics["baselines"]) == ["historical_quantiles", "zero", *NAMES]
    assert as_json(scored.metrics) == as_json(written)
    # the printed table adds the training's verdict (a kept initial head) to the same rows
    assert (
        results_table({**scored.metrics, "training": written["training"]}, quantiles) == job.table
    )
    pd.testing.assert_frame_equal(scored.frame(), pd.read_parquet(folder / FORECASTS_FILE))


def test_a_state_that_fails_only_when_it_forecasts_is_refused_naming_the_file(
    finished: tuple[Path, JobResult], tmp_path: Path
) -> None:
    """Three profile values pass every check on loading (finite, positive) and index out of
    range on the first forecast: evaluate's path and a frozen fold's both name the file."""
    folder, job = finished
    assert job.data is not None
    damaged = tmp_path / "run"
    shutil.copytree(folder, damaged)
    state = json.loads((damaged / BASELINE_FILE).read_text())
    state["volatility"]["profiles"]["0"]["values"] = [1.0, 1.0, 1.0]
    (damaged / BASELINE_FILE).write_text(json.dumps(state))
    loaded = load_run(damaged)
    quantiles = loaded.config.model.quantiles
    baselines = read_run_baselines(  # loads: the damage shows only on use
        damaged, horizon=loaded.config.model.inputs.horizon, quantiles=len(quantiles)
    )
    pred, target, _ = predict_windows(loaded.model, job.data.test)
    assert target is not None
    forecasts = WindowForecasts(dataset=job.data.test, pred=pred, target=target)
    says = rf"{damaged / BASELINE_FILE}: volatility: .*the file is damaged"
    with pytest.raises(RunFileError, match=says):
        score_windows(forecasts, baselines, loaded.preprocessor, quantiles)
    with pytest.raises(RunFileError, match=says):
        forecast_with_run(damaged, RUN, tmp_path / "frozen.parquet")
    assert not (tmp_path / "frozen.parquet").exists()


def test_metrics_with_an_unfitted_baseline_read_back(tmp_path: Path) -> None:
    """A baseline without a forecast (too few train bars for a week of HAR warm-up) is an
    `unavailable` block of NaN in metrics.json, which the report and evaluate read back."""
    rng = np.random.default_rng(0)
    quantiles = (0.1, 0.5, 0.9)
    target = rng.normal(size=(50, 2))
    pred = np.broadcast_to(np.array([-1.28, 0.0, 1.28]), (50, 2, 3)).copy()
    metrics = score(pred, target, quantiles, baselines={"har": np.full_like(pred, np.nan)})
    assert metrics["baselines"]["har"]["unavailable"]
    save_metrics(tmp_path, metrics)
    read = read_metrics(tmp_path / METRICS_FILE, quantiles)
    assert np.isnan(read["baselines"]["har"]["mean_quantile_loss"])
    assert "har" not in read["coverage_tests"]


@pytest.mark.parametrize(
    ("where", "value"),
    [(("dm", "zero"), -1), (("mcs", "pvalues"), [1]), (("mcs", "included"), "tft"), ((), 5)],
)
def test_damaged_tests_of_difference_are_named(
    finished: tuple[Path, JobResult], tmp_path: Path, where: tuple[str, ...], value: Any
) -> None:
    """The fuzz found `differences.dm.<name>: -1` crashing the report's table: now one line."""
    folder, _ = finished
    metrics = json.loads((folder / METRICS_FILE).read_text())
    if where:
        metrics["differences"][where[0]][where[1]] = value
    else:
        metrics["differences"] = value
    path = tmp_path / METRICS_FILE
    path.write_text(json.dumps(metrics))
    with pytest.raises(RunFileError, match=r"differences.* the file is damaged"):
        read_metrics(path, RUN.model.quantiles)


def test_absurd_baseline_forecasts_are_unavailable_never_a_number(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A HAR fitted on too little data forecast 1e10 bp where returns are a few bp, and its
    loss stood in the table and the tests of difference (issue 42): it is unavailable, with
    one log line saying why, as a baseline that could not be fitted is."""
    from foxhunt.scoring.score import ABSURD_FACTOR, absurd_baselines

    rng = np.random.default_rng(0)
    quantiles = (0.1, 0.5, 0.9)
    target = rng.normal(size=(50, 2))
    sane = np.broadcast_to(np.array([-1.28, 0.0, 1.28]), (50, 2, 3)).copy()
    historical = sane[0]  # [H, Q]: the largest training quantile is 1.28 bp
    wild = sane * 30  # a regime 30 times as volatile: still a forecast
    exploded = sane.copy()
    exploded[7, 1] *= 1e10  # one window is enough
    forecasts = {"ewma": wild, "har": exploded, "quantreg": sane * (ABSURD_FACTOR + 1)}
    with caplog.at_level("WARNING", logger="foxhunt.scoring"):
        absurd = absurd_baselines(forecasts, historical)
    assert sorted(absurd) == ["har", "quantreg"]
    assert "1.28e+10 bp" in absurd["har"] and "1.28 bp" in absurd["har"]
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == 2 and logged[0].startswith("baseline har unavailable: absurd"), logged
    metrics = score(sane, target, quantiles, baselines=forecasts, unavailable=absurd)
    assert metrics["baselines"]["har"]["unavailable"] == absurd["har"]
    assert np.isnan(metrics["baselines"]["har"]["mean_quantile_loss"])
    assert np.isfinite(metrics["baselines"]["ewma"]["mean_quantile_loss"])
    dm = metrics["differences"]["dm"]
    assert np.isnan(dm["har"]["stat"]) and np.isfinite(dm["ewma"]["stat"]), dm
    assert absurd_baselines(forecasts, np.zeros((2, 3))) == {}  # constant training targets
