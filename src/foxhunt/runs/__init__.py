"""The run folder, one door: every file a run folder holds is named, written and read
(checked) here. ``files.py`` lists them; ``store.py`` saves and loads config, weights and
preprocessing; ``results.py`` history, baselines and metrics; ``folder.py`` the one-writer
lock and the --overwrite swap; ``identity.py`` which run, on which data; ``checks.py``
refuses damaged files.

Nothing here knows quantization: ``load_run_folder`` refuses a QAT run unless given its
transforms. Load a model through ``foxhunt.serving.load_run``, the one loader of runs and
exports (a run folder's branch: ``foxhunt/trained_run.py``, which applies the transforms).
"""

from foxhunt.runs.checks import RunFileError, metrics_base, read_preprocessor
from foxhunt.runs.config import RunConfig, versions
from foxhunt.runs.files import (
    BASELINE_FILE,
    CHECKPOINTS_DIR,
    CONFIG_FILE,
    EXPORT_DIRS,
    EXPORT_FILE,
    FORECASTS_FILE,
    HISTORY_FILE,
    IDENTITY_FILE,
    INT8_WEIGHTS_FILE,
    METRICS_FILE,
    ONNX_MODEL_FILE,
    ONNX_SPEC_FILE,
    PREPROCESSOR_FILE,
    QAT_FILE,
    REPORT_DIR,
    TENSORBOARD_DIR,
    WEIGHTS_FILE,
    is_export,
    is_onnx_export,
)
from foxhunt.runs.folder import (
    Mode,
    RunFolder,
    check_output_file,
    check_output_path,
    holds_run,
)
from foxhunt.runs.identity import (
    check_same_data,
    new_identity,
    read_identity,
    write_identity,
)
from foxhunt.runs.results import (
    append_history,
    clear_history,
    read_baseline_state,
    read_history_lines,
    read_metrics,
    save_baseline_state,
    save_metrics,
)
from foxhunt.runs.store import (
    LoadedRun,
    load_run_folder,
    read_json,
    read_qat_state,
    read_run_config,
    read_run_preprocessor,
    save_qat_state,
    save_run,
    save_run_config,
    weights_bytes,
)

__all__ = [
    "BASELINE_FILE",
    "CHECKPOINTS_DIR",
    "CONFIG_FILE",
    "EXPORT_DIRS",
    "EXPORT_FILE",
    "FORECASTS_FILE",
    "HISTORY_FILE",
    "IDENTITY_FILE",
    "INT8_WEIGHTS_FILE",
    "METRICS_FILE",
    "ONNX_MODEL_FILE",
    "ONNX_SPEC_FILE",
    "PREPROCESSOR_FILE",
    "QAT_FILE",
    "REPORT_DIR",
    "TENSORBOARD_DIR",
    "WEIGHTS_FILE",
    "LoadedRun",
    "Mode",
    "RunConfig",
    "RunFileError",
    "RunFolder",
    "append_history",
    "check_output_file",
    "check_output_path",
    "check_same_data",
    "clear_history",
    "holds_run",
    "is_export",
    "is_onnx_export",
    "load_run_folder",
    "metrics_base",
    "new_identity",
    "read_baseline_state",
    "read_history_lines",
    "read_identity",
    "read_json",
    "read_metrics",
    "read_preprocessor",
    "read_qat_state",
    "read_run_config",
    "read_run_preprocessor",
    "save_baseline_state",
    "save_metrics",
    "save_qat_state",
    "save_run",
    "save_run_config",
    "versions",
    "weights_bytes",
    "write_identity",
]
