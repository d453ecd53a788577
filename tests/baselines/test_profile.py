import numpy as np
import pandas as pd
import pytest

from foxhunt.baselines import IntradayProfile, fit_baselines, minute_of_day


def test_profile_matches_a_hand_built_one() -> None:
    # three slots, two days: mean |r| per slot is 1, 2 and 3
    minutes = np.array([570, 575, 580, 570, 575, 580])
    returns = np.array([1.0, -2.0, 3.0, -1.0, 2.0, -3.0])
    raw = IntradayProfile.fit(minutes, returns, smoothing=0)
    level = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(raw.scale, level / np.sqrt(np.mean(level**2)))
    np.testing.assert_array_equal(raw.minutes, [570, 575, 580])
    # smoothing 1: weights 1,2,1 over neighbours on the circle of seen slots
    smooth = IntradayProfile.fit(minutes, returns, smoothing=1)
    by_hand = np.array([(3 + 2 * 1 + 2) / 4, (1 + 2 * 2 + 3) / 4, (2 + 2 * 3 + 1) / 4])
    np.testing.assert_allclose(smooth.scale, by_hand / np.sqrt(np.mean(by_hand**2)))


def test_profile_has_unit_mean_square_over_the_fitted_bars() -> None:
    rng = np.random.default_rng(0)
    minutes = rng.choice([60, 570, 575, 900], size=500, p=[0.1, 0.4, 0.3, 0.2])
    returns = rng.normal(size=500) * (1 + (minutes == 570))
    profile = IntradayProfile.fit(minutes, returns)
    assert np.mean(profile(minutes) ** 2) == pytest.approx(1.0)
    assert profile(np.array([570]))[0] > profile(np.array([900]))[0]


def test_unseen_minutes_take_the_nearest_seen_one_on_the_circle() -> None:
    profile = IntradayProfile(np.array([60, 600]), np.array([0.5, 2.0]))
    # 1430 is 70 minutes from 60 across midnight, 830 from 600
    np.testing.assert_allclose(profile(np.array([60, 61, 400, 1430])), [0.5, 0.5, 2.0, 0.5])
    assert IntradayProfile.from_state_dict(profile.state_dict()).scale.tolist() == [0.5, 2.0]


def test_constant_prices_give_a_flat_profile() -> None:
    profile = IntradayProfile.fit(np.array([570, 575]), np.zeros(2))
    np.testing.assert_array_equal(profile.scale, [1.0, 1.0])


def test_profile_is_fitted_on_train_rows_in_local_time(bars) -> None:
    fitted = fit_baselines(bars)
    train = bars.train & bars.usable
    by_hand = IntradayProfile.fit(minute_of_day(bars.times[train]), bars.returns_bp[train])
    np.testing.assert_allclose(fitted.profiles[0].scale, by_hand.scale)
    assert minute_of_day(pd.DatetimeIndex([bars.times[0]]))[0] == 9 * 60 + 30  # ET, not UTC
