"""Bars in, typed windows out: reading, validation, features, scaling and windowing."""

from foxhunt.data.config import DataConfig
from foxhunt.data.dataset import WindowDataset, collate_windows, make_loader
from foxhunt.data.encoded import FeatureSchema
from foxhunt.data.io import read_bars
from foxhunt.data.latest import LatestWindows, latest_windows
from foxhunt.data.pipeline import DataSummary, PreparedData, prepare_data
from foxhunt.data.preprocess import Preprocessor
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
