"""Windows as views into shared tensors, gathered a whole batch at a time."""

from __future__ import annotations

import copy as _copy
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
import pandas as pd
import torch
from torch import Tensor
from torch.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
)

from foxhunt.batch import TFTBatch
from foxhunt.data.mapped import MappedFile, as_file
from foxhunt.data.volatility import BaselineRows


def baseline_tensors(rows: BaselineRows) -> tuple[Tensor, Tensor, Tensor | None]:
    """(base volatility, profile, volatility signal) of every row, as the windows hold them."""
    signal = None if rows.signal is None else torch.from_numpy(rows.signal.astype(np.float32))
    as_tensor = torch.from_numpy
    return (
        as_tensor(rows.volatility.astype(np.float32)),
        as_tensor(rows.profile.astype(np.float32)),
        signal,
    )


def gather_rows(values: Tensor | np.ndarray, rows: Tensor) -> Tensor:
    """values[rows]: `index_select` on a tensor; on a numpy array (a feature store's
    read-only memory map) a numpy gather of just those rows, wrapped without a copy."""
    if isinstance(values, Tensor):
        return values.index_select(0, rows)
    rows_read = np.take(values, rows.numpy(), axis=0)
    # a float16 store (DataConfig.feature_store_dtype): the model reads float32
    return torch.from_numpy(np.asarray(rows_read, dtype=np.float32))


class WindowDataset(Dataset[TFTBatch]):
    """All valid windows of one split, indexed into tensors shared by every split.

    Storage, one row per bar of every symbol (sorted by symbol then time):
        past_values   [N, P] float32  scaled observed inputs, then known inputs
        future_values [N, F] float32  a view of the known columns of past_values
        target_values [N] float32     scaled log return of each bar (None: no targets)
        symbol_codes  [N] int64       encoded symbol of each bar
        base_volatility [N] float32   baseline volatility known at each bar (None: no scale)
        profile       [N] float32     intraday relative volatility of each bar
        vol_signal    [N] float32     log(fast / base volatility) at each bar (None: none)
        static_values [S, K] float32  static inputs of each symbol code (None: none)
        range_values  [N] float32     log of each bar's log range (NaN: none; None: not kept)
    and `anchors` [W] int64, the row of the last observed bar of each window. `past_values`
    may instead be a read-only numpy [N, P] array, a feature store's memory map
    (data/feature_store.py): only the rows of each batch are then read, by `gather_rows`. Window i is
    rows anchors[i]-L+1 .. anchors[i] (past) and anchors[i]+1 .. anchors[i]+H (future,
    target); nothing is copied per window. The baseline's standard deviation of each target
    is `scale` = base_volatility[anchor] * profile[anchor + h], in scaled target units.
    """

    def __init__(
        self,
        *,
        past_values: Tensor | np.ndarray,
        num_observed: int,
        target_values: Tensor | None,
        symbol_codes: Tensor,
        anchors: Tensor,
        lookback: int,
        horizon: int,
        timestamps: pd.DatetimeIndex,
        symbols: Sequence[str],
        base_volatility: Tensor | None = None,
        profile: Tensor | None = None,
        vol_signal: Tensor | None = None,
        static_values: Tensor | None = None,
        range_values: Tensor | None = None,
    ) -> None:
        if (base_volatility is None) != (profile is None):
            raise ValueError("give base_volatility and profile together, or neither")
        self.past_values = past_values
        self.future_values = past_values[:, num_observed:]
        self.target_values = target_values
        self.symbol_codes = symbol_codes
        self.anchors = anchors
        self.lookback = lookback
        self.horizon = horizon
        self.timestamps = timestamps  # [N] time of each row
        self.symbols = tuple(symbols)  # code -> name
        self.base_volatility = base_volatility
        self.profile = profile
        self.vol_signal = vol_signal
        self.static_values = static_values
        self.range_values = range_values
        self._past_offsets = torch.arange(-lookback + 1, 1)
        self._future_offsets = torch.arange(1, horizon + 1)

    def __getstate__(self) -> dict[str, Any]:
        """A feature store's memory maps travel as their files (a DataLoader worker started
        by spawn or forkserver maps them again): pickled, a numpy memmap would copy the
        matrix, and a mapped vector or index every bar's values (data/mapped.py)."""
        state = dict(self.__dict__)
        for name, value in state.items():
            if (file := as_file(value)) is not None:
                state[name] = file
        values = self.past_values
        if isinstance(values, np.memmap) and values.filename is not None:
            known = self.future_values.shape[1]
            state["past_values"] = ("memmap", values.filename, values.offset, values.shape, known)
            state["future_values"] = values.dtype.str
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            if isinstance(value, MappedFile):
                state[name] = value.open()
        if isinstance(state["past_values"], tuple):
            _, filename, offset, shape, known = state["past_values"]
            values = np.memmap(filename, state["future_values"], "r", offset, tuple(shape))
            state["past_values"], state["future_values"] = values, values[:, shape[1] - known :]
        self.__dict__.update(state)

    def with_baseline(self, rows: BaselineRows) -> WindowDataset:
        """These windows with another base volatility behind their scale; the inputs (already
        scaled, perhaps in place over the encoded bars) are shared, not rebuilt."""
        copy = _copy.copy(self)
        copy.base_volatility, copy.profile, copy.vol_signal = baseline_tensors(rows)
        return copy

    def __len__(self) -> int:
        return len(self.anchors)

    def __getitem__(self, index: int) -> TFTBatch:
        """Window `index` as a batch of one (shapes [1, ...])."""
        if not -len(self) <= index < len(self):
            raise IndexError(f"window {index} out of range for {len(self)} windows")
        return self.__getitems__([index % len(self)])

    def __getitems__(self, indices: Sequence[int]) -> TFTBatch:
        """Windows `indices` gathered at once: rows anchor[:, None] + arange, one gather each."""
        anchor = self.anchors.index_select(0, torch.as_tensor(indices, dtype=torch.int64))
        batch, lookback, horizon = len(anchor), self.lookback, self.horizon
        # index_select on flat row lists: the cheapest gather torch has for this on CPU
        past_rows = (anchor[:, None] + self._past_offsets).view(-1)  # [B*L]
        future_rows = (anchor[:, None] + self._future_offsets).view(-1)  # [B*H]
        past = gather_rows(self.past_values, past_rows).view(batch, lookback, -1)
        future = self._future_rows(future_rows).view(batch, horizon, -1)
        target = target_range = None
        if self.target_values is not None:
            target = self.target_values.index_select(0, future_rows).view(batch, horizon)
        if self.range_values is not None:
            target_range = self.range_values.index_select(0, future_rows).view(batch, horizon)
        scale = None
        if self.base_volatility is not None and self.profile is not None:
            profile = self.profile.index_select(0, future_rows).view(batch, horizon)
            scale = self.base_volatility.index_select(0, anchor)[:, None] * profile
        signal = None
        if self.vol_signal is not None:
            signal = self.vol_signal.index_select(0, anchor)[:, None]
        codes = self.symbol_codes.index_select(0, anchor)
        static = torch.zeros(batch, 0)
        if self.static_values is not None:
            static = self.static_values.index_select(0, codes)  # [B, K]
        return TFTBatch(
            static=static,
            past=past,  # [B, L, P]
            future=future,  # [B, H, F]
            target=target,  # [B, H]
            static_categorical=codes[:, None],  # [B, 1]
            anchor=anchor,  # [B]
            scale=scale,  # [B, H]
            vol_signal=signal,  # [B, 1]
            target_range=target_range,  # [B, H]
        )

    def _future_rows(self, rows: Tensor) -> Tensor:
        """[R, F] the known inputs of `rows`. From a memory map whole rows are read and then
        sliced: numpy's gather of a column slice (a strided view) is tens of times slower."""
        if isinstance(self.past_values, Tensor):
            return gather_rows(self.future_values, rows)
        known = self.future_values.shape[1]
        return gather_rows(self.past_values, rows)[
            :, self.past_values.shape[1] - known :
        ].contiguous()

    def input_column(self, column: int) -> np.ndarray:
        """[N] input `column` of every row, a copy (read through a store's memory map)."""
        values = self.past_values
        if isinstance(values, Tensor):
            return values[:, column].numpy().copy()
        return np.array(values[:, column], dtype=np.float32)

    def timestamps_for(self, anchor: int) -> pd.DatetimeIndex:
        """Times of the H bars forecast from anchor row `anchor` (rows anchor+1 .. anchor+H)."""
        return self.timestamps[int(anchor) + 1 : int(anchor) + 1 + self.horizon]


def collate_windows(batch: TFTBatch) -> TFTBatch:
    """The dataset gathers whole batches in `__getitems__`; nothing is left to collate."""
    return batch


def make_loader(
    dataset: Dataset[TFTBatch],
    *,
    batch_size: int = 512,
    shuffle: bool = False,
    seed: int = 0,
    drop_last: bool = False,
    sampler: Sampler[int] | None = None,
    batch_sampler: Sampler[list[int]] | None = None,
    num_workers: int = 0,
    pin_memory: bool = False,
) -> DataLoader[TFTBatch]:
    """Batches of windows; each batch is one `__getitems__` call. The one loader factory.

    The shuffle order comes from a torch.Generator seeded with `seed` (so it never touches
    the global RNG: a resumed run sees the same dropout masks as an uninterrupted one). A
    `sampler` of window indices (e.g. DistributedSampler) replaces the built-in
    random/sequential order; it is still grouped into `batch_size` batches. A
    `batch_sampler` (the trainer's resumable EpochBatchSampler) replaces all of that.
    `pin_memory` (training on CUDA) hands each batch over in page-locked memory
    (`TFTBatch.pin_memory`), which the trainer then copies to the device asynchronously.
    """
    generator = torch.Generator().manual_seed(seed)
    if sampler is None:
        sampler = (
            RandomSampler(dataset, generator=generator)  # type: ignore[arg-type]
            if shuffle
            else SequentialSampler(dataset)  # type: ignore[arg-type]
        )
    return DataLoader(
        dataset,
        batch_sampler=batch_sampler or BatchSampler(sampler, batch_size, drop_last),
        collate_fn=cast("Callable[[list[Any]], Any]", collate_windows),  # gets a TFTBatch
        num_workers=num_workers,
        generator=generator,
        persistent_workers=num_workers > 0,
        pin_memory=pin_memory,
    )
