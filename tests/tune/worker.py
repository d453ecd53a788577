"""One `foxhunt tune` worker on the tiny run, as its own process (the kill and two-worker
tests): ``python worker.py DIR TRIALS [--hang-at N] [--meet K]``.

--hang-at N: trial N writes DIR/hanging after its first epoch and then blocks (the test kills
the process there). --meet K: each trial's first epoch waits until K trials of the study run
at once, so that K workers are seen working together.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState

from foxhunt.tune import TuneConfig, parse_space, run_study
from helpers import tiny_run, tiny_training

SPACE = {"training.lr": {"low": 1e-4, "high": 1e-2, "log": True}}


class Block:
    """Blocks the trial after its first epoch: a kill -9 lands in the middle of a trial."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def on_epoch_end(self, trainer: Any, record: dict[str, Any]) -> None:
        self.marker.write_text("trial running")
        while True:
            time.sleep(60)


class Meet:
    """Waits (up to a minute) until ``k`` trials of the study are running."""

    def __init__(self, trial: optuna.Trial, k: int) -> None:
        self.trial, self.k = trial, k

    def on_epoch_start(self, trainer: Any) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            running = self.trial.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
            if len(running) >= self.k:
                return
            time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dir", type=Path)
    parser.add_argument("trials", type=int)
    parser.add_argument("--hang-at", type=int, default=None)
    parser.add_argument("--meet", type=int, default=0)
    args = parser.parse_args()
    base = tiny_run(training=tiny_training(max_steps_per_epoch=2))
    tune = TuneConfig(trials=args.trials, heartbeat=1, keep="all", pruner="none")
    met: set[int] = set()

    def extra(trial: optuna.Trial) -> tuple[Any, ...]:
        if trial.number == args.hang_at:
            return (Block(args.dir / "hanging"),)
        if args.meet and not met:  # the first trial of this worker waits for the others
            met.add(trial.number)
            return (Meet(trial, args.meet),)
        return ()

    run_study(base, parse_space(SPACE, base), args.dir, tune, extra_callbacks=extra, poll_s=0.2)


if __name__ == "__main__":
    main()
