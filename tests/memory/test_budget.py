"""The planner's choices on a synthetic cost table (numbers chosen so each branch is hit)."""

import pytest

from foxhunt.errors import ConfigError
from foxhunt.memory.budget import CostTable, SegmentCost, Working, plan_memory, predict_peak

MB = 1024 * 1024
ONE_PER_SAMPLE = Working(per_sample=1 * MB)  # working memory at every moment


def segment(name: str, saved_mb: float, kept_mb: float, seconds: float) -> SegmentCost:
    return SegmentCost(
        name=name,
        saved_bytes=saved_mb * MB,
        kept_bytes=kept_mb * MB,
        forward_seconds=seconds,
        backward=ONE_PER_SAMPLE,
    )


TABLE = CostTable(
    fixed_bytes=100 * MB,
    other_saved_bytes=1 * MB,
    forward=ONE_PER_SAMPLE,
    segments=(  # forward order
        segment("static_vsn", 0.1, 0.1, 0.0),  # saves nothing: never chosen
        segment("past_vsn", 10, 1, 0.009),  # saves most, and cheaply per byte -> first choice
        segment("lstm_encoder", 3, 1, 0.02),  # saves little for its time -> last choice
        segment("fusion_decoder", 4, 1, 0.006),
    ),
)


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


# past_vsn's backward needs 6 MB whatever the batch (block buffers, its weights' gradients),
# 2 MB per sample (its inputs' gradients), and 3 MB more while micro-batches accumulate (the
# earlier micro-batches' gradients of the segments still to come); the forward moment holds
# all 4 MB of gradients then
WORKING = CostTable(
    fixed_bytes=10 * MB,
    other_saved_bytes=1 * MB,
    batch_bytes=0.5 * MB,
    forward=Working(fixed=2 * MB, per_sample=1 * MB, accumulating=4 * MB),
    segments=(
        SegmentCost(name="past_vsn", saved_bytes=9 * MB, kept_bytes=1 * MB, forward_seconds=0.01,
                    backward=Working(fixed=6 * MB, per_sample=2 * MB, accumulating=3 * MB)),
    ),
)  # fmt: skip


def test_a_segments_backward_can_set_the_peak() -> None:
    # batch 8: forward 8 x (1 + 9 + 1) + 2 = 90 MB; past_vsn's backward 8 x (1 + 9 + 2) + 6 = 102
    assert predict_peak(WORKING, (), 8) == (10 + 102) * MB
    # checkpointing past_vsn shrinks the forward moment, not its own backward (recomputed)
    assert predict_peak(WORKING, ("past_vsn",), 8) == (10 + 102) * MB
    assert predict_peak(WORKING, ("past_vsn",), 2) == (10 + 2 * 12 + 6) * MB


def test_accumulation_holds_the_gradients_and_the_whole_batch() -> None:
    # micro-batches of 4 of 8: past_vsn's backward 4 x 12 + 6 + 3, the other 4 samples 2 MB
    assert predict_peak(WORKING, (), 4, batch_size=8) == (10 + 57 + 2) * MB
    assert predict_peak(WORKING, (), 8, batch_size=8) == predict_peak(WORKING, (), 8)
    # 100 MB: nothing fits at batch 8; micro-batches of 7 need 10 + 7 x 12 + 9 + 0.5 = 103.5,
    # of 6: 10 + 81 + 1 = 92, and checkpointing past_vsn is pruned: it does not lower the peak
    plan = plan_memory(WORKING, budget_bytes=100 * MB, batch_size=8)
    assert (plan.checkpointing, plan.micro_batch_size, plan.accumulation_steps) == ((), 6, 2)
    assert plan.predicted_peak_bytes == 92 * MB
