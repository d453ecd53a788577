"""Bars in, typed windows out: reading, validation, features, scaling and windowing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from foxhunt.data.config import DataConfig
from foxhunt.lazy import lazy_exports

if TYPE_CHECKING:
    from foxhunt.data.dataset import WindowDataset, collate_windows, make_loader
    from foxhunt.data.encoded import FeatureSchema
    from foxhunt.data.feature_store import prepare_data
    from foxhunt.data.io import read_bars
    from foxhunt.data.latest import LatestWindows, latest_windows
    from foxhunt.data.pipeline import PreparedData
    from foxhunt.data.preprocess import Preprocessor
    from foxhunt.data.summary import DataSummary
    from foxhunt.data.synthetic import generate_bars
    from foxhunt.data.validate import validate_bars

__all__ = [
    "DataConfig",
    "DataSummary",
    "FeatureSchema",
    "LatestWindows",
    "PreparedData",
    "Preprocessor",
    "WindowDataset",
    "collate_windows",
    "generate_bars",
    "latest_windows",
    "make_loader",
    "prepare_data",
    "read_bars",
    "validate_bars",
]

#: the rest, imported on first use: the config alone imports no torch (the CLI's --help
#: reads it)
_LAZY = {
    **dict.fromkeys(("WindowDataset", "collate_windows", "make_loader"), "foxhunt.data.dataset"),
    "FeatureSchema": "foxhunt.data.encoded",
    "read_bars": "foxhunt.data.io",
    "LatestWindows": "foxhunt.data.latest",
    "latest_windows": "foxhunt.data.latest",
    "DataSummary": "foxhunt.data.summary",
    "PreparedData": "foxhunt.data.pipeline",
    "prepare_data": "foxhunt.data.feature_store",
    "Preprocessor": "foxhunt.data.preprocess",
    "generate_bars": "foxhunt.data.synthetic",
    "validate_bars": "foxhunt.data.validate",
}

__getattr__ = lazy_exports(__name__, _LAZY)
