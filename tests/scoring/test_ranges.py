"""The range baselines read each bar's log(high/low) back from the scaled inputs."""

import numpy as np
import pandas as pd

from foxhunt.data import DataConfig, prepare_data
from foxhunt.data.pipeline import load_frame
from foxhunt.scoring.ranges import log_range_bp


def test_log_range_is_the_bars_high_over_low_in_basis_points() -> None:
    config = DataConfig(
        synthetic_market="garch",
        synthetic_days=4,
        lookback=8,
        horizon=3,
        synthetic_symbols=("ES", "NQ"),
    )
    data = prepare_data(config)
    got = log_range_bp(data.test, data.preprocessor)
    assert got is not None
    frame = load_frame(config)
    expected = pd.Series(
        np.log(frame["high"] / frame["low"]).to_numpy() * 1e4,
        index=pd.MultiIndex.from_arrays([frame["symbol"], frame["timestamp"]]),
    )
    names = np.asarray(data.test.symbols, dtype=object)[data.test.symbol_codes.numpy()]
    want = expected.reindex(pd.MultiIndex.from_arrays([names, data.test.timestamps])).to_numpy()
    assert np.isfinite(want).all() and want.std() > 0
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)  # float32 inputs
