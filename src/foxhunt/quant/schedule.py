"""When the QAT observers may update: train-mode passes of the warm-up, once per pass.

A fake quantizer (``quant/fake.py``) updates its range on *every* call while it is
``observing``, whatever the module's train/eval mode. Left alone that would let validation
batches move the scales, and activation checkpointing, which runs a segment's forward a
second time in backward, would update them twice and quantize the recomputation on a
different grid than the forward (wrong gradients). :class:`ObserverSchedule` owns the switch instead: hooks on
the model enable the observers just before a train-mode forward of the warm-up and disable
them right after it. Recomputation happens in backward, after that forward has returned, so
it always runs with observers off and with the scales the forward used: it is exact, during
the warm-up as after it. After ``freeze_after`` training passes the observers stay off.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn.utils import parametrize
from torch.utils.hooks import RemovableHandle

from foxhunt.quant.config import QATConfig
from foxhunt.quant.fake import set_observers

SCHEDULE_NAME = "qat_observers"  # the child the schedule is registered as on the model


def release_lstm_weights(model: nn.Module) -> None:
    """Drop the fake-quantized weights an ``nn.LSTM`` caches between passes.

    ``nn.LSTM`` keeps the weights of its last forward in ``_flat_weights``; parametrized,
    those are outputs of the autograd graph, which would stay alive until the next pass and
    make the model impossible to ``deepcopy``. The next forward recomputes them anyway.
    """
    for module in model.modules():
        if isinstance(module, nn.LSTM) and parametrize.is_parametrized(module):
            module._flat_weights = [None] * len(module._flat_weights)


class ObserverSchedule(nn.Module):
    """Counts training passes (``steps``, saved with the weights) and gates the observers.

    Registered on the model as ``qat_observers`` by ``prepare_qat``, so the count is part of
    the model's ``state_dict`` and survives a checkpoint and resume. Its own
    ``state_dict()`` / ``load_state_dict()`` are ``nn.Module``'s: ``{"steps": tensor}``, all
    of its state (``freeze_after`` is config; ``paused`` lasts only a measurement). They are
    not overridden: the model's ``state_dict`` calls them for its children.
    """

    def __init__(self, config: QATConfig) -> None:
        super().__init__()
        self.config = config
        self.freeze_after = config.freeze_after
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))
        self.steps: Tensor
        self.paused = False  # see observers_paused
        self._handles: list[RemovableHandle] = []

    @property
    def frozen(self) -> bool:
        """True once the warm-up is over: scales and zero points no longer change."""
        return int(self.steps) >= self.freeze_after

    def attach(self, model: nn.Module) -> None:
        self.detach()
        self._handles = [
            model.register_forward_pre_hook(self._before),
            model.register_forward_hook(self._after),
        ]

    def detach(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _before(self, model: nn.Module, args: Any) -> None:
        set_observers(model, model.training and not self.frozen and not self.paused)

    def _after(self, model: nn.Module, args: Any, output: Any) -> None:
        set_observers(model, False)
        release_lstm_weights(model)
        if model.training and not self.paused:
            self.steps += 1

    def extra_repr(self) -> str:
        return f"freeze_after={self.freeze_after}, steps={int(self.steps)}"


def schedule_of(model: nn.Module) -> ObserverSchedule | None:
    found = getattr(model, SCHEDULE_NAME, None)
    return found if isinstance(found, ObserverSchedule) else None


@contextmanager
def observers_paused(model: nn.Module) -> Iterator[None]:
    """Forward passes inside neither update the observers nor count as training steps (a
    measurement pass before training must not change what training does). No-op for a model
    without QAT."""
    schedule = schedule_of(model)
    if schedule is None:
        yield
        return
    was, schedule.paused = schedule.paused, True
    try:
        yield
    finally:
        schedule.paused = was
