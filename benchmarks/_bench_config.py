"""The configuration of benchmarks/throughput.py: the model shape and what to measure."""

from __future__ import annotations

from dataclasses import dataclass

from foxhunt import TFTConfig

QUANTILES = (0.02, 0.1, 0.25, 0.5, 0.75, 0.9, 0.98)


@dataclass(frozen=True, kw_only=True)
class ModelShape:
    """The TFT both libraries build, and the batches they are timed on."""

    batch_size: int = 32
    """Windows per training batch."""
    lookback: int = 64
    """Encoder time steps."""
    horizon: int = 8
    """Decoder time steps (forecast horizon)."""
    hidden_size: int = 64
    """d_model after variable selection."""
    variable_hidden_size: int = 16
    """Per-variable embedding width (pytorch-forecasting's ``hidden_continuous_size``)."""
    attention_heads: int = 4
    """Interpretable attention heads."""
    quantiles: tuple[float, ...] = QUANTILES
    """Predicted quantile levels."""
    num_static: int = 5
    """Static reals."""
    num_observed: int = 210
    """Past-only (observed) reals; the encoder sees num_observed + num_known variables."""
    num_known: int = 10
    """Known reals, seen by the encoder and the decoder."""
    dropout: float = 0.1
    """Dropout rate of both models."""
    checkpointing: str = "none"
    """foxhunt's activation checkpointing ("none", "full"); pytorch-forecasting has none."""

    def __post_init__(self) -> None:
        for name in ("batch_size", "lookback", "horizon", "hidden_size", "variable_hidden_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"ModelShape.{name} must be >= 1, got {getattr(self, name)}")
        if self.num_static < 2 or self.num_known < 2 or self.num_observed < 1:
            # pytorch-forecasting's variable selection skips the selection weights for a
            # single variable; keep >= 2 in every group so both models do the same work.
            raise ValueError("ModelShape: use num_static >= 2, num_known >= 2, num_observed >= 1")

    @property
    def num_past(self) -> int:
        return self.num_observed + self.num_known

    def foxhunt_config(self) -> TFTConfig:
        return TFTConfig(
            num_static=self.num_static,
            num_past=self.num_past,
            num_future=self.num_known,
            hidden_size=self.hidden_size,
            variable_hidden_size=self.variable_hidden_size,
            attention_heads=self.attention_heads,
            lookback=self.lookback,
            horizon=self.horizon,
            quantiles=self.quantiles,
            dropout=self.dropout,
            output="direct",  # the paper's head, as pytorch-forecasting's: the same architecture
            checkpointing=self.checkpointing,  # type: ignore[arg-type]
        )


#: The CPU reference configuration of issue 5.
REFERENCE = ModelShape()
#: The seed's TFT-225 (``--preset tft-225``): what a user of the seed's system trains.
TFT_225 = ModelShape(hidden_size=256, lookback=128, horizon=16)
#: The shapes `--shapes` names.
SHAPES = {"reference": REFERENCE, "tft-225": TFT_225}
#: A small model with the same architecture for the accuracy check: pytorch-forecasting's
#: per-variable Python loop makes the reference shape too slow to train for long on 2 cores.
ACCURACY_SHAPE = ModelShape(
    lookback=24, horizon=8, hidden_size=16, variable_hidden_size=8, num_static=2,
    num_observed=6, num_known=2,
)  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class BenchConfig:
    """What to measure and for how long."""

    shape: ModelShape = REFERENCE
    """Model and batch shape of the timing, memory and inference measurements."""
    threads: int = 2
    """torch intra-op threads."""
    steps: int = 5
    """Timed training steps per library per repeat."""
    warmup: int = 3
    """Untimed steps before the first repeat (1 before each later one)."""
    repeats: int = 3
    """Interleaved repeats (pf, foxhunt, pf, foxhunt...); the ratio is their median."""
    lr: float = 1e-3
    """Adam learning rate (pytorch-forecasting's default)."""
    seed: int = 0
    """Seed of the synthetic batches and of both models' initialization."""
    include_pf: bool = True
    """Measure pytorch-forecasting too, when it is importable."""
    loader_days: int = 60
    """Sessions of foxhunt's synthetic bars for the loader measurement; 0 skips it."""
    latency_reps: int = 50
    """Batch-1 inference calls timed (median reported)."""
    inference_batch: int = 1024
    """Batch size of the inference-throughput measurement."""
    inference_reps: int = 3
    """Large-batch inference calls timed (median reported)."""
    pf_inference_batch: bool = False
    """Time pytorch-forecasting at `inference_batch` too (about a minute per call at the
    reference shape on 2 cores, so off by default)."""
    accuracy_shape: ModelShape = ACCURACY_SHAPE
    """Model shape of the accuracy check."""
    accuracy_steps: int = 300
    """Training steps of each library in the accuracy check; 0 skips it."""
    accuracy_eval_batches: int = 8
    """Held-out batches the trained models are evaluated on."""
    quiet_wait_s: float = 0.0
    """Before each repeat, wait up to this long for the other processes on the machine to
    use less than `quiet_cores` cores (Linux /proc/stat); 0 = do not wait."""
    quiet_cores: float = 0.3
    """See `quiet_wait_s`."""
    retries: int = 0
    """Repeats that may be measured again because another process took the cores: a repeat
    is redone when other processes kept more than `quiet_cores` cores busy during a step."""
    profile: bool = False
    """Print torch.profiler's top operators of one foxhunt training step."""
    shapes: tuple[tuple[str, ModelShape], ...] = (("tft-225", TFT_225),)
    """More (name, shape) pairs timed in the same interleaved rounds as `shape`: both
    libraries, and foxhunt checkpointed ("full") too."""
    large_steps: int = 2
    """Timed steps per round of each entry of `shapes` (their steps take seconds)."""
    contention: bool = False
    """Run one competing 2-thread matmul process for the whole timing (a busy machine), and
    time foxhunt at 1 thread beside the configured count."""
    sgemm_size: int = 1024
    """Square fp32 matmul timed once per round: the GFLOP/s the machine gives right then."""
