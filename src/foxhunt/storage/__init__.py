"""Where runs and checkpoints live on disk (or behind fsspec)."""

from foxhunt.storage.atomic import atomic_write_bytes, atomic_write_files, atomic_write_json

__all__ = ["atomic_write_bytes", "atomic_write_files", "atomic_write_json"]
