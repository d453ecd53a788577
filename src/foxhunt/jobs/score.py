"""Stage 4 of a train job (main rank): the baselines fitted on the train span and saved
(baseline.json), the trained model and every baseline scored on the test windows through
the one scoring path (`foxhunt.scoring`), the inputs ranked by the selection networks'
weights, and test_forecasts.parquet written."""

from __future__ import annotations

from dataclasses import replace

from foxhunt.jobs.build import BuiltRun
from foxhunt.jobs.fit import Fitted
from foxhunt.jobs.options import JobSetting
from foxhunt.runs import FORECASTS_FILE
from foxhunt.scoring import (
    Scored,
    WindowForecasts,
    fit_run_baselines,
    run_importance,
    save_run_baselines,
    score_windows,
    validation_reference,
    window_symbols,
    with_planted_oracle,
)
from foxhunt.training.finite import check_finite_forecasts
from foxhunt.training.inference import SelectionAverage


def score_test(built: BuiltRun, fitted: Fitted, job: JobSetting) -> Scored:
    """Metrics carry `validation_baselines` too: the realized-vol baseline's score on the
    validation windows (and the chosen base's, `validation_reference`), the one a trained
    model had to beat to be kept; and `base`, the prepare stage's choice, when it made one."""
    data, quantiles, base = built.data, built.config.model.quantiles, built.base
    # fitted on the train span (by the prepare stage when it chose a base), then filtered
    # forward over validation and test
    baselines = base.baselines if base is not None else None
    if baselines is None:
        baselines = fit_run_baselines(data, quantiles, window=built.config.data.baseline_window)
    save_run_baselines(job.output_dir, baselines)
    symbols = window_symbols(data.test)
    # which inputs the VSNs chose, from the same forward; per symbol when there are several
    selection = SelectionAverage(symbols if len(set(symbols.tolist())) > 1 else None)
    pred, target = fitted.trainer.predict(data.test, observe=selection)
    check_finite_forecasts(pred, "test")  # a NaN model is never saved
    forecasts = WindowForecasts(dataset=data.test, pred=pred, target=target)
    scored = score_windows(forecasts, baselines, data.preprocessor, quantiles)
    scored = with_planted_oracle(scored, built.config.data, quantiles)
    importance = run_importance(data.preprocessor, selection.means())  # per input and group
    scored = replace(scored, metrics={**scored.metrics, "importance": importance})
    if each := selection.means_by_label():
        by_symbol = {name: run_importance(data.preprocessor, m) for name, m in each.items()}
        scored = replace(scored, metrics={**scored.metrics, "importance_by_symbol": by_symbol})
    reference = validation_reference(baselines, data, quantiles)
    if reference:
        scored = replace(scored, metrics={**scored.metrics, "validation_baselines": reference})
    if base is not None:  # which base the scale used, and each candidate's validation loss
        scored = replace(scored, metrics={**scored.metrics, "base": base.record()})
    scored.write_forecasts(job.output_dir / FORECASTS_FILE)
    return scored
