"""Scalers and encoders fitted on training rows only; their state is plain JSON."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from foxhunt.errors import DataError

#: Columns whose training std is below this are left unscaled (std 1), only centered.
STD_FLOOR = 1e-12
#: Rows scaled at a time in place: bounds the float64 temporary to a few MB.
_BLOCK_ROWS = 1 << 14


@dataclass(frozen=True, eq=False)
class StandardScaler:
    """Per-column (x - mean) / std with float64 statistics, one set per symbol.

    Instruments differ in price level, tick, volatility and volume (ZN moves a fifth of CL),
    so each symbol's inputs are standardized with its own training statistics: mean and std
    are [S, P], row s for symbol code s. With one symbol they are [P], the form of runs saved
    before per-symbol sets (whose one set serves every symbol, as it did).
    """

    names: tuple[str, ...]
    mean: np.ndarray  # [S, P] float64, or [P]: one set shared by every symbol
    std: np.ndarray  # as mean, >= STD_FLOOR

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StandardScaler):
            return NotImplemented
        same = np.array_equal(self.mean, other.mean) and np.array_equal(self.std, other.std)
        return self.names == other.names and same

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def fit(
        cls,
        names: Sequence[str],
        values: np.ndarray,
        codes: np.ndarray | None = None,
        groups: int = 1,
        *,
        rows: np.ndarray | None = None,
    ) -> StandardScaler:
        """Statistics of `values` [N, P] at `rows` ([N] bool, which must select the finite
        training rows; None: every row), per symbol code `codes` [N] in 0 .. groups-1 (None:
        all one symbol). Only one symbol's rows are copied at a time, never all the training
        rows. A symbol without training rows (it trades only later) gets the statistics of
        all symbols together (a new run refuses such a symbol before: data/fit.py)."""
        rows = np.ones(len(values), dtype=bool) if rows is None else rows
        if not rows.any():
            raise DataError("no finite training rows to fit the input scaler on; add more bars")
        codes = np.zeros(len(values), dtype=np.int64) if codes is None else codes
        mean = np.empty((groups, values.shape[1]))
        std = np.empty_like(mean)
        for g in range(groups):
            mine = rows & (codes == g) if groups > 1 else rows
            picked = values[mine if mine.any() else rows]
            mean[g] = picked.mean(axis=0, dtype=np.float64)
            std[g] = picked.std(axis=0, dtype=np.float64)
            del picked
        return cls.from_moments(names, mean, std)

    @classmethod
    def from_moments(
        cls, names: Sequence[str], mean: np.ndarray, std: np.ndarray
    ) -> StandardScaler:
        """The scaler of each symbol's [G, P] training mean and std (a std under STD_FLOOR
        leaves its column unscaled)."""
        std = np.where(std > STD_FLOOR, std, 1.0)
        if len(mean) == 1:  # one symbol: one [P] set, as runs saved before per-symbol sets hold
            return cls(tuple(names), mean[0], std[0])
        return cls(tuple(names), mean, std)

    def transform(
        self, values: np.ndarray, columns: slice = slice(None), codes: np.ndarray | None = None
    ) -> np.ndarray:
        """Scaled float32 copy of `values` [..., len(columns)]; `codes` [...] is the symbol
        code of each row (needed unless one set of statistics serves every symbol)."""
        mean, std = self.mean[..., columns], self.std[..., columns]
        if mean.ndim == 1:
            return ((values - mean) / std).astype(np.float32)
        if codes is None:
            if len(mean) > 1:
                raise ValueError("a per-symbol scaler needs the rows' symbol codes")
            codes = np.zeros(values.shape[:-1], dtype=np.int64)
        if codes.ndim == 1 and values.ndim == 2 and (np.diff(codes) >= 0).all():
            # rows sorted by symbol (a whole frame): one block per symbol, no [N, P] gathers
            out = np.empty(values.shape, dtype=np.float32)
            bounds = np.searchsorted(codes, np.arange(len(mean) + 1))
            for g in range(len(mean)):
                lo, hi = bounds[g], bounds[g + 1]
                out[lo:hi] = (values[lo:hi] - mean[g]) / std[g]
            return out
        return ((values - mean[codes]) / std[codes]).astype(np.float32)

    def scale_in_place(self, values: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """`values` [N, P] float32, rows sorted by symbol code `codes` [N], scaled in place a
        block of rows at a time and returned: the numbers `transform` gives (in float64, then
        rounded), without a second [N, P] matrix. `values` is spent."""
        if values.dtype != np.float32 or (np.diff(codes) < 0).any():
            raise ValueError("scale_in_place needs float32 rows sorted by symbol code")
        mean, std = np.atleast_2d(self.mean), np.atleast_2d(self.std)
        bounds = np.searchsorted(codes, np.arange(len(mean) + 1))
        if len(mean) == 1:  # one set serves every symbol
            bounds = np.asarray([0, len(values)])
        buffer = np.empty((_BLOCK_ROWS, values.shape[1]))  # float64, reused block after block
        for g in range(len(mean)):
            for lo in range(bounds[g], bounds[g + 1], _BLOCK_ROWS):
                hi = min(lo + _BLOCK_ROWS, bounds[g + 1])
                block = buffer[: hi - lo]
                block[:] = values[lo:hi]  # the float32 -> float64 of `transform`, exact
                block -= mean[g]
                block /= std[g]
                values[lo:hi] = block
        return values

    def state_dict(self) -> dict[str, Any]:
        return {"names": list(self.names), "mean": self.mean.tolist(), "std": self.std.tolist()}

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> StandardScaler:
        mean = np.asarray(state["mean"], dtype=np.float64)
        std = np.asarray(state["std"], dtype=np.float64)
        return cls(tuple(state["names"]), mean, std)


def streamed_moments(
    blocks: Callable[[], Iterable[np.ndarray]], width: int
) -> tuple[np.ndarray, np.ndarray]:
    """[P] mean and std of the rows that `blocks()` yields, float32 [n, P] blocks in order
    (called twice: for the mean, then for the deviations from it), bit for bit what numpy's
    `rows.mean(axis=0, dtype=np.float64)` and `rows.std(axis=0, dtype=np.float64)` give on
    those rows stacked (`StandardScaler.fit`): numpy sums over the outer axis row after row
    into one float64 row (pairwise summation is only along the contiguous axis), so a
    running sum carried from block to block adds the same numbers in the same order. NaN
    without rows."""
    total, count = _running_sum(blocks(), lambda rows: rows.astype(np.float64), width)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / count

        def squares(rows: np.ndarray) -> np.ndarray:
            deviation = rows - mean  # float32 - float64: float64, as numpy's _var
            return np.multiply(deviation, deviation, out=deviation)

        spread, _ = _running_sum(blocks(), squares, width)
        return mean, np.sqrt(spread / count)


def _running_sum(
    blocks: Iterable[np.ndarray], terms: Callable[[np.ndarray], np.ndarray], width: int
) -> tuple[np.ndarray, int]:
    """The row after row sum of `terms(block)` over every block, and the rows counted."""
    total: np.ndarray | None = None
    count = 0
    for block in blocks:
        if len(block):
            rows = terms(block)
            first = rows if total is None else np.concatenate([total[None], rows])
            total, count = np.add.reduce(first, axis=0), count + len(block)
    return (np.zeros(width) if total is None else total), count


PAIRWISE_LEAF = 1 << 16  # values summed by one np.add.reduce (numpy's tree below it)


def pairwise_mean_square(blocks: Iterator[np.ndarray], count: int) -> float:
    """`np.mean(np.square(values, dtype=np.float64))` of the `count` values that `blocks`
    yields in order, bit for bit, never holding more than a leaf of them. numpy sums a
    contiguous float64 column pairwise: a column of n > 128 values is the sum of its first
    n2 = n // 2 (less n2 % 8) and of the rest, each summed alike, so the tree depends only
    on n: below PAIRWISE_LEAF values a subtree is `np.add.reduce` of its slice, and the
    subtrees' sums are added as numpy adds them (a test compares it with np.mean)."""
    pending: list[np.ndarray] = []
    held = 0

    def take(n: int) -> np.ndarray:
        nonlocal held
        while held < n:
            block = np.square(next(blocks), dtype=np.float64)
            pending.append(block)
            held += len(block)
        values = np.concatenate(pending) if len(pending) > 1 else pending[0]
        pending[:] = [values[n:]]
        held -= n
        return values[:n]

    def tree(n: int) -> np.float64:
        if n <= PAIRWISE_LEAF:
            return np.float64(np.add.reduce(take(n)))
        half = n // 2
        half -= half % 8
        return tree(half) + tree(n - half)

    return float(tree(count) / count)


@dataclass(frozen=True)
class TargetScaler:
    """Divides returns by their training root mean square: scaled, never centered, so a
    zero forecast stays zero and quantile losses stay comparable across horizons."""

    scale: float

    @classmethod
    def fit(cls, returns: np.ndarray) -> TargetScaler:
        finite = returns[np.isfinite(returns)]
        return cls.fit_streamed(lambda: iter([finite]), len(finite))

    @classmethod
    def fit_streamed(cls, blocks: Callable[[], Iterator[np.ndarray]], count: int) -> TargetScaler:
        """`fit` of the finite returns that `blocks()` yields in order, `count` in all: the
        mean square summed leaf by leaf as numpy's pairwise sum does (`pairwise_mean_square`),
        so a symbol at a time gives the numbers of the whole column (streamed.py)."""
        if count == 0:
            raise DataError("no finite training returns to fit the target scale on")
        rms = float(np.sqrt(pairwise_mean_square(blocks(), count)))
        return cls(rms if rms > STD_FLOOR else 1.0)

    def transform(self, returns: np.ndarray) -> np.ndarray:
        return (returns / self.scale).astype(np.float32)

    def inverse(self, scaled: np.ndarray) -> np.ndarray:
        return np.asarray(scaled, dtype=np.float64) * self.scale

    def state_dict(self) -> dict[str, Any]:
        return {"scale": self.scale}

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> TargetScaler:
        return cls(float(state["scale"]))


@dataclass(frozen=True)
class CategoryEncoder:
    """Category name -> code 0..n-1 in sorted order; unknown names are a DataError."""

    name: str
    categories: tuple[str, ...]

    @classmethod
    def fit(cls, name: str, values: Sequence[str] | np.ndarray) -> CategoryEncoder:
        return cls(name, tuple(sorted({str(v) for v in values})))

    @property
    def cardinality(self) -> int:
        return len(self.categories)

    def encode(self, values: np.ndarray, *, source: str) -> np.ndarray:
        """int64 codes of `values`; DataError naming the first value never seen in training."""
        inverse, uniques = pd.factorize(np.asarray(values))
        index = {c: i for i, c in enumerate(self.categories)}
        unknown = [u for u in map(str, uniques) if u not in index]
        if unknown:
            raise DataError(
                f"{source}: {self.name} {unknown[0]!r} was not in the training data "
                f"(known: {list(self.categories)}); drop those rows or retrain with them"
            )
        codes = np.array([index[str(u)] for u in uniques], dtype=np.int64)
        return codes[inverse]

    def state_dict(self) -> dict[str, Any]:
        return {"name": self.name, "categories": list(self.categories)}

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> CategoryEncoder:
        return cls(str(state["name"]), tuple(state["categories"]))
