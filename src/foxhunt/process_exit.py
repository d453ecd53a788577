"""How a foxhunt process leaves once a distributed peer is lost: at once, with its exit code.

After a peer died or hung, gloo's threads may still be waiting on it. Releasing the frames of
the error that reported it (they hold the DDP model and the process group) can block on the
lost peer, and the interpreter's teardown can abort the process (exit -6, "terminate called
without an active exception") instead of returning its code, which torchrun and schedulers
read. So the CLI flushes its output and leaves with `os._exit` as soon as it has reported
such an error (`FoxhuntError.leave_at_once`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import NoReturn


def leave_now(code: int) -> NoReturn:
    """Flush the logs and standard streams, then exit with ``code`` without any teardown."""
    logging.shutdown()  # flushes every handler
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed or gone: nothing to save
            stream.flush()
    os._exit(code)
