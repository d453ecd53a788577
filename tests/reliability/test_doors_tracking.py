"""Issue 31, loggers: a tracking server that does not answer ends the run at once (it hung
for minutes of MLflow's retries), and no logger writes where it should not."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import foxhunt.tracking.places as places

from .helpers import SMALL, refused, snapshot


def train_args(bars: Path, out: Path, *extra: str | Path) -> list[str | Path]:
    return ["train", "--parquet-file", bars, *SMALL, "--output-dir", out, *extra]


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections into its backlog and never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        yield int(s.getsockname()[1])


@pytest.mark.parametrize("port", ["closed_port", "silent_port"])
def test_a_tracking_server_that_does_not_answer_is_refused_before_training(
    tmp_path: Path, bars_file: Path, port: str, request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setattr(places, "PROBE_TIMEOUT_S", 0.5)
    for proxy in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):  # loopback, direct
        monkeypatch.delenv(proxy, raising=False)
    uri = f"http://127.0.0.1:{request.getfixturevalue(port)}"
    out = tmp_path / "run"
    refused(train_args(bars_file, out, "--logger", "mlflow", "--tracking-uri", uri), uri, "answer")
    assert not out.exists()


def test_mlflow_calls_are_bounded_once_a_server_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    from mlflow.environment_variables import (
        MLFLOW_HTTP_REQUEST_MAX_RETRIES,
        MLFLOW_HTTP_REQUEST_TIMEOUT,
    )

    for name in (*places.HTTP_LIMITS, "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "7")  # the user's own setting wins
    with socket.socket() as s:  # a server that answers anything with a 404
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]

        def answer() -> None:
            conn, _ = s.accept()
            with conn:
                conn.recv(4096)
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        places.probe(f"http://127.0.0.1:{port}")
        thread.join(5)
    assert MLFLOW_HTTP_REQUEST_TIMEOUT.get() == 7
    assert MLFLOW_HTTP_REQUEST_MAX_RETRIES.get() == int(
        places.HTTP_LIMITS[MLFLOW_HTTP_REQUEST_MAX_RETRIES.name]
    )


def test_a_sqlite_store_in_a_missing_folder_is_refused(tmp_path: Path, bars_file: Path) -> None:
    """`--tracking-uri sqlite:////nonexistent/x.db` created /nonexistent."""
    missing = tmp_path / "no" / "such"
    uri = f"sqlite:///{missing / 'x.db'}"
    out = tmp_path / "run"
    refused(train_args(bars_file, out, "--logger", "mlflow", "--tracking-uri", uri), str(missing))
    assert not (tmp_path / "no").exists() and not out.exists()


def test_a_tracking_dir_never_lands_in_another_run(
    tmp_path: Path, finished: Path, bars_file: Path
) -> None:
    """`--tracking-dir OTHER_RUN/checkpoints/tb` was accepted."""
    before = snapshot(finished)
    out = tmp_path / "new"
    tb = ["--logger", "tensorboard", "--tracking-dir"]
    refused(train_args(bars_file, out, *tb, finished / "checkpoints" / "tb"), str(finished))
    refused(train_args(bars_file, out, *tb, finished), "holds a run")
    refused(train_args(bars_file, out, *tb, out / "checkpoints"), "checkpoints")
    refused(train_args(bars_file, out, *tb, bars_file), "is a file")
    assert snapshot(finished) == before
    assert not out.exists() or not os.listdir(out)
