"""The inputs ranked by the variable selection networks' weights, per input and per feature
group: the ranking itself, and what a trained run writes to metrics.json."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from foxhunt.runs import METRICS_FILE
from foxhunt.scoring import rank_importance
from foxhunt.scoring.importance import input_groups, kind_names
from foxhunt.serving import load_run
from foxhunt.training.inference import mean_selection_weights
from helpers.configs import TINY_DATA, tiny_run, tiny_training
from helpers.jobs import tiny_job


def test_inputs_and_groups_are_ranked_by_falling_weight() -> None:
    names = {"past": ("r_1", "r_3", "vol_12", "hour"), "future": ()}
    weights = {"past": np.array([0.1, 0.2, 0.6, 0.1])}
    groups = {"r_1": "returns", "r_3": "returns", "vol_12": "realized"}
    ranked = rank_importance(names, weights, groups)
    assert set(ranked) == {"past"}  # no future inputs: no entry
    assert [row["name"] for row in ranked["past"]["inputs"]] == ["vol_12", "r_3", "r_1", "hour"]
    assert ranked["past"]["groups"] == [
        {"group": "realized", "weight": pytest.approx(0.6), "inputs": 1},
        {"group": "returns", "weight": pytest.approx(0.3), "inputs": 2},
        {"group": "other", "weight": pytest.approx(0.1), "inputs": 1},  # not in any group
    ]
    with pytest.raises(ValueError, match="past: 3 weights for 4 inputs"):
        rank_importance(names, {"past": np.ones(3)}, groups)


@pytest.fixture(scope="module")
def library_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny run with two feature groups beside today's inputs."""
    folder = tmp_path_factory.mktemp("importance") / "run"
    run = tiny_run(
        training=tiny_training(epochs=1, max_steps_per_epoch=2),
        data=replace(TINY_DATA, feature_groups=("returns:3/6", "ranges:4")),
    )
    tiny_job(folder, run)
    return folder


def test_a_run_writes_every_input_ranked_with_its_group(library_run: Path) -> None:
    importance = json.loads((library_run / METRICS_FILE).read_text())["importance"]
    loaded = load_run(library_run)
    names = kind_names(loaded.preprocessor.schema)
    groups = input_groups(loaded.preprocessor)
    for kind, block in importance.items():
        inputs = block["inputs"]
        assert sorted(row["name"] for row in inputs) == sorted(names[kind])
        assert all(row["group"] == groups[row["name"]] for row in inputs)
        weights = [row["weight"] for row in inputs]
        assert weights == sorted(weights, reverse=True)
        assert sum(weights) == pytest.approx(1.0, abs=1e-5)  # each network's softmax
        assert sum(g["inputs"] for g in block["groups"]) == len(inputs)
        assert sum(g["weight"] for g in block["groups"]) == pytest.approx(sum(weights))
    past_groups = {g["group"] for g in importance["past"]["groups"]}
    assert {"base", "returns", "ranges"} <= past_groups


def test_the_ranking_is_the_models_mean_selection_weights(library_run: Path) -> None:
    """Recomputed from the saved model on the run's own test windows: the same weights."""
    from foxhunt.data import prepare_data

    loaded = load_run(library_run)
    data = prepare_data(loaded.config.data, preprocessor=loaded.preprocessor)
    weights = mean_selection_weights(loaded.model, data.test)
    written = json.loads((library_run / METRICS_FILE).read_text())["importance"]["past"]
    by_name = {row["name"]: row["weight"] for row in written["inputs"]}
    names = kind_names(loaded.preprocessor.schema)["past"]
    np.testing.assert_allclose([by_name[n] for n in names], weights["past"], rtol=1e-6)


def test_the_selection_average_by_symbol_is_each_symbols_windows_mean() -> None:
    """Per-symbol means over batches that cut across symbols: each the mean of its windows,
    and their window-weighted mean the pooled one (a driver of one symbol shows there)."""
    from types import SimpleNamespace

    import torch

    from foxhunt.training.inference import SelectionAverage

    rng = np.random.default_rng(0)
    past = rng.random((10, 4, 3))  # [N, L, P]
    static, future = rng.random((10, 2)), rng.random((10, 5, 2))
    labels = np.array(["ES"] * 3 + ["NQ"] * 5 + ["ES"] * 2, dtype=object)
    average = SelectionAverage(labels)
    for lo, hi in ((0, 4), (4, 9), (9, 10)):  # batches across the symbols' boundaries
        out = SimpleNamespace(
            quantiles=torch.zeros(hi - lo, 1, 1),
            static_weights=torch.from_numpy(static[lo:hi]),
            past_weights=torch.from_numpy(past[lo:hi]),
            future_weights=torch.from_numpy(future[lo:hi]),
        )
        average(out)
    each = average.means_by_label()
    assert list(each) == ["ES", "NQ"]
    for name in ("ES", "NQ"):
        mine = labels == name
        np.testing.assert_allclose(each[name]["past"], past[mine].mean(1).mean(0))
        np.testing.assert_allclose(each[name]["static"], static[mine].mean(0))
    pooled = (5 * each["ES"]["future"] + 5 * each["NQ"]["future"]) / 10
    np.testing.assert_allclose(average.means()["future"], pooled)
    np.testing.assert_allclose(average.means()["future"], future.mean(1).mean(0))
    assert SelectionAverage().means_by_label() == {}
