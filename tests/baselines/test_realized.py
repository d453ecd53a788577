import numpy as np
from scipy.stats import norm
from synthetic_bars import make_bars

from foxhunt.baselines import BarReturns, fit_baselines, forecast_baselines, minute_of_day


def test_realized_vol_matches_numpy(bars) -> None:
    fitted = fit_baselines(bars, window=20)
    quantiles = (0.1, 0.5, 0.9)
    anchors = np.array([100, 500, 1000, len(bars.returns_bp) - 5])
    fc = forecast_baselines(fitted, bars, anchors, horizon=4, quantiles=quantiles)["realized_vol"]
    scale = fitted.profiles[0](minute_of_day(bars.times))
    u = bars.returns_bp / scale
    z = norm.ppf(quantiles)
    for w, a in enumerate(anchors):
        vol = np.sqrt(np.mean(u[a - 19 : a + 1] ** 2))  # the 20 bars up to the origin
        for h in range(1, 5):
            np.testing.assert_allclose(fc[w, h - 1], vol * scale[a + h] * z, rtol=1e-12)


def test_symbols_are_fitted_and_forecast_on_their_own() -> None:
    two = make_bars(symbols=2)
    n = len(two.returns_bp) // 2
    second = BarReturns(
        times=two.times[n:],
        returns_bp=two.returns_bp[n:],
        symbol_codes=np.zeros(n, dtype=np.int64),
        usable=two.usable[n:],
        train=two.train[n:],
    )
    args = {"horizon": 3, "quantiles": (0.1, 0.9)}
    both = forecast_baselines(fit_baselines(two), two, np.array([n + 200, n + 1500]), **args)
    alone = forecast_baselines(fit_baselines(second), second, np.array([200, 1500]), **args)
    for name in both:
        np.testing.assert_allclose(both[name], alone[name], rtol=1e-12, err_msg=name)
