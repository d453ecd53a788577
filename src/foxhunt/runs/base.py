"""A run's base volatility bound to its preprocessor: a base other than the rolling one
(`DataConfig.base`) is a filter fitted on the training span, whose state is baseline.json's.

`read_run_preprocessor` binds it, so every door that loads a run folder or an export of one
(predict, evaluate, a frozen backtest, the exports, the report) scales windows as training
did. A run saved before `base` reads as the rolling one (preprocessor.json's migration,
foxhunt/migrations.py) and reads no baseline.json here.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from foxhunt.baselines import FittedBaselines
from foxhunt.baselines.base import FILTERED, FilteredBase
from foxhunt.data import Preprocessor
from foxhunt.data.preprocess import ROLLING_BASE
from foxhunt.runs.checks import RunFileError
from foxhunt.runs.files import BASELINE_FILE, PREPROCESSOR_FILE
from foxhunt.runs.results import read_baseline_state


def bind_base(pre: Preprocessor, run_dir: Path, *, horizon: int, quantiles: int) -> Preprocessor:
    """`pre` with its base's fitted filter from RUN_DIR/baseline.json; `pre` itself for the
    rolling base. A missing or damaged file is refused with one line naming it."""
    if pre.base == ROLLING_BASE:
        return pre
    if pre.base not in FILTERED:
        raise RunFileError(
            f"{run_dir / PREPROCESSOR_FILE}: base {pre.base!r} is not one of "
            f"{(ROLLING_BASE, *FILTERED)}; the file is damaged"
        )
    path = run_dir / BASELINE_FILE
    if not path.is_file():
        raise RunFileError(
            f"{path} not found: this run's base volatility {pre.base!r} was fitted on its "
            "training span and saved there; restore the file from the run folder"
        )
    saved = read_baseline_state(path, horizon=horizon, quantiles=quantiles)
    if saved["volatility"] is None:
        raise RunFileError(
            f"{path} holds no fitted volatility baselines but the run's base is {pre.base!r}; "
            "the files come from different runs"
        )
    fitted = FittedBaselines.from_state_dict(saved["volatility"])  # read_baseline_state tried it
    return replace(pre, base_filter=FilteredBase(pre.base, fitted))
