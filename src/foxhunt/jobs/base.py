"""Stage 1 of a train job, continued: the base volatility behind the model's scale
(`DataConfig.base`), chosen on the validation windows.

The "baseline" output forecasts scale * (z_q + correction) with the correction starting at
zero, so an untrained model is exactly its base's Gaussian quantiles. With `base` "auto" each
candidate (`baselines.base.CANDIDATES`: the rolling RMS, EWMA, HAR, GARCH-t, the fitted ones on
the training span only) scales the same validation windows and the one whose Gaussian quantiles
have the lowest mean quantile loss (the tables' loss, in basis points) is kept: the model then
starts no worse on validation than the best of them, and its correction is learned against the
strongest base. Each candidate's loss is logged and recorded in metrics.json (`base`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy.special import ndtri  # scipy.stats' norm.ppf, without its 1-2 s import

from foxhunt.baselines.base import CANDIDATES, FilteredBase
from foxhunt.data import PreparedData, Preprocessor, WindowDataset
from foxhunt.data.preprocess import ROLLING_BASE
from foxhunt.data.rebase import BaseUnavailable, base_rows, with_base
from foxhunt.data.volatility import BaselineRows
from foxhunt.errors import ConfigError
from foxhunt.runs import RunConfig
from foxhunt.scoring import RunBaselines, fit_run_baselines
from foxhunt.task import bp_per_unit, forecast_metrics

log = logging.getLogger("foxhunt.train")


@dataclass(frozen=True, kw_only=True)
class BaseChoice:
    """The base a run's scale uses and why.

    name: the base chosen (never "auto"); setting: `DataConfig.base` as given.
    losses: each candidate's mean quantile loss (bp) on the validation windows; None where
        it could not be fitted, NaN without validation windows; {} on a resume (the choice
        stands as saved).
    baselines: the run's baselines fitted on the training span, reused by the test scoring.
    head_losses: each candidate's calibrated head's mean quantile loss (bp) on the validation
        windows (`TrainingConfig.head_fallback`, jobs/fallback.py); {} without the fallback.
    trained_on: the base the network trained on when `name` is a fallback head's (served
        instead of the kept model), else None; a resume trains on it again.
    """

    name: str
    setting: str
    losses: dict[str, float | None]
    baselines: RunBaselines | None
    head_losses: dict[str, float | None] = field(default_factory=dict)
    trained_on: str | None = None

    def record(self) -> dict[str, Any]:
        """metrics.json's `base`."""
        out: dict[str, Any] = {
            "name": self.name,
            "setting": self.setting,
            "validation_loss_bp": _finite(self.losses),
        }
        if self.head_losses:
            out["head_validation_loss_bp"] = _finite(self.head_losses)
        if self.trained_on is not None:
            out["trained_on"] = self.trained_on
        return out


def _finite(losses: Mapping[str, float | None]) -> dict[str, float | None]:
    return {k: None if v is None or math.isnan(v) else v for k, v in losses.items()}


def candidate(pre: Preprocessor, name: str, baselines: RunBaselines) -> Preprocessor:
    """`pre` with base `name` (its filter fitted in `baselines`); BaseUnavailable, saying why,
    when it has no fit for a symbol of the run."""
    if name == ROLLING_BASE:
        return replace(pre, base=name, base_filter=None)
    assert baselines.volatility is not None  # fitted here, never a legacy baseline.json
    base = FilteredBase(name, baselines.volatility)
    reason = base.unfitted(np.arange(pre.symbols.cardinality), pre.symbols.categories)
    if reason is not None:
        raise BaseUnavailable(reason)
    return replace(pre, base=name, base_filter=base)


def validation_loss(
    rows: BaselineRows, dataset: WindowDataset, quantiles: Sequence[float], unit: float
) -> float:
    """Mean quantile loss (bp) of the base's Gaussian quantiles on the windows of `dataset`,
    with the scale the model's batches hold (float32); NaN without windows."""
    anchors = dataset.anchors.numpy()
    if not len(anchors) or dataset.target_values is None:
        return math.nan
    steps = anchors[:, None] + np.arange(1, dataset.horizon + 1)  # [W, H] target rows
    volatility = rows.volatility.astype(np.float32)[anchors][:, None]
    scale = (volatility * rows.profile.astype(np.float32)[steps]).astype(np.float64)  # [W, H]
    z = ndtri(np.asarray(quantiles, dtype=np.float64))  # [Q]
    target = dataset.target_values.numpy().astype(np.float64)[steps] * unit
    pred = scale[..., None] * z * unit  # [W, H, Q]
    return float(forecast_metrics(pred, target, quantiles)["mean_quantile_loss"])


def choose_base(
    config: RunConfig, data: PreparedData, *, resumed: str | None, keep_encoded: bool = False
) -> tuple[PreparedData, BaseChoice | None]:
    """`data` scaled by the run's base and the choice; None (and `data` as it is) for the
    rolling base set explicitly, the behaviour before `base`. `resumed`: a resumed run's
    saved base, which stands (its windows trained with it). The encoded bars are let go
    unless `keep_encoded` (the head fallback rebases the windows once more)."""
    kept = data.encoded if keep_encoded else None
    setting = config.data.base
    if resumed is not None and setting not in ("auto", resumed):
        raise ConfigError(
            f"DataConfig.base={setting!r} differs from the saved run's base ({resumed!r}); "
            "resume with the data settings of the original run"
        )
    if (resumed or setting) == ROLLING_BASE:
        return replace(data, encoded=kept), None
    quantiles = config.model.quantiles
    baselines = fit_run_baselines(data, quantiles, window=config.data.baseline_window)
    names = (resumed,) if resumed else CANDIDATES if setting == "auto" else (setting,)
    unit = bp_per_unit(data.preprocessor)
    losses: dict[str, float | None] = {}
    ready: dict[str, tuple[Preprocessor, BaselineRows]] = {}
    for name in names:
        try:
            pre = candidate(data.preprocessor, name, baselines)
            rows = base_rows(data, pre)
        except BaseUnavailable as exc:
            if setting != "auto" or resumed:
                raise ConfigError(
                    f"DataConfig.base={name!r}: {exc}; choose another base (--base) or "
                    "--base auto, which skips a base it cannot fit"
                ) from None
            log.warning("base %s skipped: %s", name, exc)
            losses[name] = None
            continue
        ready[name] = (pre, rows)
        losses[name] = validation_loss(rows, data.validation, quantiles, unit)
        log.info(
            "base %s: mean quantile loss %.4f bp on the validation windows", name, losses[name]
        )
    chosen = _best(losses) if len(names) > 1 else names[0]
    log.info("base: %s (%s)", chosen, "saved run" if resumed else f"--base {setting}")
    pre, rows = ready[chosen]
    data = data if chosen == ROLLING_BASE else with_base(data, pre, rows)
    choice = BaseChoice(
        name=chosen, setting=setting, losses={} if resumed else losses, baselines=baselines
    )
    return replace(data, encoded=kept), choice


def _best(losses: Mapping[str, float | None]) -> str:
    """The lowest loss (the first of a tie: the rolling base over an equal filter); the
    rolling base when no loss is known (no validation windows)."""
    scored = {k: v for k, v in losses.items() if v is not None and not math.isnan(v)}
    if not scored:
        log.warning("base auto: no validation windows to choose on; the rolling base stays")
        return ROLLING_BASE
    return min(scored, key=scored.__getitem__)
