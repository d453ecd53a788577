"""A feature store entry prepared a symbol at a time (data/streamed.py): the entry the
in-memory preparation writes, bit for bit, without ever computing two symbols at once."""

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from test_feature_store import assert_same_windows, entries

from foxhunt.data import DataConfig, prepare_data
from foxhunt.data import footprint as footprint_module
from foxhunt.data import symbol_inputs as inputs_module
from foxhunt.data.features import blocks as blocks_module
from foxhunt.data.features.base import Features
from foxhunt.data.instruments import generate_instruments
from foxhunt.data.pipeline import prepare_in_memory
from foxhunt.data.scaling import streamed_moments
from foxhunt.data.store_entry import stored_block
from foxhunt.errors import ConfigError, DataError
from helpers.contracts import write_contract_files

#: the tft-225 groups (cli/presets.py) at short windows, so that 3 days of bars hold them
GROUPS = (
    *("returns:3/12", "realized:3/12", "ranges:3/12", "activity:3/12", "location:6"),
    *("trend:6/12", "shape:3/12", "cycles", "instrument"),
)
SYMBOLS = ("CL", "ES", "ZN")


@pytest.fixture(scope="module")
def bars(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bars") / "bars.parquet"
    frame = generate_instruments(days=3, seed=3, symbols=SYMBOLS, bar_minutes=5)
    frame.to_parquet(path, index=False)
    return path


def config(bars: Path, store: Path | None, **changes: object) -> DataConfig:
    fields: dict[str, object] = {
        "path": bars, "lookback": 16, "horizon": 4, "feature_groups": GROUPS,
        "feature_store": None if store is None else str(store), "calendar": "none",
    }  # fmt: skip
    return DataConfig(**{**fields, **changes})  # type: ignore[arg-type]


def test_a_streamed_entry_equals_the_in_memory_preparation_bit_for_bit(
    bars: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int] = []  # the symbols each feature computation was given
    compute = inputs_module.library_blocks

    def one_symbol(frame, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(frame["symbol"].nunique())
        return compute(frame, *args, **kwargs)

    monkeypatch.setattr(inputs_module, "library_blocks", one_symbol)
    memory = prepare_in_memory(config(bars, None))
    stored = prepare_data(config(bars, tmp_path))
    assert seen == [1] * len(SYMBOLS)  # never two symbols' matrix at once
    assert_same_windows(memory, stored)  # the scaler's mean and std too, bit for bit
    (entry,) = entries(tmp_path)
    manifest = json.loads((entry / "manifest.json").read_text())
    assert manifest["metadata"]["streamed"] is True
    assert "raw.f32" not in manifest["files"] and not (entry / "raw.f32").exists()
    assert memory.preprocessor.spec.dropped  # a constant input was found and dropped alike


@pytest.mark.parametrize("block", [600, 800])
def test_symbols_computed_in_row_blocks_stream_bit_for_bit(
    bars: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """Symbols longer than a block (features/blocks.py) are cut alike in memory and
    streamed, the cross group computed beside the blocks: the same entry. At 800 rows the
    last symbol is computed whole beside two cut in two."""
    monkeypatch.setattr(blocks_module, "BLOCK_ROWS", block)  # 3 days of 5-minute bars: 828
    monkeypatch.setattr(blocks_module, "WARMUPS", 1)  # prefixes of 1-2 sessions (276 rows)
    plans: list[int] = []
    plan = blocks_module.plan_blocks
    monkeypatch.setattr(
        "foxhunt.data.features.compute.plan_blocks",
        lambda *a, **k: plans.append(len(plan(*a, **k))) or plan(*a, **k),
    )
    groups = (*GROUPS, "cross:1/3")
    memory = prepare_in_memory(config(bars, None, feature_groups=groups))
    stored = prepare_data(config(bars, tmp_path, feature_groups=groups))
    assert plans[0] == sum(plans[1:]) and max(plans[1:]) > 1  # in memory, then each symbol
    assert (min(plans[1:]) == 1) == (block == 800)  # a whole symbol beside cut ones
    assert_same_windows(memory, stored)


def test_streamed_moments_are_numpys_mean_and_std_bit_for_bit() -> None:
    rng = np.random.default_rng(0)
    rows = (rng.standard_normal((3000, 229)) * rng.lognormal(0, 3, 229) + 7).astype(np.float32)
    rows[:, 5] = 1.5  # a constant column: std 0 exactly
    cuts = [0, 1, 1, 700, 2048, 3000]  # blocks of uneven sizes, one empty

    def blocks():  # type: ignore[no-untyped-def]
        return (rows[a:b] for a, b in itertools.pairwise(cuts))

    mean, std = streamed_moments(blocks, rows.shape[1])
    assert np.array_equal(mean, rows.mean(axis=0, dtype=np.float64))
    assert np.array_equal(std, rows.std(axis=0, dtype=np.float64))
    assert not np.array_equal(std, rows.astype(np.float64).std(axis=0) + 1e-9)  # it can fail
    empty_mean, _ = streamed_moments(lambda: iter([rows[:0]]), rows.shape[1])
    assert np.isnan(empty_mean).all()


@pytest.mark.parametrize("workers", [1, 2])
def test_the_cross_group_streams_bit_for_bit(
    bars: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """Each symbol computed alone, here or in a spawned worker, reads the other symbols'
    measures from their files: the entry is the in-memory one. Four symbols: a row sums three
    others', where the order of the sum shows in the last bits."""
    four = tmp_path / "four.parquet"
    symbols = (*SYMBOLS, "GC")
    generate_instruments(days=3, seed=4, symbols=symbols, bar_minutes=5).to_parquet(four)
    seen: list[int] = []
    compute = inputs_module.library_blocks

    def one_symbol(frame, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(frame["symbol"].nunique())
        return compute(frame, *args, **kwargs)

    monkeypatch.setattr(inputs_module, "library_blocks", one_symbol)
    groups = ("returns:3", "cross:1/3")
    memory = prepare_in_memory(config(four, None, feature_groups=groups))
    store = tmp_path / "store"
    stored = prepare_data(config(four, store, feature_groups=groups, prepare_workers=workers))
    assert seen == ([1] * len(symbols) if workers == 1 else [])  # a worker's are its own
    assert_same_windows(memory, stored)
    assert any(n.startswith("cross_vol") for n in stored.preprocessor.spec.observed_names)
    (entry,) = entries(store)
    manifest = json.loads((entry / "manifest.json").read_text())
    assert manifest["metadata"]["streamed"] is True
    assert not [f for f in manifest["files"] if f.startswith("cross-")]
    assert not list(entry.glob("cross-*"))


def test_a_streamed_store_too_large_stops_before_computing(
    bars: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(footprint_module, "available_bytes", lambda: 100_000)

    def never(*args: object, **kwargs: object) -> Features:
        raise AssertionError("computed the features")

    monkeypatch.setattr(inputs_module, "library_blocks", never)
    with pytest.raises(DataError, match=r"a symbol at a time needs about .* GB of memory"):
        prepare_data(config(bars, tmp_path))
    assert entries(tmp_path) == []


def test_a_second_run_says_what_reusing_saved(
    bars: Path, tmp_path: Path, data_log: pytest.LogCaptureFixture
) -> None:
    prepare_data(config(bars, tmp_path))
    data_log.clear()
    prepare_data(config(bars, tmp_path))
    assert "s; preparing it took " in data_log.text


def test_a_float16_store_holds_the_inputs_rounded_once(bars: Path, tmp_path: Path) -> None:
    memory = prepare_in_memory(config(bars, None))
    half = prepare_data(config(bars, tmp_path, feature_store_dtype="float16"))
    assert half.train.past_values.dtype == np.float16
    assert half.preprocessor == memory.preprocessor  # fitted on the float32 values
    everything = list(range(len(memory.train)))
    a, b = memory.train.__getitems__(everything), half.train.__getitems__(everything)
    assert b.past.dtype == b.future.dtype == torch.float32  # what the model reads
    assert torch.equal(a.past.half().float(), b.past)
    assert torch.equal(a.future.half().float(), b.future)
    assert torch.equal(a.target, b.target)
    assert not torch.equal(a.past, b.past)
    with pytest.raises(ConfigError, match="feature_store_dtype='float16': needs feature_store"):
        config(bars, None, feature_store_dtype="float16")


def test_a_float16_store_refuses_a_value_beyond_its_range() -> None:
    block = np.array([[1.0, np.nan, -np.inf], [7e4, 0.5, 2.0]], dtype=np.float32)
    with pytest.raises(DataError, match="reaches 7e\\+04, beyond float16's range"):
        stored_block(block, "float16")
    assert stored_block(block[:1], "float16").dtype == np.float16  # its infinity was one
    assert stored_block(block, "float32") is block


@pytest.mark.parametrize("block", [None, 1000])
def test_contract_series_stream_bit_for_bit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int | None
) -> None:
    """With `block`, the symbol is cut in row blocks across its contracts' series."""
    plans: list[int] = []
    if block is not None:
        monkeypatch.setattr(blocks_module, "BLOCK_ROWS", block)
        plan = blocks_module.plan_blocks
        monkeypatch.setattr(
            "foxhunt.data.features.compute.plan_blocks",
            lambda *a, **k: plans.append(len(plan(*a, **k))) or plan(*a, **k),
        )
    bars = write_contract_files(tmp_path)["contracts"]  # one symbol, two overlapping contracts
    groups = ("returns:3/12", "realized:3/12", "location", "expiry")
    settings = {"feature_groups": groups, "max_gap": None}  # a series per contract
    memory = prepare_in_memory(config(bars, None, **settings))
    stored = prepare_data(config(bars, tmp_path / "store", **settings))
    assert block is None or (
        plans == [plans[0]] * 2 and plans[0] > 4
    )  # cut, in memory and streamed
    assert_same_windows(memory, stored)
    (entry,) = entries(tmp_path / "store")
    assert json.loads((entry / "manifest.json").read_text())["metadata"]["streamed"] is True


def test_symbols_prepared_in_two_processes_give_the_serial_store(
    bars: Path, tmp_path: Path, data_log: pytest.LogCaptureFixture
) -> None:
    two = ("CL", "ZN")
    serial = prepare_data(config(bars, tmp_path / "serial", symbols=two))
    parallel = prepare_data(config(bars, tmp_path / "parallel", symbols=two, prepare_workers=2))
    assert "feature store: 2 symbols computed in 2 processes" in data_log.text
    assert_same_windows(serial, parallel)
    (a,), (b,) = entries(tmp_path / "serial"), entries(tmp_path / "parallel")
    assert a.name == b.name  # the same key: the workers change nothing stored
    files = sorted(f.name for f in a.iterdir())
    assert files == sorted(f.name for f in b.iterdir())
    for name in files:  # every array and JSON file byte for byte; the manifest's times differ
        if name != "manifest.json":
            assert (a / name).read_bytes() == (b / name).read_bytes(), name
    with pytest.raises(ConfigError, match="prepare_workers"):
        config(bars, None, prepare_workers=0)


def test_no_symbol_for_several_workers_computes_nothing() -> None:
    # a DDP rank beyond the symbols' count has none of them (data/shared_store.py)
    assert list(inputs_module.symbol_inputs([], 2)) == []
