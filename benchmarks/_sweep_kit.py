"""What benchmarks/sweep_doors.py's cases are made of: a case, a result, snapshots, mounts."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

VERDICTS = ("good", "traceback", "unclear", "silent-wrong", "data-loss", "hang")


@dataclass
class Result:
    code: int
    out: str
    err: str
    hung: bool
    seconds: float


@dataclass
class Case:
    """One hostile case: `foxhunt ARGV` run in a fresh folder after `setup(folder)`.

    expect: "refuse" (exit 2, one line holding every word of `mentions`) or "ok" (exit 0,
    stderr or stdout holding every word of `mentions`). keep: paths (relative to the folder)
    whose bytes must not change. check(folder, result): a (verdict, why) when the result is
    wrong beyond its exit. kill_when / kill_after: run ARGV first and kill -9 it when the
    predicate holds (or after that many seconds), then run `rerun` (default ARGV) and judge
    that. twice: run ARGV twice at once (the last argument gets 1 and 2 appended)."""

    door: str
    name: str
    argv: list[str]
    expect: str = "refuse"
    mentions: tuple[str, ...] = ()
    setup: Callable[[Path], None] | None = None
    env: dict[str, str] = field(default_factory=dict)
    check: Callable[[Path, Result], tuple[str, str] | None] | None = None
    keep: tuple[str, ...] = ()
    kill_when: Callable[[Path], bool] | None = None
    kill_after: float | None = None
    rerun: list[str] | None = None
    twice: bool = False
    fsize: int | None = None
    timeout: float = 240.0

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9]+", "-", f"{self.door}-{self.name}")[:80]


def snapshot(work: Path, paths: tuple[str, ...]) -> dict[str, bytes | None]:
    """Each path's bytes (a folder: its files' bytes, concatenated with their names)."""
    out: dict[str, bytes | None] = {}
    for rel in paths:
        p = work / rel
        if p.is_file():
            out[rel] = p.read_bytes()
        elif p.is_dir():
            files = sorted(f for f in p.rglob("*") if f.is_file())
            out[rel] = b"".join(str(f.relative_to(p)).encode() + f.read_bytes() for f in files)
        else:
            out[rel] = None
    return out


class Mounts:
    """Small tmpfs mounts (a full disk, a read-only folder); root only."""

    class Unavailable(Exception):
        pass

    def __init__(self) -> None:
        self.held: list[Path] = []

    def tmpfs(self, path: Path, size: str, *, readonly: bool = False) -> Path:
        path.mkdir(parents=True, exist_ok=True)
        opts = f"size={size}" + (",ro" if readonly else "")
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True
        )
        if done.returncode != 0:
            raise Mounts.Unavailable(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
        self.held.append(path)
        return path

    def readonly(self, path: Path) -> None:
        """Remount `path` (a tmpfs of ours) read-only, its files kept."""
        subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True)

    def release_all(self) -> None:
        for path in reversed(self.held):
            subprocess.run(["umount", "-l", str(path)], capture_output=True)
        self.held.clear()


mounts = Mounts()


def copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)


def edit_json(path: Path, edit: Callable[[dict], None]) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, indent=1))


def has_oracle(run: Path) -> bool:
    metrics = run / "metrics.json"
    return metrics.is_file() and "oracle" in json.loads(metrics.read_text())


def leftovers(folder: Path, allowed: set[str]) -> list[str]:
    """Names in `folder` (not recursive) other than `allowed`."""
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.name not in allowed)
