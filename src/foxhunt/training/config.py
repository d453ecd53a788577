"""Training configuration: how to optimize, independent of data and architecture."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from foxhunt.config_fields import (
    FRACTION,
    LEARNING_RATE,
    SEED,
    Range,
    check_known_fields,
    check_ranges,
    setting,
)
from foxhunt.errors import ConfigError, FoxhuntError
from foxhunt.training.threads import CEILING, check_requested

if TYPE_CHECKING:
    import torch  # imported where a device is resolved: the config alone (--help) needs none

Device = Literal["auto", "cpu", "cuda"]
Precision = Literal["fp32", "bf16", "fp16"]
LossWeighting = Literal["none", "inverse_scale"]
DEVICES: tuple[str, ...] = get_args(Device)
PRECISIONS: tuple[str, ...] = get_args(Precision)
LOSS_WEIGHTINGS: tuple[str, ...] = get_args(LossWeighting)
LRSchedule = Literal["constant", "cosine", "onecycle"]
LR_SCHEDULES: tuple[str, ...] = get_args(LRSchedule)

DEFAULT_TIMEOUT_S = 300.0
"""Seconds a DDP collective waits for the other ranks before failing (``--dist-timeout``;
``training/distributed.py``)."""


@dataclass(frozen=True, kw_only=True)
class TrainingConfig:
    """Optimization settings.

    Attributes:
        epochs: passes over the training windows (>= 1).
        batch_size: windows per optimizer step (>= 1).
        eval_batch_size: windows per forward pass when evaluating (>= 1).
        lr: AdamW learning rate, in (0, 1e6].
        weight_decay: AdamW decoupled weight decay (>= 0).
        grad_clip: max global gradient norm; 0 disables clipping.
        patience: epochs without validation improvement before stopping early; 0 disables.
        min_delta: improvement in validation loss that counts as one (>= 0).
        seed: seeds parameters, dropout and the shuffle order.
        device: "auto" (CUDA when available), "cpu" or "cuda".
        precision: "fp32"; "bf16" autocast on CUDA and on CPUs with AVX-512 BF16 or AMX
            (refused, before training, elsewhere); "fp16" autocast on CUDA.
        max_steps_per_epoch: cap on optimizer steps per epoch, for quick runs; None = all.
        max_nonfinite_steps: consecutive NaN/inf losses tolerated (step skipped) before stopping.
        num_workers: DataLoader worker processes (0 = load in the training process).
        loss_weighting: "none" = pinball loss in scaled target units; "inverse_scale" = each
            window's loss divided by its baseline scale (batch.scale), i.e. the loss of the
            standardized forecast, so calm and volatile windows weigh alike. Validation and
            early stopping always use the unweighted loss, the units that are reported.
        range_weight: weight (>= 0) of the range loss added to the pinball loss in training:
            with the "baseline" output and log_scale, how far the network's log-volatility
            adjustment misses the log range (high / low) of each target bar over the base
            (model/loss.py). A bar's range measures its
            volatility several times more precisely than its return, so the network learns
            what moves volatility from far fewer bars (docs/forecasting.md, "The range loss").
            0 = the pinball loss alone, as runs saved before this field. Validation, early
            stopping and every table use the pinball loss alone.
        validate_initial: score the validation split once before the first epoch, so the
            initial weights compete for the best epoch; with output="baseline" they are the
            rolling-volatility baseline, which the kept model then never loses to on validation.
        calibrate: with output="baseline", fit the output's volatility-signal weight (and
            spread, with learn_spread) on the training windows by L-BFGS before the first
            epoch (training/calibrate.py); the initial weights are then that calibrated
            forecast. False: they start at zero (the plain baseline).
        initial_confidence: with validate_initial, a trained epoch replaces the initial
            weights only if a day-block bootstrap of the paired per-window validation losses
            says it is better with this confidence (one-sided, in [0, 1); 0 = any improvement
            counts). Later epochs then compete as usual (training/selection.py).
        head_fallback: with validate_initial and output="baseline", after training: each
            other base of `DataConfig.base`'s candidates (EWMA, HAR, GARCH-t, the rolling
            RMS) gets its own calibrated head, scored on the same validation windows; the best
            replaces the kept model when it beats it (with initial_confidence when the kept
            model is a trained network; by its mean loss when it is the training base's own
            head). The run then serves that head, its base saved as the run's
            (jobs/fallback.py). The network trains on the rolling base, where it learns the
            drivers best, and a market with nothing to learn still gets the best head.
        lr_schedule: "constant" (lr throughout); "cosine": linear warm-up to lr, then a half
            cosine down to min_lr at the last step; "onecycle": torch's OneCycleLR peaking
            at lr after the warm-up (training/schedule.py). Stepped per optimizer step over
            epochs x steps per epoch, planned when the run starts and kept on resume.
        warmup_steps: optimizer steps of warm-up (>= 0) for cosine and onecycle; None =
            warmup_fraction of the planned steps.
        warmup_fraction: the warm-up's share of the planned steps when warmup_steps is None,
            in [0, 1).
        min_lr: the learning rate the cosine and onecycle schedules end at, in [0, lr);
            0 with onecycle = lr / 25e4 (torch's default).
        threads: CPU threads of this process's torch ops, 1 to 256 (a count above the
            usable cores runs with a warning). None (the default): OMP_NUM_THREADS or
            MKL_NUM_THREADS when set, else the cores this process may run on; "auto" (or 0):
            the cores other processes leave idle when training starts, which depends on the
            load. A run records the count it used in config.json and a resume keeps it:
            some ATen ops' results depend on it (docs/performance.md, "Threads";
            training/threads.py).
    """

    epochs: int = setting(5, range=Range(1, 1_000_000))
    batch_size: int = 64
    eval_batch_size: int = 512
    lr: float = setting(1e-3, range=LEARNING_RATE)
    weight_decay: float = 1e-4
    grad_clip: float = 1.0
    patience: int = setting(3, range=Range(0))
    min_delta: float = 0.0
    seed: int = setting(0, range=SEED)
    device: Device = "auto"
    precision: Precision = "fp32"
    max_steps_per_epoch: int | None = None
    max_nonfinite_steps: int = 5
    num_workers: int = setting(0, range=Range(0, 256))
    loss_weighting: LossWeighting = "none"
    range_weight: float = setting(1.0, range=Range(0, 100))
    validate_initial: bool = True
    calibrate: bool = True
    initial_confidence: float = setting(0.95, range=FRACTION)
    head_fallback: bool = True
    lr_schedule: LRSchedule = "constant"
    warmup_steps: int | None = setting(None, range=Range(0))
    warmup_fraction: float = setting(0.05, range=FRACTION)
    min_lr: float = 0.0
    threads: int | Literal["auto"] | None = setting(None, range=Range(0, CEILING))

    def __post_init__(self) -> None:
        positive = ("epochs", "batch_size", "eval_batch_size", "max_nonfinite_steps")
        for name in positive:
            if getattr(self, name) < 1:
                raise ConfigError(f"training.{name} must be >= 1, got {getattr(self, name)}")
        if self.lr <= 0:
            raise ConfigError(f"training.lr must be > 0, got {self.lr}")
        for name in (
            "weight_decay",
            "grad_clip",
            "min_delta",
            "patience",
            "num_workers",
        ):
            if getattr(self, name) < 0:
                raise ConfigError(f"training.{name} must be >= 0, got {getattr(self, name)}")
        if self.max_steps_per_epoch is not None and self.max_steps_per_epoch < 1:
            raise ConfigError(
                f"training.max_steps_per_epoch must be >= 1 or None, got {self.max_steps_per_epoch}"
            )
        if self.device not in DEVICES:
            raise ConfigError(f"training.device must be one of {DEVICES}, got {self.device!r}")
        if self.loss_weighting not in LOSS_WEIGHTINGS:
            raise ConfigError(
                f"training.loss_weighting must be one of {LOSS_WEIGHTINGS}, "
                f"got {self.loss_weighting!r}"
            )
        for name in ("validate_initial", "calibrate", "head_fallback"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(
                    f"training.{name} must be True or False, got {getattr(self, name)!r}"
                )
        conf = self.initial_confidence
        if isinstance(conf, bool) or not isinstance(conf, int | float) or not 0.0 <= conf < 1.0:
            raise ConfigError(f"training.initial_confidence must be in [0, 1), got {conf!r}")
        check_requested(self.threads)
        self._check_schedule()
        if self.precision not in PRECISIONS:
            raise ConfigError(
                f"training.precision must be one of {PRECISIONS}, got {self.precision!r}"
            )
        check_ranges(self, "training")  # the upper bounds the checks above leave

    def _check_schedule(self) -> None:
        if self.lr_schedule not in LR_SCHEDULES:
            raise ConfigError(
                f"training.lr_schedule must be one of {LR_SCHEDULES}, got {self.lr_schedule!r}"
            )
        steps = self.warmup_steps
        if steps is not None and (
            isinstance(steps, bool) or not isinstance(steps, int) or steps < 0
        ):
            raise ConfigError(f"training.warmup_steps must be >= 0 or None, got {steps!r}")
        fraction = self.warmup_fraction
        if (
            isinstance(fraction, bool)
            or not isinstance(fraction, int | float)
            or not 0 <= fraction < 1
        ):
            raise ConfigError(f"training.warmup_fraction must be in [0, 1), got {fraction!r}")
        if not 0 <= self.min_lr < self.lr:
            raise ConfigError(f"training.min_lr must be in [0, lr={self.lr}), got {self.min_lr}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainingConfig:
        check_known_fields(cls, data, "training config")
        return cls(**data)


def resolve_device(name: str, index: int | None = None) -> torch.device:
    """The device ``TrainingConfig.device`` names; `index` picks the GPU (a DDP rank's
    LOCAL_RANK) and is ignored on CPU."""
    import torch

    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise FoxhuntError("--device cuda was requested but no CUDA device is available; use cpu")
    return torch.device(name, index) if name == "cuda" and index is not None else torch.device(name)
