"""The quick check of a complete store entry: its files' size, times and inode as they were
when they were last hashed, kept in `ROOT/.checked-KEY.json` beside the entry.

Hashing a reused entry whole reads every byte from disk (103 s for a 9.75 GB entry on this
project's machines), at every run. As git's index and rsync do, a file whose size,
modification time, change time and inode are all as recorded is taken as unchanged. The
change time (`st_ctime_ns`) cannot be set back by a user (`os.utime` moves it), so a file
rewritten and then given its old modification time still reads as changed and is hashed. A
copied entry (new inodes) or a stamp that cannot be written (a read-only store) is hashed
whole, as before.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

STAMP = ".checked-"


def _stats(entry: Path, names: Iterable[str]) -> dict[str, list[int]]:
    out = {}
    for name in names:
        st = (entry / name).stat()
        out[name] = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
    return out


def _stamp_path(entry: Path) -> Path:
    return entry.parent / f"{STAMP}{entry.name}.json"


def to_hash(entry: Path, manifest_sha: str, names: Iterable[str]) -> set[str]:
    """The files of `entry` that are not as they were when the stamp was written for this
    manifest: every file without a stamp (or with one that cannot be read). A file changed in
    the clock tick the stamp was written in keeps its times (coarse file clocks), so a file
    not older than the stamp is hashed too (git's "racily clean" rule)."""
    names = list(names)
    path = _stamp_path(entry)
    try:
        written = path.stat().st_mtime_ns
        stamp = json.loads(path.read_bytes())
        if stamp.get("manifest") != manifest_sha:
            return set(names)
        stats, recorded = _stats(entry, names), stamp["files"]
        return {n for n in names if recorded.get(n) != stats[n] or stats[n][2] >= written}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return set(names)


def record(entry: Path, manifest_sha: str, names: Iterable[str]) -> None:
    """Write the stamp of `entry`'s files, just hashed and found right; best effort (a
    read-only store hashes its entries at each run instead)."""
    path = _stamp_path(entry)
    temp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        stamp = {"manifest": manifest_sha, "files": _stats(entry, names)}
        temp.write_text(json.dumps(stamp, sort_keys=True) + "\n")
        os.replace(temp, path)
    except OSError:
        temp.unlink(missing_ok=True)
