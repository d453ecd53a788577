"""A feature store behind an fsspec URL (storage/mirror.py), on fsspec's in-memory filesystem:
prepared once and uploaded, fetched by a machine whose cache lacks it, never trusted half
uploaded or damaged, and refused with one line where it cannot work."""

from __future__ import annotations

import importlib.util
import logging
import uuid
from pathlib import Path

import fsspec
import pytest
import torch

from foxhunt.data import DataConfig, PreparedData, prepare_data
from foxhunt.data.shared_store import Ranks
from foxhunt.data.windows import SPLITS
from foxhunt.errors import ConfigError
from foxhunt.storage.mirror import cache_folder

MEMORY = fsspec.filesystem("memory")


@pytest.fixture
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh store URL, and a fresh local cache (another machine: set XDG_CACHE_HOME)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-a"))
    return f"memory://foxhunt-tests/{uuid.uuid4().hex}/store"


def config(store: str | None) -> DataConfig:
    return DataConfig(
        synthetic_days=8, synthetic_symbols=("ES", "NQ"), lookback=16, horizon=4,
        feature_groups=("returns",), feature_store=store,
    )  # fmt: skip


def remote_files(url: str) -> dict[str, bytes]:
    root = url.removeprefix("memory://")
    return {p.removeprefix(f"/{root}/"): MEMORY.cat_file(p) for p in MEMORY.find(root)}


def same_windows(a: PreparedData, b: PreparedData) -> bool:
    for name in SPLITS:
        x, y = getattr(a, name), getattr(b, name)
        everything = list(range(len(x)))
        u, v = x.__getitems__(everything), y.__getitems__(everything)
        if (
            len(x) != len(y)
            or not torch.equal(u.past, v.past)
            or not torch.equal(u.target, v.target)
        ):
            return False
    return True


def test_prepared_once_uploaded_then_fetched_by_another_cache(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    memory = prepare_data(config(None))
    caplog.set_level(logging.INFO, logger="foxhunt")
    first = prepare_data(config(url))
    files = remote_files(url)
    (key,) = {name.split("/")[0] for name in files}
    local = cache_folder(url) / key
    assert {f"{key}/{p.name}" for p in local.iterdir()} == set(files)  # every file, manifest too
    assert all((local / name.split("/")[1]).read_bytes() == data for name, data in files.items())
    assert "store: uploaded" in caplog.text and "store: fetched" not in caplog.text
    caplog.clear()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-b"))  # another machine
    second = prepare_data(config(url))
    assert "store: fetched" in caplog.text and "store: uploaded" not in caplog.text
    assert "store: writing" not in caplog.text  # not prepared again
    assert same_windows(memory, first) and same_windows(memory, second)
    caplog.clear()
    prepare_data(config(url))  # its own cache now: neither fetched nor uploaded
    assert "store: fetched" not in caplog.text and "store: uploaded" not in caplog.text


def test_an_upload_stopped_before_its_manifest_is_not_trusted(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    prepare_data(config(url))
    (key,) = {name.split("/")[0] for name in remote_files(url)}
    root = url.removeprefix("memory://")
    MEMORY.rm_file(f"{root}/{key}/manifest.json")  # what an upload killed midway leaves
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-b"))
    caplog.set_level(logging.INFO, logger="foxhunt")
    prepare_data(config(url))
    assert (
        "store: fetched" not in caplog.text
        and "store: writing" in caplog.text
        and "store: uploaded" in caplog.text
    )
    assert f"{key}/manifest.json" in remote_files(url)


def test_a_damaged_upload_is_prepared_again_and_replaced(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    memory = prepare_data(config(None))
    prepare_data(config(url))
    files = remote_files(url)
    (name,) = [n for n in files if n.endswith("/targets.npy")]
    root = url.removeprefix("memory://")
    flipped = bytearray(files[name])
    flipped[-1] ^= 0xFF  # one bit of one target, the size unchanged
    MEMORY.pipe_file(f"{root}/{name}", bytes(flipped))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-b"))
    caplog.set_level(logging.INFO, logger="foxhunt")
    again = prepare_data(config(url))
    assert "is damaged" in caplog.text and "store: uploaded" in caplog.text
    assert remote_files(url)[name] == files[name]  # the good bytes uploaded over it
    assert same_windows(memory, again)


def test_an_unknown_scheme_is_one_line_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"feature_store.*nosuchfs://x.*local folder"):
        config("nosuchfs://x/store")


def test_ddp_over_several_machines_is_refused(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    ranks = Ranks(rank=0, world_size=4, broadcast=lambda v: v, gather=lambda v: [v])
    with pytest.raises(ConfigError, match="several machines"):
        prepare_data(config(url), ranks=ranks)


def test_a_scheme_whose_package_is_missing_is_named() -> None:
    if importlib.util.find_spec("s3fs") is not None:
        pytest.skip("s3fs is installed here")
    with pytest.raises(ConfigError, match="s3fs"):
        config("s3://bucket/store")
