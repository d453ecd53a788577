"""The planner's choices on a synthetic cost table (numbers chosen so each branch is hit)."""

import pytest

from foxhunt.errors import ConfigError
from foxhunt.memory.budget import CostTable, SegmentCost, plan_memory, predict_peak

MB = 1024 * 1024

TABLE = CostTable(
    fixed_bytes=100 * MB,
    other_saved_bytes=1 * MB,
    transient_bytes=1 * MB,
    segments=(  # forward order
        # saves nothing: never chosen
        SegmentCost(name="static_vsn", saved_bytes=0.1 * MB, kept_bytes=0.1 * MB, forward_seconds=0.0),
        # past_vsn: saves most, and cheaply per byte -> first choice
        SegmentCost(name="past_vsn", saved_bytes=10 * MB, kept_bytes=1 * MB, forward_seconds=0.009),
        # lstm: saves little for its time -> last choice
        SegmentCost(name="lstm_encoder", saved_bytes=3 * MB, kept_bytes=1 * MB, forward_seconds=0.02),
        SegmentCost(name="fusion_decoder", saved_bytes=4 * MB, kept_bytes=1 * MB, forward_seconds=0.006),
    ),
)  # fmt: skip


def test_plain_when_it_fits() -> None:
    plain = predict_peak(TABLE, (), 8)
    assert plain == pytest.approx(100 * MB + 8 * (1 + 0.1 + 10 + 3 + 4 + 1) * MB)
    plan = plan_memory(TABLE, budget_bytes=plain, batch_size=8)
    assert plan.checkpointing == () and plan.accumulation_steps == 1
    assert plan.policy == "none"


def test_cheapest_segment_per_byte_first() -> None:
    plain = predict_peak(TABLE, (), 8)
    plan = plan_memory(TABLE, budget_bytes=plain - 1, batch_size=8)
    assert plan.checkpointing == ("past_vsn",)
    # end of forward: 1 + 0.1 + 1 (kept) + 3 + 4 = 9.1 MB/sample; recomputing past_vsn in
    # backward, when the later segments are freed: 1 + 0.1 + 10 = 11.1 MB/sample: the peak
    expected = 100 * MB + 8 * (11.1 + 1) * MB
    assert plan.predicted_peak_bytes == pytest.approx(expected)


BALANCED = CostTable(
    fixed_bytes=0,
    other_saved_bytes=1 * MB,
    transient_bytes=0,
    segments=tuple(
        SegmentCost(name=name, saved_bytes=5 * MB, kept_bytes=1 * MB, forward_seconds=t)
        for name, t in (("past_vsn", 0.001), ("lstm_encoder", 0.01), ("fusion_decoder", 0.002))
    ),
)


def test_adds_segments_in_cost_order_then_micro_batches() -> None:
    # per sample: plain 16 MB; past_vsn alone 12; with fusion_decoder still 12 (recomputing
    # the last segment while lstm_encoder holds its 5 MB); with lstm_encoder 8
    assert predict_peak(BALANCED, (), 1) == 16 * MB
    assert predict_peak(BALANCED, ("past_vsn",), 1) == 12 * MB
    assert predict_peak(BALANCED, ("past_vsn", "fusion_decoder"), 1) == 12 * MB
    assert predict_peak(BALANCED, ("past_vsn", "lstm_encoder"), 1) == 8 * MB
    assert predict_peak(BALANCED, ("past_vsn", "lstm_encoder", "fusion_decoder"), 1) == 8 * MB
    plan = plan_memory(BALANCED, budget_bytes=8 * 8 * MB, batch_size=8)
    # greedy reaches all three; fusion_decoder's recompute is then dropped as unneeded
    assert plan.checkpointing == ("past_vsn", "lstm_encoder")
    assert plan.accumulation_steps == 1
    # nothing more to checkpoint helps below 8 MB/sample: split the batch instead
    plan = plan_memory(BALANCED, budget_bytes=3 * 8 * MB, batch_size=8)
    assert plan.checkpointing == ("past_vsn", "lstm_encoder")
    assert plan.micro_batch_size == 3 and plan.accumulation_steps == 3
    assert "accumulated" in plan.describe()


def test_impossible_budget_names_the_minimum() -> None:
    with pytest.raises(ConfigError, match="no plan fits a 50 MB budget"):
        plan_memory(TABLE, budget_bytes=50 * MB, batch_size=8)
