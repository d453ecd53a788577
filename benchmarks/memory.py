"""Activation checkpointing, measured: bytes saved for backward, peak memory and step time of
plain training vs each checkpointed segment alone vs full checkpointing.

A thin script over ``foxhunt bench-memory`` (same code, same options), e.g.

    .venv/bin/python benchmarks/memory.py --preset cpu-reference --threads 1
    .venv/bin/python benchmarks/memory.py --preset tft-225 --no-time --json tft225.json
    .venv/bin/python benchmarks/memory.py --preset tft-225 --device cuda --memory-limit-gb 4
"""

from __future__ import annotations

import sys

from foxhunt.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench-memory", *sys.argv[1:]]))
