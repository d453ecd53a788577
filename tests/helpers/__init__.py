"""What many test folders build, written once: tiny configs, a tiny job, trainers, batches.

Imported as ``helpers``: ``tests/conftest.py`` puts ``tests/`` on ``sys.path`` (the processes
the distributed tests spawn inherit it). Each builder takes keyword overrides, so a test that
needs another size says only what differs.
"""

from .bars import garch_bars, write_bars
from .batches import make_batch, random_batch
from .calendar_bars import calendar_bars
from .configs import (
    SYNTHETIC_CLI,
    TINY_CLI,
    TINY_DATA,
    small_model,
    tiny_model,
    tiny_run,
    tiny_training,
)
from .jobs import (
    assert_identical,
    fitted,
    make_trainer,
    tiny_data,
    tiny_job,
    weights,
    with_epochs,
)

__all__ = [
    "SYNTHETIC_CLI",
    "TINY_CLI",
    "TINY_DATA",
    "assert_identical",
    "calendar_bars",
    "fitted",
    "garch_bars",
    "make_batch",
    "make_trainer",
    "random_batch",
    "small_model",
    "tiny_data",
    "tiny_job",
    "tiny_model",
    "tiny_run",
    "tiny_training",
    "weights",
    "with_epochs",
    "write_bars",
]
