"""The study in its database, and one worker's loop: run trials until the study holds
``trials`` finished-or-pruned ones, whoever ran them, across restarts.

A trial's process writes a heartbeat every ``heartbeat`` seconds; a trial silent for twice
that (its process was killed) is marked FAIL by the next worker that looks
(``fail_stale_trials``), does not count, and its parameters are tried once more
(``RetryHeartbeatStaleTrialCallback``).
"""

from __future__ import annotations

import logging
import re
import time
import warnings
from pathlib import Path
from typing import Any

import optuna
from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback, fail_stale_trials
from optuna.trial import FrozenTrial, TrialState

from foxhunt.errors import ConfigError, FoxhuntError
from foxhunt.runs import RunConfig, holds_run
from foxhunt.runs.files import RUN_ENTRIES, STUDY_ENTRIES
from foxhunt.storage import atomic_write_json
from foxhunt.storage.bounded import read_json_bounded
from foxhunt.tune.config import TuneConfig
from foxhunt.tune.objective import COUNTED, FINISHED, Objective, Surplus, TrialCallbacks
from foxhunt.tune.pruning import make_pruner
from foxhunt.tune.report import BEST_FILE, after_trial, best_of, write_study_report
from foxhunt.tune.space import Param

log = logging.getLogger("foxhunt.tune")

#: failed trials in a row (bad combinations, diverged training) before a worker gives up
MAX_FAILURES_IN_A_ROW = 5
STUDY_FILE = "study.json"
#: tries to open the database (workers starting together race to create its tables)
OPEN_ATTEMPTS = 5
_TRIAL_NAME = re.compile(r"trial-\d+")


def storage_url(tune: TuneConfig, output_dir: Path) -> str:
    return tune.storage or f"sqlite:///{(output_dir / 'study.db').absolute()}"


def open_study(tune: TuneConfig, output_dir: Path) -> optuna.Study:
    """Create the study, or load it: a restarted or second worker joins it."""
    url = storage_url(tune, output_dir)
    # one line per trial is ours; optuna would add a traceback for every failed trial
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    for attempt in range(OPEN_ATTEMPTS):
        try:
            return _open(tune, url)
        except (ImportError, ValueError) as exc:  # a driver not installed, a malformed URL
            raise ConfigError(f"--storage {url}: {' '.join(str(exc).split())[:200]}") from None
        except Exception as exc:  # sqlalchemy's: no such host, folder, database; a race
            if not type(exc).__module__.startswith("sqlalchemy"):
                raise
            if attempt == OPEN_ATTEMPTS - 1:
                first = str(exc).splitlines()[0]
                raise ConfigError(f"--storage {url}: cannot open it ({first})") from None
            # workers that start together race to create the tables: the loser finds them
            time.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")


def _open(tune: TuneConfig, url: str) -> optuna.Study:
    # SQLite lets one writer in at a time; workers wait for the lock instead of failing
    engine = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else None
    # an in-memory database is one process's (no other worker to fail a silent trial) and
    # one thread's: the heartbeat thread found no tables there (no such table: trial_heartbeats)
    beats = not in_memory(url)
    storage = RDBStorage(
        url,
        engine_kwargs=engine,
        heartbeat_interval=tune.heartbeat if beats else None,
        heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=1)
        if beats
        else None,
    )
    return optuna.create_study(
        storage=storage,
        study_name=tune.study_name,
        direction="minimize",
        pruner=make_pruner(tune),
        sampler=optuna.samplers.TPESampler(seed=tune.sampler_seed),
        load_if_exists=True,
    )


def in_memory(url: str) -> bool:
    """sqlite:// and sqlite:///:memory: (a study that ends with its process)."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    return parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:")


def claim_folder(output_dir: Path, tune: TuneConfig) -> dict[str, str]:
    """DIR/study.json names the study whose trials DIR holds: another study's trial-0000
    would be this one's, and --keep best would delete the other's folders. Returns what
    `write_claim` writes once the study opened (a failed --storage must not claim DIR)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(storage_url(tune, output_dir)).render_as_string(hide_password=True)
    except ArgumentError:
        raise ConfigError(
            f"--storage {tune.storage}: not a SQLAlchemy URL; use dialect[+driver]://..., "
            "e.g. sqlite:///study.db or postgresql://user@host/db"
        ) from None
    mine = {"storage": url, "study_name": tune.study_name}
    path = output_dir / STUDY_FILE
    if path.is_file():
        held = read_json_bounded(path)
        if held != mine:
            held = held if isinstance(held, dict) else {}
            raise ConfigError(
                f"{output_dir} holds the trials of study {held.get('study_name')!r} in "
                f"{held.get('storage')}; use another --output-dir for {tune.study_name!r} in {url}"
            )
        _check_database_kept(output_dir, url)
        return mine
    strangers = _not_a_study(output_dir)
    if strangers:
        raise ConfigError(
            f"--output-dir {output_dir} holds {strangers[:5]} but no study ({STUDY_FILE}); a "
            "study writes and deletes trial-NNNN folders there: use a new or empty folder"
        )
    return mine


def write_claim(output_dir: Path, claim: dict[str, str]) -> None:
    if not (output_dir / STUDY_FILE).is_file():
        atomic_write_json(output_dir / STUDY_FILE, claim)


def results(output_dir: Path) -> list[str]:
    """The study's results in DIR: trial-NNNN folders and best.yaml."""
    return sorted(
        p.name for p in output_dir.iterdir() if p.name == BEST_FILE or _TRIAL_NAME.fullmatch(p.name)
    )


def _check_database_kept(output_dir: Path, url: str) -> None:
    """A study whose database is gone (study.db deleted, an in-memory one ended) would start
    again at trial 0, replace trial-0000 and delete the earlier best trial's folder."""
    from sqlalchemy.engine import make_url

    held = results(output_dir)
    if not held:
        return
    parsed = make_url(url)
    if in_memory(url):
        raise ConfigError(
            f"--output-dir {output_dir} holds the results {held[:5]} of a study in an "
            f"in-memory database ({url}), which ended with its process; a new study there "
            "would replace them: use a new --output-dir"
        )
    if parsed.get_backend_name() == "sqlite" and not Path(str(parsed.database)).exists():
        raise ConfigError(
            f"--output-dir {output_dir} holds the results {held[:5]} of a study whose database "
            f"{parsed.database} is gone; put it back, or use a new --output-dir"
        )


def check_same_study(study: optuna.Study, output_dir: Path) -> None:
    """A study with no trials beside trial folders: its database was emptied or replaced."""
    held = results(output_dir)
    if held and not study.get_trials(deepcopy=False):
        # the study may be the one open_study just created: nothing in it to keep
        optuna.delete_study(study_name=study.study_name, storage=study._storage)
        raise ConfigError(
            f"--output-dir {output_dir} holds the results {held[:5]}, but study "
            f"{study.study_name!r} in its --storage has no trials (a new or emptied database); "
            "a new study there would replace them: use a new --output-dir"
        )


def _not_a_study(output_dir: Path) -> list[str]:
    """What an unclaimed DIR holds that a study would replace or delete (a run, trial-NNNN
    folders, best.yaml); none when DIR is a study of a version before study.json (study.db)."""
    if holds_run(output_dir):
        return sorted(p.name for p in output_dir.iterdir() if p.name in RUN_ENTRIES)
    if (output_dir / "study.db").exists():
        return []
    return sorted(
        p.name
        for p in output_dir.iterdir()
        if p.name in STUDY_ENTRIES or _TRIAL_NAME.fullmatch(p.name)
    )


def count(study: optuna.Study, states: tuple[TrialState, ...]) -> int:
    return len(study.get_trials(deepcopy=False, states=states))


def run_study(
    base: RunConfig,
    space: tuple[Param, ...],
    output_dir: Path,
    tune: TuneConfig,
    *,
    extra_callbacks: TrialCallbacks | None = None,
    poll_s: float = 1.0,
) -> optuna.Study:
    """This worker's share of the study; returns once it holds ``tune.trials`` finished or
    pruned trials, its report (best.yaml, plots) written."""
    if base.data.val_fraction <= 0:
        raise ConfigError("tuning scores validation loss: --val-fraction must be > 0")
    output_dir.mkdir(parents=True, exist_ok=True)
    claim = claim_folder(output_dir, tune)
    study = open_study(tune, output_dir)
    check_same_study(study, output_dir)
    write_claim(output_dir, claim)
    objective = Objective(base, space, output_dir, tune, extra_callbacks)
    failures: list[FrozenTrial] = []

    def progress(study: optuna.Study, trial: FrozenTrial) -> None:
        if trial.state == TrialState.FAIL and not trial.user_attrs.get("surplus"):
            failures.append(trial)
        elif trial.state in FINISHED:
            failures.clear()
        print(trial_line(study, trial, tune), flush=True)
        after_trial(study, output_dir, tune)

    waited = False
    while (done := count(study, FINISHED)) < tune.trials:
        fail_stale_trials(study)  # a killed worker's trial: FAIL, its place free again
        if done + count(study, (TrialState.RUNNING,)) >= tune.trials:
            if not waited:
                log.info("waiting for the study's running trials to finish or fail")
            waited = True
            time.sleep(poll_s)
            continue
        waited = False
        study.optimize(objective, n_trials=1, callbacks=[progress], catch=(Surplus, FoxhuntError))
        if len(failures) >= MAX_FAILURES_IN_A_ROW:
            reason = failures[-1].user_attrs.get("error", "see the log above")
            raise FoxhuntError(
                f"{len(failures)} trials in a row failed (last: {reason}); fix the search "
                "space or the base config"
            )
    write_study_report(study, output_dir, tune)
    return study


def trial_line(study: optuna.Study, trial: FrozenTrial, tune: TuneConfig) -> str:
    """trial 7: training.lr=0.0031 model.hidden_size=16 -> 0.1712 | best 0.1690 (trial 3) | 5/8"""
    params = " ".join(f"{k}={_short(v)}" for k, v in trial.params.items())
    if trial.state == TrialState.COMPLETE:
        outcome = f"{trial.value:.4f}"
    elif trial.state == TrialState.PRUNED:
        unit = "epoch" if tune.backtest is None else "step"  # a backtest's: k * epochs + epoch
        outcome = f"pruned at {unit} {trial.user_attrs.get('pruned_at', '?')}"
    elif trial.user_attrs.get("surplus"):
        outcome = "not run (the study was full)"
    else:
        outcome = f"failed: {trial.user_attrs.get('error', 'see the log above')}"
    best = best_of(study)
    best_text = f"best {best.value:.4f} (trial {best.number})" if best else "no best yet"
    done = count(study, FINISHED)
    head = f"trial {trial.number}: {params}".rstrip()
    return f"{head} -> {outcome} | {best_text} | {done}/{tune.trials}"


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


__all__ = ["COUNTED", "open_study", "run_study", "storage_url", "trial_line"]
