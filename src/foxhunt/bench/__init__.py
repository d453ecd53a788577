"""Benchmark tools: what activation checkpointing saves and costs, how close the memory
planner's predictions come to a real training step. ``foxhunt bench-memory`` and
``benchmarks/`` use them; nothing on the training path (``training/``, ``memory/``, ``task``,
the run folder) imports this package."""
