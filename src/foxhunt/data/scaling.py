"""Scalers and encoders fitted on training rows only; their state is plain JSON."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from foxhunt.errors import DataError

#: Columns whose training std is below this are left unscaled (std 1), only centered.
STD_FLOOR = 1e-12


@dataclass(frozen=True, eq=False)
class StandardScaler:
    """Per-column (x - mean) / std with float64 statistics."""

    names: tuple[str, ...]
    mean: np.ndarray  # [P] float64
    std: np.ndarray  # [P] float64, >= STD_FLOOR

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StandardScaler):
            return NotImplemented
        same = np.array_equal(self.mean, other.mean) and np.array_equal(self.std, other.std)
        return self.names == other.names and same

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def fit(cls, names: Sequence[str], values: np.ndarray) -> StandardScaler:
        """Statistics of `values` [rows, P], which must be the finite training rows."""
        if len(values) == 0:
            raise DataError("no finite training rows to fit the input scaler on; add more bars")
        mean = values.mean(axis=0, dtype=np.float64)
        std = values.std(axis=0, dtype=np.float64)
        std = np.where(std > STD_FLOOR, std, 1.0)
        return cls(tuple(names), mean, std)

    def transform(self, values: np.ndarray, columns: slice = slice(None)) -> np.ndarray:
        """Scaled float32 copy of `values` [..., len(columns)]."""
        out = (values - self.mean[columns]) / self.std[columns]
        return out.astype(np.float32)

    def state_dict(self) -> dict[str, Any]:
        return {"names": list(self.names), "mean": self.mean.tolist(), "std": self.std.tolist()}

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> StandardScaler:
        mean = np.asarray(state["mean"], dtype=np.float64)
        std = np.asarray(state["std"], dtype=np.float64)
        return cls(tuple(state["names"]), mean, std)


@dataclass(frozen=True)
class TargetScaler:
    """Divides returns by their training root mean square: scaled, never centered, so a
    zero forecast stays zero and quantile losses stay comparable across horizons."""

    scale: float

    @classmethod
    def fit(cls, returns: np.ndarray) -> TargetScaler:
        finite = returns[np.isfinite(returns)]
        if len(finite) == 0:
            raise DataError("no finite training returns to fit the target scale on")
        rms = float(np.sqrt(np.mean(np.square(finite, dtype=np.float64))))
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
