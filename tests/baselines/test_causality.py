"""A shock in a future bar must not move any forecast made before it."""

from dataclasses import replace

import numpy as np

from foxhunt.baselines import fit_baselines, forecast_baselines


def test_a_future_spike_moves_no_earlier_forecast(bars) -> None:
    spike_row = int(np.flatnonzero(~bars.train)[0]) + 300  # after the train span
    spiked = bars.returns_bp.copy()
    spiked[spike_row] += 500.0
    shocked = replace(bars, returns_bp=spiked)
    anchors = np.arange(100, len(spiked) - 8)
    args = {"horizon": 8, "quantiles": (0.1, 0.5, 0.9)}
    before = forecast_baselines(fit_baselines(bars), bars, anchors, **args)
    after = forecast_baselines(fit_baselines(shocked), shocked, anchors, **args)
    earlier = anchors < spike_row  # origins that have not seen the spike
    for name in ("realized_vol", "garch_t"):
        np.testing.assert_array_equal(before[name][earlier], after[name][earlier], err_msg=name)
        moved = np.abs(after[name][~earlier] - before[name][~earlier]).max()
        assert moved > 1.0, f"{name} never saw the spike"
