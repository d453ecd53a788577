"""A run on planted bars scores the oracle; a run whose gate kept the initial weights says so."""

from __future__ import annotations

import dataclasses

import numpy as np

from foxhunt.report.html import render
from foxhunt.scoring.oracle import shares_by_symbol
from foxhunt.task import results_table
from foxhunt.task.scoring import KEPT_INITIAL
from helpers import TINY_DATA, tiny_job, tiny_run, tiny_training


def test_a_run_on_the_built_in_planted_bars_scores_the_oracle_beside_the_baselines(tmp_path):
    data = dataclasses.replace(TINY_DATA, synthetic_market="planted")
    result = tiny_job(tmp_path / "run", tiny_run(data=data))
    oracle = result.metrics["oracle"]
    rows = oracle["metrics"]
    assert set(rows) == {"oracle_bars", "oracle_latent"}
    # the oracle that knows the regime is the floor; the reachable one beats every baseline
    # that is available (on these few test windows, within a margin for the sampling noise)
    bound = rows["oracle_bars"]["mean_quantile_loss"]
    assert rows["oracle_latent"]["mean_quantile_loss"] <= bound * 1.01
    assert bound < oracle["best_baseline_loss"]
    tft = result.metrics["test"]["mean_quantile_loss"]
    share = (oracle["best_baseline_loss"] - tft) / (oracle["best_baseline_loss"] - bound)
    assert np.isclose(oracle["gap_closed"], share)
    low, high = oracle["gap_closed_ci95"]
    assert low < share < high and f"interval {100 * low:.0f}% to" in result.table
    assert "oracle_bars" in result.table and "planted market: the TFT closed" in result.table


def test_on_several_symbols_the_gap_is_also_closed_symbol_by_symbol(tmp_path):
    """A driver planted on one symbol (the cross-instrument lead) shows in its own share;
    the shares weighted by each symbol's gap are the overall one."""
    data = dataclasses.replace(
        TINY_DATA, synthetic_market="planted", synthetic_symbols=("ES", "NQ")
    )
    result = tiny_job(tmp_path / "run", tiny_run(data=data))
    oracle = result.metrics["oracle"]
    each = oracle["gap_closed_by_symbol"]
    assert set(each) == {"ES", "NQ"}
    assert f"by symbol ES {100 * each['ES']:.0f}%, NQ {100 * each['NQ']:.0f}%" in result.table
    importance = result.metrics["importance_by_symbol"]  # each symbol's windows' weights
    assert set(importance) == {"ES", "NQ"} and importance["ES"] != importance["NQ"]
    assert {r["name"] for r in importance["NQ"]["past"]["inputs"]} == {
        r["name"] for r in result.metrics["importance"]["past"]["inputs"]
    }
    tft = np.array([1.0, 2.0, 3.0, 4.0])
    best, bound = tft + np.array([0.5, 0.5, 1.0, -1.0]), tft - np.array([0.5, 0.5, 1.0, 2.0])
    names = np.array(["ES", "ES", "NQ", "NQ"], dtype=object)
    shares = shares_by_symbol(tft, best, bound, names)
    assert shares == {"ES": 0.5, "NQ": 0.0}  # ES: 1 of its gap of 2; NQ: 0 of its gap of 3
    assert np.isclose(
        (shares["ES"] * 2 + shares["NQ"] * 3) / 5, (best - tft).sum() / (best - bound).sum()
    )


def test_a_run_on_garch_bars_has_no_oracle(tmp_path):
    result = tiny_job(tmp_path / "run", tiny_run())
    assert "oracle" not in result.metrics and "oracle_bars" not in result.table


def test_when_the_gate_keeps_the_initial_weights_the_table_and_report_say_so(tmp_path):
    """An initial confidence no trained epoch can reach (0.999 on a few windows) keeps the
    initial weights: metrics.json, the printed table and the report's panels say so."""
    training = tiny_training(initial_confidence=0.999, validate_initial=True)
    result = tiny_job(tmp_path / "run", tiny_run(training=training))
    assert result.metrics["training"]["kept_initial"] is True
    assert KEPT_INITIAL in result.table
    assert KEPT_INITIAL in results_table(result.metrics, (0.1, 0.5, 0.9))


def test_a_trained_epoch_that_replaced_them_gets_no_such_line(tmp_path):
    training = tiny_training(initial_confidence=0.0, validate_initial=False)
    result = tiny_job(tmp_path / "run", tiny_run(training=training))
    assert result.metrics["training"]["kept_initial"] is False
    assert KEPT_INITIAL not in result.table


def test_the_report_labels_the_untrained_panels():
    from pathlib import Path
    from types import SimpleNamespace

    metrics = {"training": {"kept_initial": True}}
    data = SimpleNamespace(metrics=metrics, quantiles=(0.1, 0.5, 0.9), run_dir=Path("run"))
    page = render(data, {"importance": b"x", "attention": b"x", "calibration": b"x"})  # type: ignore[arg-type]
    assert page.count("Of the untrained network") == 2
    metrics["training"]["kept_initial"] = False
    assert "Of the untrained network" not in render(data, {"importance": b"x"})  # type: ignore[arg-type]
