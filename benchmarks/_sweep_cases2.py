"""The second round of benchmarks/sweep_doors.py's cases: `foxhunt diagnose`, `train
--diagnostics`, the range loss (`--range-weight`, bars without a range, the store's
ranges.npy, `--feature-store-dtype`, a run saved before the range loss) and the kernels'
build folder (a damaged cached module, TORCH_EXTENSIONS_DIR, the build variables)."""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable
from pathlib import Path

from _sweep_cases import (
    SIDE,
    TRAIN,
    chain,
    entry,
    files,
    nothing_left,
    rewrite_bars,
    store_entries,
    tmpfs,
    train,
)
from _sweep_kit import Case, Result, edit_json, mounts

P1 = "p1.parquet"
SMALL = [a for a in TRAIN[1:] if a != "--no-report"]
for _flag in ("--epochs", "--max-steps-per-epoch", "--patience"):  # not diagnose's
    _at = SMALL.index(_flag)
    del SMALL[_at : _at + 2]
QUICK = ["--overfit-steps", "3", "--overfit-windows", "16", "--lr-range-steps", "4"]
Check = Callable[[Path, Result], "tuple[str, str] | None"]


def diagnose(name: str, flags: list[str], expect: str = "ok", *mentions: str, **kw) -> Case:  # type: ignore[no-untyped-def]
    out = kw.pop("out", "d")
    argv = ["diagnose", *SMALL, "--parquet-file", kw.pop("data", P1), *QUICK, *flags]
    if out is not None:
        argv += ["--output-dir", out]
    kw.setdefault("setup", files(P1))
    if expect == "ok":
        kw.setdefault("check", diagnosed(out or "d"))
    else:
        kw.setdefault("check", nothing_left(P1, P1 + SIDE, *kw.pop("allowed", ())))
    return Case("diagnose", name, argv, expect, mentions, timeout=kw.pop("timeout", 300), **kw)


def strict_json(path: Path) -> dict | None:
    def refuse(word: str) -> None:
        raise ValueError(word)

    try:
        return json.loads(path.read_text(), parse_constant=refuse)  # type: ignore[arg-type]
    except (OSError, ValueError):
        return None


def diagnosed(out: str) -> Check:
    """diagnose.json is strict JSON with both checks, and nothing else was left beside it."""

    def check(work: Path, _: Result) -> tuple[str, str] | None:
        data = strict_json(work / out / "diagnose.json")
        if data is None or not {"overfit", "lr_range"} <= set(data):
            return "silent-wrong", "no strict diagnose.json with both checks"
        extra = [p.name for p in (work / out).iterdir() if p.name != "diagnose.json"]
        return ("silent-wrong", f"left beside diagnose.json: {extra}") if extra else None

    return check


def history_has(*prefixes: str, run: str = "run", last: bool = False) -> Check:
    """Every epoch (the last: `last`) of RUN's history.jsonl holds a finite value under each
    prefix."""

    def check(work: Path, _: Result) -> tuple[str, str] | None:
        lines = (work / run / "history.jsonl").read_text().splitlines()
        epochs = [json.loads(x) for x in lines if x.strip()]
        epochs = [e for e in epochs if "train_loss" in e] or epochs
        epochs = epochs[-1:] if last else epochs
        for prefix in prefixes:
            for e in epochs:
                got = [v for k, v in e.items() if k.startswith(prefix)]
                if not got or not all(isinstance(v, float) and math.isfinite(v) for v in got):
                    return "silent-wrong", f"an epoch without finite {prefix}*: {sorted(e)[:8]}"
        return None

    return check


def finite_losses(work: Path, _: Result) -> tuple[str, str] | None:
    return history_has("train_loss", "val_loss")(work, _)


def range_weight_is(value: float) -> Check:
    def check(work: Path, _: Result) -> tuple[str, str] | None:
        got = json.loads((work / "run" / "config.json").read_text())["training"]["range_weight"]
        return None if got == value else ("silent-wrong", f"range_weight {got}, {value} due")

    return check


def out_dir_full(work: Path) -> None:
    """A 64 KiB tmpfs at d/, filled but for a few bytes."""
    files(P1)(work)
    mounts.tmpfs(work / "d", "64k")
    try:
        with open(work / "d" / "filler", "wb") as f:
            while True:
                f.write(b"x" * 4096)
                f.flush()
    except OSError:  # full, as wanted
        pass


def diagnose_cases() -> list[Case]:
    def yaml(text: str) -> Callable[[Path], None]:
        return files(P1, then=lambda w: (w / "c.yaml").write_text(text))

    flat_train = rewrite_bars(
        lambda f: f.assign(close=f["close"].iloc[0]).assign(
            open=f["close"].iloc[0], high=f["close"].iloc[0], low=f["close"].iloc[0]
        )
    )
    bad = [
        ("--overfit-steps", "0"),
        ("--overfit-steps", "-5"),
        ("--overfit-steps", "abc"),
        ("--overfit-steps", "1e12"),
        ("--overfit-windows", "0"),
        ("--overfit-windows", "100001"),
        ("--overfit-lr", "0"),
        ("--overfit-lr", "-1"),
        ("--overfit-lr", "nan"),
        ("--overfit-lr", "inf"),
        ("--overfit-ratio", "0"),
        ("--overfit-ratio", "1"),
        ("--overfit-ratio", "nan"),
        ("--lr-range-start", "0"),
        ("--lr-range-end", "inf"),
        ("--lr-range-steps", "1"),
        ("--lr-range-steps", "100001"),
    ]
    cases = [diagnose(f"{k} {v}", [k, v], "refuse", k) for k, v in bad]
    return [
        *cases,
        diagnose("defaults but quick", []),
        diagnose(
            "--overfit-windows 100000 on 4 days (all of them)", ["--overfit-windows", "100000"]
        ),
        diagnose("--overfit-lr 1e6 (diverges)", ["--overfit-lr", "1e6"]),
        diagnose("--overfit-lr 1e300", ["--overfit-lr", "1e300"], "refuse", "--overfit-lr"),
        diagnose("--lr-range-end 1e300", ["--lr-range-end", "1e300"], "refuse", "--lr-range-end"),
        diagnose("--lr-range-end 1e6", ["--lr-range-end", "1e6", "--lr-range-steps", "6"]),
        diagnose("--lr 1e300 (the overfit check's)", ["--lr", "1e300"], "refuse", "--lr"),
        diagnose("--lr-range-steps 2", ["--lr-range-steps", "2"]),
        diagnose(
            "start above end",
            ["--lr-range-start", "1", "--lr-range-end", "1e-3"],
            "refuse",
            "lr_range_start",
        ),
        diagnose("--checkpointing full", ["--checkpointing", "full"]),
        diagnose("--range-weight 0", ["--range-weight", "0"]),
        diagnose(
            "--output-dir a file",
            [],
            "refuse",
            P1,
            out=P1,
            keep=(P1,),
        ),
        diagnose(
            "--output-dir under a file",
            [],
            "refuse",
            P1,
            out=f"{P1}/d",
            keep=(P1,),
        ),
        diagnose(
            "--output-dir read-only",
            [],
            "refuse",
            "not writable",
            setup=chain(files(P1), tmpfs("ro", "1m", readonly=True)),
            out="ro/d",
            allowed=("ro",),
        ),
        diagnose(
            "--output-dir on a full disk",
            [],
            "refuse",
            "diagnose.json",
            setup=out_dir_full,
            allowed=("d",),
            check=lambda w, r: (
                ("silent-wrong", "a partial diagnose.json")
                if (w / "d" / "diagnose.json").exists()
                else None
            ),
        ),
        diagnose(
            "--output-dir an old diagnosis and a notes file",
            [],
            setup=files(
                P1, then=lambda w: (w / "d").mkdir() or (w / "d" / "notes.txt").write_text("x")
            ),
            keep=("d/notes.txt",),
            check=None,
        ),
        diagnose(
            "--output-dir a trained run",
            [],
            setup=files(P1, "run"),
            out="run",
            keep=("run/model.safetensors", "run/config.json", "run/metrics.json"),
            check=None,
        ),
        diagnose(
            "kill -9 as the folder appears, rerun",
            [],
            kill_when=lambda w: (w / "d").exists(),
            timeout=400,
        ),
        diagnose("kill -9 after 12 s, rerun", [], kill_after=12.0, timeout=400),
        diagnose(
            "no training windows (--lookback 900 on 4 days)",
            ["--lookback", "900"],
            "refuse",
            "lookback",
        ),
        diagnose(
            "a NaN close in the bars",
            [],
            "refuse",
            P1,
            setup=files(
                P1, then=rewrite_bars(lambda f: f.assign(close=f["close"].where(f.index != 50)))
            ),
        ),
        diagnose(
            "every bar flat (no range, no return)",
            [],
            "ok",
            "nothing to fit",
            setup=files(P1, then=flat_train),
        ),
        diagnose(
            "YAML diagnose.overfit_steps a word",
            ["--config", "c.yaml"],
            "refuse",
            "overfit_steps",
            setup=yaml("diagnose:\n  overfit_steps: many\n"),
            allowed=("c.yaml",),
        ),
        diagnose(
            "YAML diagnose: an unknown field",
            ["--config", "c.yaml"],
            "refuse",
            "nope",
            setup=yaml("diagnose:\n  nope: 1\n"),
            allowed=("c.yaml",),
        ),
    ]


def trained(name: str, flags: list[str], expect: str = "ok", *mentions: str, **kw) -> Case:  # type: ignore[no-untyped-def]
    return train("--diagnostics", name, kw.pop("data", P1), flags, expect, *mentions, **kw)


def diagnostics_cases() -> list[Case]:
    diag = ["--diagnostics", "true"]
    keys = history_has("grad_norm/", "update_ratio/", "vsn_entropy/")
    resume = [*TRAIN, "--parquet-file", P1, "--output-dir", "run", "--resume", "run", *diag]
    resume[resume.index("--epochs") + 1] = "3"
    slow = [*TRAIN, "--parquet-file", P1, *diag, "--output-dir", "run"]
    slow[slow.index("--epochs") + 1] = "3"
    slow[slow.index("--max-steps-per-epoch") + 1] = "6"
    slow_resume = [*slow, "--resume", "run"]  # the run's own settings: a resume keeps them
    off = nothing_left(P1, P1 + SIDE)
    return [
        trained("on", diag, check=keys),
        trained(
            "--diagnostics maybe",
            ["--diagnostics", "maybe"],
            "refuse",
            "diagnostics",
            check=nothing_left(P1, P1 + SIDE),
        ),
        trained("--diagnostics=0", ["--diagnostics=0"], "refuse", "--diagnostics", check=off),
        trained("--diagnostics 0", ["--diagnostics", "0"], "refuse", "--diagnostics", check=off),
        trained(
            "--diagnostics=no",
            ["--diagnostics=no"],
            check=lambda w, r: (
                ("silent-wrong", "diagnostics recorded")
                if "grad_norm/" in (w / "run" / "history.jsonl").read_text()
                else None
            ),
        ),
        trained(
            "--overwrite=0 on a run",
            [*diag, "--overwrite=0"],
            "refuse",
            "--overwrite",
            setup=files(P1, "run"),
            keep=("run",),
        ),
        trained("with --qat", [*diag, "--qat", "true"], check=keys),
        trained("with --checkpointing full", [*diag, "--checkpointing", "full"], check=keys),
        trained("with --loggers tensorboard", [*diag, "--loggers", "tensorboard"], check=keys),
        trained(
            "with --loggers mlflow (a file store)",
            [*diag, "--loggers", "mlflow", "--tracking-uri", "sqlite:///ml.db"],
            check=keys,
        ),
        trained("with --range-weight 0", [*diag, "--range-weight", "0"], check=keys),
        Case(
            "--diagnostics",
            "kill -9 mid-run, --resume with --diagnostics",
            slow,
            "ok",
            setup=files(P1),
            kill_when=lambda w: any((w / "run" / "checkpoints").glob("*")),
            rerun=slow_resume,
            check=keys,
            timeout=400,
        ),
        Case(
            "--diagnostics",
            "--resume a run trained without them",
            resume,
            "ok",
            setup=files(P1, "run"),
            check=history_has("grad_norm/", last=True),
            timeout=300,
        ),
    ]


def set_manifest_sha(store_entry: Path) -> None:
    """Recompute a hand-edited manifest's own checksum (storage/staged.py `_manifest_sha`)."""
    path = store_entry / "manifest.json"
    manifest = json.loads(path.read_text())
    body = {k: v for k, v in manifest.items() if k != "sha256"}
    manifest["sha256"] = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    path.write_text(json.dumps(manifest))


def without_ranges(work: Path) -> None:
    """The store's entry as a foxhunt before ranges.npy would have left it, checksums kept."""
    e = entry(work)
    (e / "ranges.npy").unlink()
    edit_json(e / "manifest.json", lambda m: m["files"].pop("ranges.npy"))
    set_manifest_sha(e)


def has_ranges(work: Path, res: Result) -> tuple[str, str] | None:
    found = store_entries(1)(work, res)
    if found is not None:
        return found
    return None if (entry(work) / "ranges.npy").is_file() else ("silent-wrong", "no ranges.npy")


def range_cases() -> list[Case]:
    fs = ["--feature-store", "store"]

    def weight(value: str, expect: str = "refuse", **kw) -> Case:  # type: ignore[no-untyped-def]
        mentions = ("range_weight",) if expect == "refuse" else ()
        if expect == "refuse":
            kw.setdefault("check", nothing_left(P1, P1 + SIDE))
        return train(
            "range loss",
            f"--range-weight {value!r}",
            P1,
            ["--range-weight", value],
            expect,
            *mentions,
            **kw,
        )

    def yaml(name: str, text: str, expect: str = "refuse", *mentions: str, **kw) -> Case:  # type: ignore[no-untyped-def]
        argv = [*TRAIN, "--config", "c.yaml", "--parquet-file", P1, "--output-dir", "run"]
        setup = files(P1, then=lambda w: (w / "c.yaml").write_text(text))
        return Case("range loss", name, argv, expect, mentions, setup=setup, **kw)

    def bars(name: str, change, expect: str = "ok", *mentions: str, **kw) -> Case:  # type: ignore[no-untyped-def]
        kw.setdefault("check", finite_losses if expect == "ok" else None)
        return train(
            "range loss",
            name,
            P1,
            [],
            expect,
            *mentions,
            setup=files(P1, then=rewrite_bars(change)),
            **kw,
        )

    def flat(frame, every: int = 1):  # type: ignore[no-untyped-def]
        rows = frame.index % every == 0
        for column in ("open", "high", "low"):
            frame.loc[rows, column] = frame.loc[rows, "close"]
        return frame

    def old_run(work: Path) -> None:
        files(P1, "run")(work)

        def edit(c: dict) -> None:
            c.pop("format", None)
            c["training"].pop("range_weight")

        edit_json(work / "run" / "config.json", edit)

    resume = [*TRAIN, "--parquet-file", P1, "--output-dir", "run", "--resume", "run"]
    resume[resume.index("--epochs") + 1] = "2"
    dtype = "--feature-store-dtype"
    return [
        *(weight(v) for v in ("-1", "nan", "inf", "-inf", "1e9", "101", "abc", "")),
        weight("0", "ok", check=range_weight_is(0.0)),
        weight("100", "ok", check=finite_losses),
        weight("1e-12", "ok", check=finite_losses),
        yaml(
            "YAML training.range_weight a word",
            "training:\n  range_weight: lots\n",
            "refuse",
            "range_weight",
        ),
        yaml(
            "YAML training.range_weight -1",
            "training:\n  range_weight: -1\n",
            "refuse",
            "range_weight",
        ),
        yaml(
            "YAML training.range_weight .nan",
            "training:\n  range_weight: .nan\n",
            "refuse",
            "range_weight",
        ),
        yaml(
            "YAML training.range_weight 0.5",
            "training:\n  range_weight: 0.5\n",
            "ok",
            check=range_weight_is(0.5),
        ),
        bars("every bar flat but closes move", flat),
        bars("every other bar flat", lambda f: flat(f, 2)),
        bars(
            "high below low on one bar",
            lambda f: f.assign(high=f["high"].where(f.index != 500, f["low"] * 0.999)),
            "refuse",
            P1,
            "high",
        ),
        bars("no high column", lambda f: f.drop(columns=["high"]), "refuse", P1, "high"),
        train(
            "range loss",
            "store: ranges.npy deleted",
            P1,
            fs,
            "ok",
            "damaged",
            setup=files(P1, "store", then=lambda w: (entry(w) / "ranges.npy").unlink()),
            check=has_ranges,
        ),
        train(
            "range loss",
            "store: ranges.npy truncated",
            P1,
            fs,
            "ok",
            "damaged",
            setup=files(P1, "store", then=lambda w: os.truncate(entry(w) / "ranges.npy", 90)),
            check=has_ranges,
        ),
        train(
            "range loss",
            "store: an entry without ranges.npy, checksums redone",
            P1,
            fs,
            "ok",
            "ranges",
            setup=files(P1, "store", then=without_ranges),
            check=has_ranges,
        ),
        train(
            "range loss",
            f"{dtype} float64",
            P1,
            [*fs, dtype, "float64"],
            "refuse",
            "feature_store_dtype",
            check=nothing_left(P1, P1 + SIDE),
        ),
        train(
            "range loss",
            f"{dtype} FLOAT16",
            P1,
            [*fs, dtype, "FLOAT16"],
            "refuse",
            "feature_store_dtype",
            check=nothing_left(P1, P1 + SIDE),
        ),
        train(
            "range loss",
            f"{dtype} float16 without a store",
            P1,
            [dtype, "float16"],
            "refuse",
            "feature_store",
            check=nothing_left(P1, P1 + SIDE),
        ),
        train(
            "range loss", f"{dtype} float16", P1, [*fs, dtype, "float16"], "ok", check=has_ranges
        ),
        Case(  # a resume keeps the run's settings: the default's change is named, not taken
            "range loss",
            "resume a run saved before range_weight (format 0)",
            resume,
            "refuse",
            ("range_weight", "0.0"),
            setup=old_run,
            keep=("run",),
            timeout=300,
        ),
        Case(  # the setup edits config.json alone: its checkpoint still says 1.0, and a
            # config.json that disagrees with its checkpoint is refused, naming the field (a
            # real old run's checkpoint migrates too: tests/test_migrations.py)
            "range loss",
            "resume it with --range-weight 0 (config.json edited, its checkpoint not)",
            [*resume, "--range-weight", "0"],
            "refuse",
            ("range_weight", "checkpoint has 1.0"),
            setup=old_run,
            keep=("run",),
            timeout=300,
        ),
    ]


_saved: list[tuple[Path, bytes, float]] = []  # the shared cache's modules a case damaged


def restore() -> None:
    """Put back the modules an earlier case damaged (mtimes too: ninja goes by them)."""
    while _saved:
        so, data, stamp = _saved.pop()
        so.write_bytes(data)
        os.utime(so, (stamp, stamp))


def damaged_cache(damage: Callable[[Path], None] | None) -> Callable[[Path], None]:
    """The sweep's built grn_cells module(s) in TORCH_EXTENSIONS_DIR damaged by `damage`
    (put back by the next case that calls this: the cases run one at a time)."""

    def setup(work: Path) -> None:
        files(P1)(work)
        restore()
        if damage is None:
            return
        for so in Path(os.environ["TORCH_EXTENSIONS_DIR"]).glob("foxhunt_grn_cells_*/*.so"):
            stamp = so.stat().st_mtime
            _saved.append((so, so.read_bytes(), stamp))
            damage(so)
            if so.exists():
                os.utime(so, (stamp, stamp))  # still newer than its sources: no rebuild

    return setup


def kernel_used(work: Path, res: Result) -> tuple[str, str] | None:
    if "could not build" in res.err or "ATen path" in res.err:
        return "silent-wrong", "fell back to ATen: " + res.err.strip().splitlines()[-1][:160]
    return None


def kernel_cases() -> list[Case]:
    ext = {"TORCH_EXTENSIONS_DIR": "{w}/ext"}

    def env(name: str, variables: dict[str, str], expect: str = "ok", *mentions: str, **kw) -> Case:  # type: ignore[no-untyped-def]
        if expect == "refuse":
            kw.setdefault("check", nothing_left(P1, P1 + SIDE, "ext"))
        return train("kernel build", name, P1, [], expect, *mentions, env=variables, **kw)

    return [
        env(
            "cached module truncated",
            {},
            "ok",
            "grn_cells",
            setup=damaged_cache(lambda so: os.truncate(so, 100)),
            check=kernel_used,
            timeout=400,
        ),
        env(
            "cached module a text file",
            {},
            "ok",
            "grn_cells",
            setup=damaged_cache(lambda so: so.write_text("not ELF")),
            check=kernel_used,
            timeout=400,
        ),
        env(
            "cached module deleted",
            {},
            "ok",
            setup=damaged_cache(lambda so: so.unlink()),
            check=kernel_used,
            timeout=400,
        ),
        env("the cache put back", {}, "ok", setup=damaged_cache(None), check=kernel_used),
        env("TORCH_EXTENSIONS_DIR empty", {"TORCH_EXTENSIONS_DIR": ""}, "ok", timeout=400),
        env(
            "TORCH_EXTENSIONS_DIR a dangling link",
            ext,
            "ok",
            "TORCH_EXTENSIONS_DIR",
            setup=files(P1, then=lambda w: (w / "ext").symlink_to(w / "gone")),
        ),
        env(
            "FOXHUNT_KERNEL_BUILD_TIMEOUT=inf",
            {**ext, "FOXHUNT_KERNEL_BUILD_TIMEOUT": "inf"},
            "refuse",
            "FOXHUNT_KERNEL_BUILD_TIMEOUT",
        ),
        env(
            "FOXHUNT_KERNEL_BUILD_TIMEOUT=-1",
            {**ext, "FOXHUNT_KERNEL_BUILD_TIMEOUT": "-1"},
            "refuse",
            "FOXHUNT_KERNEL_BUILD_TIMEOUT",
        ),
        env("FOXHUNT_FUSED_KERNEL=' ON '", {"FOXHUNT_FUSED_KERNEL": " ON "}, check=kernel_used),
        env("FOXHUNT_FUSED_KERNEL=''", {"FOXHUNT_FUSED_KERNEL": ""}, check=kernel_used),
        env(
            "CXX a missing compiler, a fresh folder",
            {**ext, "CXX": "/nonexistent/c++"},
            "ok",
            "could not build",
            timeout=300,
        ),
        env("WORLD_SIZE=abc", {"WORLD_SIZE": "abc"}, "refuse", "WORLD_SIZE"),
    ]


CASES2: list[Case] = [*diagnose_cases(), *diagnostics_cases(), *range_cases(), *kernel_cases()]
