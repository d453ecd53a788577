"""A planted market's oracle beside the forecasters: how much of what was learnable was learned.

When a run's bars came from the planted-signal generator (the built-in bars, or a file with
its `.planted.json`), its test windows are also forecast by the generator's own conditional
quantiles (data/planted/oracle.py): from what the bars show (the bound a model can reach) and
from the latent state (the floor). The table gets both rows, and one line says what share of
the gap between the best baseline and the reachable oracle the TFT closed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from foxhunt.baselines import BASIS_POINTS
from foxhunt.data import WindowDataset
from foxhunt.data.config import DataConfig
from foxhunt.data.planted import (
    PlantedBars,
    PlantedConfig,
    builtin_market,
    generate_planted,
    oracle_quantiles,
)
from foxhunt.data.planted.files import SIDECAR_SUFFIX, same_bars
from foxhunt.data.planted.oracle import read_bars
from foxhunt.scoring.score import Scored
from foxhunt.scoring.windows import window_symbols
from foxhunt.task import results_table
from foxhunt.task.bootstrap import day_blocks
from foxhunt.task.metrics import forecast_metrics, window_losses

log = logging.getLogger("foxhunt.scoring")
ORACLES = {"bars": "oracle_bars", "latent": "oracle_latent"}


def planted_oracles(
    dataset: WindowDataset,
    config: PlantedConfig,
    quantiles: Sequence[float],
    frame: pd.DataFrame | None = None,
    made: PlantedBars | None = None,
) -> dict[str, np.ndarray]:
    """{"oracle_bars", "oracle_latent"}: [W, H, Q] in basis points, for `dataset`'s windows.
    `frame`: the bars as read from the file (None: the generator's own, made again);
    `made`: `generate_planted(config)` when the caller made it already."""
    made = generate_planted(config) if made is None else made
    bars = made.frame if frame is None else frame
    anchors = dataset.anchors.numpy()
    anchors_ns = dataset.timestamps[anchors].as_unit("ns").asi8
    names = window_symbols(dataset)
    high = made.latent["high"].to_numpy().reshape(len(config.symbols), -1).T  # [T, S]
    read = read_bars(bars, config)  # once, for both oracles
    out = {}
    for kind, name in ORACLES.items():
        forecast = oracle_quantiles(
            bars,
            config,
            horizon=dataset.horizon,
            quantiles=tuple(quantiles),
            anchors_ns=np.unique(anchors_ns),
            kind=kind,  # type: ignore[arg-type]
            latent_high=high,
            state=read,
        )
        out[name] = forecast.lookup(names, anchors_ns) * BASIS_POINTS
    return out


def gap_interval(
    tft: np.ndarray, best: np.ndarray, oracle: np.ndarray, blocks: np.ndarray, resamples: int = 2000
) -> list[float]:
    """95% interval of the share of the gap closed, from per-window losses [W] resampled by
    day (`blocks` [W]): the same days for the three, the share taken of their sums."""
    _, inverse = np.unique(blocks, return_inverse=True)
    won = np.bincount(inverse, weights=best - tft)
    gap = np.bincount(inverse, weights=best - oracle)
    draws = np.random.default_rng(0).integers(0, len(won), size=(resamples, len(won)))
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = won[draws].sum(axis=1) / gap[draws].sum(axis=1)
    low, high = np.nanquantile(shares, [0.025, 0.975])
    return [float(low), float(high)]


def oracle_summary(
    metrics: dict[str, Any],
    oracles: dict[str, np.ndarray],
    target: np.ndarray,
    quantiles: Sequence[float],
    forecasts: tuple[np.ndarray, dict[str, np.ndarray], np.ndarray] | None = None,
    symbols: np.ndarray | None = None,
) -> dict[str, Any]:
    """The oracles' metrics on the same windows, and the share of the gap between the best
    baseline and the reachable oracle that the TFT closed (1 = all of it; < 0 = worse than
    that baseline); with `forecasts` (the TFT's [W, H, Q], each baseline's, each window's day
    [W]) also its 95% day-block interval (`gap_closed_ci95`), and with each window's symbol
    [W] of several the share of each symbol's gap (`gap_closed_by_symbol`: a driver planted
    on one symbol alone, such as the cross-instrument lead, shows there)."""
    levels = tuple(quantiles)
    rows = {name: forecast_metrics(f, target, levels) for name, f in oracles.items()}
    available = {
        name: m["mean_quantile_loss"]
        for name, m in metrics["baselines"].items()
        if np.isfinite(m["mean_quantile_loss"])
    }
    best = min(available, key=available.__getitem__)
    tft = metrics["test"]["mean_quantile_loss"]
    reachable = rows["oracle_bars"]["mean_quantile_loss"]
    gap = available[best] - reachable
    closed = (available[best] - tft) / gap if gap > 0 else float("nan")
    out = {
        "metrics": rows,
        "best_baseline": best,
        "best_baseline_loss": available[best],
        "gap_closed": closed,
    }
    if forecasts is not None and gap > 0:
        pred, baselines, days = forecasts
        tft_w, best_w, bound_w = (
            window_losses(f, target, levels)
            for f in (pred, baselines[best], oracles["oracle_bars"])
        )
        out["gap_closed_ci95"] = gap_interval(tft_w, best_w, bound_w, days)
        if symbols is not None and len(set(symbols.tolist())) > 1:
            out["gap_closed_by_symbol"] = shares_by_symbol(tft_w, best_w, bound_w, symbols)
    return out


def shares_by_symbol(
    tft: np.ndarray, best: np.ndarray, oracle: np.ndarray, symbols: np.ndarray
) -> dict[str, float]:
    """{symbol: the share of its windows' gap the TFT closed} from per-window losses [W]."""
    out = {}
    for symbol in sorted(set(symbols.tolist())):
        mine = symbols == symbol
        gap = float(np.sum(best[mine] - oracle[mine]))
        out[str(symbol)] = float(np.sum(best[mine] - tft[mine])) / gap if gap > 0 else float("nan")
    return out


def planted_source(data: DataConfig) -> tuple[PlantedConfig, pd.DataFrame | None] | None:
    """The planted market behind a run's `DataConfig`, and its bars as the file holds them
    (None: the built-in planted bars, made again); None when the bars are not planted."""
    from foxhunt.data.planted.files import planted_config_of

    if data.path is None:
        if data.synthetic_market != "planted":
            return None
        return builtin_market(
            data.synthetic_days, data.synthetic_seed, data.synthetic_symbols
        ), None
    config = planted_config_of(data.path)
    if config is None:
        return None
    return config, pd.read_parquet(data.path)


def with_planted_oracle(scored: Scored, data: DataConfig, quantiles: Sequence[float]) -> Scored:
    """`scored` with the oracle rows, when its bars are a planted market's."""
    source = planted_source(data)
    if source is None:
        return scored
    config, frame = source
    made = generate_planted(config)
    if frame is not None and not same_bars(made.frame, frame):
        log.warning(
            "%s: its %s config makes other bars than the file holds (edited?): no oracle for "
            "them; delete it or write the bars again with foxhunt planted",
            data.path,
            SIDECAR_SUFFIX,
        )
        return scored
    oracles = planted_oracles(scored.dataset, config, quantiles, frame, made)
    data_set = scored.dataset
    days = day_blocks(data_set.timestamps[data_set.anchors.numpy()])
    forecasts = (scored.pred, scored.baselines, days)
    symbols = window_symbols(data_set)
    summary = oracle_summary(
        scored.metrics, oracles, scored.target, quantiles, forecasts, symbols=symbols
    )
    metrics = {**scored.metrics, "oracle": summary}
    return replace(scored, metrics=metrics, table=results_table(metrics, tuple(quantiles)))
