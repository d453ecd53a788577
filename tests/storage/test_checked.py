"""A complete store entry is hashed whole once, not at every reuse (storage/checked.py), and
a file changed since, even with its old modification time put back, is still found."""

import os
import time
from pathlib import Path

import numpy as np
import pytest

from foxhunt.storage import checked, staged


def write_entry(root: Path) -> Path:
    with staged.staging(root, "k", hint="-") as stage:
        stage.save("a.npy", np.arange(1000, dtype=np.float32))
        stage.json("b.json", {"x": 1})
        return stage.finalize({"rows": 1000})


def settled(root: Path) -> Path:
    """An entry whose stamp was written clock ticks after its files (a file of the stamp's
    own tick is hashed whatever the stamp says)."""
    entry = write_entry(root)
    time.sleep(0.05)  # coarse file clocks tick every 1-10 ms
    (root / f"{checked.STAMP}k.json").unlink()
    assert staged.open_complete(root, "k") is not None  # hashed whole, stamped
    return entry


def refuse_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: Path) -> str:
        raise AssertionError(f"{path} hashed again")

    monkeypatch.setattr(staged, "file_sha256", refuse)


def test_an_unchanged_entry_is_not_hashed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settled(tmp_path)
    refuse_hashing(monkeypatch)
    manifest = staged.open_complete(tmp_path, "k")
    assert manifest is not None and manifest["metadata"] == {"rows": 1000}


def test_a_file_rewritten_with_its_old_times_is_hashed_and_found(tmp_path: Path) -> None:
    entry = settled(tmp_path)
    file = entry / "a.npy"
    before = file.stat()
    with open(file, "r+b") as f:  # one flipped byte, the size unchanged
        f.seek(-3, os.SEEK_END)
        byte = f.read(1)
        f.seek(-3, os.SEEK_END)
        f.write(bytes([byte[0] ^ 1]))
    os.utime(file, ns=(before.st_atime_ns, before.st_mtime_ns))  # as a careful forger would
    assert staged.open_complete(tmp_path, "k") is None  # the change time gave it away
    assert not entry.exists()  # damaged: removed, to be prepared again


@pytest.mark.parametrize("how", ["no stamp", "other manifest", "stamp garbled", "newer file"])
def test_without_a_true_stamp_the_entry_is_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    entry = settled(tmp_path)
    stamp = tmp_path / f"{checked.STAMP}k.json"
    if how == "no stamp":
        stamp.unlink()
    elif how == "other manifest":
        stamp.write_text(stamp.read_text().replace('"manifest": "', '"manifest": "0'))
    elif how == "stamp garbled":
        stamp.write_text("{")
    else:  # the stamp written before the file's last change: racily clean, hashed
        stat = stamp.stat()
        os.utime(stamp, ns=(stat.st_atime_ns, (entry / "a.npy").stat().st_ctime_ns))
    hashed: list[Path] = []
    real = staged.file_sha256
    monkeypatch.setattr(staged, "file_sha256", lambda path: hashed.append(path) or real(path))
    assert staged.open_complete(tmp_path, "k") is not None
    names = sorted(p.name for p in hashed)
    if how == "newer file":  # b.json may be of a.npy's clock tick too
        assert names[0] == "a.npy" and set(names) <= {"a.npy", "b.json"}
    else:
        assert names == ["a.npy", "b.json"]
    refuse_hashing(monkeypatch)  # and the stamp written again: the next reuse hashes nothing
    assert staged.open_complete(tmp_path, "k") is not None
