"""`foxhunt train`'s arguments, generated from the config dataclasses, -> the run's config
(data, model, training), validated by the dataclasses themselves; `foxhunt backtest` shares
the data, model and training sections (docs/configuration.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from foxhunt.cli.checks import FieldType
from foxhunt.cli.common import DATA_FILE
from foxhunt.cli.generated import Arg, Section, arguments
from foxhunt.cli.presets import preset
from foxhunt.cli.resolve import Command
from foxhunt.cli.spellings import Spelling, list_text
from foxhunt.config_fields import POSITIVE, setting
from foxhunt.data import DataConfig
from foxhunt.model.config import DATA_FIELDS, TFTConfig
from foxhunt.model.names import MODEL_NAMES
from foxhunt.quant import QATConfig
from foxhunt.tracking import TrackingConfig
from foxhunt.training.config import DEFAULT_TIMEOUT_S, TrainingConfig
from foxhunt.training.run_options import RunOptions

if TYPE_CHECKING:  # the run folder needs torch; `foxhunt train --help` imports none
    from foxhunt.runs import RunConfig


@dataclass(frozen=True, kw_only=True)
class TrainOptions(RunOptions):
    """How `foxhunt train` runs, beyond what defines the run (not saved in config.json): the
    checkpoint and memory settings every train job has (`RunOptions`), and these.

    Attributes:
        output_dir: run folder (default: runs/<date-time>).
        resume: continue the run in this folder exactly where its last checkpoint left off.
        overwrite: replace the run in the folder (the new run is written beside it and
            swapped in once complete).
        memory_budget: fit training in this size (512MB, 4GB, 4GiB) or auto (CUDA free
            memory): plans checkpointing and micro-batches from one probing step
            (docs/memory-budget.md).
        report: write the HTML report at the end.
        qat: quantization-aware training (int8), with the quantization section's settings
            (docs/QAT_GUIDE.md).
        dist_timeout: under torchrun, seconds a rank waits for the others before failing.
    """

    output_dir: Path | None = None
    resume: Path | None = None
    overwrite: bool = False
    memory_budget: str | None = None
    report: bool = True
    qat: bool = False
    dist_timeout: float = setting(DEFAULT_TIMEOUT_S, range=POSITIVE)


#: the data, model and training sections, shared with `foxhunt backtest`
DATA = Section("data", DataConfig, exclude=("split",), aliases={"path": DATA_FILE})
MODEL = Section("model", TFTConfig, exclude=DATA_FIELDS)
TRAINING = Section("training", TrainingConfig)
QAT = Section("quantization", QATConfig, prefix="qat-")

#: old flags that set other keys than their name says
SPELLINGS = (
    # --seed seeds the training and the synthetic bars, as it always has
    Spelling("--seed", lambda v: [("training.seed", v), ("data.synthetic_seed", v)]),
    Spelling("--use-gradient-checkpointing", lambda _: [("model.checkpointing", "full")], False),
    Spelling("--checkpoint-segments", lambda v: [("model.checkpointing", list_text(v, str))]),
)
#: --logger tensorboard --logger mlflow: both (tracking.loggers)
LOGGER = Spelling("--logger", lambda v: [("tracking.loggers", v)], accumulate=True)


def split_refused(value: Any) -> str:
    return "set by foxhunt backtest for each fold; a fold's run is not rerun by --config"


def add_model_class(parser: Any) -> None:
    parser.add_argument(
        "--model-class",
        dest="model_class",
        type=FieldType(Arg("model_class", Literal[MODEL_NAMES], "tft", ("--model-class",))),
        default="tft",
        metavar="|".join(MODEL_NAMES),
        help="the model class (model/factory.py's MODELS)",
    )


#: options every generated command parses itself, never a config field's flag
TAKEN = frozenset({"--config", "--preset", "--print-config", "--model-class", "--help"})


def run_command(
    *,
    prog: str,
    description: str,
    sections: tuple[Section, ...],
    spellings: tuple[Spelling, ...] = SPELLINGS,
    taken: frozenset[str] = TAKEN,
) -> Command:
    """A command whose flags are generated from `sections` (train, backtest, tune): presets,
    --model-class and a fold's time split set aside, as every run config has them."""
    return Command(
        prog=prog,
        description=description,
        sections=sections,
        args=tuple(arguments(sections, set(taken))),
        spellings=spellings,
        presets=preset,
        configs=True,
        extra=add_model_class,
        set_aside={"data.split": split_refused},
    )


def train_command() -> Command:
    sections = (
        DATA,
        MODEL,
        TRAINING,
        QAT,
        Section("tracking", TrackingConfig),
        Section("options", TrainOptions),
    )
    return run_command(
        prog="foxhunt train",
        description="Train a TFT and print test metrics. Every field of the data, model, "
        "training, quantization, tracking and options sections below is a flag (--section.field, or its "
        "flat name) and a YAML key; --seed N seeds the synthetic bars too "
        "(docs/configuration.md).",
        sections=sections,
        spellings=(*SPELLINGS, LOGGER),
    )


def tracking_config(cfg: Any) -> TrackingConfig:
    return TrackingConfig(**cfg.tracking.as_dict())


def run_config(cfg: Any) -> RunConfig:
    """The run's config from a resolved namespace (the data-derived model fields unset: the
    job fills them from the prepared data)."""
    from foxhunt.runs import RunConfig

    return RunConfig(
        data=DataConfig(**cfg.data.as_dict()),
        model=TFTConfig(**cfg.model.as_dict()),
        training=TrainingConfig(**cfg.training.as_dict()),
        model_class=cfg.model_class,
    )


def qat_config(cfg: Any) -> QATConfig | None:
    return QATConfig(**cfg.quantization.as_dict()) if cfg.options.qat else None
