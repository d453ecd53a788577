"""The update side of a training step: AdamW, the fp16 gradient scaler, clipping and the
learning-rate schedule, with their state. The trainer decides when to update; this is how."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor, nn

from foxhunt.memory.oom import optimizer_step_oom
from foxhunt.training.config import TrainingConfig
from foxhunt.training.finite import check_finite_weights
from foxhunt.training.schedule import build_scheduler, load_scheduler, planned_steps, step_scheduler


class WeightUpdate:
    """Gradients of `model` in, updated weights out; `batches_per_epoch` plans the schedule."""

    def __init__(
        self,
        model: nn.Module,
        config: TrainingConfig,
        device: torch.device,
        *,
        batches_per_epoch: int,
    ) -> None:
        self.model = model
        self.grad_clip = config.grad_clip
        self.optimizer = torch.optim.AdamW(
            model.parameters(), lr=config.lr, weight_decay=config.weight_decay
        )
        self.scaler = torch.amp.GradScaler(
            "cuda", enabled=config.precision == "fp16" and device.type == "cuda"
        )
        #: None for lr_schedule="constant": such a run steps no scheduler, as before there were any
        self.scheduler = build_scheduler(
            self.optimizer, config, planned_steps(config, batches_per_epoch)
        )

    @property
    def lr(self) -> float:
        """The learning rate the next update uses."""
        return float(self.optimizer.param_groups[0]["lr"])

    def zero_grad(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)

    def backward(self, loss: Tensor) -> None:
        """Backward of `loss`, scaled under fp16 so small gradients do not underflow."""
        self.scaler.scale(loss).backward()

    def apply(self, step: int) -> float:
        """Clip, step the optimizer, then the loss scale and the schedule; the global gradient
        norm before clipping. `step` (the global step) names a non-finite weight's step."""
        norm = self._clip_gradients()
        with optimizer_step_oom():  # out of memory now: the weights may be partly updated
            self.scaler.step(self.optimizer)
        self.scaler.update()
        check_finite_weights(self.model, step)
        step_scheduler(self.scheduler)
        return norm

    def _clip_gradients(self) -> float:
        """Clip to grad_clip (if > 0); the global gradient norm before clipping, unscaled."""
        if self.grad_clip > 0:
            self.scaler.unscale_(self.optimizer)
            return float(nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip))
        grads = [p.grad for p in self.model.parameters() if p.grad is not None]
        norm = float(nn.utils.get_total_norm(grads)) if grads else 0.0
        return norm / self.scaler.get_scale() if self.scaler.is_enabled() else norm

    def state_dict(self) -> dict[str, Any]:
        """`optimizer` and `scaler`, and `scheduler` with a schedule (absent with the constant
        one, as in checkpoints written before schedules): keys of the trainer's state."""
        scheduler = {} if self.scheduler is None else {"scheduler": self.scheduler.state_dict()}
        return {
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.scaler.state_dict(),
            **scheduler,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """The inverse of `state_dict` (`state` may hold the trainer's other keys too)."""
        self.optimizer.load_state_dict(state["optimizer"])
        if self.scheduler is not None:  # after the optimizer, whose groups hold the lr
            load_scheduler(self.scheduler, state["scheduler"])
        self.scaler.load_state_dict(state["scaler"])
