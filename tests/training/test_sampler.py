import pytest
import torch

from foxhunt.training.sampler import EpochBatchSampler


def batches(sampler: EpochBatchSampler) -> list[list[int]]:
    return list(iter(sampler))


def test_order_depends_on_seed_and_epoch_only() -> None:
    a = EpochBatchSampler(100, batch_size=8, seed=3)
    b = EpochBatchSampler(100, batch_size=8, seed=3)
    assert batches(a) == batches(b)
    b.set_position(epoch=1)
    assert batches(a) != batches(b)
    assert sorted(i for batch in batches(a) for i in batch) == list(range(100))


def test_resume_mid_epoch_replays_the_rest() -> None:
    full = EpochBatchSampler(100, batch_size=8, seed=1)
    full.set_position(epoch=2)
    resumed = EpochBatchSampler(100, batch_size=8, seed=1)
    resumed.set_position(epoch=2, start_batch=5)
    assert batches(resumed) == batches(full)[5:]


def test_ranks_split_each_global_batch() -> None:
    single = EpochBatchSampler(64, batch_size=8, seed=0, drop_last=True)
    ranks = [EpochBatchSampler(64, batch_size=8, seed=0, rank=r, world_size=2) for r in range(2)]
    for glob, b0, b1 in zip(batches(single), *map(batches, ranks), strict=True):
        assert sorted(b0 + b1) == sorted(glob) and len(b0) == len(b1) == 4


def test_batch_size_must_divide_among_ranks() -> None:
    with pytest.raises(ValueError, match="divisible"):
        EpochBatchSampler(10, batch_size=5, seed=0, world_size=2)


def test_state_dict_is_the_position() -> None:
    a = EpochBatchSampler(50, batch_size=8, seed=1)
    a.set_position(3, 2)
    b = EpochBatchSampler(50, batch_size=8, seed=1)
    b.load_state_dict(a.state_dict())
    assert b.state_dict() == {"epoch": 3, "start_batch": 2}
    assert batches(b) == batches(a)


def test_a_new_position_leaves_the_iteration_under_way_alone() -> None:
    sampler = EpochBatchSampler(64, batch_size=8, seed=0)
    expected = batches(sampler)
    under_way = iter(sampler)
    seen = [next(under_way)]
    sampler.set_position(0, 1)  # what the trainer does after each batch
    assert seen + list(under_way) == expected


def test_the_order_is_int32_and_the_int64_permutation() -> None:
    """4 bytes a window (issue 41's flat training peak), and the order every earlier run
    trained in: torch's int64 randperm of the same generator."""
    sampler = EpochBatchSampler(100_003, batch_size=7, seed=3)
    sampler.set_position(2)
    order = sampler.order()
    generator = torch.Generator().manual_seed(3 * 1_000_003 + 2)
    assert order.dtype == torch.int32
    assert torch.equal(order.long(), torch.randperm(100_003, generator=generator))
    assert EpochBatchSampler(5, batch_size=2, seed=0, shuffle=False).order().dtype == torch.int32
