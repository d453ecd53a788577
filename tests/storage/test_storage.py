import errno
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from foxhunt.storage.base import MANIFEST, CheckpointError
from foxhunt.storage.local import LocalStorage
from foxhunt.storage.remote import FsspecStorage, open_storage

FILES = {"model.safetensors": b"weights" * 100, "state.json": b'{"step": 3}'}


@pytest.fixture(params=["local", "fsspec-file", "fsspec-memory"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "local":
        return LocalStorage(tmp_path / "ckpt")
    if request.param == "fsspec-file":
        return FsspecStorage(f"file://{tmp_path}/ckpt")
    url = f"memory://foxhunt-test-{time.monotonic_ns()}"
    return FsspecStorage(url)


def test_round_trip_list_delete(storage: Any) -> None:
    assert storage.list() == []
    storage.save("step-000000002", FILES)
    storage.save("step-000000001", {"a.bin": b"x"})
    assert storage.list() == ["step-000000001", "step-000000002"]
    assert storage.load("step-000000002") == FILES
    storage.delete("step-000000001")
    assert storage.list() == ["step-000000002"]


def test_overwrite_same_name(storage: Any) -> None:
    storage.save("a", FILES)
    storage.save("a", {"other.bin": b"y"})
    assert storage.load("a") == {"other.bin": b"y"}


def test_manifest_name_is_reserved(storage: Any) -> None:
    with pytest.raises(ValueError, match="reserved"):
        storage.save("a", {MANIFEST: b"{}"})


def test_truncated_file_is_refused_with_its_name(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    storage.save("a", FILES)
    path = tmp_path / "a" / "model.safetensors"
    path.write_bytes(path.read_bytes()[:10])
    with pytest.raises(CheckpointError, match=r"model\.safetensors is truncated"):
        storage.load("a")


def test_corrupted_file_is_refused_with_its_name(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    storage.save("a", FILES)
    path = tmp_path / "a" / "state.json"
    data = bytearray(path.read_bytes())
    data[2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"state\.json is corrupted"):
        storage.load("a")


def test_missing_file_and_damaged_manifest(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    storage.save("a", FILES)
    (tmp_path / "a" / "state.json").unlink()
    with pytest.raises(CheckpointError, match=r"state\.json is missing"):
        storage.load("a")
    (tmp_path / "a" / MANIFEST).write_text("{not json")
    with pytest.raises(CheckpointError, match="damaged"):
        storage.load("a")


def test_folder_without_manifest_is_not_a_checkpoint(tmp_path: Path) -> None:
    (tmp_path / "step-1").mkdir()
    (tmp_path / "step-1" / "model.safetensors").write_bytes(b"half")
    storage = LocalStorage(tmp_path)
    assert storage.list() == []
    with pytest.raises(CheckpointError, match="not a complete checkpoint"):
        storage.load("step-1")


def test_full_disk_fails_cleanly_and_keeps_previous(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = LocalStorage(tmp_path)
    storage.save("a", FILES)
    real_fsync = os.fsync

    def full_disk(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(CheckpointError, match="no space left on device"):
        storage.save("b", FILES)
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert storage.list() == ["a"]
    assert storage.load("a") == FILES
    assert not any(p.name.startswith(".tmp-") for p in tmp_path.iterdir())


def test_sigkill_during_save_leaves_previous_checkpoint_loadable(tmp_path: Path) -> None:
    """A real process is killed while it writes a large checkpoint."""
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from foxhunt.storage.local import LocalStorage
        storage = LocalStorage(Path({str(tmp_path)!r}))
        storage.save("step-000000001", {{"model.safetensors": b"good" * 1000}})
        print("first saved", flush=True)
        big = {{f"part{{i}}.bin": bytes(32 << 20) for i in range(16)}}
        storage.save("step-000000002", big)
        print("second saved", flush=True)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "first saved"
    deadline = time.monotonic() + 60
    while not any(p.name.startswith(".tmp-step-000000002") for p in tmp_path.iterdir()):
        assert time.monotonic() < deadline, "the second save never started"
        time.sleep(0.005)
    time.sleep(0.05)  # let it write some of the files
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    storage = LocalStorage(tmp_path)
    assert storage.list() == ["step-000000001"], "a half-written checkpoint must not be listed"
    assert storage.load("step-000000001") == {"model.safetensors": b"good" * 1000}
    storage.clean_partial()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step-000000001"]


def test_clean_partial_removes_only_unfinished_saves(storage: Any) -> None:
    storage.save("step-000000001", FILES)
    storage.save("step-000000002", FILES)
    storage.delete("step-000000002")
    storage.save("step-000000002", FILES)
    if isinstance(storage, FsspecStorage):  # a save killed before its manifest
        storage.fs.makedirs(storage._path("step-000000003"), exist_ok=True)
        storage.fs.pipe_file(storage._path("step-000000003", "model.safetensors"), b"half")
    else:  # a save killed in its temporary folder
        (storage.root / ".tmp-step-000000003-dead").mkdir()
    storage.clean_partial()
    assert storage.list() == ["step-000000001", "step-000000002"]
    assert storage.load("step-000000002") == FILES
    if isinstance(storage, FsspecStorage):
        assert not storage.fs.exists(storage._path("step-000000003"))
    else:
        assert sorted(p.name for p in storage.root.iterdir()) == storage.list()


def test_open_storage_picks_backend(tmp_path: Path) -> None:
    assert isinstance(open_storage(str(tmp_path)), LocalStorage)
    assert isinstance(open_storage(f"file://{tmp_path}"), LocalStorage)
    assert isinstance(open_storage("memory://x"), FsspecStorage)
    with pytest.raises(CheckpointError, match="cannot open checkpoint storage"):
        open_storage("nosuchscheme://bucket/x")
