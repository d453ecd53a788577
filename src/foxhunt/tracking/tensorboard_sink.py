"""TensorBoard: event files through torch's SummaryWriter (the tensorboard package)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def hparam_value(value: Any) -> float | str | bool:
    """What the hparams plugin takes: numbers and bools as they are, the rest as text."""
    return value if isinstance(value, int | float | bool) else json.dumps(value)


class TensorBoardSink:
    """Scalars into `logdir`; a resume at step S drops the events the interrupted run wrote
    after its checkpoint (purge_step S + 1), so curves continue without doubled points."""

    name = "tensorboard"

    def __init__(self, logdir: Path) -> None:
        self.logdir = Path(logdir)
        self.writer: Any = None

    def start(self, params: Mapping[str, Any], step: int, state: Mapping[str, Any]) -> None:
        from torch.utils.tensorboard import SummaryWriter
        from torch.utils.tensorboard.summary import hparams

        resumed = step > 0 or bool(state)
        self.writer = SummaryWriter(str(self.logdir), purge_step=step + 1 if resumed else None)
        if resumed or not params:  # the interrupted run wrote them
            return
        text = "\n".join(f"    {key} = {value!r}" for key, value in params.items())
        self.writer.add_text("config", text, 0)  # 4-space indent: markdown code block
        metrics = {"epoch/val_loss": 0.0, "epoch/train_loss": 0.0}  # the tags to compare by
        hp = {key: hparam_value(value) for key, value in params.items()}
        for summary in hparams(hp, metrics):  # into this folder, not add_hparams' subfolder
            self.writer.file_writer.add_summary(summary)

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        for key, value in metrics.items():
            self.writer.add_scalar(key, value, step)

    def flush(self) -> None:
        self.writer.flush()

    def release(self) -> None:
        """Closed before the run folder is renamed (--overwrite): the writer appends by path."""
        self.writer.close()

    def log_run_folder(self, run_dir: Path, report: Path | None) -> None:
        """Nothing to copy: the event files already live in (or beside) the run folder."""

    def close(self, status: str) -> None:
        self.writer.close()

    def state_dict(self) -> dict[str, Any]:
        return {"logdir": str(self.logdir)}
