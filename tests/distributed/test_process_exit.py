"""A process that lost a distributed peer leaves at once with its code and its output
flushed, and no interpreter teardown (where gloo's waiting threads would abort it with -6)."""

import subprocess
import sys

SCRIPT = """
import atexit, logging, sys
from foxhunt.process_exit import leave_now
atexit.register(lambda: print("teardown ran", flush=True))
logging.basicConfig(stream=sys.stderr)
print("buffered line")  # not flushed by hand
logging.getLogger("x").error("logged line")
leave_now(3)
"""


def test_leave_now_skips_teardown_but_keeps_the_code_and_the_output() -> None:
    left = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60
    )
    assert left.returncode == 3
    assert "buffered line" in left.stdout and "logged line" in left.stderr
    assert "teardown ran" not in left.stdout
