"""Per-epoch diagnostics of a training run (``--diagnostics``): a callback, nothing in the loop.

For each top-level module of the model (the selection networks, the static encoders, the
LSTMs, the fusion decoder with its attention, the output head, the baseline head) it adds to
the epoch's record, and so to history.jsonl and the trackers:

- ``grad_norm/<module>``: the mean over the epoch's steps of the module's gradient norm,
  before clipping (clipping and the fp16 loss scale multiply every gradient by one factor,
  which the step's global norm, ``trainer.last_step.grad_norm``, undoes);
- ``update_ratio/<module>``: the mean over the steps of ||w after - w before|| / ||w before||
  (steps where the module's weights are all zero left out); around 1e-3 is the usual
  healthy order, far below means the module barely moves;
- ``vsn_entropy/<network>`` and ``vsn_entropy_share/<network>`` for the static, past and
  future selection networks: the mean entropy of their softmax weights over up to
  ``windows`` validation windows at the epoch's end, and that as a share of log(inputs):
  1 is uniform (the network selects nothing), 0 is one input always.

It reads the model and never changes it or the random state: a run trains the same with it.
It keeps a copy of the weights (one model's worth of memory) and saves no state: after a
mid-epoch `--resume` that epoch's means cover the steps since the resume.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils.data import Dataset, Subset

from foxhunt.quant.schedule import observers_paused

#: the record keys this callback adds, before the module or network name
PREFIXES = ("grad_norm/", "update_ratio/", "vsn_entropy/", "vsn_entropy_share/")
#: the selection networks' outputs (``TFTOutput``), by the name the record gives them
NETWORKS = {"static": "static_weights", "past": "past_weights", "future": "future_weights"}


def module_parameters(model: nn.Module) -> dict[str, list[nn.Parameter]]:
    """The trainable parameters by top-level module ("past_vsn", "lstm_encoder", ...)."""
    groups: dict[str, list[nn.Parameter]] = {}
    for name, param in model.named_parameters():
        if param.requires_grad:
            groups.setdefault(name.split(".", 1)[0], []).append(param)
    return groups


def norm(tensors: Sequence[Tensor]) -> float:
    """The global L2 norm of `tensors` (0 for none); one fused kernel per list, as
    `clip_grad_norm_` computes it."""
    if not tensors:
        return 0.0
    return float(torch.linalg.vector_norm(torch.stack(torch._foreach_norm(list(tensors)))))


def selection_entropy(weights: Tensor) -> tuple[float, float | None]:
    """(mean entropy, its share of log(n)) of softmax `weights` [..., n] over every leading
    row; the share is None for a single input, which has nothing to select among."""
    n = weights.shape[-1]
    w = weights.detach().double().reshape(-1, n)
    entropy = float(-(w * w.clamp_min(1e-30).log()).sum(-1).mean())
    return entropy, (entropy / math.log(n) if n > 1 else None)


class EntropyAverage:
    """The selection networks' mean entropies over the outputs it is called with."""

    def __init__(self) -> None:
        self.sums: dict[str, float] = {}
        self.rows: dict[str, int] = {}
        self.inputs: dict[str, int] = {}

    def __call__(self, out: Any) -> None:
        for name, attribute in NETWORKS.items():
            weights = getattr(out, attribute)
            n = weights.shape[-1]
            if n == 0:  # a learned input stands in: no selection
                continue
            rows = weights.numel() // n
            entropy, _ = selection_entropy(weights)
            self.sums[name] = self.sums.get(name, 0.0) + entropy * rows
            self.rows[name] = self.rows.get(name, 0) + rows
            self.inputs[name] = n

    def record(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for name, total in self.sums.items():
            entropy, n = total / self.rows[name], self.inputs[name]
            out[f"vsn_entropy/{name}"] = entropy
            if n > 1:
                out[f"vsn_entropy_share/{name}"] = entropy / math.log(n)
        return out


class TrainingDiagnostics:
    """The callback (see the module docstring); `windows` validation windows (the training
    ones when there are none) give the entropies."""

    def __init__(self, windows: int = 256) -> None:
        self.windows = windows
        self._groups: dict[str, list[nn.Parameter]] = {}
        self._before: dict[str, list[Tensor]] = {}
        self._sums: dict[str, float] = {}
        self._counts: dict[str, int] = {}

    def on_epoch_start(self, trainer: Any) -> None:
        self._groups = module_parameters(trainer.model)
        self._before = {k: [p.detach().clone() for p in ps] for k, ps in self._groups.items()}
        self._sums, self._counts = {}, {}

    def on_step_end(self, trainer: Any, loss: float) -> None:
        if not math.isfinite(loss):  # a skipped step changed nothing
            return
        grads = {
            k: norm([p.grad for p in ps if p.grad is not None]) for k, ps in self._groups.items()
        }
        applied = math.sqrt(sum(g * g for g in grads.values()))
        total = trainer.last_step.grad_norm
        scale = total / applied if applied > 0 and math.isfinite(total) else 1.0
        for name, params in self._groups.items():
            before, after = self._before[name], [p.detach() for p in params]
            size = norm(before)
            self._add(f"grad_norm/{name}", grads[name] * scale)
            if size > 0:  # a zero-initialized head has no ratio before its first step
                self._add(f"update_ratio/{name}", norm(torch._foreach_sub(after, before)) / size)
            torch._foreach_copy_(before, after)

    def on_epoch_end(self, trainer: Any, record: dict[str, Any]) -> None:
        record.update({k: v / self._counts[k] for k, v in self._sums.items()})
        record.update(self.entropies(trainer))

    def entropies(self, trainer: Any) -> dict[str, float]:
        """The selection entropies of the model as it stands (eval mode, no dropout; QAT
        observers paused, so the measurement moves nothing)."""
        dataset: Dataset[Any] = trainer.val_set if len(trainer.val_set) else trainer.train_set
        count = min(self.windows, len(dataset))  # type: ignore[arg-type]
        if count == 0:
            return {}
        average = EntropyAverage()
        with observers_paused(trainer.model):
            trainer.predict(Subset(dataset, range(count)), observe=average)
        return average.record()

    def _add(self, key: str, value: float) -> None:
        self._sums[key] = self._sums.get(key, 0.0) + value
        self._counts[key] = self._counts.get(key, 0) + 1
