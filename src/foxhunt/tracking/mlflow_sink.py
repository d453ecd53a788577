"""MLflow: params, metrics and artifacts through `MlflowClient` (the mlflow-skinny package).

No global active run (the job may run in a library). Metrics are buffered and sent in
batches (an epoch end, or 900 of them): a store is a database, and one write per scalar
would cost more than the step. A file store (``file:``/a path) is in maintenance mode in
MLflow 3 and refused unless MLFLOW_ALLOW_FILE_STORE is set: asking for one with
``--tracking-uri`` sets it for this process.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from foxhunt.runs import CHECKPOINTS_DIR, REPORT_DIR, TENSORBOARD_DIR

log = logging.getLogger("foxhunt.tracking")

BATCH = 900  # MLflow takes at most 1000 metrics and 100 params per log_batch
PARAM_CHARS = 6000  # and a param value of at most 6000 characters


def is_file_store(uri: str) -> bool:
    return uri.startswith("file:") or "://" not in uri


class MlflowSink:
    """One MLflow run per training run; a resume reopens it by the id its checkpoint saved."""

    name = "mlflow"

    def __init__(
        self, uri: str, *, experiment: str, run_name: str, artifact_root: Path | None = None
    ) -> None:
        self.uri, self.experiment, self.run_name = uri, experiment, run_name
        self.artifact_root = artifact_root  # for a new experiment in a database store
        self.client: Any = None
        self.run_id: str | None = None
        self.buffer: list[Any] = []

    def start(self, params: Mapping[str, Any], step: int, state: Mapping[str, Any]) -> None:
        if is_file_store(self.uri):
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # asked for by name
        from mlflow.entities import Param
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=self.uri)
        saved = state.get("run_id")
        if saved and self._exists(saved):
            self.run_id = saved
            self.client.update_run(saved, status="RUNNING")
            log.info("tracking: MLflow run %s continues (%s)", saved, self.uri)
            return
        if saved:
            log.warning("tracking: MLflow run %s is not in %s; starting a new one", saved, self.uri)
        run = self.client.create_run(self._experiment_id(), run_name=self.run_name)
        self.run_id = run.info.run_id
        log.info("tracking: MLflow run %s in %s", self.run_id, self.uri)
        items = [Param(k, str(v)[:PARAM_CHARS]) for k, v in params.items()]
        for i in range(0, len(items), 100):
            self.client.log_batch(self.run_id, params=items[i : i + 100])

    def _exists(self, run_id: str) -> bool:
        from mlflow.exceptions import MlflowException

        try:
            self.client.get_run(run_id)
        except MlflowException:
            return False
        return True

    def _experiment_id(self) -> str:
        found = self.client.get_experiment_by_name(self.experiment)
        if found is not None:
            return str(found.experiment_id)
        root = None if self.artifact_root is None else self.artifact_root.resolve().as_uri()
        return str(self.client.create_experiment(self.experiment, artifact_location=root))

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self.buffer += [Metric(key, value, now, step) for key, value in metrics.items()]
        if len(self.buffer) >= BATCH:
            self.flush()

    def flush(self) -> None:
        while self.buffer:
            batch, self.buffer = self.buffer[:BATCH], self.buffer[BATCH:]
            self.client.log_batch(self.run_id, metrics=batch)

    def release(self) -> None:
        self.flush()  # nothing of MLflow's lives in the run folder

    def log_run_folder(self, run_dir: Path, report: Path | None) -> None:
        """The model folder (the run's files, without checkpoints and event files) under
        "model", and the HTML report with its figures under "report"."""
        self.flush()
        skip = {CHECKPOINTS_DIR, REPORT_DIR, TENSORBOARD_DIR}
        for path in sorted(run_dir.iterdir()):
            if path.name in skip or path.name.startswith("."):
                continue
            if path.is_file():
                self.client.log_artifact(self.run_id, str(path), "model")
            elif path.is_dir():  # an export folder inside the run (int8/, onnx/)
                self.client.log_artifacts(self.run_id, str(path), f"model/{path.name}")
        if report is not None:
            folder = report if report.is_dir() else report.parent
            self.client.log_artifacts(self.run_id, str(folder), "report")

    def close(self, status: str) -> None:
        self.flush()
        self.client.set_terminated(self.run_id, status=status)

    def state_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "uri": self.uri}
