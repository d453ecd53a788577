"""The names of everything a run folder (and an int8 export folder) holds.

    run_dir/
      config.json             data, model and training config, the model class, versions
      model.safetensors       weights (no pickle)
      preprocessor.json       fitted scalers and category encoders
      identity.json           run id, config digest, data fingerprint (identity.py)
      qat.json                a QAT run's QATConfig (absent: an FP32 run)
      metrics.json            test metrics of the TFT and the baselines
      baseline.json           what the baselines fitted on train (historical quantiles per
                              step, intraday profiles, GARCH parameters), for `evaluate`
      test_forecasts.parquet  every test window's forecasts, the TFT's and the baselines'
      history.jsonl           one line per epoch (and memory events)
      checkpoints/            the trainer's checkpoints (unless --checkpoint-storage)
      report/                 `foxhunt report`'s HTML and figures
      tensorboard/            --logger tensorboard's event files (docs/tracking.md)
      int8/, int8-dynamic/, onnx/, onnx-int8/   `foxhunt export`'s default folders (EXPORT_DIRS)

config.json, preprocessor.json, baseline.json and qat.json record the format they were written
in (preprocessor.json as its `version`); earlier formats are migrated on load
(foxhunt/migrations.py) and newer ones refused, naming the file.

An export folder holds config.json, preprocessor.json and baseline.json copied from the
run, plus quantization.json and model_int8.safetensors (exports/int8.py writes them). An
ONNX export folder holds the same three copies plus model.onnx and onnx_export.json
(exports/onnx.py; its int8 QDQ form exports/onnx_int8.py; docs/export.md).
"""

from __future__ import annotations

from pathlib import Path

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
PREPROCESSOR_FILE = "preprocessor.json"
IDENTITY_FILE = "identity.json"
QAT_FILE = "qat.json"
METRICS_FILE = "metrics.json"
BASELINE_FILE = "baseline.json"
FORECASTS_FILE = "test_forecasts.parquet"
HISTORY_FILE = "history.jsonl"
CHECKPOINTS_DIR = "checkpoints"
REPORT_DIR = "report"
TENSORBOARD_DIR = "tensorboard"
EXPORT_FILE = "quantization.json"
INT8_WEIGHTS_FILE = "model_int8.safetensors"
ONNX_MODEL_FILE = "model.onnx"
ONNX_SPEC_FILE = "onnx_export.json"
#: `foxhunt export`'s default folder inside the run, by export mode
EXPORT_DIRS = {"qat": "int8", "dynamic": "int8-dynamic", "onnx": "onnx", "onnx-int8": "onnx-int8"}

# Any of these makes a folder a run: a guard that looked at checkpoints/ alone let a new
# run silently replace a finished run's weights once that folder was deleted.
RUN_ENTRIES = (
    CONFIG_FILE,
    WEIGHTS_FILE,
    METRICS_FILE,
    PREPROCESSOR_FILE,
    HISTORY_FILE,
    CHECKPOINTS_DIR,
    IDENTITY_FILE,
)
# What foxhunt itself writes into a run folder; anything else is the user's and is never
# deleted by --overwrite.
OWNED_ENTRIES = (
    *RUN_ENTRIES,
    BASELINE_FILE,
    FORECASTS_FILE,
    QAT_FILE,
    REPORT_DIR,
    TENSORBOARD_DIR,
    *EXPORT_DIRS.values(),
)

# Folders of the other commands: `foxhunt backtest` (backtest/runner.py) and `foxhunt tune`
# (tune/study.py, tune/report.py) name their files here so that an output flag of another
# command (predict --output, evaluate --json) never replaces one of them.
BACKTEST_FILE = "backtest.json"
BACKTEST_CONFIG_FILE = "backtest_config.json"
BACKTEST_ENTRIES = (BACKTEST_FILE, BACKTEST_CONFIG_FILE, "folds", REPORT_DIR)
STUDY_ENTRIES = ("study.json", "study.db", "best.yaml", "trials.csv")
EXPORT_ENTRIES = (EXPORT_FILE, INT8_WEIGHTS_FILE, ONNX_MODEL_FILE, ONNX_SPEC_FILE)
#: a folder holding one of these is foxhunt's, and its entries below are never replaced
#: by an output file
MARKERS = (*RUN_ENTRIES, *EXPORT_ENTRIES, BACKTEST_CONFIG_FILE, "study.json")
PROTECTED_ENTRIES = frozenset((*OWNED_ENTRIES, *EXPORT_ENTRIES, *BACKTEST_ENTRIES, *STUDY_ENTRIES))


def is_export(folder: Path) -> bool:
    """An int8 export folder (foxhunt export) rather than a run folder."""
    return (Path(folder) / EXPORT_FILE).is_file()


def is_onnx_export(folder: Path) -> bool:
    """An ONNX export folder (foxhunt export --onnx): its spec file or its model is there."""
    folder = Path(folder)
    return (folder / ONNX_SPEC_FILE).is_file() or (folder / ONNX_MODEL_FILE).is_file()
