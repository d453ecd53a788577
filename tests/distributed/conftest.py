"""The distributed tests import their harness and worker modules by name; so do the processes
they spawn (which inherit this sys.path)."""

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
