"""What a study leaves in its folder: best.yaml, the trials' folders it keeps, and its
report (trials.csv, optimization history and parameter importances as PNG)."""

from __future__ import annotations

import logging
import re
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib
import optuna
from optuna.trial import FrozenTrial, TrialState

from foxhunt.tune.config import TuneConfig
from foxhunt.tune.sections import write_config_yaml

log = logging.getLogger("foxhunt.tune")

BEST_FILE = "best.yaml"
TRIALS_FILE = "trials.csv"
HISTORY_PLOT = "optimization_history.png"
IMPORTANCE_PLOT = "param_importances.png"
_TRIAL_DIR = re.compile(r"trial-(\d+)")
_OVER = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)


def best_of(study: optuna.Study) -> FrozenTrial | None:
    """The COMPLETE trial of least value (the first of equals); pruned trials never win."""
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    return min(complete, key=lambda t: (t.value, t.number)) if complete else None


def after_trial(study: optuna.Study, output_dir: Path, tune: TuneConfig) -> None:
    """After each trial of any worker: best.yaml follows the best, and with keep="best" the
    folder of every trial that is over and not the best goes (running ones stay)."""
    best = best_of(study)
    if best is not None:
        write_best(study, best, output_dir, tune)
    if tune.keep != "best":
        return
    states = {t.number: t.state for t in study.get_trials(deepcopy=False)}
    for folder in output_dir.iterdir():
        match = _TRIAL_DIR.fullmatch(folder.name)
        if not match or not folder.is_dir():
            continue
        number = int(match.group(1))
        if states.get(number) in _OVER and (best is None or number != best.number):
            shutil.rmtree(folder, ignore_errors=True)


def write_best(study: optuna.Study, best: FrozenTrial, output_dir: Path, tune: TuneConfig) -> None:
    config = best.user_attrs.get("config")
    if config is None:
        return
    finished = len(
        study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))
    )
    header = (
        f"foxhunt tune: best of study {study.study_name!r}: trial {best.number}, value "
        f"{best.value:.6g} ({'walk-forward' if tune.backtest else 'validation'} loss), "
        f"{finished} trials finished\n"
        f"train it: foxhunt train --config {BEST_FILE}; backtest it with --trials {tune.trials}"
    )
    write_config_yaml(output_dir / BEST_FILE, config, header)


def write_study_report(study: optuna.Study, output_dir: Path, tune: TuneConfig) -> list[Path]:
    """best.yaml, trials.csv and the plots; returns the files written."""
    after_trial(study, output_dir, tune)
    written = []
    if (output_dir / BEST_FILE).is_file():
        written.append(output_dir / BEST_FILE)
    frame = study.trials_dataframe()
    frame.to_csv(output_dir / TRIALS_FILE, index=False)
    written.append(output_dir / TRIALS_FILE)
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    from optuna.visualization import matplotlib as plots

    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # optuna's matplotlib plots are marked experimental
        jobs: list[tuple[str, Callable[[optuna.Study], Any], int]] = [
            (HISTORY_PLOT, plots.plot_optimization_history, 1),
            (IMPORTANCE_PLOT, plots.plot_param_importances, 2),
        ]
        for name, plot, needed in jobs:
            if len(complete) < needed or not complete[0].params:
                log.info("%s: needs %d completed trials with parameters", name, needed)
                continue
            try:
                axes = plot(study)
            except (ValueError, RuntimeError) as exc:  # e.g. every trial drew the same values
                log.info("%s: not drawn (%s)", name, exc)
                continue
            figure = axes.get_figure(root=True)
            figure.tight_layout()
            figure.savefig(output_dir / name, dpi=100)
            plt.close(figure)
            written.append(output_dir / name)
    return written
