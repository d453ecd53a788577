"""A fitted baseline as the model's base (`baselines/base.py`): causal, in the data's units."""

import numpy as np
import pytest
from synthetic_bars import make_bars

from foxhunt.baselines import fit_baselines
from foxhunt.baselines.base import FILTERED, FilteredBase
from foxhunt.baselines.filters import next_sd, symbol_rows
from foxhunt.baselines.garch import BACKCAST_BARS
from foxhunt.data.volatility import IntradayProfile, baseline_rows, minute_of_day


@pytest.fixture(scope="module")
def two_symbols():  # type: ignore[no-untyped-def]
    bars = make_bars(days=40, symbols=2)
    return bars, fit_baselines(bars)


@pytest.mark.parametrize("name", FILTERED)
@pytest.mark.parametrize("at", [3, 40, 700])  # early ones: inside the recursions' backcast
def test_a_spike_moves_nothing_before_it(two_symbols, name: str, at: int) -> None:  # type: ignore[no-untyped-def]
    bars, fitted = two_symbols
    base = FilteredBase(name, fitted)
    adjusted = bars.returns_bp / 1e4  # log returns; the filter works in basis points
    before = base(adjusted, bars.symbol_codes)
    spiked = adjusted.copy()
    t = int(np.flatnonzero(bars.symbol_codes == 1)[at])  # inside the second symbol
    spiked[t] *= 25.0
    after = base(spiked, bars.symbol_codes)
    # the past, and the other symbol, untouched
    assert np.array_equal(before[:t], after[:t], equal_nan=True)
    assert after[t] != before[t]  # the sd of the next return reads the spike at once
    first = np.r_[True, np.diff(bars.symbol_codes) != 0]  # no return before a symbol's first bar
    assert np.isfinite(before[~first]).all() and (before[~first] > 0).all()


@pytest.mark.parametrize("name", FILTERED)
def test_matches_the_baselines_own_filter(two_symbols, name: str) -> None:  # type: ignore[no-untyped-def]
    bars, fitted = two_symbols
    out = FilteredBase(name, fitted)(bars.returns_bp / 1e4, bars.symbol_codes)
    for code, rows in bars.symbol_slices():
        s = symbol_rows(bars, rows, IntradayProfile(1, np.ones(1440)))
        expected = next_sd(fitted, code, s)[name] / 1e4
        # past the backcast's returns, the very filter the baselines' table rows run (before
        # them the base's filter starts from the returns up to each row alone)
        late = np.cumsum(s.usable) >= BACKCAST_BARS
        np.testing.assert_allclose(out[rows][late], expected[late], rtol=1e-12)


def test_unfitted_symbol_is_named_and_nan() -> None:
    bars = make_bars(days=40, symbols=2)
    fitted = fit_baselines(bars)
    fitted.ewma[1] = "train returns are constant"
    base = FilteredBase("ewma", fitted)
    assert base.unfitted(np.array([0])) is None
    assert "symbol code 1: train returns are constant" in (base.unfitted(np.array([0, 1])) or "")
    # by name where the run knows them (the sweep of issue 42: "symbol code 0" named no symbol)
    named = base.unfitted(np.array([0, 1]), ("ES", "NQ")) or ""
    assert "symbol 'NQ': train returns are constant" in named
    out = base(bars.returns_bp / 1e4, bars.symbol_codes)
    assert np.isfinite(out[bars.symbol_codes == 0][1:]).all()  # from its first return on
    assert np.isnan(out[bars.symbol_codes == 1]).all()
    with pytest.raises(ValueError, match="not one of"):
        FilteredBase("realized_vol", fitted)


def test_base_replaces_the_rolling_volatility_causally(two_symbols) -> None:  # type: ignore[no-untyped-def]
    bars, fitted = two_symbols
    returns = bars.returns_bp / 1e4
    minutes = minute_of_day(bars.times)
    starts = np.r_[True, np.diff(bars.symbol_codes) != 0]
    profile = IntradayProfile.fit(returns[bars.train], minutes[bars.train], bucket_minutes=5)
    kw = {"profile": profile, "window": 64, "target_scale": 1e-3, "codes": bars.symbol_codes}
    base = FilteredBase("garch_t", fitted)
    rolling = baseline_rows(returns, minutes, starts, **kw)
    chosen = baseline_rows(returns, minutes, starts, **kw, base=base)
    # the same warm-up (the same windows), another volatility, the same profile
    assert np.array_equal(rolling.ready, chosen.ready)
    assert not np.allclose(rolling.volatility[rolling.ready], chosen.volatility[chosen.ready])
    assert np.array_equal(rolling.profile, chosen.profile)
    t = 1500
    spiked = returns.copy()
    spiked[t] *= 25.0
    moved = baseline_rows(spiked, minutes, starts, **kw, base=base)
    assert np.array_equal(moved.volatility[:t], chosen.volatility[:t], equal_nan=True)
    assert moved.volatility[t] > chosen.volatility[t]
