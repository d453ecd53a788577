"""The baselines of a run: fitted on its training span (`fit_run_baselines`, the train job) or
read back from its baseline.json (`read_run_baselines`: evaluate, a frozen backtest fold), and
forecast on any windows. The one place a baseline.json is read and its damage named."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from foxhunt.baselines import FittedBaselines, fit_baselines, forecast_baselines
from foxhunt.data import PreparedData, Preprocessor, WindowDataset
from foxhunt.runs import BASELINE_FILE, RunFileError, read_baseline_state, save_baseline_state
from foxhunt.scoring.windows import bar_returns, historical_baseline
from foxhunt.task import bp_per_unit, zero_forecast

log = logging.getLogger("foxhunt.scoring")

#: what a saved volatility state can raise once it forecasts on new bars (its shapes and types
#: only show when used); read_baseline_state has already refused what shows on loading
DAMAGED_STATE = (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError)


@dataclass(frozen=True, kw_only=True)
class RunBaselines:
    """What the baselines learned of a run's training span.

    historical: per-step unconditional quantiles of the train targets [H, Q], basis points.
    volatility: the fitted volatility baselines' state; None for a baseline.json written
        before them (their rows are then left out).
    source: the baseline.json this was read from (None: fitted in this process); a state
        that makes no forecast on the windows is refused naming it.
    """

    historical: np.ndarray
    volatility: FittedBaselines | None
    source: Path | None = None

    def state_dict(self) -> dict[str, Any]:
        """baseline.json's content."""
        volatility = None if self.volatility is None else self.volatility.state_dict()
        return {"historical_quantiles": self.historical.tolist(), "volatility": volatility}

    def volatility_forecasts(
        self, dataset: WindowDataset, preprocessor: Preprocessor, quantiles: Sequence[float]
    ) -> dict[str, np.ndarray]:
        """{name: [W, H, Q]} the volatility baselines on every window of `dataset`, in basis
        points, filtered forward from the fitted state without refitting; {} without one."""
        if self.volatility is None:
            return {}
        bars = bar_returns(dataset, preprocessor, train_end=None)  # no fit: all rows are read
        anchors = dataset.anchors.numpy()
        try:
            return forecast_baselines(
                self.volatility, bars, anchors, horizon=dataset.horizon, quantiles=quantiles
            )
        except DAMAGED_STATE as exc:
            if self.source is None:  # fitted here: a bug, not a damaged file
                raise
            raise RunFileError(f"{self.source}: volatility: {exc}; the file is damaged") from None

    def forecasts(
        self, dataset: WindowDataset, preprocessor: Preprocessor, quantiles: Sequence[float]
    ) -> dict[str, np.ndarray]:
        """{name: [W, H, Q]} every baseline on every window of `dataset`, in basis points:
        historical quantiles, zero, then the volatility baselines."""
        shape = (len(dataset), dataset.horizon, len(quantiles))
        return {
            "historical_quantiles": np.broadcast_to(self.historical, shape),
            "zero": zero_forecast(*shape),
            **self.volatility_forecasts(dataset, preprocessor, quantiles),
        }


def fit_run_baselines(
    data: PreparedData, quantiles: Sequence[float], *, window: int
) -> RunBaselines:
    """Fitted on the train span of `data` only (the historical quantiles on its train windows,
    the volatility baselines on the rows before validation)."""
    scale = bp_per_unit(data.preprocessor)
    historical = historical_baseline(data.train, quantiles) * scale
    bars = bar_returns(data.test, data.preprocessor, train_end=data.summary.validation_start)
    return RunBaselines(historical=historical, volatility=fit_baselines(bars, window=window))


def save_run_baselines(run_dir: Path, baselines: RunBaselines) -> None:
    save_baseline_state(run_dir, baselines.state_dict())


def read_run_baselines(run_dir: Path, *, horizon: int, quantiles: int) -> RunBaselines:
    """RUN_DIR/baseline.json (a run's or an export's), checked; a damaged file is refused with
    one line naming it and the field."""
    path = run_dir / BASELINE_FILE
    saved = read_baseline_state(path, horizon=horizon, quantiles=quantiles)
    historical = np.asarray(saved["historical_quantiles"], dtype=np.float64)
    if saved["volatility"] is None:
        log.warning("%s predates the volatility baselines; retrain to compare with them", path)
        return RunBaselines(historical=historical, volatility=None, source=path)
    try:  # read_baseline_state tried it; a failure here is still the file's
        volatility = FittedBaselines.from_state_dict(saved["volatility"])
    except DAMAGED_STATE as exc:
        raise RunFileError(f"{path}: volatility: {exc}; the file is damaged") from None
    return RunBaselines(historical=historical, volatility=volatility, source=path)
