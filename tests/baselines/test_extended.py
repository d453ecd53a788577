"""EWMA, HAR, quantile regression and empirical residual quantiles: each reproduces a direct
fit of the library it wraps, is causal, and a bad series leaves a NaN row, not an error."""

import logging
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from arch.univariate import EWMAVariance, Normal, ZeroMean
from synthetic_bars import make_bars

from foxhunt.baselines import BarReturns, FittedBaselines, fit_baselines, forecast_baselines
from foxhunt.baselines.ewma import filter_ewma, fit_ewma
from foxhunt.baselines.filters import symbol_rows
from foxhunt.baselines.fitted import FIRST_NAMES, NAMES
from foxhunt.baselines.forecast import har_lags
from foxhunt.baselines.har import fit_har
from foxhunt.baselines.quantreg import LEVELS
from foxhunt.baselines.residuals import GRID
from foxhunt.migrations import BASELINE

QUANTILES = (0.1, 0.5, 0.9)


def with_range(bars: BarReturns) -> BarReturns:
    """A high/low range per bar that moves with the return (enough for a range HAR)."""
    rng = np.random.default_rng(7)
    spread = np.abs(bars.returns_bp) + np.abs(rng.standard_normal(len(bars.returns_bp))) * 3
    return replace(bars, range_bp=spread)


@pytest.fixture(scope="module")
def bars() -> BarReturns:
    return with_range(make_bars())


@pytest.fixture(scope="module")
def fitted(bars: BarReturns) -> FittedBaselines:
    return fit_baselines(bars)


def train_u(bars: BarReturns, fitted: FittedBaselines) -> tuple[np.ndarray, np.ndarray]:
    """The usable train returns, profile-adjusted, and their Parkinson variances."""
    s = symbol_rows(bars, slice(0, len(bars.returns_bp)), fitted.profiles[0])
    fit = bars.usable & bars.train
    assert s.parkinson is not None
    return s.u[fit], s.parkinson[fit]


def test_ewma_is_arch_with_the_fitted_decay(bars, fitted) -> None:
    u, _ = train_u(bars, fitted)
    direct = ZeroMean(u, volatility=EWMAVariance(None), distribution=Normal(), rescale=False)
    lam = float(direct.fit(disp="off").params["lam"])
    assert fitted.ewma[0] == pytest.approx(lam) == fit_ewma(u)
    assert 0.5 < lam < 1.0
    fixed = ZeroMean(u, volatility=EWMAVariance(lam), distribution=Normal(), rescale=False)
    variance = fixed.fit(disp="off").conditional_volatility ** 2
    np.testing.assert_allclose(filter_ewma(lam, u)[:-1], variance, rtol=1e-10)


def log_means(x: np.ndarray, k: int, floor: float) -> np.ndarray:
    return np.log(pd.Series(x).rolling(k, min_periods=1).mean().to_numpy() + floor)


@pytest.mark.parametrize("ranged", [False, True])
def test_har_is_statsmodels_ols_on_the_same_regressors(bars, fitted, ranged) -> None:
    u, pk = train_u(bars, fitted)
    har = fitted.har_range[0] if ranged else fitted.har[0]
    assert not isinstance(har, str)
    lags, hour = har_lags(bars.times[bars.usable & bars.train])
    assert har.lags == lags == (1, 12, 78, 390) and har.target == hour == 12  # bar/hour/day/week
    floor = 0.01 * np.mean(u**2)
    series = [u**2, pk] if ranged else [u**2]
    x = np.stack([log_means(s, k, floor) for s in series for k in lags], axis=1)
    ahead = np.log(pd.Series(u**2).rolling(hour).mean().shift(-hour).to_numpy() + floor)
    rows = np.arange(lags[-1] - 1, len(u) - hour)
    ols = sm.OLS(ahead[rows], sm.add_constant(x[rows])).fit()
    np.testing.assert_allclose(har.coef, ols.params, rtol=1e-8)
    assert har.smear == pytest.approx(np.mean(np.exp(ols.resid)))
    assert har == fit_har(u, pk if ranged else None, lags=lags, target=hour)


def test_quantreg_is_statsmodels_quantreg_on_realized_measures(bars, fitted) -> None:
    u, _ = train_u(bars, fitted)
    fit = fitted.quantreg[0]
    assert not isinstance(fit, str) and fit.levels == LEVELS
    sd = [np.sqrt(pd.Series(u**2).rolling(k, min_periods=1).mean().to_numpy()) for k in fit.lags]
    x = sm.add_constant(np.stack([np.abs(u), *sd], axis=1))
    rows = np.arange(fit.lags[-1] - 1, len(u) - 1)
    direct = sm.QuantReg(u[rows + 1], x[rows]).fit(q=0.9).params
    np.testing.assert_allclose(fit.coef[LEVELS.index(0.9)], direct, rtol=1e-6)


def test_empirical_quantiles_are_those_of_the_standardized_train_residuals(bars, fitted) -> None:
    s = symbol_rows(bars, slice(0, len(bars.returns_bp)), fitted.profiles[0])
    vol = pd.Series(s.u**2).rolling(fitted.window, min_periods=fitted.window // 2).mean()
    z = s.u[1:] / np.sqrt(vol.to_numpy()[:-1])  # u_t / vol_{t-1}
    z = z[(bars.usable & bars.train)[1:]]
    expected = np.quantile(z[np.isfinite(z)], GRID)
    np.testing.assert_allclose(fitted.residuals["realized_vol"][0], expected)
    anchors = np.array([1500, 1600])
    fc = forecast_baselines(fitted, bars, anchors, horizon=2, quantiles=(0.1,))
    ratio = fc["realized_vol_emp"] / fc["realized_vol"]  # same sd, another z
    z10 = expected[GRID.index(0.1)]
    np.testing.assert_allclose(ratio, z10 / -1.2815515655446004, rtol=1e-9)


def test_a_future_spike_moves_no_earlier_forecast_of_any_baseline(bars, fitted) -> None:
    spike_row = int(np.flatnonzero(~bars.train)[0]) + 300
    assert bars.range_bp is not None
    returns, ranges = bars.returns_bp.copy(), bars.range_bp.copy()
    returns[spike_row] += 500.0
    ranges[spike_row] += 800.0
    shocked = replace(bars, returns_bp=returns, range_bp=ranges)
    anchors = np.arange(100, len(returns) - 8)
    args = {"horizon": 8, "quantiles": QUANTILES}
    before = forecast_baselines(fitted, bars, anchors, **args)
    after = forecast_baselines(fit_baselines(shocked), shocked, anchors, **args)
    assert set(before) == set(NAMES)
    earlier = anchors < spike_row
    for name in NAMES:
        np.testing.assert_array_equal(before[name][earlier], after[name][earlier], err_msg=name)
        moved = np.nanmax(np.abs(after[name][~earlier] - before[name][~earlier]))
        assert moved > 1.0, f"{name} never saw the spike"


def test_the_fit_round_trips_through_its_state_and_old_states_load(bars, fitted) -> None:
    anchors = np.array([1500, 1800])
    args = {"horizon": 3, "quantiles": QUANTILES}
    again = FittedBaselines.from_state_dict(fitted.state_dict())
    first, second = (forecast_baselines(f, bars, anchors, **args) for f in (fitted, again))
    for name in NAMES:
        np.testing.assert_array_equal(first[name], second[name], err_msg=name)
    before = {k: fitted.state_dict()[k] for k in ("window", "profiles", "garch_t")}
    state = BASELINE.fields_of({"volatility": before})["volatility"]  # foxhunt/migrations.py
    old = forecast_baselines(FittedBaselines.from_state_dict(state), bars, anchors, **args)
    assert tuple(old) == FIRST_NAMES
    np.testing.assert_array_equal(old["garch_t"], first["garch_t"])


@pytest.mark.parametrize("case", ["constant", "too_few"])
def test_an_unfittable_series_gets_nan_rows_and_one_line_each(case, caplog) -> None:
    bars = with_range(make_bars(days=3))  # 3 days: fewer returns than a week of HAR lags
    if case == "constant":
        bars = replace(bars, returns_bp=np.where(bars.usable, 0.0, np.nan))
    with caplog.at_level(logging.WARNING, logger="foxhunt.baselines"):
        fitted = fit_baselines(bars)
    fc = forecast_baselines(fitted, bars, np.array([100, 150]), horizon=2, quantiles=QUANTILES)
    broken = ("har", "har_range", "quantreg", "har_emp", "har_range_emp")
    if case == "constant":
        broken += ("garch_t", "ewma", "garch_t_emp", "ewma_emp", "realized_vol_emp")
    for name in broken:
        assert np.isnan(fc[name]).all(), name
        if not name.endswith("_emp") or name == "realized_vol_emp":
            lines = [r for r in caplog.records if f"baseline {name} unavailable" in r.message]
            assert len(lines) == 1, name
    assert np.isfinite(fc["realized_vol"]).all()


def test_baseline_json_with_every_fit_passes_the_run_folder_check(fitted, tmp_path) -> None:
    import json

    from foxhunt.runs import read_baseline_state

    path = tmp_path / "baseline.json"
    state = {"historical_quantiles": [[-1.0, 0.0, 1.0]] * 2, "volatility": fitted.state_dict()}
    path.write_text(json.dumps(state))
    saved = read_baseline_state(path, horizon=2, quantiles=3)
    assert FittedBaselines.from_state_dict(saved["volatility"]).har_range == fitted.har_range


def test_a_har_fitted_on_less_than_a_week_past_its_warm_up_is_unavailable() -> None:
    """Issue 42: over a few hundred rows the week-long mean barely moves, its coefficient is
    not identified, and the HAR family forecast 1e10 to 1e28 bp out of sample."""
    from foxhunt.baselines.garch import GarchFitError
    from foxhunt.baselines.quantreg import fit_quantreg

    lags, hour = (1, 12, 78, 390), 12
    u = np.random.default_rng(0).standard_t(5, size=390 + hour + 388)  # 389 rows: one short
    with pytest.raises(GarchFitError, match=r"HAR needs 791 \(a week of 390 bars to warm up"):
        fit_har(u, None, lags=lags, target=hour)
    with pytest.raises(GarchFitError, match="quantile regression needs 780"):
        fit_quantreg(u[:779], lags=lags[1:])
    more = np.random.default_rng(0).standard_t(5, size=390 + hour + 389)
    assert fit_har(more, None, lags=lags, target=hour).lags == lags
    assert fit_quantreg(more[:780], lags=lags[1:]).lags == lags[1:]
