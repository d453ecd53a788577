from dataclasses import replace

import numpy as np
import pytest
from arch import arch_model
from arch.univariate import StudentsT

from foxhunt.baselines import fit_baselines, forecast_baselines
from foxhunt.baselines.forecast import adjusted_returns
from foxhunt.baselines.garch import filter_variance, fit_garch_t, t_quantiles, variance_paths


@pytest.fixture(scope="module")
def simulated() -> np.ndarray:
    model = arch_model(None, mean="Zero", vol="GARCH", p=1, q=1, dist="t")
    sim = model.simulate([0.5, 0.08, 0.88, 6.0], nobs=3000, burn=500)
    return sim["data"].to_numpy()


def test_fit_and_filter_match_arch(simulated: np.ndarray) -> None:
    train, whole = simulated[:2000], simulated
    direct = arch_model(train, mean="Zero", vol="GARCH", p=1, q=1, dist="t", rescale=False)
    result = direct.fit(disp="off")
    params = fit_garch_t(train)
    expected = result.params.to_numpy()
    np.testing.assert_allclose([params.omega, params.alpha, params.beta, params.nu], expected)
    ours = filter_variance(params, train)[:-1]
    np.testing.assert_allclose(ours, result.conditional_volatility**2, rtol=1e-10)
    # the whole series with the train parameters fixed: arch's fix() and our filter agree
    fixed = arch_model(whole, mean="Zero", vol="GARCH", p=1, q=1, dist="t", rescale=False)
    fixed_result = fixed.fix(expected)
    np.testing.assert_allclose(
        filter_variance(params, whole)[:-1], fixed_result.conditional_volatility**2, rtol=1e-10
    )


def test_multi_step_variances_match_arch_forecast(simulated: np.ndarray) -> None:
    params = fit_garch_t(simulated[:2000])
    values = np.array([params.omega, params.alpha, params.beta, params.nu])
    fixed = arch_model(simulated, mean="Zero", vol="GARCH", p=1, q=1, dist="t", rescale=False)
    expected = fixed.fix(values).forecast(horizon=5, start=2500, reindex=False).variance
    sigma2 = filter_variance(params, simulated)
    ours = variance_paths(params, sigma2[2501:], 5)  # origin t: next variance sigma2[t + 1]
    np.testing.assert_allclose(ours, expected.to_numpy(), rtol=1e-10)


def test_standardized_t_quantiles_match_arch() -> None:
    q = np.array([0.1, 0.5, 0.9])
    np.testing.assert_allclose(t_quantiles(5.0, q), StudentsT().ppf(q, [5.0]), rtol=1e-12)


def test_garch_baseline_uses_train_fit_on_profile_adjusted_returns(bars) -> None:
    fitted = fit_baselines(bars)
    fit = bars.usable & bars.train
    u = adjusted_returns(bars, slice(0, len(bars.returns_bp)), fitted.profiles[0])
    direct = fit_garch_t(u[fit])
    assert fitted.garch[0] == direct
    anchors = np.array([2000, 2100])
    fc = forecast_baselines(fitted, bars, anchors, horizon=3, quantiles=(0.1, 0.9))["garch_t"]
    assert np.isfinite(fc).all() and (fc[..., 0] < 0).all() and (fc[..., 1] > 0).all()


def test_constant_prices_leave_garch_unavailable(bars, caplog) -> None:
    flat = replace(bars, returns_bp=np.where(bars.usable, 0.0, np.nan))
    fitted = fit_baselines(flat)
    assert isinstance(fitted.garch[0], str)
    assert "garch_t unavailable" in caplog.text
    fc = forecast_baselines(fitted, flat, np.array([100]), horizon=2, quantiles=(0.1, 0.9))
    assert np.isnan(fc["garch_t"]).all()
    assert np.isfinite(fc["realized_vol"]).all()
    again = type(fitted).from_state_dict(fitted.state_dict())
    assert again.garch == fitted.garch
