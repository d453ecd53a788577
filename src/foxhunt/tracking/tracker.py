"""The tracker: a training callback that turns the loop's events into scalars for its sinks.

It reads what the trainer exposes at each event (``trainer.state``, ``trainer.last_step``,
the epoch record), measures memory, and hands plain ``{name: float}`` dicts, keyed by the
optimizer step, to each sink (TensorBoard, MLflow). The door that runs the job calls
`log_results` with the job's test metrics before the run folder is moved into place (an
--overwrite renames it: files must be closed first), `finish` with the final folder and the
report, and `close` in any case.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from foxhunt.errors import FoxhuntError
from foxhunt.memory.profiler import MemoryBackend
from foxhunt.runs import CONFIG_FILE
from foxhunt.training.diagnostics import PREFIXES

log = logging.getLogger("foxhunt.tracking")


class Sink(Protocol):
    """One logger backend. `start` runs once, at the first event, with the run's config
    flattened, the step training stands at (0, or where a resume continues) and the state a
    checkpoint saved for it ({} when fresh)."""

    name: str

    def start(self, params: Mapping[str, Any], step: int, state: Mapping[str, Any]) -> None: ...
    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None: ...
    def flush(self) -> None: ...
    def release(self) -> None: ...  # training is over: close files in the run folder
    def log_run_folder(self, run_dir: Path, report: Path | None) -> None: ...
    def close(self, status: str) -> None: ...
    def state_dict(self) -> dict[str, Any]: ...


def flatten(tree: Any, prefix: str = "", sep: str = "/", lists: bool = True) -> dict[str, Any]:
    """Leaves of nested dicts (and lists, with `lists`) under joined keys ("a/b/0")."""
    if isinstance(tree, Mapping):
        items: Sequence[tuple[Any, Any]] = list(tree.items())
    elif lists and isinstance(tree, list | tuple):
        items = list(enumerate(tree))
    else:
        return {prefix: tree}
    out: dict[str, Any] = {}
    for key, value in items:
        out.update(flatten(value, f"{prefix}{sep}{key}" if prefix else str(key), sep, lists))
    return out


def numbers(tree: Any, prefix: str) -> dict[str, float]:
    """The finite-or-not numeric leaves of `tree` (bools and strings left out)."""
    return {
        key: float(value)
        for key, value in flatten(tree, prefix).items()
        if isinstance(value, int | float) and not isinstance(value, bool)
    }


class Tracker:
    """Logs the run to `sinks` (see the module docstring); `run_dir` holds its config.json."""

    def __init__(self, sinks: Sequence[Sink], run_dir: Path, *, log_every: int = 10) -> None:
        self.sinks = list(sinks)
        self.run_dir = Path(run_dir)
        self.log_every = log_every
        self.saved: dict[str, Any] = {}  # the sinks' states from a checkpoint, until start
        self.started = self.closed = False
        self.memory: MemoryBackend | None = None
        self.step = 0

    # --- callback hooks ----------------------------------------------------------------
    def on_epoch_start(self, trainer: Any) -> None:
        self._start(trainer.state.global_step)
        if self.memory is None:
            self.memory = MemoryBackend(trainer.device)

    def on_step_end(self, trainer: Any, loss: float) -> None:
        state, stats = trainer.state, trainer.last_step
        self.step = state.global_step
        skipped = not math.isfinite(loss)
        if not skipped and state.global_step % self.log_every:
            return
        metrics = {
            "train/loss": loss,
            "train/lr": stats.lr,
            "train/grad_norm": stats.grad_norm,
            "train/step_seconds": stats.seconds,
            "train/skipped_steps": float(state.skipped_steps),
        }
        if self.memory is not None:
            snap = self.memory.snapshot()
            metrics |= {"memory/used_mb": snap.used_mb, "memory/peak_mb": snap.peak_mb}
        self._log({k: v for k, v in metrics.items() if math.isfinite(v)}, state.global_step)

    def on_epoch_end(self, trainer: Any, record: Mapping[str, Any]) -> None:
        state = trainer.state
        self.step = state.global_step
        metrics = {
            "epoch/epoch": float(record["epoch"]) + 1,
            "epoch/train_loss": float(record["train_loss"]),
            "epoch/val_loss": float(record["val_loss"]),
            "epoch/best_val_loss": float(state.best_val_loss),
            "epoch/skipped_steps": float(state.skipped_steps),
        }
        metrics |= {  # --diagnostics: per-module gradients and updates, selection entropy
            f"diagnostics/{key}": float(value)
            for key, value in record.items()
            if key.startswith(PREFIXES) and isinstance(value, int | float)
        }
        self._log({k: v for k, v in metrics.items() if math.isfinite(v)}, state.global_step)
        self._each("flush")

    # --- state: a resume continues the same runs ----------------------------------------
    def state_dict(self) -> dict[str, Any]:
        states = {sink.name: sink.state_dict() for sink in self.sinks} if self.started else {}
        return {"sinks": states or self.saved, "step": self.step}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.saved = dict(state.get("sinks") or {})
        self.step = int(state.get("step", 0))

    # --- the end -----------------------------------------------------------------------
    def log_results(self, metrics: Mapping[str, Any]) -> None:
        """The job's test metrics (TFT and baselines, basis points); then every sink lets go
        of its files in the run folder, which may be renamed next."""
        self._start(self.step)
        final = {key: value for key, value in metrics.items() if key != "unit"}
        self._log(numbers(final, "final"), self.step)
        self._each("release")

    def finish(self, run_dir: Path, report: Path | None) -> None:
        """The finished run folder (and its report) as artifacts; the runs end FINISHED."""
        self._start(self.step)
        self._each("log_run_folder", Path(run_dir), report)
        self.close("FINISHED")

    def close(self, status: str = "FAILED") -> None:
        """End every sink once; `status` is MLflow's (FINISHED, FAILED, KILLED)."""
        if self.closed or not self.started:
            return
        self.closed = True
        for sink in self.sinks:
            try:
                sink.close(status)
            except Exception as exc:  # closing must not hide the error that ended the run
                log.warning("tracking: closing %s failed: %s", sink.name, exc)

    def _start(self, step: int) -> None:
        if self.started:
            return
        self.started, self.step = True, step
        params = self._params()
        for sink in self.sinks:
            try:
                sink.start(params, step, self.saved.get(sink.name) or {})
            except Exception as exc:  # a bad URI, an unwritable folder: the user's to fix
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise FoxhuntError(
                    f"tracking: --logger {sink.name} could not start ({first}); check "
                    "--tracking-uri / --tracking-dir"
                ) from exc
            log.info("tracking: %s on", sink.name)

    def _params(self) -> dict[str, Any]:
        """The run's config.json (the job wrote it, inputs fitted to the data), flattened."""
        path = self.run_dir / CONFIG_FILE
        try:
            config = json.loads(path.read_text())
        except (OSError, ValueError):
            log.warning("tracking: %s unreadable; hyperparameters not logged", path)
            return {}
        config.pop("versions", None)
        return flatten(config, sep=".", lists=False)

    def _log(self, metrics: Mapping[str, float], step: int) -> None:
        if metrics:
            self._each("log_metrics", metrics, step)

    def _each(self, method: str, *args: Any) -> None:
        """Call `method` on every sink; one that fails (a store gone, a full disk) is
        dropped with a warning: losing a logger must not lose the training run."""
        for sink in list(self.sinks):
            try:
                getattr(sink, method)(*args)
            except Exception as exc:
                what = f"{type(exc).__name__}: {exc}"
                log.warning("tracking: %s failed (%s); it logs no more", sink.name, what)
                self.sinks.remove(sink)
