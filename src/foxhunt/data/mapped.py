"""A feature store entry's [N] vectors and times, memory-mapped, that travel as their file
when pickled: a DataLoader worker started by spawn or forkserver (macOS; Linux's default from
Python 3.14) maps the file again instead of receiving a copy of every bar's values."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import Tensor

#: the maps behind `mapped_vector`'s tensors, by data address (weak: gone with the tensor)
_MAPS: weakref.WeakValueDictionary[int, np.memmap] = weakref.WeakValueDictionary()


def mapped_vector(file: Path) -> Tensor:
    """`file` (.npy) mapped copy-on-write as a tensor (writable for torch; the file never
    changes)."""
    array = np.load(file, mmap_mode="c")
    _MAPS[array.ctypes.data] = array
    return torch.from_numpy(array)


def mapped_times(file: Path | str, dtype: pd.DatetimeTZDtype, name: Any) -> pd.DatetimeIndex:
    """The tz-aware index over `file`'s UTC integers (epochs in the dtype's unit): a view of
    the map, nothing copied."""
    utc = np.load(file, mmap_mode="r")
    _MAPS[utc.ctypes.data] = utc
    return pd.DatetimeIndex(utc, dtype=dtype, name=name, copy=False)


@dataclass(frozen=True)
class MappedFile:
    """What a pickled mapped vector or index holds: its file, read back on unpickling."""

    file: str
    dtype: pd.DatetimeTZDtype | None = None  # an index's
    name: Any = None

    def open(self) -> Tensor | pd.DatetimeIndex:
        if self.dtype is not None:
            return mapped_times(self.file, self.dtype, self.name)
        return mapped_vector(Path(self.file))


def as_file(value: object) -> MappedFile | None:
    """`value` as its file when it is a whole mapped vector or index; None otherwise (a
    tensor made in memory, or one that replaced a mapped one, pickles as it is)."""
    if isinstance(value, Tensor) and value.is_contiguous():
        file = _whole_map(value.data_ptr(), value.numel())
        return None if file is None else MappedFile(file)
    if isinstance(value, pd.DatetimeIndex) and isinstance(value.dtype, pd.DatetimeTZDtype):
        utc = value.asi8  # a view of the map when it is one
        file = _whole_map(utc.ctypes.data, len(value)) if utc.strides == (8,) else None
        return None if file is None else MappedFile(file, value.dtype, value.name)
    return None


def _whole_map(address: int, size: int) -> str | None:
    """The file of the map that starts at `address` and holds `size` values, if any."""
    array = _MAPS.get(address)
    if array is None or array.size != size or array.filename is None:
        return None
    return str(array.filename)
