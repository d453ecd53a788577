"""The cases of benchmarks/sweep_doors.py, door by door (tiny files, 1 epoch of 2 steps)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from _sweep_kit import Case, Result, copy, edit_json, has_oracle, leftovers, mounts

TRAIN = [
    "train",
    "--lookback",
    "16",
    "--horizon",
    "4",
    "--hidden-size",
    "8",
    "--variable-hidden-size",
    "4",
    "--attention-heads",
    "2",
    "--batch-size",
    "32",
    "--patience",
    "0",
    "--epochs",
    "1",
    "--max-steps-per-epoch",
    "2",
    "--threads",
    "1",
    "--no-report",
]
SIDE = ".planted.json"


class Shared:
    """Files every case copies: planted bars of one and two symbols, a store entry."""

    root = Path()

    def make(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        root.mkdir(parents=True)

        def fox(*argv: str) -> None:
            subprocess.run(
                [sys.executable, "-m", "foxhunt", *argv],
                cwd=root,
                env=env,
                check=True,
                capture_output=True,
            )

        fox("planted", "p1.parquet", "--days", "4")
        fox("planted", "p2.parquet", "--days", "4", "--symbols", "ES,NQ", "--cross-lead", "0.5")
        import pandas as pd

        frame = pd.read_parquet(root / "p2.parquet")
        last = frame["timestamp"].max() - pd.Timedelta(hours=20)
        late = frame[(frame["symbol"] == "ES") | (frame["timestamp"] >= last)]
        late.to_parquet(root / "late.parquet", index=False)
        fox(
            *TRAIN,
            "--parquet-file",
            "p1.parquet",
            "--feature-store",
            "store",
            "--output-dir",
            "run",
        )

    def __call__(self, name: str) -> Path:
        return self.root / name


SHARED = Shared()


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---- setups -------------------------------------------------------------------------------


def files(*names: str, then: Callable[[Path], None] | None = None) -> Callable[[Path], None]:
    """Copy shared files (and a planted file's sidecar) into the case's folder, then `then`."""

    def setup(work: Path) -> None:
        for name in names:
            src = SHARED(name)
            if src.is_dir():
                shutil.copytree(src, work / name)
                continue
            copy(src, work / name)
            side = src.with_name(src.name + SIDE)
            if side.exists():
                copy(side, work / side.name)
        if then is not None:
            then(work)

    return setup


def entry(work: Path) -> Path:
    """The one entry of the copied store."""
    return next(p for p in (work / "store").iterdir() if not p.name.startswith("."))


def side_edit(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    return lambda w: edit_json(w / f"p1.parquet{SIDE}", edit)


def rewrite_bars(change: Callable[[object], object], name: str = "p1.parquet") -> Callable:
    def then(work: Path) -> None:
        import pandas as pd

        frame = pd.read_parquet(work / name)
        change(frame).to_parquet(work / name, index=False)  # type: ignore[attr-defined]

    return then


def bump_close(frame):  # type: ignore[no-untyped-def]
    frame.loc[100, "close"] = frame.loc[100, "close"] * 1.0001
    frame.loc[100, "high"] = max(frame.loc[100, "high"], frame.loc[100, "close"])
    return frame


def drop_nq(frame):  # type: ignore[no-untyped-def]
    return frame[frame["symbol"] == "ES"]


def tmpfs(rel: str, size: str, readonly: bool = False) -> Callable[[Path], None]:
    return lambda w: mounts.tmpfs(w / rel, size, readonly=readonly) and None


def store_on(rel: str, size: str, *, readonly: bool, fill: bool) -> Callable[[Path], None]:
    """A tmpfs at `rel`, holding a copy of the shared store's entry when `fill`."""

    def setup(work: Path) -> None:
        files("p1.parquet")(work)
        mounts.tmpfs(work / rel, size)
        if fill:
            src = SHARED("store")
            for item in src.iterdir():
                if not item.name.startswith("."):
                    shutil.copytree(item, work / rel / item.name)
        if readonly:
            mounts.readonly(work / rel)

    return setup


def chain(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(work: Path) -> None:
        for step in steps:
            step(work)

    return setup


# ---- checks -------------------------------------------------------------------------------


def planted_written(work: Path, _: Result) -> tuple[str, str] | None:
    out, side = work / "out.parquet", work / f"out.parquet{SIDE}"
    if not out.is_file() or not side.is_file():
        return "silent-wrong", "exit 0 without the file and its sidecar"
    if json.loads(side.read_text())["sha256"] != sha(out):
        return "silent-wrong", "the sidecar's sha256 is not the file's"
    extra = leftovers(work, {"out.parquet", f"out.parquet{SIDE}"})
    if extra:
        return "silent-wrong", f"left beside the file: {extra}"
    return None


def nothing_left(*allowed: str) -> Callable[[Path, Result], tuple[str, str] | None]:
    def check(work: Path, _: Result) -> tuple[str, str] | None:
        extra = [n for n in leftovers(work, set(allowed)) if not n.startswith("lim")]
        return ("silent-wrong", f"left behind: {extra}") if extra else None

    return check


def oracle(expected: bool) -> Callable[[Path, Result], tuple[str, str] | None]:
    def check(work: Path, _: Result) -> tuple[str, str] | None:
        if has_oracle(work / "run") != expected:
            return "silent-wrong", f"oracle rows {'missing' if expected else 'scored'}"
        return None

    return check


def no_kernel(work: Path, res: Result) -> tuple[str, str] | None:
    if "grn_cells CPU kernel" in res.err and "could not build" not in res.err:
        return "silent-wrong", "the kernel was loaded though the variable said off"
    return None


def model_lookback(bars: int) -> Callable[[Path, Result], tuple[str, str] | None]:
    def check(work: Path, _: Result) -> tuple[str, str] | None:
        got = json.loads((work / "run" / "config.json").read_text())["model"]["lookback"]
        return None if got == bars else ("silent-wrong", f"the model's lookback is {got}")

    return check


def store_entries(count: int) -> Callable[[Path, Result], tuple[str, str] | None]:
    def check(work: Path, _: Result) -> tuple[str, str] | None:
        names = [p.name for p in (work / "store").iterdir() if not p.name.startswith(".lock")]
        ok = len([n for n in names if not n.startswith(".")]) == count and all(
            not n.startswith(".") for n in names
        )
        return None if ok else ("silent-wrong", f"store holds {names}, {count} entries due")

    return check


# ---- the cases ----------------------------------------------------------------------------


def planted(name: str, flags: list[str], expect: str = "refuse", *mentions: str, **kw) -> Case:  # type: ignore[no-untyped-def]
    check = kw.pop("check", planted_written if expect == "ok" else nothing_left())
    return Case(
        "planted",
        name,
        ["planted", "out.parquet", "--days", "2", *flags],
        expect,
        mentions,
        check=check,
        timeout=kw.pop("timeout", 120),
        **kw,
    )


def planted_cases() -> list[Case]:
    bad = [
        ("zero days", ["--days", "0"], "days"),
        ("negative days", ["--days", "-3"], "days"),
        ("too many days", ["--days", "10001"], "days"),
        ("days not a number", ["--days", "abc"], "days"),
        ("fractional days", ["--days", "1.5"], "days"),
        ("zero bar minutes", ["--bar-minutes", "0"], "bar"),
        ("61 bar minutes", ["--bar-minutes", "61"], "bar"),
        ("event minute off the bars", ["--bar-minutes", "7"], "event_minute"),
        ("event minute past the day", ["--event-minute", "1440"], "event"),
        ("unknown calendar", ["--calendar", "NOPE"], "calendar"),
        ("empty calendar", ["--calendar", ""], "calendar"),
        ("month 13", ["--start", "2025-13-01"], "start"),
        ("start not a date", ["--start", "yesterday"], "start"),
        ("cross lead on one symbol", ["--cross-lead", "0.5"], "cross_lead"),
        ("a symbol twice", ["--symbols", "ES,ES"], "symbols"),
        ("no symbol", ["--symbols", ""], "symbols"),
        ("zero daily vol", ["--daily-vol", "0"], "daily"),
        ("nan daily vol", ["--daily-vol", "nan"], "daily"),
        ("inf daily vol", ["--daily-vol", "inf"], "daily"),
        ("half daily vol", ["--daily-vol", "0.5"], "daily"),
        ("tail dof 2.5", ["--tail-dof", "2.5"], "tail"),
        ("weekday 5", ["--event-weekdays", "5"], "weekdays"),
        ("volume decay 1", ["--volume-decay", "1"], "decay"),
        ("negative seed", ["--seed", "-1"], "seed"),
        ("garch alpha 0.5", ["--garch-alpha", "0.5"], "alpha"),
        ("regime bars 1", ["--regime-bars", "1"], "regime"),
        ("unknown flag", ["--volatility", "2"], "volatility"),
        ("start before the calendar", ["--start", "1800-01-02"], "start"),
    ]
    out = [planted(n, f, "refuse", m) for n, f, m in bad]
    out += [
        planted("defaults", [], "ok"),
        planted("two symbols with a lead", ["--symbols", "ES,NQ", "--cross-lead", "1"], "ok"),
        planted("NYSE calendar", ["--calendar", "NYSE"], "ok"),
        planted("1-minute bars", ["--bar-minutes", "1", "--days", "1"], "ok"),
        planted(
            "every driver off",
            ["--volume-lead", "0", "--event-size", "1", "--regime-size", "1"],
            "ok",
        ),
        planted("no event weekdays", ["--event-weekdays", ""], "ok"),
        planted(
            "existing file kept",
            [],
            "refuse",
            "out.parquet",
            "overwrite",
            setup=lambda w: (w / "out.parquet").write_bytes(b"mine"),
            keep=("out.parquet",),
            check=nothing_left("out.parquet"),
        ),
        planted(
            "overwrite replaces",
            ["--overwrite"],
            "ok",
            setup=lambda w: (w / "out.parquet").write_bytes(b"mine"),
        ),
        Case(
            "planted",
            "output is a folder",
            ["planted", "d", "--days", "2"],
            "refuse",
            ("d",),
            setup=lambda w: (w / "d").mkdir(),
            keep=("d",),
        ),
        Case(
            "planted",
            "output in a missing folder",
            ["planted", "no/out.parquet", "--days", "2"],
            "ok",
            check=lambda w, r: planted_written(w / "no", r),
        ),
        Case(
            "planted",
            "csv name for parquet bytes",
            ["planted", "out.csv", "--days", "2"],
            "refuse",
            ("out.csv",),
            check=nothing_left(),
        ),
        Case(
            "planted",
            "overwrite of a run's file",
            ["planted", "run/test_forecasts.parquet", "--days", "2", "--overwrite"],
            "refuse",
            ("test_forecasts.parquet",),
            setup=files("run"),
            keep=("run",),
        ),
        Case(
            "planted",
            "read-only folder",
            ["planted", "ro/out.parquet", "--days", "2"],
            "refuse",
            ("ro",),
            setup=tmpfs("ro", "1m", readonly=True),
        ),
        Case(
            "planted",
            "full disk",
            ["planted", "full/out.parquet", "--days", "2"],
            "refuse",
            ("full",),
            setup=tmpfs("full", "32k"),
            check=lambda w, r: (
                ("silent-wrong", "left files") if any((w / "full").iterdir()) else None
            ),
        ),
        Case(
            "planted",
            "file size limit",
            ["planted", "out.parquet", "--days", "2"],
            "refuse",
            ("out.parquet",),
            fsize=20_000,
            check=nothing_left(),
        ),
        Case(
            "planted",
            "overwrite on a full disk keeps the old file",
            ["planted", "full/out.parquet", "--days", "30", "--overwrite"],
            "refuse",
            ("full",),
            setup=chain(
                tmpfs("full", "120k"),
                lambda w: shutil.copy(SHARED("p1.parquet"), w / "full/out.parquet"),
            ),
            keep=("full/out.parquet",),
        ),
        Case(
            "planted",
            "kill -9 while generating, rerun",
            ["planted", "out.parquet", "--days", "200"],
            "ok",
            kill_after=4.0,
            rerun=["planted", "out.parquet", "--days", "2"],
            check=planted_written,
        ),
        Case(
            "planted",
            "kill -9 while generating, rerun with --overwrite",
            ["planted", "out.parquet", "--days", "200"],
            "ok",
            kill_after=7.0,
            rerun=["planted", "out.parquet", "--days", "2", "--overwrite"],
            check=planted_written,
        ),
        Case(
            "planted",
            "written over /dev/full",
            ["planted", "/dev/full", "--days", "2", "--overwrite"],
            "refuse",
            ("/dev/full",),
        ),
    ]
    return out


def train(
    door: str, name: str, data: str, flags: list[str], expect: str = "ok", *mentions: str, **kw
) -> Case:  # type: ignore[no-untyped-def]
    argv = [*TRAIN, "--parquet-file", data, *flags, "--output-dir", "run"]
    kw.setdefault("setup", files(data))
    return Case(door, name, argv, expect, mentions, **kw)


def oracle_cases() -> list[Case]:
    p1 = "p1.parquet"
    return [
        train("oracle", "planted file scores the oracle", p1, [], check=oracle(True)),
        train("oracle", "two symbols score the oracle", "p2.parquet", [], check=oracle(True)),
        train(
            "oracle",
            "one symbol of two kept",
            "p2.parquet",
            ["--symbols", "NQ"],
            check=oracle(True),
        ),
        train(
            "oracle",
            "sidecar deleted",
            p1,
            [],
            check=oracle(False),
            setup=files(p1, then=lambda w: (w / f"{p1}{SIDE}").unlink()),
        ),
        train(
            "oracle",
            "sidecar not JSON",
            p1,
            [],
            "refuse",
            SIDE,
            setup=files(p1, then=lambda w: (w / f"{p1}{SIDE}").write_text("{oops")),
        ),
        train(
            "oracle",
            "sidecar empty",
            p1,
            [],
            "refuse",
            SIDE,
            setup=files(p1, then=lambda w: (w / f"{p1}{SIDE}").write_text("")),
        ),
        train(
            "oracle",
            "sidecar sha mismatch",
            p1,
            [],
            "ok",
            "changed",
            check=oracle(False),
            setup=files(p1, then=side_edit(lambda d: d.update(sha256="0" * 64))),
        ),
        train(
            "oracle",
            "sidecar without sha",
            p1,
            [],
            "refuse",
            SIDE,
            setup=files(p1, then=side_edit(lambda d: d.pop("sha256"))),
        ),
        train(
            "oracle",
            "sidecar with an unknown field",
            p1,
            [],
            "refuse",
            SIDE,
            setup=files(p1, then=side_edit(lambda d: d["planted"].update(wind=1))),
        ),
        train(
            "oracle",
            "sidecar with days -1",
            p1,
            [],
            "refuse",
            SIDE,
            setup=files(p1, then=side_edit(lambda d: d["planted"].update(days=-1))),
        ),
        train(
            "oracle",
            "sidecar's regime edited, sha kept",
            p1,
            [],
            "ok",
            "makes other bars",
            check=oracle(False),
            setup=files(p1, then=side_edit(lambda d: d["planted"].update(regime_size=5.0))),
        ),
        train(
            "oracle",
            "sidecar's days edited, sha kept",
            p1,
            [],
            "ok",
            "makes other bars",
            check=oracle(False),
            setup=files(p1, then=side_edit(lambda d: d["planted"].update(days=3))),
        ),
        train(
            "oracle",
            "sidecar's seed edited, sha kept",
            p1,
            [],
            "ok",
            "makes other bars",
            check=oracle(False),
            setup=files(p1, then=side_edit(lambda d: d["planted"].update(seed=7))),
        ),
        train(
            "oracle",
            "sidecar is a folder",
            p1,
            [],
            check=oracle(False),
            setup=files(
                p1, then=lambda w: ((w / f"{p1}{SIDE}").unlink(), (w / f"{p1}{SIDE}").mkdir())
            ),
        ),
        train(
            "oracle",
            "one close edited",
            p1,
            [],
            "ok",
            "changed",
            check=oracle(False),
            setup=files(p1, then=rewrite_bars(bump_close)),
        ),
        train(
            "oracle",
            "one symbol removed",
            "p2.parquet",
            [],
            "ok",
            "changed",
            check=oracle(False),
            setup=files("p2.parquet", then=rewrite_bars(drop_nq, "p2.parquet")),
        ),
        train(
            "oracle",
            "bars renamed with their sidecar",
            "q.parquet",
            [],
            check=oracle(True),
            setup=lambda w: (
                copy(SHARED(p1), w / "q.parquet"),
                copy(SHARED(p1 + SIDE), w / f"q.parquet{SIDE}"),
            ),
        ),
        train(
            "oracle",
            "another market's sidecar",
            p1,
            [],
            "ok",
            "makes other bars",
            check=oracle(False),
            setup=lambda w: (
                copy(SHARED(p1), w / p1),
                copy(SHARED("p2.parquet" + SIDE), w / f"{p1}{SIDE}"),
                side_edit(lambda d: d.update(sha256=sha(w / p1)))(w),
            ),
        ),
        train(
            "oracle",
            "a window of the bars (--start)",
            p1,
            ["--start", "2025-01-07"],
            check=oracle(True),
        ),
    ]


def store_cases() -> list[Case]:
    p1, fs = "p1.parquet", ["--feature-store", "store"]
    reuse = files(p1, "store")

    def damage(fn: Callable[[Path], None]) -> Callable[[Path], None]:
        return files(p1, "store", then=lambda w: fn(entry(w)))

    def manifest(edit: Callable[[dict], None]) -> Callable[[Path], None]:
        return damage(lambda e: edit_json(e / "manifest.json", edit))

    def flip(e: Path) -> None:
        data = bytearray((e / "inputs.npy").read_bytes())
        data[-5] ^= 0x40
        (e / "inputs.npy").write_bytes(bytes(data))

    return [
        train("store", "a new store", p1, fs, "ok", "wrote", check=store_entries(1)),
        train("store", "a store reused", p1, fs, "ok", "reusing", setup=reuse, keep=("store",)),
        train(
            "store",
            "the store is a file",
            p1,
            fs,
            "refuse",
            "store",
            setup=files(p1, then=lambda w: (w / "store").write_text("x")),
            keep=("store",),
        ),
        train(
            "store",
            "the store under a file",
            p1,
            ["--feature-store", "f/store"],
            "refuse",
            "store",
            setup=files(p1, then=lambda w: (w / "f").write_text("x")),
        ),
        train(
            "store", "empty --feature-store", p1, ["--feature-store", ""], "refuse", "feature_store"
        ),
        train(
            "store",
            "read-only, empty",
            p1,
            ["--feature-store", "ro"],
            "refuse",
            "ro",
            setup=store_on("ro", "1m", readonly=True, fill=False),
        ),
        train(
            "store",
            "read-only, holding the entry",
            p1,
            ["--feature-store", "ro"],
            "ok",
            "reusing",
            setup=store_on("ro", "8m", readonly=True, fill=True),
        ),
        train(
            "store",
            "full disk",
            p1,
            ["--feature-store", "full"],
            "refuse",
            "full",
            setup=store_on("full", "64k", readonly=False, fill=False),
            check=lambda w, r: (
                ("silent-wrong", "staging left")
                if any(p.name.startswith(".staging") for p in (w / "full").iterdir())
                else None
            ),
        ),
        train(
            "store",
            "file size limit",
            p1,
            fs,
            "refuse",
            "store",
            fsize=60_000,
            check=lambda w, r: (
                None
                if not (w / "store").exists()
                or not any(p.name.startswith(".staging") for p in (w / "store").iterdir())
                else ("silent-wrong", "staging left")
            ),
        ),
        train(
            "store",
            "manifest not JSON",
            p1,
            fs,
            "ok",
            "damaged",
            check=store_entries(1),
            setup=damage(lambda e: (e / "manifest.json").write_text("{x")),
        ),
        train(
            "store",
            "manifest deleted",
            p1,
            fs,
            "ok",
            "damaged",
            check=store_entries(1),
            setup=damage(lambda e: (e / "manifest.json").unlink()),
        ),
        train(
            "store",
            "manifest without metadata rows",
            p1,
            fs,
            "ok",
            "damaged",
            setup=manifest(lambda m: m["metadata"].pop("rows")),
        ),
        train(
            "store",
            "manifest rows not a number",
            p1,
            fs,
            "ok",
            "damaged",
            setup=manifest(lambda m: m["metadata"].update(rows="x")),
        ),
        train(
            "store",
            "manifest lookback edited",
            p1,
            fs,
            "ok",
            "damaged",
            setup=manifest(lambda m: m["metadata"].update(lookback=8)),
            check=model_lookback(16),
        ),
        train(
            "store",
            "manifest lists no files, inputs flipped",
            p1,
            fs,
            "ok",
            "damaged",
            setup=chain(manifest(lambda m: m.update(files={})), lambda w: flip(entry(w))),
        ),
        train(
            "store",
            "manifest names another key",
            p1,
            fs,
            "ok",
            "damaged",
            setup=manifest(lambda m: m.update(key="0" * 24)),
        ),
        train(
            "store",
            "truncated inputs.npy",
            p1,
            fs,
            "ok",
            "damaged",
            check=store_entries(1),
            setup=damage(lambda e: os.truncate(e / "inputs.npy", 1000)),
        ),
        train(
            "store",
            "one byte of inputs flipped",
            p1,
            fs,
            "ok",
            "damaged",
            setup=damage(flip),
            check=store_entries(1),
        ),
        train(
            "store",
            "preprocessor.json deleted",
            p1,
            fs,
            "ok",
            "damaged",
            setup=damage(lambda e: (e / "preprocessor.json").unlink()),
        ),
        train(
            "store",
            "anchors replaced by another split's",
            p1,
            fs,
            "ok",
            "damaged",
            setup=damage(lambda e: shutil.copy(e / "anchors-test.npy", e / "anchors-train.npy")),
        ),
        train(
            "store",
            "changed bars reuse no stale entry",
            p1,
            fs,
            "ok",
            "wrote",
            check=store_entries(2),
            setup=files(p1, "store", then=rewrite_bars(bump_close)),
        ),
        train(
            "store",
            "same-size rewrite, old mtime",
            p1,
            fs,
            "ok",
            "wrote",
            check=store_entries(2),
            setup=files(
                p1,
                "store",
                then=lambda w: (
                    rewrite_bars(bump_close)(w),
                    os.utime(w / p1, (0, os.stat(SHARED(p1)).st_mtime)),
                ),
            ),
        ),
        train(
            "store",
            "another feature spec",
            p1,
            [*fs, "--feature-groups", "returns"],
            "ok",
            "wrote",
            setup=reuse,
            check=store_entries(2),
        ),
        train(
            "store",
            "another base, one entry",
            p1,
            [*fs, "--base", "ewma"],
            "ok",
            "reusing",
            setup=reuse,
        ),
        train(
            "store",
            "kill -9 while preparing, rerun",
            p1,
            fs,
            "ok",
            "",
            setup=files(p1),
            kill_when=lambda w: (
                (w / "store").is_dir()
                and any(p.name.startswith(".staging") for p in (w / "store").iterdir())
            ),
            check=store_entries(1),
        ),
        train(
            "store",
            "kill -9 at start, rerun",
            p1,
            fs,
            "ok",
            "",
            kill_after=6.0,
            check=store_entries(1),
        ),
        Case(
            "store",
            "two runs at once",
            [*TRAIN, "--parquet-file", p1, *fs, "--output-dir", "run"],
            "ok",
            setup=files(p1),
            twice=True,
            check=store_entries(1),
            timeout=400,
        ),
    ]


def group_cases() -> list[Case]:
    p1 = "p1.parquet"

    def groups(name: str, value: str, expect: str = "refuse", *mentions: str, **kw) -> Case:  # type: ignore[no-untyped-def]
        data = kw.pop("data", p1)
        return train(
            "feature-groups", name, data, ["--feature-groups", value], expect, *mentions, **kw
        )

    return [
        groups("unknown group", "nope", "refuse", "nope"),
        groups("window below the minimum", "realized:1", "refuse", "realized"),
        groups("window zero", "returns:0", "refuse", "returns"),
        groups("negative window", "returns:-5", "refuse", "returns"),
        groups("window not a number", "returns:abc", "refuse", "returns"),
        groups("window over the limit", "returns:100001", "refuse", "returns"),
        groups("window beyond the series", "returns:20000", "refuse", "returns"),
        groups("windows with a comma", "realized:12,48", "refuse", "realized:12/48"),
        groups("a group twice", "returns,returns:3", "refuse", "once"),
        groups("empty windows", "returns:", "refuse", "returns"),
        groups("nameless windows", ":12", "refuse", "group"),
        groups("windows on a group without", "instrument:3", "refuse", "instrument"),
        groups("expiry without contracts", "expiry", "refuse", "expiry"),
        groups("cross on one symbol", "cross", "refuse", "cross"),
        groups("windows repeated", "returns:3/3", "refuse", "distinct"),
        groups("none (today's inputs)", "", "ok"),
        groups("cross on two symbols", "cross", "ok", data="p2.parquet"),
        groups(
            "every group that fits",
            "returns:3/12,realized:12/48,ranges:12/48,activity:12,location,trend:12/48,"
            "shape:12/48,cross,cycles,instrument",
            "ok",
            data="p2.parquet",
        ),
        Case(
            "feature-groups",
            "inspect: unknown group",
            ["inspect", p1, "--features", "--feature-groups", "nope"],
            "refuse",
            ("nope",),
            setup=files(p1),
        ),
        Case(
            "feature-groups",
            "inspect: expiry without contracts",
            ["inspect", p1, "--features", "--feature-groups", "expiry"],
            "refuse",
            ("expiry",),
            setup=files(p1),
        ),
        Case(
            "feature-groups",
            "YAML: groups not a list",
            ["train", "--config", "c.yaml", "--parquet-file", p1, "--output-dir", "run"],
            "refuse",
            ("feature_groups",),
            setup=files(
                p1, then=lambda w: (w / "c.yaml").write_text("data:\n  feature_groups: 5\n")
            ),
        ),
        Case(
            "feature-groups",
            "YAML: a group not text",
            ["train", "--config", "c.yaml", "--parquet-file", p1, "--output-dir", "run"],
            "refuse",
            ("feature_groups",),
            setup=files(
                p1,
                then=lambda w: (w / "c.yaml").write_text("data:\n  feature_groups: [[returns]]\n"),
            ),
        ),
    ]


def base_cases() -> list[Case]:
    p1 = "p1.parquet"

    def base(value: str, expect: str = "ok", *mentions: str, **kw) -> Case:  # type: ignore[no-untyped-def]
        return train(
            "base",
            kw.pop("name", repr(value)),
            kw.pop("data", p1),
            ["--base", value],
            expect,
            *mentions,
            **kw,
        )

    return [
        base("nope", "refuse", "base"),
        base("", "refuse", "base"),
        base("REALIZED_VOL", "refuse", "base"),
        base("auto"),
        base("ewma"),
        base("garch_t", "refuse", "'ES'", "--base"),
        base("har", "refuse", "'ES'", "--base"),
        base("realized_vol"),
        base("auto", data="p2.parquet", name="'auto' on two symbols"),
        Case(
            "base",
            "YAML: base a number",
            ["train", "--config", "c.yaml", "--parquet-file", p1, "--output-dir", "run"],
            "refuse",
            ("base",),
            setup=files(p1, then=lambda w: (w / "c.yaml").write_text("data:\n  base: 3\n")),
        ),
    ]


def kernel_cases() -> list[Case]:
    p1 = "p1.parquet"

    def env(name: str, variables: dict[str, str], expect: str = "ok", *mentions: str, **kw) -> Case:  # type: ignore[no-untyped-def]
        return train("grn_cells", name, p1, [], expect, *mentions, env=variables, **kw)

    return [
        env("FOXHUNT_FUSED_KERNEL=0", {"FOXHUNT_FUSED_KERNEL": "0"}, check=no_kernel),
        env("FOXHUNT_FUSED_KERNEL=false", {"FOXHUNT_FUSED_KERNEL": "false"}, check=no_kernel),
        env("FOXHUNT_FUSED_KERNEL=off", {"FOXHUNT_FUSED_KERNEL": "off"}, check=no_kernel),
        env("FOXHUNT_FUSED_KERNEL=1", {"FOXHUNT_FUSED_KERNEL": "1"}),
        env(
            "FOXHUNT_FUSED_KERNEL=2",
            {"FOXHUNT_FUSED_KERNEL": "2"},
            "refuse",
            "FOXHUNT_FUSED_KERNEL",
            check=nothing_left(p1, p1 + SIDE),
        ),
        env(
            "FOXHUNT_FUSED_KERNEL=yes please",
            {"FOXHUNT_FUSED_KERNEL": "yes please"},
            "refuse",
            "FOXHUNT_FUSED_KERNEL",
            check=nothing_left(p1, p1 + SIDE),
        ),
        env(
            "FOXHUNT_CPU_ISA=avx512",
            {"FOXHUNT_CPU_ISA": "avx512"},
            "refuse",
            "FOXHUNT_CPU_ISA",
            check=nothing_left(p1, p1 + SIDE),
        ),
        env(
            "FOXHUNT_CPU_ISA=AVX2",
            {"FOXHUNT_CPU_ISA": "AVX2"},
            "refuse",
            "FOXHUNT_CPU_ISA",
            check=nothing_left(p1, p1 + SIDE),
        ),
        env("FOXHUNT_CPU_ISA=' native '", {"FOXHUNT_CPU_ISA": " native "}),
        env(
            "FOXHUNT_INT8_SIMD=sse",
            {"FOXHUNT_INT8_SIMD": "sse"},
            "refuse",
            "FOXHUNT_INT8_SIMD",
            check=nothing_left(p1, p1 + SIDE),
        ),
        env(
            "FOXHUNT_CPU_ISA=avx512 with the kernel off",
            {"FOXHUNT_CPU_ISA": "avx512", "FOXHUNT_FUSED_KERNEL": "0"},
        ),
        env(
            "TORCH_EXTENSIONS_DIR read-only",
            {"TORCH_EXTENSIONS_DIR": "{w}/ro"},
            "ok",
            "TORCH_EXTENSIONS_DIR",
            setup=chain(files(p1), tmpfs("ro", "1m", readonly=True)),
        ),
        env(
            "TORCH_EXTENSIONS_DIR a file",
            {"TORCH_EXTENSIONS_DIR": "{w}/" + p1},
            "ok",
            "TORCH_EXTENSIONS_DIR",
            keep=(p1,),
        ),
        env(
            "TORCH_EXTENSIONS_DIR in /proc",
            {"TORCH_EXTENSIONS_DIR": "/proc/x"},
            "ok",
            "TORCH_EXTENSIONS_DIR",
        ),
        env(
            "FOXHUNT_KERNEL_BUILD_TIMEOUT=abc",
            {"FOXHUNT_KERNEL_BUILD_TIMEOUT": "abc", "TORCH_EXTENSIONS_DIR": "{w}/ext"},
            "refuse",
            "FOXHUNT_KERNEL_BUILD_TIMEOUT",
            check=nothing_left(p1, p1 + SIDE, "ext"),
        ),
        env(
            "FOXHUNT_KERNEL_BUILD_TIMEOUT=0",
            {"FOXHUNT_KERNEL_BUILD_TIMEOUT": "0", "TORCH_EXTENSIONS_DIR": "{w}/ext"},
            "refuse",
            "FOXHUNT_KERNEL_BUILD_TIMEOUT",
            check=nothing_left(p1, p1 + SIDE, "ext"),
        ),
        env(
            "kill -9 while building, rerun",
            {"TORCH_EXTENSIONS_DIR": "{w}/ext"},
            "ok",
            kill_after=25.0,
            timeout=400,
            rerun=[*TRAIN, "--parquet-file", p1, "--output-dir", "run", "--overwrite"],
        ),
    ]


def backtest_cases() -> list[Case]:
    argv = [*TRAIN[1:], "--folds", "2", "--parquet-file", "late.parquet", "--output-dir", "bt"]
    argv = [a for a in argv if a != "--no-report"]
    return [
        Case(
            "backtest",
            "a symbol without fold-0 training bars",
            ["backtest", *argv],
            "refuse",
            ("NQ",),
            setup=files("late.parquet"),
            check=lambda w, r: (
                ("silent-wrong", "the folder was written first") if (w / "bt").exists() else None
            ),
        ),
    ]


CASES: list[Case] = [
    *planted_cases(),
    *oracle_cases(),
    *store_cases(),
    *group_cases(),
    *base_cases(),
    *kernel_cases(),
    *backtest_cases(),
]
