"""The tests of difference against worked examples."""

import math

import numpy as np
import pytest

from foxhunt.task import results_table, score
from foxhunt.task.difference import (
    christoffersen,
    compare_forecasters,
    coverage_tests,
    diebold_mariano,
    hac_lag,
    kupiec,
    model_confidence_set,
)


def ar1(n: int, phi: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    e = rng.standard_normal(n)
    x = np.empty(n)
    x[0] = e[0]
    for t in range(1, n):
        x[t] = phi * x[t - 1] + e[t]
    return x


def bartlett_t(d: np.ndarray, lag: int) -> float:
    """Newey-West t-statistic of mean(d), written out: gamma_0 + 2 sum (1 - j/(L+1)) gamma_j."""
    n, c = len(d), d - d.mean()
    lrv = c @ c / n
    for j in range(1, lag + 1):
        lrv += 2.0 * (1.0 - j / (lag + 1)) * (c[j:] @ c[:-j]) / n
    return float(d.mean() / math.sqrt(lrv / n))


def test_dm_is_the_newey_west_t_statistic_with_a_lag_of_at_least_h_minus_1() -> None:
    d = 0.15 + ar1(400, 0.6, seed=1)
    horizon = 12
    lag = hac_lag(len(d), horizon)
    assert lag >= horizon - 1
    plain = diebold_mariano(d, horizon, hln=False)
    assert plain["lag"] == lag
    assert plain["stat"] == pytest.approx(bartlett_t(d, lag), rel=1e-10)
    corrected = diebold_mariano(d, horizon)
    n, h = len(d), horizon
    factor = math.sqrt((n + 1 - 2 * h + h * (h - 1) / n) / n)
    assert corrected["stat"] == pytest.approx(plain["stat"] * factor, rel=1e-10)
    assert 0 < corrected["pvalue"] < 1
    # a clear difference is significant; no difference at all is no test
    assert diebold_mariano(1.0 + ar1(400, 0.3, seed=2), 8)["pvalue"] < 1e-6
    assert math.isnan(diebold_mariano(np.zeros(50), 8)["pvalue"])


def test_the_mcs_drops_a_clearly_worse_forecaster_and_keeps_two_identical_ones() -> None:
    rng = np.random.default_rng(0)
    good = np.abs(rng.standard_normal(600)) + 1.0
    losses = {
        "good": good,
        "twin": good.copy(),
        "worse": good + 0.5 + 0.1 * np.abs(rng.standard_normal(600)),
        "broken": np.full(600, np.nan),  # a baseline with no forecast: not in the comparison
    }
    mcs = model_confidence_set(losses, block_size=10)
    assert mcs["included"] == ["good", "twin"]
    assert mcs["pvalues"]["worse"] <= 0.10 < mcs["pvalues"]["good"]
    assert "broken" not in mcs["pvalues"]


def test_a_forecaster_of_absurd_losses_leaves_the_mcs_instead_of_breaking_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """arch's MCS fails on losses of wildly different scales (a damaged baseline.json gave
    one of 1e22 bp): that forecaster leaves with p 0 and the MCS runs on the rest."""
    rng = np.random.default_rng(0)
    good = np.abs(rng.standard_normal(400)) + 1.0
    losses = {
        "good": good,
        "worse": good + 0.5 + 0.1 * np.abs(rng.standard_normal(400)),
        "damaged": good + 7.5e21 * (1 + 0.01 * rng.random(400)),
    }
    with caplog.at_level("WARNING", logger="foxhunt.task"):
        mcs = model_confidence_set(losses, block_size=10)
    assert "damaged left out as the worst" in caplog.text
    assert mcs["pvalues"]["damaged"] == 0.0 and mcs["included"] == ["good"]
    assert mcs["pvalues"]["worse"] <= 0.10


def test_compare_forecasters_carries_dm_bootstrap_and_mcs_per_forecaster() -> None:
    rng = np.random.default_rng(3)
    model = np.abs(rng.standard_normal(300)) + 1.0
    days = np.repeat(np.arange(10), 30)
    out = compare_forecasters(
        {"tft": model, "same": model + 0.0, "worse": model + 1.0},
        reference="tft",
        horizon=8,
        days=days,
        resamples=200,
    )
    assert set(out["dm"]) == {"same", "worse"}
    assert out["dm"]["worse"]["pvalue"] < 0.01 and out["dm"]["worse"]["mean"] == pytest.approx(-1)
    low, high = out["dm"]["worse"]["ci95"]
    assert low == pytest.approx(-1) and high == pytest.approx(-1)
    assert out["mcs"]["block_size"] == 30  # one day of windows
    assert "worse" not in out["mcs"]["included"]


def test_kupiec_accepts_the_nominal_rate_and_rejects_double_it() -> None:
    hits = np.zeros(1000, dtype=bool)
    hits[::10] = True  # exactly 10%
    assert kupiec(hits, 0.1) == pytest.approx(1.0)
    hits[5::10] = True  # 20%
    assert kupiec(hits, 0.1) < 1e-10


def test_christoffersen_rejects_clustered_hits_not_independent_ones() -> None:
    rng = np.random.default_rng(0)
    independent = rng.random(2000) < 0.1
    clustered = np.repeat(rng.random(200) < 0.1, 10)  # hits in runs of 10
    assert christoffersen(independent) > 0.05
    assert christoffersen(clustered) < 1e-10


def test_coverage_tests_read_step_one_of_each_window() -> None:
    rng = np.random.default_rng(1)
    target = rng.standard_normal((2000, 3))
    pred = np.broadcast_to(np.array([-1.2816, 0.0, 1.2816]), (2000, 3, 3))
    out = coverage_tests(pred, target, (0.1, 0.5, 0.9))
    assert set(out) == {"0.1", "0.5", "0.9"}
    assert out["0.5"]["hit_rate"] == pytest.approx(np.mean(target[:, 0] <= 0))
    assert all(v["kupiec_p"] > 0.01 for v in out.values())
    shifted = coverage_tests(pred + 1.0, target, (0.1, 0.5, 0.9))
    assert shifted["0.5"]["kupiec_p"] < 1e-10


def test_score_carries_the_tests_and_the_table_marks_the_mcs() -> None:
    rng = np.random.default_rng(4)
    quantiles = (0.1, 0.5, 0.9)
    target = rng.normal(size=(400, 2))
    pred = np.broadcast_to(norm_levels(quantiles), (400, 2, 3)).copy()
    baselines = {
        "zero": np.zeros_like(pred),
        "same": pred.copy(),
        "wide": pred * 4.0,
        "none": np.full_like(pred, np.nan),
    }
    metrics = score(pred, target, quantiles, baselines=baselines)
    diff = metrics["differences"]
    assert set(diff["dm"]) == {"zero", "same", "wide", "none"}
    assert diff["dm"]["wide"]["pvalue"] < 0.01 and math.isnan(diff["dm"]["none"]["pvalue"])
    assert {"tft", "same"} <= set(diff["mcs"]["included"])
    assert "wide" not in diff["mcs"]["included"] and "none" not in diff["mcs"]["pvalues"]
    assert set(metrics["coverage_tests"]) == {"tft", "zero", "same", "wide"}
    assert set(metrics["coverage_tests"]["wide"]) == {"0.1", "0.5", "0.9"}
    lines = {line.split()[0]: line for line in results_table(metrics, quantiles).splitlines()}
    assert "MCS 90%" in lines["model"]
    assert " in (" in lines["same"] and " out (" in lines["wide"]


def norm_levels(quantiles: tuple[float, ...]) -> np.ndarray:
    from scipy.stats import norm

    return norm.ppf(np.asarray(quantiles))
