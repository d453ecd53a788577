"""Whether a trained epoch has earned its way past the initial weights.

With `validate_initial` the untrained weights compete for the best epoch; with the "baseline"
output they are the calibrated volatility forecast. At these signal-to-noise ratios a trained
epoch often beats them on validation by less than the validation sample can resolve, and such
wins do not carry over to test (docs/forecasting.md). So the first epoch that would replace the
initial weights must beat them with `initial_confidence`: the share of day-block bootstrap
resamples of the paired per-window loss difference (candidate - initial) that are below zero.
Once a trained epoch has replaced them, later epochs compete as usual.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray
from torch import Tensor, nn
from torch.utils.data import Dataset

from foxhunt.batch import TFTBatch
from foxhunt.task import window_losses
from foxhunt.task.bootstrap import day_blocks, share_below_zero

log = logging.getLogger("foxhunt.train")

Predict = Callable[[Dataset[TFTBatch]], tuple[np.ndarray, np.ndarray]]


def window_blocks(dataset: Dataset[TFTBatch]) -> NDArray[np.int64]:
    """The day of each window's last observed bar; each window its own block when the
    dataset does not say (not a WindowDataset)."""
    anchors, times = getattr(dataset, "anchors", None), getattr(dataset, "timestamps", None)
    if anchors is None or times is None:
        return np.arange(len(dataset), dtype=np.int64)  # type: ignore[arg-type]
    return day_blocks(times[np.asarray(anchors)])


class InitialGate:
    """Holds the initial weights' per-window validation losses; judges a candidate epoch."""

    def __init__(self, confidence: float, quantiles: Sequence[float]) -> None:
        self.confidence = confidence
        self.quantiles = tuple(quantiles)
        self.reference: np.ndarray | None = None  # not saved: rebuilt from the best weights

    def remember(self, predict: Predict, val_set: Dataset[TFTBatch]) -> None:
        """Score the initial weights window by window (called right after validating them)."""
        if self.confidence > 0.0 and len(val_set):  # type: ignore[arg-type]
            self.reference = window_losses(*predict(val_set), self.quantiles)

    def accepts(
        self,
        model: nn.Module,
        predict: Predict,
        val_set: Dataset[TFTBatch],
        initial_weights: Mapping[str, Tensor],
    ) -> bool:
        """Is the model's current state better than the initial weights with the required
        confidence? Every DDP rank scores the whole split, so all decide alike."""
        if self.confidence <= 0.0 or not len(val_set):  # type: ignore[arg-type]
            return True
        candidate = window_losses(*predict(val_set), self.quantiles)
        if self.reference is None:  # after a resume: score the initial weights again
            current = {k: v.detach().clone() for k, v in model.state_dict().items()}
            model.load_state_dict(initial_weights)
            self.reference = window_losses(*predict(val_set), self.quantiles)
            model.load_state_dict(current)
        sure = share_below_zero(candidate - self.reference, window_blocks(val_set))
        verdict = "replaces" if sure >= self.confidence else "does not replace"
        log.info(
            "trained weights beat the initial ones in %.0f%% of day resamples (need %.0f%%): "
            "%s them",
            100 * sure,
            100 * self.confidence,
            verdict,
        )
        return sure >= self.confidence
