"""The callback seam: observers the training loop steps, and the state they carry over a resume.

The job wires its own (memory profiler, history writer, checkpointer) and appends a caller's
(`JobOptions.callbacks`: a logger, a tracker) before the checkpointer, so that a checkpoint
written at an event holds every callback's state after that event.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

#: the Trainer that steps the callbacks; named loosely so this module, which the trainer
#: imports, does not import it back (tests/test_layers.py forbids even a TYPE_CHECKING circle)
Trainer = Any


@dataclass(frozen=True)
class StepStats:
    """The batch just done, as ``trainer.last_step`` holds it at ``on_step_end``.

    Attributes:
        lr: the learning rate the step used (before the schedule moved on).
        grad_norm: the global gradient norm before clipping; NaN for a skipped step.
        seconds: wall time of the step (forward, backward, optimizer; not the data loading).
    """

    lr: float = math.nan
    grad_norm: float = math.nan
    seconds: float = 0.0


class Callback(Protocol):
    """What the loop calls, in list order; every method is optional (looked up by name).

    - ``on_epoch_start(trainer)``: before the epoch's first batch.
    - ``on_step_end(trainer, loss)``: after each batch; ``loss`` is NaN for a skipped step.
      ``trainer.last_step`` (`StepStats`) holds its learning rate, gradient norm and time;
      ``trainer.state`` its step (``global_step``) and the skipped steps so far.
    - ``on_epoch_end(trainer, record)``: after validation; ``record`` (epoch, train_loss,
      val_loss) is the history entry, and a callback may add keys to it.
    - a callback ends training cleanly with ``trainer.request_stop(reason)``: the loop stops
      after the current epoch and the job finishes as after an early stop (never raise
      through the job to stop it). Under DDP, where callbacks run on the main rank only,
      every rank stops with it.
    - ``state_dict() -> dict`` / ``load_state_dict(dict)``: tensors and JSON-able values that
      a checkpoint saves and a resume restores, keyed by the callback's class name (and its
      rank among callbacks of that class). A callback without them starts fresh on resume.
    """

    def on_epoch_start(self, trainer: Trainer) -> None: ...
    def on_step_end(self, trainer: Trainer, loss: float) -> None: ...
    def on_epoch_end(self, trainer: Trainer, record: dict[str, float]) -> None: ...


def notify(callbacks: Sequence[Any], event: str, trainer: Trainer, *args: Any) -> None:
    for callback in callbacks:
        hook: Callable[..., None] | None = getattr(callback, event, None)
        if hook is not None:
            hook(trainer, *args)


def _keyed(callbacks: Sequence[Any]) -> dict[str, Any]:
    """Stable names: the class name, then `#2`, `#3` for further callbacks of one class."""
    keyed: dict[str, Any] = {}
    for callback in callbacks:
        name = type(callback).__name__
        key, n = name, 1
        while key in keyed:
            n += 1
            key = f"{name}#{n}"
        keyed[key] = callback
    return keyed


def callback_states(callbacks: Sequence[Any]) -> dict[str, Any]:
    states = {}
    for key, callback in _keyed(callbacks).items():
        state_dict: Callable[[], dict[str, Any]] | None = getattr(callback, "state_dict", None)
        if state_dict is not None:
            states[key] = state_dict()
    return states


def load_callback_states(callbacks: Sequence[Any], states: Mapping[str, Any]) -> None:
    """Each callback gets its saved state; one the checkpoint does not know starts fresh, and
    a saved state without its callback (a rank without callbacks, one removed) is ignored."""
    for key, callback in _keyed(callbacks).items():
        load: Callable[[Any], None] | None = getattr(callback, "load_state_dict", None)
        if load is not None and key in states:
            load(states[key])
