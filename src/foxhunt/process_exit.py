"""How a foxhunt process ends: with its exit code, and without C++ teardown once a peer is lost.

After a distributed peer died or hung, gloo's threads may still be waiting on it; the
interpreter's teardown then destroys them mid-wait and the process aborts (exit -6,
"terminate called without an active exception") instead of returning its code, which
torchrun and schedulers read; and releasing the frames of the error that reported the lost
peer (they hold the DDP model and the process group) can block on it. Such a process flushes
its output and leaves with `os._exit` as soon as the error is reported.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import NoReturn

_peer_lost = False


def mark_peer_lost() -> None:
    """A collective failed because another process is gone: end without teardown."""
    global _peer_lost
    _peer_lost = True


def exit_process(code: int) -> NoReturn:
    """Exit with ``code``: normally, or at once after :func:`mark_peer_lost`."""
    if not _peer_lost:
        sys.exit(code)
    logging.shutdown()  # flushes every handler
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed or gone: nothing to save
            stream.flush()
    os._exit(code)
