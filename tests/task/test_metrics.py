import numpy as np
import pytest

from foxhunt.task import (
    forecast_metrics,
    format_table,
    historical_quantile_forecast,
    normalized_q_risk,
    pinball,
    results_table,
    score,
)


def test_pinball_by_hand() -> None:
    pred = np.array([[1.0, 1.0]])
    target = np.array([[3.0, 0.0]])
    # under-forecast by 2 at q=0.9 costs 0.9*2; over-forecast by 1 costs 0.1*1
    np.testing.assert_allclose(pinball(pred, target, 0.9), [[1.8, 0.1]])


def test_q_risk_matches_paper_formula() -> None:
    rng = np.random.default_rng(0)
    target = rng.normal(size=(50, 4))
    pred = rng.normal(size=(50, 4))
    q = 0.5
    expected = 2 * np.sum(np.maximum(q * (target - pred), (q - 1) * (target - pred)))
    expected /= np.sum(np.abs(target))
    assert normalized_q_risk(pred, target, q) == pytest.approx(expected)


def test_perfect_quantiles_are_calibrated() -> None:
    rng = np.random.default_rng(1)
    target = rng.normal(size=(20000, 2))
    quantiles = (0.1, 0.5, 0.9)
    z = np.array([-1.2815516, 0.0, 1.2815516])
    pred = np.broadcast_to(z, (20000, 2, 3))
    m = forecast_metrics(pred, target, quantiles)
    assert m["coverage"]["observed"] == pytest.approx(0.8, abs=0.02)
    assert m["calibration"]["0.1"] == pytest.approx(0.1, abs=0.02)
    assert m["num_windows"] == 20000
    assert set(m) >= {"mean_quantile_loss", "quantile_loss", "q_risk_p50", "q_risk_p90"}
    zero = forecast_metrics(np.zeros_like(pred), target, quantiles)
    assert m["mean_quantile_loss"] < zero["mean_quantile_loss"]


def test_historical_baseline_uses_train_quantiles_per_step() -> None:
    train = np.stack([np.arange(101.0), 10 * np.arange(101.0)], axis=1)  # [N, H=2]
    fc = historical_quantile_forecast(train, (0.1, 0.5), num_windows=3)
    assert fc.shape == (3, 2, 2)
    np.testing.assert_allclose(fc[0], [[10.0, 50.0], [100.0, 500.0]])


def test_table_marks_best() -> None:
    target = np.zeros((4, 2))
    good = forecast_metrics(np.zeros((4, 2, 3)), target, (0.1, 0.5, 0.9))
    bad = forecast_metrics(np.ones((4, 2, 3)), target, (0.1, 0.5, 0.9))
    table = format_table({"tft": good, "zero": bad}, (0.1, 0.5, 0.9), "bp")
    assert "tft *" in table and "zero *" not in table


def test_an_unavailable_baseline_is_a_nan_row_not_a_crash(caplog) -> None:
    rng = np.random.default_rng(2)
    target = rng.normal(size=(20, 2))
    pred = np.broadcast_to([-1.0, 0.0, 1.0], (20, 2, 3)).copy()
    quantiles = (0.1, 0.5, 0.9)
    baselines = {
        "historical_quantiles": np.zeros_like(pred),
        "zero": np.zeros_like(pred),
        "realized_vol": pred * 1.2,
        "garch_t": np.full_like(pred, np.nan),
    }
    metrics = score(pred, target, quantiles, baselines=baselines)
    assert list(metrics["baselines"]) == ["historical_quantiles", "zero", "realized_vol", "garch_t"]
    garch = metrics["baselines"]["garch_t"]
    assert np.isnan(garch["mean_quantile_loss"]) and "unavailable" in garch
    assert "garch_t" in caplog.text
    table = results_table(metrics, quantiles)
    assert "garch_t" in table and "nan" in table and "garch_t *" not in table
    starred = [line for line in table.splitlines() if line.split("  ")[0].endswith(" *")]
    assert len(starred) == 1  # the best of the scored rows still gets its star
