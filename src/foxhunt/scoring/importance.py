"""Which inputs the variable selection networks chose (Lim et al. 2021, section 7.1): each
network's mean weight per input over the test windows, ranked, and summed per feature group
(data/features/: a group's inputs share one formula over several windows), so that a run with
hundreds of inputs says which kinds of information the model leaned on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from foxhunt.data import FeatureSchema, Preprocessor

KINDS = ("static", "past", "future")


def input_groups(preprocessor: Preprocessor) -> dict[str, str]:
    """{input name: its feature group} of a run's inputs (the symbol embedding: "symbol")."""
    groups = {column.name: column.group for column in preprocessor.spec.columns()}
    for name in preprocessor.schema.static_categorical_names:
        groups[name] = "symbol"
    return groups


def kind_names(schema: FeatureSchema) -> dict[str, tuple[str, ...]]:
    """The input names of each selection network, in the order of its weights."""
    return {
        "static": (*schema.static_names, *schema.static_categorical_names),
        "past": schema.past_names,
        "future": schema.future_names,
    }


def rank_importance(
    names: Mapping[str, Sequence[str]],
    weights: Mapping[str, np.ndarray],
    groups: Mapping[str, str],
) -> dict[str, Any]:
    """Per network ("static", "past", "future"): its inputs by falling mean weight, and its
    feature groups by falling summed weight (with how many inputs each holds)."""
    out: dict[str, Any] = {}
    for kind in KINDS:
        kind_inputs, w = list(names.get(kind, ())), np.asarray(weights.get(kind, []), float)
        if not kind_inputs:
            continue
        if len(w) != len(kind_inputs):
            raise ValueError(f"{kind}: {len(w)} weights for {len(kind_inputs)} inputs")
        order = np.argsort(-w, kind="stable")
        inputs = [
            {
                "name": kind_inputs[i],
                "group": groups.get(kind_inputs[i], "other"),
                "weight": float(w[i]),
            }
            for i in order
        ]
        summed: dict[str, list[float]] = {}
        for row in inputs:
            summed.setdefault(row["group"], []).append(row["weight"])
        by_group = sorted(summed.items(), key=lambda item: -sum(item[1]))
        out[kind] = {
            "inputs": inputs,
            "groups": [
                {"group": g, "weight": float(sum(v)), "inputs": len(v)} for g, v in by_group
            ],
        }
    return out


def run_importance(preprocessor: Preprocessor, weights: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """`rank_importance` of a run's inputs (metrics.json's "importance")."""
    return rank_importance(kind_names(preprocessor.schema), weights, input_groups(preprocessor))
