"""`foxhunt train --feature-store DIR`: prepared once, reused, trained bit for bit as in
memory; an unwritable store or a matrix too large for memory is exit 2 with one line."""

import logging
import uuid
from pathlib import Path

import pandas as pd
import pytest
import yaml
from safetensors.torch import load_file

from foxhunt.cli import main
from foxhunt.data import footprint
from helpers import SYNTHETIC_CLI, TINY_CLI

# no HTML report: its charts cost seconds a run, and these tests read the store and weights
SMALL = [*SYNTHETIC_CLI, *TINY_CLI, "--max-steps-per-epoch", "4", "--seed", "3", "--epochs", "1"]
SMALL += ["--no-report"]


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("foxhunt: error:")]


def train(bars: Path, out: Path, *extra: str) -> int:
    return main(["train", "--parquet-file", str(bars), *SMALL, "--output-dir", str(out), *extra])


def test_a_second_run_reuses_the_store_and_trains_as_in_memory(
    tmp_path: Path, bars_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = tmp_path / "store"
    logger = logging.getLogger("foxhunt.data")
    logger.addHandler(caplog.handler)  # the CLI may turn propagation off
    try:
        with caplog.at_level(logging.INFO, logger="foxhunt.data"):
            assert train(bars_file, tmp_path / "memory") == 0
            assert "feature store" not in caplog.text
            assert train(bars_file, tmp_path / "first", "--feature-store", str(store)) == 0
            assert f"feature store: writing {store}/" in caplog.text
            caplog.clear()
            assert train(bars_file, tmp_path / "second", "--feature-store", str(store)) == 0
            assert f"feature store: reusing {store}/" in caplog.text
            assert "feature store: writing" not in caplog.text
    finally:
        logger.removeHandler(caplog.handler)
    expected = load_file(tmp_path / "memory" / "model.safetensors")
    for run in ("first", "second"):
        weights = load_file(tmp_path / run / "model.safetensors")
        assert weights.keys() == expected.keys()
        assert all((weights[k] == expected[k]).all() for k in expected), run


def test_an_unwritable_store_is_exit_2_naming_it(
    tmp_path: Path, bars_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    store = blocker / "store"
    assert train(bars_file, tmp_path / "run", "--feature-store", str(store)) == 2
    err = capsys.readouterr().err
    (line,) = error_lines(err)
    assert str(blocker) in line and "--feature-store" in line
    assert "Traceback" not in err


def test_a_matrix_too_large_for_memory_stops_before_it_is_allocated(
    tmp_path: Path,
    bars_file: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the features were computed: the matrix was allocated")

    monkeypatch.setattr(footprint, "available_bytes", lambda: 100_000)
    monkeypatch.setattr("foxhunt.data.encoded.compute_features", never)
    assert train(bars_file, tmp_path / "run") == 2
    err = capsys.readouterr().err
    (line,) = error_lines(err)
    assert "Traceback" not in err
    assert str(bars_file) in line and "0.0 GB is available" in line
    assert "--feature-store DIR" in line
    assert not (tmp_path / "run" / "model.safetensors").exists()


def test_a_run_resumes_with_or_without_the_store() -> None:
    from foxhunt.data import DataConfig
    from foxhunt.training.checkpoint_checks import config_differences

    before = DataConfig().to_dict()
    del before["feature_store"]  # a run from before the setting
    stored = DataConfig(feature_store="/s").to_dict()
    assert config_differences({"data": before}, {"data": stored}) == []
    other = DataConfig(feature_store="/s", lookback=12).to_dict()
    assert config_differences({"data": before}, {"data": other}) != []


@pytest.mark.parametrize("command", ["evaluate", "predict"])
def test_evaluate_and_predict_too_large_for_memory_stop_before_allocating(
    command: str,
    tmp_path: Path,
    bars_file: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """They encode the file they are given in memory (not from a store): too large is one
    line naming the file and the way out, before the features are computed."""
    assert train(bars_file, tmp_path / "run") == 0
    capsys.readouterr()

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the features were computed: the matrix was allocated")

    monkeypatch.setattr(footprint, "available_bytes", lambda: 100_000)
    monkeypatch.setattr("foxhunt.data.encoded.compute_features", never)
    assert main([command, str(tmp_path / "run"), "--parquet-file", str(bars_file)]) == 2
    err = capsys.readouterr().err
    (line,) = error_lines(err)
    assert "Traceback" not in err
    assert str(bars_file) in line and "0.0 GB is available" in line
    assert f"{command} encodes the file in memory" in line and "--start" in line


def test_a_store_url_through_the_flag_then_a_yaml_file(
    tmp_path: Path,
    bars_file: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`--feature-store URL` prepares and uploads (fsspec's in-memory filesystem); a YAML
    config naming the URL, on a machine whose cache lacks it (another XDG_CACHE_HOME),
    fetches it and trains the same weights."""
    url = f"memory://foxhunt-tests/{uuid.uuid4().hex}/store"
    logger = logging.getLogger("foxhunt.data")
    logger.addHandler(caplog.handler)  # the CLI may turn propagation off
    try:
        with caplog.at_level(logging.INFO, logger="foxhunt.data"):
            monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-a"))
            assert train(bars_file, tmp_path / "flag", "--feature-store", url) == 0
            assert f"to {url}/" in caplog.text and "uploaded" in caplog.text
            caplog.clear()
            monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-b"))
            config = tmp_path / "run.yaml"
            config.write_text(yaml.safe_dump({"data": {"feature_store": url}}))
            assert train(bars_file, tmp_path / "yaml", "--config", str(config)) == 0
            assert f"fetched {url}/" in caplog.text and "uploaded" not in caplog.text
    finally:
        logger.removeHandler(caplog.handler)
    assert list((tmp_path / "cache-b" / "foxhunt" / "feature-store").iterdir())
    first = load_file(tmp_path / "flag" / "model.safetensors")
    second = load_file(tmp_path / "yaml" / "model.safetensors")
    assert all((first[k] == second[k]).all() for k in first)


def test_evaluate_and_predict_read_the_runs_store(
    tmp_path: Path,
    bars_file: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run trained from a store is evaluated on its bars and forecasts from them through
    the entry, with no feature computed and whatever the memory: the metrics, the forecasts
    and the predictions are those of the file encoded in memory, bit for bit."""
    store, run = tmp_path / "store", tmp_path / "run"
    assert train(bars_file, run, "--feature-store", str(store)) == 0
    bars = ["--parquet-file", str(bars_file)]

    def evaluate_and_predict(name: str) -> tuple[str, pd.DataFrame, str]:
        json_file, forecasts = tmp_path / f"{name}.json", tmp_path / f"{name}.parquet"
        outputs = ["--json", str(json_file), "--forecasts", str(forecasts)]
        assert main(["evaluate", str(run), *bars, *outputs]) == 0
        predicted = tmp_path / f"{name}.csv"
        assert main(["predict", str(run), *bars, "--output", str(predicted)]) == 0
        return json_file.read_text(), pd.read_parquet(forecasts), predicted.read_text()

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the features were computed")

    logger = logging.getLogger("foxhunt.data")
    logger.addHandler(caplog.handler)  # the CLI may turn propagation off
    try:
        with caplog.at_level(logging.INFO, logger="foxhunt.data"), monkeypatch.context() as m:
            m.setattr(footprint, "available_bytes", lambda: 100_000)  # too large in memory
            m.setattr("foxhunt.data.encoded.compute_features", never)
            stored = evaluate_and_predict("stored")
            assert f"every window read from {store}/" in caplog.text
            assert f"the latest windows read from {store}/" in caplog.text
    finally:
        logger.removeHandler(caplog.handler)
    store.rename(tmp_path / "elsewhere")  # no entry: the file is encoded in memory
    memory = evaluate_and_predict("memory")
    assert stored[0] == memory[0]
    pd.testing.assert_frame_equal(stored[1], memory[1])
    assert stored[2] == memory[2] and len(memory[2].splitlines()) > 2
    assert len(memory[1]) > 0
