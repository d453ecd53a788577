"""Forecasts over a whole dataset, in eval mode, batch by batch."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils.data import Dataset

from foxhunt.batch import TFTBatch
from foxhunt.data import make_loader
from foxhunt.task import check_coherent
from foxhunt.training.sampler import EpochBatchSampler


def sequential_batches(dataset: Dataset[TFTBatch], batch_size: int) -> Iterator[TFTBatch]:
    size = len(dataset)  # type: ignore[arg-type]
    sampler = EpochBatchSampler(size, batch_size=batch_size, seed=0, shuffle=False)
    yield from make_loader(dataset, batch_sampler=sampler)


@torch.no_grad()
def predict_windows(
    model: nn.Module,
    dataset: Dataset[TFTBatch],
    *,
    batch_size: int = 512,
    device: torch.device | str = "cpu",
    autocast: contextlib.AbstractContextManager[Any] | None = None,
    observe: Callable[[Any], None] | None = None,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Quantile forecasts [N, H, Q], targets [N, H] (None without targets) and anchors [N].
    ``observe`` sees each batch's whole output (a ``TFTOutput``): what else a caller needs
    from the same forward, as :class:`SelectionAverage`."""
    model.eval()
    preds, targets, anchors = [], [], []
    for batch in sequential_batches(dataset, batch_size):
        batch = batch.to(device)
        with autocast or contextlib.nullcontext():
            out = model(batch)
        if observe is not None:
            observe(out)
        preds.append(out.quantiles.float().cpu().numpy())
        if batch.target is not None:
            targets.append(batch.target.cpu().numpy())
        if batch.anchor is not None:
            anchors.append(batch.anchor.cpu().numpy())
    target = np.concatenate(targets).astype(np.float64) if targets else None
    anchor = np.concatenate(anchors) if anchors else np.arange(sum(len(p) for p in preds))
    quantiles = np.concatenate(preds).astype(np.float64)
    check_coherent(quantiles, "forecasts")
    return quantiles, target, anchor


@torch.no_grad()
def mean_selection_weights(
    model: nn.Module,
    dataset: Dataset[TFTBatch],
    *,
    batch_size: int = 512,
    device: torch.device | str = "cpu",
) -> dict[str, np.ndarray]:
    """Each variable selection network's weight per input, averaged over every window and
    time step of `dataset` (:meth:`SelectionAverage.means`)."""
    model.eval()
    average = SelectionAverage()
    for batch in sequential_batches(dataset, batch_size):
        average(model(batch.to(device)))
    return average.means()


class SelectionAverage:
    """The selection weights averaged over the outputs it is called with: one forward gives
    forecasts and importances (``predict_windows(observe=...)``). With `labels` [N] (each
    window's symbol, in the dataset's order, which ``predict_windows`` keeps) also the mean
    of each label's windows: a driver planted on one symbol shows in that symbol's."""

    def __init__(self, labels: np.ndarray | None = None) -> None:
        self.sums: dict[str, np.ndarray] = {}
        self.count = 0
        self.labels = labels
        self.by_label: dict[str, dict[str, np.ndarray]] = {}
        self.label_counts: dict[str, int] = {}

    def __call__(self, out: Any) -> None:
        windows = out.quantiles.shape[0]
        weights = selection_weights(out)
        _add_sums(self.sums, weights)
        if self.labels is not None:
            mine = self.labels[self.count : self.count + windows]
            for label in np.unique(mine):
                chosen = torch.from_numpy(mine == label)
                _add_sums(self.by_label.setdefault(str(label), {}), weights, chosen)
                counted = self.label_counts.get(str(label), 0)
                self.label_counts[str(label)] = counted + int(chosen.sum())
        self.count += windows

    def means(self) -> dict[str, np.ndarray]:
        """{"static": [S + C], "past": [P], "future": [F]}, each summing to 1 (or empty when
        the model has no such inputs)."""
        return {key: value / max(self.count, 1) for key, value in self.sums.items()}

    def means_by_label(self) -> dict[str, dict[str, np.ndarray]]:
        """`means` of each label's windows (empty without labels)."""
        return {
            label: {key: value / self.label_counts[label] for key, value in sums.items()}
            for label, sums in sorted(self.by_label.items())
        }


def selection_weights(out: Any) -> dict[str, torch.Tensor]:
    """One batch's selection weights (a ``TFTOutput``), each window's averaged over its time
    steps: {"static": [B, S + C], "past": [B, P], "future": [B, F]}, float64."""
    parts = {
        "static": out.static_weights,  # [B, S + C]
        "past": out.past_weights.mean(1),  # [B, L, P] -> [B, P]
        "future": out.future_weights.mean(1),  # [B, H, F] -> [B, F]
    }
    return {key: value.double() for key, value in parts.items()}


def selection_weight_sums(out: Any) -> dict[str, np.ndarray]:
    """`selection_weights` summed over the batch's windows. The mean of these over a dataset
    is what metrics.json's importance and the report show."""
    sums: dict[str, np.ndarray] = {}
    _add_sums(sums, selection_weights(out))
    return sums


def _add_sums(
    into: dict[str, np.ndarray], weights: dict[str, torch.Tensor], rows: torch.Tensor | None = None
) -> None:
    """Each of `weights` [B, k] summed over its windows (those `rows` picks), added to `into`."""
    for key, each in weights.items():
        total = (each if rows is None else each[rows.to(each.device)]).sum(0).cpu().numpy()
        into[key] = into[key] + total if key in into else total
