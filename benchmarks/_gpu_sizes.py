"""How big each section of benchmarks/gpu_check.py runs: on the GPU, or tiny for --dry-run."""

from __future__ import annotations

from dataclasses import dataclass

from foxhunt.bench.memory import PRESETS, with_overrides
from foxhunt.model.config import TFTConfig


@dataclass(frozen=True, kw_only=True)
class Sizes:
    """How big each section runs: ``real()`` on the GPU, ``tiny()`` for --dry-run on CPU."""

    bench_overrides: tuple[str, ...]  # extra `bench-memory` flags (the tiny run shrinks tft-225)
    bench_batches: tuple[int, ...]  # one capped bench-memory run per batch size
    bench_steps: int
    amp_config: TFTConfig
    amp_batch: int
    amp_warmup: int  # untimed steps, still trained (both precisions alike)
    amp_steps: int  # timed steps
    amp_tolerance: float  # relative loss difference after all steps accepted for bf16
    vsn_variables: int
    vsn_variable_size: int
    vsn_hidden: int
    vsn_batch: int
    vsn_steps: int  # time steps per window: the op sees batch x steps rows
    vsn_tolerance: float  # max |fused - reference| / max |reference|, outputs and gradients
    vsn_reps: int  # timed forward + backward of each, median
    leak_mb: int  # planted per step
    leak_steps: int
    leak_threshold_mb: float

    @staticmethod
    def real() -> Sizes:
        """Sized so that every section together stays well inside 8 minutes on one H200."""
        return Sizes(
            bench_overrides=(),
            # 32 is the preset's batch (the 4 GB report); one smaller, one larger around it
            bench_batches=(8, 32, 128),
            bench_steps=5,
            amp_config=PRESETS["tft-225"].config,
            amp_batch=64,
            amp_warmup=3,
            amp_steps=20,
            amp_tolerance=0.05,
            vsn_variables=220,
            vsn_variable_size=16,
            vsn_hidden=256,
            vsn_batch=32,
            vsn_steps=128,
            vsn_tolerance=1e-3,
            vsn_reps=5,
            leak_mb=64,
            leak_steps=8,
            leak_threshold_mb=256.0,
        )

    @staticmethod
    def tiny() -> Sizes:
        """The same code paths at a size a 2-core CPU runs in seconds."""
        shrink = {"hidden_size": 16, "lookback": 8, "horizon": 2}
        flags = tuple(f"--{k.replace('_', '-')}={v}" for k, v in shrink.items())
        flags += ("--threads=1",)  # spinning OpenMP threads on a busy 2-core CI box: 10x slower
        return Sizes(
            bench_overrides=flags,
            bench_batches=(4,),
            bench_steps=1,
            amp_config=with_overrides(PRESETS["tft-225"].config, **shrink),
            amp_batch=4,
            amp_warmup=1,
            amp_steps=2,
            amp_tolerance=0.05,
            vsn_variables=5,
            vsn_variable_size=4,
            vsn_hidden=8,
            vsn_batch=4,
            vsn_steps=3,
            vsn_tolerance=1e-4,
            vsn_reps=1,
            leak_mb=16,
            leak_steps=4,
            leak_threshold_mb=32.0,
        )
