"""Epoch order: a seeded permutation per epoch that can start mid-epoch and be sharded by rank.

The order depends only on (seed, epoch), never on global RNG state, so a resumed run replays
exactly the batches the interrupted one would have seen, and every DDP rank agrees on it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import torch
from torch.utils.data import Sampler


class EpochBatchSampler(Sampler[list[int]]):
    """Yields lists of window indices: global batch `i` is perm[i*B:(i+1)*B].

    With `world_size > 1`, rank r takes every world_size-th element of each global batch, so
    the ranks together see exactly the global batch a single process would.
    """

    def __init__(
        self,
        num_windows: int,
        *,
        batch_size: int,
        seed: int,
        shuffle: bool = True,
        drop_last: bool = False,
        rank: int = 0,
        world_size: int = 1,
    ) -> None:
        if batch_size % world_size:
            raise ValueError(
                f"batch_size {batch_size} must be divisible by the number of processes {world_size}"
            )
        self.num_windows = num_windows
        self.batch_size = batch_size
        self.seed = seed
        self.shuffle = shuffle
        self.drop_last = drop_last or world_size > 1  # ranks must step in lockstep
        self.rank = rank
        self.world_size = world_size
        self.epoch = 0
        self.start_batch = 0

    def set_position(self, epoch: int, start_batch: int = 0) -> None:
        """Where the next iteration starts; one already under way keeps its own start."""
        self.epoch = epoch
        self.start_batch = start_batch

    def state_dict(self) -> dict[str, int]:
        """The position; the order itself follows from (seed, epoch), which the config holds."""
        return {"epoch": self.epoch, "start_batch": self.start_batch}

    def load_state_dict(self, state: Mapping[str, int]) -> None:
        self.set_position(int(state["epoch"]), int(state["start_batch"]))

    def order(self) -> torch.Tensor:
        # int32 where it fits: 4 bytes a window, not 8, and the same order (the one
        # Fisher-Yates draws whatever the dtype; tests/training/test_sampler.py)
        wide = self.num_windows > torch.iinfo(torch.int32).max
        dtype = torch.int64 if wide else torch.int32
        if not self.shuffle:
            return torch.arange(self.num_windows, dtype=dtype)
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        return torch.randperm(self.num_windows, generator=generator, dtype=dtype)

    def __len__(self) -> int:
        full, rest = divmod(self.num_windows, self.batch_size)
        return full if self.drop_last or rest == 0 else full + 1

    def __iter__(self) -> Iterator[list[int]]:
        order = self.order()
        for i in range(self.start_batch, len(self)):
            batch = order[i * self.batch_size : (i + 1) * self.batch_size]
            yield batch[self.rank :: self.world_size].tolist()
