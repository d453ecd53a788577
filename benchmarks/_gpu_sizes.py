"""How big each section of benchmarks/gpu_check.py runs: on the GPU, or tiny for --dry-run."""

from __future__ import annotations

from dataclasses import dataclass, replace

from _bench_config import REFERENCE, ModelShape
from foxhunt.bench.memory import PRESETS, with_overrides
from foxhunt.model.config import TFTConfig

#: NVIDIA DeepLearningExamples' TFT on electricity (PyTorch/Forecasting/TFT, configuration.py
#: ElectricityConfig): one static categorical (369 ids), 3 known continuous inputs (hour, day
#: of week, hours from start) and the target as the 4th past input, hidden 128 (each input
#: embedded 128 wide), 4 heads, encoder 168, horizon 24, quantiles 0.1/0.5/0.9, dropout 0.1
DLE_ELECTRICITY = TFTConfig(
    num_static=0,
    static_cardinalities=(369,),
    num_past=4,
    num_future=3,
    hidden_size=128,
    variable_hidden_size=128,
    attention_heads=4,
    lookback=168,
    horizon=24,
    quantiles=(0.1, 0.5, 0.9),
    dropout=0.1,
    output="direct",  # the paper's head, as NVIDIA's
)


@dataclass(frozen=True, kw_only=True)
class Sizes:
    """How big each section runs: ``real()`` on the GPU, ``tiny()`` for --dry-run on CPU."""

    gpu_tests: tuple[str, ...]  # what `pytest -m gpu` collects (tiny: one file of gpu tests)
    bench_overrides: tuple[str, ...]  # extra `bench-memory` flags (the tiny run shrinks tft-225)
    bench_batches: tuple[int, ...]  # one capped bench-memory run per batch size
    bench_steps: int
    amp_config: TFTConfig
    amp_batch: int
    amp_warmup: int  # untimed steps, still trained (both precisions alike)
    amp_steps: int  # timed steps (fewer when the section's time runs out)
    amp_grad_cosine: float  # least cosine of the fp32 and bf16 gradients at the same weights
    amp_tail: int  # the last steps whose mean losses are compared
    amp_tolerance: float  # relative difference of those means accepted for bf16
    dle_config: TFTConfig  # the throughput section's NVIDIA electricity model
    dle_batch: int
    dle_warmup: int
    dle_steps: int  # timed per precision
    ref_shape: ModelShape  # foxhunt vs pytorch-forecasting (benchmarks/throughput.py)
    ref_warmup: int
    ref_steps: int  # timed per library per round
    ref_rounds: int  # rounds alternating the libraries
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
        """Sized so that every section together stays inside 8 minutes on one H100 (each
        section is also cut by its cap in gpu_check.SECTION_CAPS)."""
        return Sizes(
            gpu_tests=("tests",),
            bench_overrides=(),
            # 32 is the preset's batch (the 4 GB report); one smaller, one larger around it
            bench_batches=(8, 32, 128),
            bench_steps=5,
            amp_config=PRESETS["tft-225"].config,
            amp_batch=32,  # the preset's batch
            amp_warmup=10,
            amp_steps=300,
            amp_grad_cosine=0.99,
            amp_tail=50,
            amp_tolerance=0.05,
            dle_config=DLE_ELECTRICITY,
            dle_batch=1024,  # per GPU, as NVIDIA's figures
            dle_warmup=5,
            dle_steps=30,
            ref_shape=REFERENCE,
            ref_warmup=3,
            ref_steps=10,
            ref_rounds=3,
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
            # every gpu test skips on CPU: collecting the whole suite in a child proved
            # nothing more than one file's skip does, at ~15 s of imports
            gpu_tests=("tests/memory/test_profiler.py",),
            bench_overrides=flags,
            bench_batches=(4,),
            bench_steps=1,
            amp_config=with_overrides(PRESETS["tft-225"].config, **shrink),
            amp_batch=4,
            amp_warmup=1,
            amp_steps=4,
            amp_grad_cosine=0.99,
            amp_tail=2,
            amp_tolerance=0.05,
            dle_config=with_overrides(DLE_ELECTRICITY, **shrink, variable_hidden_size=16),
            dle_batch=8,
            dle_warmup=1,
            dle_steps=2,
            ref_shape=replace(
                REFERENCE,
                hidden_size=16,
                lookback=8,
                horizon=2,
                batch_size=4,
                variable_hidden_size=4,
                num_observed=6,
                num_known=2,
                num_static=2,
            ),
            ref_warmup=1,
            ref_steps=1,
            ref_rounds=1,
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
