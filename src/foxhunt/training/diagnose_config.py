"""`foxhunt diagnose`'s settings: the overfit check and the learning-rate range test. How the
checks run, never part of a run; no torch, so that `foxhunt diagnose --help` loads none."""

from __future__ import annotations

from dataclasses import dataclass

from foxhunt.config_fields import LEARNING_RATE, Range, check_ranges, setting
from foxhunt.errors import ConfigError


@dataclass(frozen=True, kw_only=True)
class DiagnoseConfig:
    """The checks of a network that does not learn (docs/forecasting.md, "When the network
    does not learn").

    Attributes:
        overfit_windows: training windows (a fixed, seeded sample) the overfit check fits as
            one batch, 1 to 100,000.
        overfit_steps: optimizer steps of the overfit check, without dropout or weight
            decay (>= 1).
        overfit_lr: the overfit check's learning rate, in (0, 1e6]; None = the training lr.
        overfit_ratio: the check passes when the final train loss on those windows is at
            most this share of the head's (the untrained, calibrated network's), in (0, 1).
        lr_range_start: the range test's first learning rate, in (0, 1e6].
        lr_range_end: its last, above lr_range_start and at most 1e6; the rate grows
            exponentially between.
        lr_range_steps: optimizer steps of the range test, one rate each, 2 to 100,000; it
            stops early once the smoothed loss diverges (4x its lowest) or is not finite.
    """

    overfit_windows: int = setting(256, range=Range(1, 100_000))
    overfit_steps: int = setting(200, range=Range(1, 1_000_000))
    overfit_lr: float | None = setting(None, range=LEARNING_RATE)
    overfit_ratio: float = setting(0.5, range=Range(0, 1, low_open=True, high_open=True))
    lr_range_start: float = setting(1e-6, range=LEARNING_RATE)
    lr_range_end: float = setting(1.0, range=LEARNING_RATE)
    lr_range_steps: int = setting(100, range=Range(2, 100_000))

    def __post_init__(self) -> None:
        check_ranges(self, "diagnose")
        if self.lr_range_start >= self.lr_range_end:
            raise ConfigError(
                f"diagnose.lr_range_start={self.lr_range_start!r} must be below "
                f"lr_range_end={self.lr_range_end!r} (the test raises the rate from one to "
                "the other)"
            )
