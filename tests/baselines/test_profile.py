"""The baselines use the data layer's intraday profile (tests/data/test_data_volatility.py),
fitted per symbol on the usable train rows, in the exchange's local time."""

import numpy as np
import pandas as pd

from foxhunt.baselines import fit_baselines, minute_of_day
from foxhunt.data.volatility import IntradayProfile


def test_profile_is_fitted_on_train_rows_in_local_time(bars) -> None:
    fitted = fit_baselines(bars)
    train = bars.train & bars.usable
    by_hand = IntradayProfile.fit(
        bars.returns_bp[train], minute_of_day(bars.times[train]), bucket_minutes=5
    )
    assert fitted.profiles[0] == by_hand
    assert minute_of_day(pd.DatetimeIndex([bars.times[0]]))[0] == 9 * 60 + 30  # ET, not UTC
    u_shape = fitted.profiles[0](np.array([570, 720, 955]))  # the open, midday, the close
    assert u_shape[0] > u_shape[1] < u_shape[2]
