"""Where training stands, and how it moves: the loop's bookkeeping, kept apart from its steps.

`TrainState` is plain data (a checkpoint writes it as JSON) with the few rules that advance
it: a new best, the end of an epoch, a skipped non-finite step. The process-wide RNG is here
too, the other piece of a trainer's state that is no module's.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import torch
from torch import Tensor

from foxhunt.errors import FoxhuntError

log = logging.getLogger("foxhunt.train")


class TrainingDiverged(FoxhuntError):
    """Too many consecutive non-finite losses."""


@dataclass
class TrainState:
    """Where training stands; everything needed to continue exactly, besides tensors."""

    epoch: int = 0
    batch_in_epoch: int = 0
    global_step: int = 0
    best_val_loss: float = math.inf
    best_epoch: int = -1
    epochs_without_improvement: int = 0
    nonfinite_in_a_row: int = 0
    skipped_steps: int = 0
    epoch_loss_sum: float = 0.0  # running train loss of the current epoch, survives a resume
    epoch_loss_count: int = 0
    stopped_early: bool = False
    initial_val_loss: float | None = None  # validate_initial: the untrained weights' loss
    history: list[dict[str, float]] = field(default_factory=list)

    def improve(self, val_loss: float, min_delta: float, epoch: int) -> bool:
        """Count a validation loss; True when it is the best so far (keep its weights)."""
        if val_loss < self.best_val_loss - min_delta:
            self.best_val_loss, self.best_epoch = val_loss, epoch
            self.epochs_without_improvement = 0
            return True
        self.epochs_without_improvement += 1
        return False

    def add_step_loss(self, loss: float) -> None:
        """One batch done; a skipped (non-finite) step does not enter the epoch's mean."""
        self.batch_in_epoch += 1
        if math.isfinite(loss):
            self.epoch_loss_sum += loss
            self.epoch_loss_count += 1

    def take_epoch_loss(self) -> float:
        """The epoch's mean train loss; the running sum starts over."""
        count = self.epoch_loss_count
        mean = self.epoch_loss_sum / count if count else math.nan
        self.epoch_loss_sum, self.epoch_loss_count = 0.0, 0
        return mean

    def finish_epoch(self, record: dict[str, float], *, epochs: int, patience: int) -> None:
        """Keep and log the epoch's record, then move to the start of the next epoch; stop
        early once `patience` epochs did not improve."""
        self.history.append(record)
        log.info(
            "epoch %d/%d  train %.4f  val %.4f%s",
            self.epoch + 1,
            epochs,
            record["train_loss"],
            record["val_loss"],
            "  (best)" if self.best_epoch == self.epoch else "",
        )
        self.epoch += 1
        self.batch_in_epoch = 0
        if patience and self.epochs_without_improvement >= patience:
            self.stopped_early = True
            log.info("early stop: no val improvement for %d epochs", patience)

    def skip_nonfinite(self, value: float, limit: int) -> None:
        """Count a skipped step; `limit` in a row raise TrainingDiverged."""
        self.nonfinite_in_a_row += 1
        self.skipped_steps += 1
        log.warning(
            "non-finite loss %s at step %d: step skipped (%d in a row, stop at %d)",
            value,
            self.global_step,
            self.nonfinite_in_a_row,
            limit,
        )
        if self.nonfinite_in_a_row >= limit:
            raise TrainingDiverged(
                f"training diverged: {self.nonfinite_in_a_row} non-finite losses in a row "
                f"at step {self.global_step}; lower --lr or check the input data"
            )


def rng_state() -> dict[str, Tensor]:
    """The torch CPU generator and every CUDA one (`cuda/<index>`), as a checkpoint holds them."""
    state = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state.update({f"cuda/{i}": s for i, s in enumerate(torch.cuda.get_rng_state_all())})
    return state


def set_rng_state(state: dict[str, Tensor]) -> None:
    torch.set_rng_state(state["torch"])
    cuda = sorted((int(k.removeprefix("cuda/")), k) for k in state if k.startswith("cuda/"))
    cuda_states = [state[k] for _, k in cuda]  # by index: "cuda/10" comes after "cuda/9"
    if cuda_states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda_states)
