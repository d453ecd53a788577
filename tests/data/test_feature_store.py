"""The feature store (data/feature_store.py): windows read back bit for bit, reused only for
the same bars and settings, never trusted half-written, one line when it cannot be written."""

import copy as copying
import dataclasses
import errno
import json
import logging
import os
import pickle
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from torch.utils.data import BatchSampler, DataLoader, SequentialSampler

import foxhunt
from foxhunt.data import DataConfig, PreparedData, prepare_data
from foxhunt.data import feature_store as store_module
from foxhunt.data.dataset import collate_windows, make_loader
from foxhunt.data.instruments import generate_instruments
from foxhunt.data.latest import latest_windows
from foxhunt.data.pipeline import prepare_in_memory
from foxhunt.data.rebase import base_rows
from foxhunt.data.sources import read_source
from foxhunt.data.stored_windows import stored_latest, stored_windows
from foxhunt.data.windows import SPLITS
from foxhunt.errors import ConfigError, FoxhuntError
from foxhunt.storage import checked, staged
from foxhunt.storage.staged import StoreError

GROUPS = ("returns", "ranges")  # library groups: the float32 matrix path
FIELDS = ("static", "past", "future", "target", "static_categorical", "anchor", "scale")


def config(store: Path | None, bars: Path | None = None, **changes: object) -> DataConfig:
    fields: dict[str, object] = {
        "path": bars, "synthetic_days": 8, "synthetic_symbols": ("ES", "NQ"), "lookback": 16,
        "horizon": 4,
        "feature_groups": GROUPS, "feature_store": None if store is None else str(store),
    }  # fmt: skip
    return DataConfig(**{**fields, **changes})  # type: ignore[arg-type]


def assert_same_windows(memory: PreparedData, stored: PreparedData) -> None:
    """Every window of every split, each tensor equal bit for bit (dtype and NaNs too)."""
    for name in SPLITS:
        a, b = getattr(memory, name), getattr(stored, name)
        assert len(a) == len(b) > 0, name
        everything = list(range(len(a)))
        x, y = a.__getitems__(everything), b.__getitems__(everything)
        for field in (*FIELDS, "vol_signal", "target_range"):
            u, v = getattr(x, field), getattr(y, field)
            assert (u is None) == (v is None), (name, field)
            if u is not None:
                assert u.dtype == v.dtype and u.shape == v.shape, (name, field)
                assert torch.equal(u.view(torch.uint8), v.view(torch.uint8)), (name, field)
        assert a.timestamps.equals(b.timestamps) and a.timestamps.dtype == b.timestamps.dtype
        assert a.symbols == b.symbols
    assert memory.preprocessor == stored.preprocessor
    assert memory.summary == stored.summary and memory.schema == stored.schema


def entries(store: Path) -> list[Path]:
    return sorted(p for p in store.iterdir() if not p.name.startswith("."))


def left(store: Path) -> list[Path]:
    """All `store` holds but the writers' lock files (empty, kept: see staged.writer_lock) and
    the entries' stamps (storage/checked.py)."""
    kept = (staged.LOCK, checked.STAMP)
    return sorted(p for p in store.iterdir() if not p.name.startswith(kept))


def manifest_files(entry: Path) -> dict[str, object]:
    return dict(json.loads((entry / "manifest.json").read_text())["files"])


@pytest.mark.parametrize("groups", [GROUPS, ()], ids=["library", "default"])
def test_stored_windows_equal_the_in_memory_ones_bit_for_bit(
    tmp_path: Path, groups: tuple[str, ...]
) -> None:
    memory = prepare_in_memory(config(None, feature_groups=groups))
    written = prepare_data(config(tmp_path, feature_groups=groups))
    reused = prepare_data(config(tmp_path, feature_groups=groups))
    for stored in (written, reused):
        assert isinstance(stored.train.past_values, np.memmap)  # read from disk, not held
        assert not stored.train.past_values.flags.writeable
        # the times too are the mapped file, not a copy of it (8 bytes a bar each)
        assert isinstance(stored.train.timestamps.asi8, np.memmap)
        assert isinstance(stored.encoded.times_ns, np.memmap)
        assert_same_windows(memory, stored)


def test_a_pickled_stored_dataset_maps_the_file_again(tmp_path: Path) -> None:
    stored = prepare_data(config(tmp_path)).train
    inputs = stored.past_values
    assert isinstance(inputs, np.memmap)
    copy = pickle.loads(pickle.dumps(stored))  # what a spawned DataLoader worker gets
    assert isinstance(copy.past_values, np.memmap) and copy.past_values.filename == inputs.filename
    assert len(pickle.dumps(stored)) < inputs.nbytes / 4  # the matrix is not in the pickle
    everything = list(range(len(stored)))
    a, b = stored.__getitems__(everything), copy.__getitems__(everything)
    assert torch.equal(a.past, b.past) and torch.equal(a.future, b.future)
    # nor are the [N] vectors and times: each travels as its file (data/mapped.py)
    vectors = ("target_values", "symbol_codes", "anchors", "base_volatility", "profile")
    held = sum(getattr(stored, name).nbytes for name in vectors) + stored.timestamps.nbytes
    assert len(pickle.dumps(stored)) < held / 8, (len(pickle.dumps(stored)), held)
    for name in (*vectors, "vol_signal", "range_values"):
        u, v = getattr(stored, name), getattr(copy, name)
        same = u is None or torch.equal(u.view(torch.uint8), v.view(torch.uint8))  # NaNs too
        assert (u is None) == (v is None) and same, name
    assert copy.timestamps.equals(stored.timestamps)
    assert copy.timestamps.dtype == stored.timestamps.dtype
    assert isinstance(copy.timestamps.asi8, np.memmap)
    # a vector replaced in memory (another base: with_baseline) pickles as it is, not as a file
    rebased = copying.copy(stored)
    rebased.base_volatility = 2 * stored.base_volatility
    back = pickle.loads(pickle.dumps(rebased)).base_volatility
    assert torch.equal(back.view(torch.uint8), rebased.base_volatility.view(torch.uint8))


def test_spawned_dataloader_workers_read_the_stored_windows(tmp_path: Path) -> None:
    """Real worker processes started by spawn (macOS's default; forkserver is Linux's from
    Python 3.14) get the dataset pickled as its files and give the same batches."""
    stored = prepare_data(config(tmp_path)).train
    assert isinstance(stored.past_values, np.memmap)
    batches = BatchSampler(SequentialSampler(range(len(stored))), 64, drop_last=False)
    here = DataLoader(stored, batch_sampler=batches, collate_fn=collate_windows)
    spawned = DataLoader(
        stored,
        batch_sampler=batches,
        collate_fn=collate_windows,
        num_workers=1,
        multiprocessing_context="spawn",
    )
    count = 0
    for a, b in zip(here, spawned, strict=True):
        assert torch.equal(a.past, b.past) and torch.equal(a.future, b.future)
        for name in ("target", "anchor", "scale", "static_categorical"):
            u, v = getattr(a, name), getattr(b, name)
            assert (u is None) == (v is None) and (u is None or torch.equal(u, v)), name
        count += 1
    assert count == len(batches) > 1


def test_pinned_batches_go_through_the_loaders_pinning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a DataLoader with pin_memory=True does to each batch in its pinning thread
    (torch.utils.data._utils.pin_memory) reaches every tensor of a TFTBatch; on CPU the
    page-locking itself is stood in for (the real one: the gpu test below)."""
    from torch.utils.data._utils.pin_memory import pin_memory

    stored = prepare_data(config(tmp_path)).train
    batch = stored.__getitems__(list(range(8)))
    pinned_ids: list[int] = []

    def fake_pin(tensor: torch.Tensor, *args: object, **kwargs: object) -> torch.Tensor:
        out = tensor.clone()
        pinned_ids.append(id(out))
        return out

    monkeypatch.setattr(torch.Tensor, "pin_memory", fake_pin)
    out = pin_memory(batch)
    tensors = [(f.name, getattr(out, f.name)) for f in dataclasses.fields(out)]
    present = [(name, t) for name, t in tensors if t is not None]
    assert len(present) >= 5 and all(id(t) in pinned_ids for _, t in present), present
    assert all(torch.equal(t, getattr(batch, name)) for name, t in present)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_cuda_loader_hands_over_pinned_batches(tmp_path: Path) -> None:
    stored = prepare_data(config(tmp_path)).train
    batches = BatchSampler(SequentialSampler(range(len(stored))), 64, drop_last=False)
    loader = make_loader(stored, batch_sampler=batches, pin_memory=True)
    batch = next(iter(loader))
    assert batch.past.is_pinned() and batch.future.is_pinned()
    assert batch.to("cuda", non_blocking=True).past.is_cuda


def test_evaluate_and_predict_windows_from_the_store_equal_the_encoded_ones(
    tmp_path: Path,
) -> None:
    """data/stored_windows.py: every window of the bars, and each symbol's latest one, read
    from the run's entry are those `Preprocessor.dataset` and `latest_windows` encode from
    the file, every tensor bit for bit; another preprocessor's entry is not read."""
    bars = tmp_path / "bars.parquet"
    generate_instruments(days=8, seed=5, symbols=("ES", "NQ"), bar_minutes=5).to_parquet(bars)
    setting = config(tmp_path / "store", bars)
    pre = prepare_data(setting).preprocessor
    frame = read_source(bars, timezone=pre.timezone)
    stored, encoded = stored_windows(setting, pre), pre.dataset(frame.copy())
    assert stored is not None and len(stored) == len(encoded) > 0
    everything = list(range(len(encoded)))
    x, y = stored.__getitems__(everything), encoded.__getitems__(everything)
    for field in (*FIELDS, "vol_signal", "target_range"):
        u, v = getattr(x, field), getattr(y, field)
        assert (u is None) == (v is None), field
        assert u is None or torch.equal(u.view(torch.uint8), v.view(torch.uint8)), field
    latest, memory = stored_latest(setting, pre, None), latest_windows(pre, frame.copy())
    assert latest is not None and latest.symbols == memory.symbols == ("ES", "NQ")
    assert latest.last_timestamps.equals(memory.last_timestamps)
    for field in FIELDS:
        u, v = getattr(latest.batch, field), getattr(memory.batch, field)
        assert (u is None) == (v is None), field
        assert u is None or torch.equal(u.view(torch.uint8), v.view(torch.uint8)), field
    other = dataclasses.replace(pre, lookback=pre.lookback + 1)
    assert stored_windows(setting, other) is None and stored_latest(setting, other, None) is None


def test_a_second_run_reuses_the_store(
    tmp_path: Path, data_log: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare_data(config(tmp_path))
    (entry,) = entries(tmp_path)
    assert f"feature store: writing {entry}" in data_log.text
    data_log.clear()

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a reused store prepares nothing")

    monkeypatch.setattr(store_module, "prepare_in_memory", refuse)
    data = prepare_data(config(tmp_path, base="ewma"))  # the base is applied after the store
    rows = data.summary.rows
    assert f"feature store: reusing {entry} ({rows} rows, " in data_log.text
    assert entries(tmp_path) == [entry]


def test_a_changed_file_or_setting_is_not_reused(tmp_path: Path) -> None:
    bars_path = tmp_path / "bars.parquet"
    bars = foxhunt.data.generate_bars(days=8, seed=1)
    bars.to_parquet(bars_path)
    store = tmp_path / "store"
    first = prepare_data(config(store, bars_path))
    stat = bars_path.stat()
    bars.loc[len(bars) // 2, "close"] += 0.25  # one price a tick away, same rows
    bars.to_parquet(bars_path)
    os.utime(bars_path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the old time, as cp -p
    changed = prepare_data(config(store, bars_path))
    assert len(entries(store)) == 2
    assert not np.array_equal(first.train.past_values, changed.train.past_values)
    prepare_data(config(store, bars_path, feature_groups=("returns",)))
    prepare_data(config(store, bars_path, lookback=12))
    assert len(entries(store)) == 4


def test_an_interrupted_preparation_is_never_read_and_the_rerun_is_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare_data(config(tmp_path / "straight"))
    (straight,) = entries(tmp_path / "straight")
    store = tmp_path / "store"
    appends = 0
    append = staged.ArrayWriter.append

    def fail_midway(self: staged.ArrayWriter, block: np.ndarray) -> None:
        nonlocal appends
        appends += 1
        if appends == 3:
            raise KeyboardInterrupt  # as Ctrl-C would, between two blocks
        append(self, block)

    with monkeypatch.context() as patch:
        patch.setattr(staged.ArrayWriter, "append", fail_midway)
        with pytest.raises(KeyboardInterrupt):
            prepare_data(config(store))
    assert left(store) == []  # nothing complete, nothing staged left
    prepare_data(config(store))
    (entry,) = entries(store)
    assert entry.name == straight.name
    assert manifest_files(entry) == manifest_files(straight)


KILLED = """
import os, signal, sys
from foxhunt.data import DataConfig, prepare_data
from foxhunt.storage import staged
append, count = staged.ArrayWriter.append, [0]
def killed(self, block):
    count[0] += 1
    if count[0] == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    append(self, block)
staged.ArrayWriter.append = killed
prepare_data(DataConfig(**{CONFIG}))
"""


def test_a_kill_9_then_a_rerun_gives_the_same_store(tmp_path: Path) -> None:
    prepare_data(config(tmp_path / "straight"))
    (straight,) = entries(tmp_path / "straight")
    store = tmp_path / "store"
    fields = {k: v for k, v in config(store).to_dict().items() if v is not None}
    script = KILLED.replace("{CONFIG}", repr(fields))
    env = {**os.environ, "PYTHONPATH": str(Path(foxhunt.__file__).parents[1])}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]
    (staging,) = left(store)
    assert staging.name.startswith(".staging-")  # half-written, under its staging name
    assert any(staging.glob("*.npy")) and not (staging / "manifest.json").exists()
    prepare_data(config(store))
    (entry,) = left(store)  # the dead writer's staging is gone
    assert entry.name == straight.name
    assert manifest_files(entry) == manifest_files(straight)


SLOW_WRITER = """
import sys, time
from pathlib import Path
from foxhunt.data import DataConfig, prepare_data
from foxhunt.storage import staged
append, signals = staged.ArrayWriter.append, Path(sys.argv[1])
def held(self, block):
    if not (signals / "writing").exists():
        (signals / "writing").touch()  # the lock is held: the test's own run may start
        while not (signals / "go").exists():
            time.sleep(0.05)
    append(self, block)
staged.ArrayWriter.append = held
prepare_data(DataConfig(**{CONFIG}))
"""


def test_a_run_waits_for_another_writing_the_same_entry_then_reuses_it(
    tmp_path: Path, data_log: pytest.LogCaptureFixture
) -> None:
    store, signals = tmp_path / "store", tmp_path / "signals"
    signals.mkdir()
    data_log.set_level(logging.INFO, logger="foxhunt.storage")  # says it waits
    fields = {k: v for k, v in config(store).to_dict().items() if v is not None}
    env = {**os.environ, "PYTHONPATH": str(Path(foxhunt.__file__).parents[1])}
    script = SLOW_WRITER.replace("{CONFIG}", repr(fields))
    writer = subprocess.Popen([sys.executable, "-c", script, str(signals)], env=env)
    try:
        for _ in range(1200):  # the writer holds the lock once it writes
            if (signals / "writing").exists() or writer.poll() is not None:
                break
            threading.Event().wait(0.05)
        assert (signals / "writing").exists(), "the writer never started writing"
        done: list[PreparedData] = []
        waiter = threading.Thread(target=lambda: done.append(prepare_data(config(store))))
        waiter.start()
        for _ in range(1200):  # released only once this run is seen waiting
            if "waiting for another process writing" in data_log.text:
                break
            threading.Event().wait(0.05)
        (signals / "go").touch()
        waiter.join()
        assert writer.wait() == 0
    finally:
        (signals / "go").touch()
        writer.kill()
    assert "waiting for another process writing" in data_log.text
    assert "feature store: reusing" in data_log.text
    assert "feature store: writing" not in data_log.text  # prepared once, by the other
    assert len(done) == 1 and len(entries(store)) == 1 and len(left(store)) == 1


def test_a_damaged_entry_is_prepared_again(
    tmp_path: Path, data_log: pytest.LogCaptureFixture
) -> None:
    memory = prepare_in_memory(config(None))
    prepare_data(config(tmp_path))
    (entry,) = entries(tmp_path)
    with open(entry / "inputs.npy", "r+b") as f:  # one flipped byte, the size unchanged
        f.seek(-7, os.SEEK_END)
        byte = f.read(1)
        f.seek(-7, os.SEEK_END)
        f.write(bytes([byte[0] ^ 1]))
    again = prepare_data(config(tmp_path))
    assert "inputs.npy: checksum mismatch" in data_log.text or "damaged" in data_log.text
    assert_same_windows(memory, again)


def test_a_stored_run_rescales_by_another_base_as_in_memory(tmp_path: Path) -> None:
    memory = prepare_in_memory(config(None))
    stored = prepare_data(config(tmp_path))
    pre = dataclasses.replace(memory.preprocessor, fast_window=8)
    a, b = base_rows(memory, pre), base_rows(stored, pre)
    for name in ("volatility", "profile", "signal", "ready"):
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name


@pytest.mark.parametrize("errno_", [errno.ENOSPC, errno.EROFS])
def test_a_full_or_read_only_store_is_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, errno_: int
) -> None:
    def refuse(self: object, data: bytes) -> int:
        raise OSError(errno_, os.strerror(errno_))

    monkeypatch.setattr(staged._Hashed, "write", refuse)
    with pytest.raises(StoreError) as caught:
        prepare_data(config(tmp_path / "store"))
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'store'}: ") and "\n" not in message
    assert ("no space left" if errno_ == errno.ENOSPC else "cannot write") in message
    assert "--feature-store" in message
    assert left(tmp_path / "store") == []


def test_a_store_under_a_file_is_refused_before_preparing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for place in (blocker, blocker / "store"):
        with pytest.raises(FoxhuntError, match=str(place).replace("/", ".")):
            prepare_data(config(place))


@pytest.mark.parametrize("value", ["", "  ", "nosuchfs://bucket/store"])
def test_the_setting_is_checked(value: str) -> None:
    with pytest.raises(ConfigError, match=r"DataConfig\.feature_store"):
        DataConfig(feature_store=value)


def test_summary_round_trips(tmp_path: Path) -> None:
    summary = prepare_in_memory(config(None)).summary
    text = json.dumps(summary.to_dict(), sort_keys=True)
    assert type(summary).from_dict(json.loads(text)) == summary
    assert isinstance(summary.validation_start, pd.Timestamp)


def test_reading_an_entry_holds_a_few_bytes_a_bar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vectors, anchors and times of a reused entry are mapped, not read into memory: the
    tz-aware index is the mapped file, and its nanoseconds, when the bars' unit is coarser
    (these are), are made only if asked for. What is left is the finite mask (1 byte a bar).
    Reading the times and the anchors whole held 32, the index's copy and the nanoseconds 17
    (issue 41's growing training peak)."""
    import tracemalloc

    peaks: list[tuple[int, int]] = []
    read = store_module.read_entry

    def traced(*args, **kwargs):
        tracemalloc.start()  # numpy's and pandas' buffers are traced; a file's map is not
        try:
            data = read(*args, **kwargs)
            peaks.append((tracemalloc.get_traced_memory()[1], data.summary.rows))
        finally:
            tracemalloc.stop()
        return data

    for days in (8, 40):
        prepare_data(config(tmp_path / f"s{days}", synthetic_days=days))
        monkeypatch.setattr(store_module, "read_entry", traced)
        prepare_data(config(tmp_path / f"s{days}", synthetic_days=days))  # reused: read
        monkeypatch.setattr(store_module, "read_entry", read)
    (small, rows_small), (large, rows_large) = peaks
    per_bar = (large - small) / (rows_large - rows_small)
    assert per_bar < 3, per_bar
