"""Memory: what training costs, measured."""

from foxhunt.memory.profiler import MemoryBackend, MemoryProfiler, MemorySnapshot

__all__ = ["MemoryBackend", "MemoryProfiler", "MemorySnapshot"]
