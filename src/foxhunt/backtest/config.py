"""How a backtest's folds are cut and run, and how its signal is costed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from foxhunt.backtest.folds import Scheme, parse_embargo, parse_test_size
from foxhunt.backtest.signal import CostModel
from foxhunt.errors import ConfigError

Refit = Literal["full", "warm", "none"]


@dataclass(frozen=True, kw_only=True)
class BacktestConfig:
    """How the folds are cut and run, and how the signal is costed (saved in backtest.json).

    Attributes:
        folds: test spans, at the end of the file.
        scheme: "expanding" (each fold trains on everything before its test span) or
            "rolling" (on a window of fixed length).
        test_size: each test span: "10d" or a bar count; None = the span over folds + 1.
        embargo: gap before each test span (a pandas duration, e.g. "1h").
        refit: "full" trains each fold afresh; "warm" starts from the previous fold's
            weights; "none" trains the first fold only.
        jobs: folds in parallel processes (with refit "full").
        trials: configurations tried, for the deflated Sharpe.
        resamples: block-bootstrap draws.
        checkpoint_every: optimizer steps between checkpoints; epochs always checkpoint.
        costs: the signal's trading costs (CostModel).
    """

    folds: int = 4
    scheme: Scheme = "expanding"
    test_size: str | None = None  # "10d" or a bar count; None = span / (folds + 1)
    embargo: str = "1h"
    refit: Refit = "full"
    jobs: int = 1
    trials: int = 1  # configurations tried, for the deflated Sharpe
    resamples: int = 2000  # block-bootstrap draws
    checkpoint_every: int | None = None  # optimizer steps; epochs always checkpoint
    costs: CostModel = field(default_factory=CostModel)

    def __post_init__(self) -> None:
        if self.scheme not in ("expanding", "rolling"):
            raise ConfigError(f"--scheme {self.scheme!r}: use expanding or rolling")
        if self.refit not in ("full", "warm", "none"):
            raise ConfigError(f"--refit {self.refit!r}: use full, warm or none")
        if self.test_size is not None:
            parse_test_size(self.test_size)
        parse_embargo(self.embargo)
        if self.refit != "full" and self.jobs > 1:
            raise ConfigError(
                f"--refit {self.refit} needs the previous fold's model: use --jobs 1 "
                "(parallel folds are for --refit full)"
            )
