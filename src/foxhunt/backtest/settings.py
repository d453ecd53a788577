"""A backtest folder's settings (backtest_config.json): a resumed backtest reads its complete
folds back, so they must come from the same settings and the same bars."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from foxhunt.errors import FoxhuntError
from foxhunt.runs.files import BACKTEST_CONFIG_FILE
from foxhunt.storage.bounded import read_json_bounded


def check_same_backtest(output_dir: Path, settings: dict[str, Any]) -> None:
    """A resumed backtest reads complete folds back: they must come from the same settings
    and the same bars (a data file changed at the same path would mix two datasets)."""
    saved = output_dir / BACKTEST_CONFIG_FILE
    if saved.is_file():
        before = read_json_bounded(saved)
        if not isinstance(before, dict):
            raise FoxhuntError(f"{saved}: not a JSON object; the backtest folder is damaged")
        if "data_file" not in before:  # written before data fingerprints: no data check
            settings = {k: v for k, v in settings.items() if k != "data_file"}
        elif before["data_file"] != settings["data_file"] and _same_except_data(before, settings):
            raise FoxhuntError(
                f"{output_dir} holds a backtest of other bars: {settings['run']['data']['path']}"
                " changed since its folds were trained (size or content); resuming would mix "
                "two datasets; use another --output-dir (or remove the folder)"
            )
        if before != settings:
            raise FoxhuntError(
                f"{output_dir} holds a backtest with other settings; use another --output-dir "
                "(or remove the folder) rather than mixing folds of two backtests"
            )


def _same_except_data(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return {k: v for k, v in a.items() if k != "data_file"} == {
        k: v for k, v in b.items() if k != "data_file"
    }
