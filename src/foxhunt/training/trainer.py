"""The training loop: named steps, orchestrated; no model or loss math lives here."""

from __future__ import annotations

import contextlib
import logging
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from torch.utils.data import Dataset
from tqdm import tqdm

from foxhunt.batch import TFTBatch
from foxhunt.data import make_loader
from foxhunt.task import batch_loss
from foxhunt.training import precision
from foxhunt.training.accumulation import accumulate_gradients
from foxhunt.training.callbacks import StepStats, callback_states, load_callback_states, notify
from foxhunt.training.config import TrainingConfig, resolve_device
from foxhunt.training.distributed import all_reduce_sum, rank_step_seed, wrap_ddp
from foxhunt.training.evaluation import mean_quantile_loss
from foxhunt.training.finite import check_finite_validation
from foxhunt.training.inference import predict_windows
from foxhunt.training.sampler import EpochBatchSampler
from foxhunt.training.selection import InitialGate
from foxhunt.training.threads import apply_threads
from foxhunt.training.train_state import TrainingDiverged, TrainState, rng_state, set_rng_state
from foxhunt.training.update import WeightUpdate

__all__ = ["TrainState", "Trainer", "TrainingDiverged"]

log = logging.getLogger("foxhunt.train")


class Trainer:
    """Fits a model with quantile loss, AdamW, clipping and early stopping on validation loss.

    With `world_size > 1` (a process group must exist, see `foxhunt.training.distributed`)
    the model is wrapped in DistributedDataParallel for training steps; `self.model` stays
    the plain module (checkpoints, evaluation and prediction use it). Each rank takes
    `batch_size / world_size` windows of every global batch, DDP averages the gradients, and
    the loss, the skip decision and the validation loss are reduced so every rank agrees.
    """

    def __init__(
        self,
        model: nn.Module,
        config: TrainingConfig,
        *,
        train_set: Dataset[TFTBatch],
        val_set: Dataset[TFTBatch],
        quantiles: Sequence[float],
        callbacks: Sequence[Any] = (),  # see training/callbacks.py
        rank: int = 0,
        world_size: int = 1,
        local_rank: int = 0,
        micro_batch_size: int | None = None,
    ) -> None:
        self.config = config
        #: this process's torch threads, decided and logged once, before any step
        self.threads = apply_threads(config.threads).threads
        #: windows per forward/backward; a step accumulates the gradients of its micro-batches
        #: (None = the whole batch at once). Set from the memory plan, see training/memory.py.
        self.micro_batch_size = micro_batch_size
        self.device = resolve_device(config.device, local_rank if world_size > 1 else None)
        #: decided here, before any step: a device that cannot run it raises ConfigError
        self.autocast_dtype = precision.autocast_dtype(config.precision, self.device)
        self.model = model.to(self.device)
        # DDP is the last transform; it wraps whatever checkpointing/QAT left in the model
        self.train_model: nn.Module = (
            wrap_ddp(self.model, self.device) if world_size > 1 else self.model
        )
        self.quantiles = tuple(quantiles)
        self.train_set, self.val_set = train_set, val_set
        self.callbacks = list(callbacks)
        self.rank, self.world_size = rank, world_size
        self.state = TrainState()
        self.gate = InitialGate(config.initial_confidence, self.quantiles)
        self.best_weights: dict[str, Tensor] | None = None
        self.sampler = EpochBatchSampler(
            len(train_set),  # type: ignore[arg-type]
            batch_size=config.batch_size,
            seed=config.seed,
            rank=rank,
            world_size=world_size,
        )
        #: the optimizer, grad scaler and LR schedule (training/update.py)
        self.update = WeightUpdate(
            self.model, config, self.device, batches_per_epoch=len(self.sampler)
        )
        self.last_step = StepStats()  # what callbacks read at on_step_end (callbacks.py)
        self._grad_norm = math.nan

    # --- named steps -------------------------------------------------------------------
    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        return precision.autocast(self.device, self.autocast_dtype)

    def compute_loss(self, batch: TFTBatch) -> Tensor:
        return batch_loss(
            self.train_model,
            batch,
            self.quantiles,
            weighting=self.config.loss_weighting,
            autocast=self.autocast,
            range_weight=self.config.range_weight,
        )

    def train_step(self, batch: TFTBatch) -> float:
        """One optimizer step; a non-finite loss skips the update instead of poisoning weights.

        Under DDP the returned loss is the mean over ranks (the global batch's loss, local
        batches being equal), and it is non-finite when any rank's is, so all skip together.
        """
        self.train_model.train()
        self._grad_norm = math.nan
        batch = batch.to(self.device, non_blocking=True)
        self.update.zero_grad()
        if self.world_size > 1:
            torch.manual_seed(self._dropout_seed())
        micro = self.micro_batch_size
        if micro is not None and micro < batch.batch_size:
            return self._accumulated_step(batch, micro)
        loss = self.compute_loss(batch)
        value = float(loss.detach())
        if self.world_size > 1:  # before backward: DDP's all-reduce needs every rank there
            value = all_reduce_sum([value], self.device)[0] / self.world_size
        if not math.isfinite(value):
            return self._skip_nonfinite(value)
        self.update.backward(loss)
        return self._optimizer_step(value)

    def _optimizer_step(self, value: float) -> float:
        self._grad_norm = self.update.apply(self.state.global_step)
        self.state.nonfinite_in_a_row = 0
        self.state.global_step += 1
        return value

    def _accumulated_step(self, batch: TFTBatch, micro: int) -> float:
        """The step in micro-batches (training/accumulation.py); a non-finite total discards
        the accumulated gradients and skips, as a whole batch would."""
        value = accumulate_gradients(
            self.train_model, batch, micro, loss_of=self.compute_loss, backward=self.update.backward
        )
        if self.world_size > 1:
            value = all_reduce_sum([value], self.device)[0] / self.world_size
        if not math.isfinite(value):
            self.update.zero_grad()
            return self._skip_nonfinite(value)
        return self._optimizer_step(value)

    def _dropout_seed(self) -> int:
        state = self.state
        return rank_step_seed(self.config.seed, self.rank, state.epoch, state.batch_in_epoch)

    def _skip_nonfinite(self, value: float) -> float:
        self.state.skip_nonfinite(value, self.config.max_nonfinite_steps)  # may raise
        return value

    def predict(
        self, dataset: Dataset[TFTBatch], observe: Callable[[Any], None] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Quantile forecasts [N, H, Q] and targets [N, H] for every window, scaled units;
        ``observe`` sees each batch's output (``predict_windows``)."""
        pred, target, _ = predict_windows(
            self.model,
            dataset,
            batch_size=self.config.eval_batch_size,
            device=self.device,
            autocast=self.autocast(),
            observe=observe,
        )
        assert target is not None, "evaluation windows carry targets"
        return pred, target

    def evaluate(self, dataset: Dataset[TFTBatch]) -> float:
        """Mean quantile loss over all windows of `dataset` (scaled units); under DDP a
        collective, sharded over the ranks (training/evaluation.py)."""
        return mean_quantile_loss(
            self.predict,
            dataset,
            self.quantiles,
            rank=self.rank,
            world_size=self.world_size,
            device=self.device,
        )

    # --- orchestration -----------------------------------------------------------------
    def fit(self) -> TrainState:
        config, state = self.config, self.state
        if config.validate_initial and state.initial_val_loss is None and state.global_step == 0:
            self.validate_initial()
        while state.epoch < config.epochs and not state.stopped_early:
            notify(self.callbacks, "on_epoch_start", self)
            train_loss = self.train_epoch()
            val_loss = self.evaluate(self.val_set)
            check_finite_validation(val_loss, len(self.val_set), state.epoch)  # type: ignore[arg-type]
            record = {"epoch": state.epoch, "train_loss": train_loss, "val_loss": val_loss}
            self._track_best(val_loss, state.epoch)
            state.finish_epoch(record, epochs=config.epochs, patience=config.patience)
            self.sampler.set_position(state.epoch, state.batch_in_epoch)
            notify(self.callbacks, "on_epoch_end", self, record)
            if self.world_size > 1:  # callbacks run on the main rank: a stop is every rank's
                stop = all_reduce_sum([float(state.stopped_early)], self.device)[0]
                state.stopped_early = stop > 0
        if self.best_weights is not None:
            self.model.load_state_dict(self.best_weights)
        return state

    def request_stop(self, reason: str) -> None:
        """End training after the current epoch, as an early stop does: the job then keeps
        the best weights, scores the test split and writes a complete run folder. For a
        callback (an Optuna pruner, a time limit); raising instead would leave the run folder
        half-written."""
        if not self.state.stopped_early:
            log.info("stopping after epoch %d: %s", self.state.epoch, reason)
        self.state.stopped_early = True

    def validate_initial(self) -> None:
        """Score the untrained weights on validation; they become the best so far."""
        state = self.state
        state.initial_val_loss = self.evaluate(self.val_set)
        self._track_best(state.initial_val_loss, epoch=-1)
        log.info("initial weights: val %.4f", state.initial_val_loss)
        self.gate.remember(self.predict, self.val_set)

    def train_epoch(self) -> float:
        state = self.state
        self.sampler.set_position(state.epoch, state.batch_in_epoch)
        workers, pinned = self.config.num_workers, self.device.type == "cuda"  # non_blocking
        loader = make_loader(
            self.train_set, batch_sampler=self.sampler, num_workers=workers, pin_memory=pinned
        )
        limit = self.config.max_steps_per_epoch or len(self.sampler)
        bar = tqdm(
            total=min(limit, len(self.sampler)) - state.batch_in_epoch,
            desc=f"epoch {state.epoch + 1}",
            disable=self.rank != 0 or not sys.stderr.isatty(),
            leave=False,
        )
        for batch in loader:
            if state.batch_in_epoch >= limit:
                break
            lr, started = self.update.lr, time.perf_counter()
            loss = self.train_step(batch)
            self.last_step = StepStats(lr, self._grad_norm, time.perf_counter() - started)
            state.add_step_loss(loss)
            # the sampler's own state; the iteration in flight read its start when it began
            self.sampler.set_position(state.epoch, state.batch_in_epoch)
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.4f}")
            notify(self.callbacks, "on_step_end", self, loss)
        bar.close()
        return state.take_epoch_loss()

    def _track_best(self, val_loss: float, epoch: int) -> None:
        state, initial = self.state, self.best_weights
        contest = epoch >= 0 and state.best_epoch == -1 and initial is not None  # vs initial
        if contest and val_loss < state.best_val_loss - self.config.min_delta:
            assert initial is not None
            if not self.gate.accepts(self.model, self.predict, self.val_set, initial):
                val_loss = math.inf  # not sure enough: counts as no improvement
        if state.improve(val_loss, self.config.min_delta, epoch):
            self.best_weights = {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    # --- state -------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything a run needs to continue exactly, by part: tensors (live ones, not
        copies) and JSON-able values. `best_weights` is None before any validation."""
        return {
            "model": self.model.state_dict(),
            "best_weights": self.best_weights,
            **self.update.state_dict(),  # optimizer, scaler and (with a schedule) scheduler
            "train_state": asdict(self.state),
            "sampler": self.sampler.state_dict(),
            "rng": rng_state(),
            "callbacks": callback_states(self.callbacks),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """The inverse of `state_dict`, onto this trainer's device. `scheduler` is there with
        a schedule (the config check refuses to mix them). `sampler` and `callbacks` may be
        absent (checkpoints written before they had state): the sampler then starts
        where `train_state` stands, the callbacks fresh."""
        to = self.device
        self.model.load_state_dict({k: v.to(to) for k, v in state["model"].items()})
        self.update.load_state_dict(state)
        self.state = TrainState(**state["train_state"])
        best = state.get("best_weights")
        self.best_weights = {k: v.to(to) for k, v in best.items()} if best else None
        position = {"epoch": self.state.epoch, "start_batch": self.state.batch_in_epoch}
        self.sampler.load_state_dict(state.get("sampler") or position)
        load_callback_states(self.callbacks, state.get("callbacks") or {})
        set_rng_state(state["rng"])
