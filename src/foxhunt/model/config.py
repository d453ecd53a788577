"""Model configuration: the architecture of one Temporal Fusion Transformer, nothing else."""

# long: one keyword-only dataclass whose documented fields and checks read best together

from __future__ import annotations

from dataclasses import asdict, dataclass
from itertools import pairwise
from typing import Any, Literal, NamedTuple, get_args

from foxhunt.config_fields import (
    FRACTION,
    Range,
    check_known_fields,
    check_ranges,
    setting,
)
from foxhunt.errors import ConfigError

#: Top-level segments of :class:`~foxhunt.model.tft.TemporalFusionTransformer`: the names an
#: activation-checkpointing policy may list. In the order the model builds them (its
#: ``named_children`` order), not quite forward order: forward runs ``static_encoders``
#: right after ``static_vsn``, before ``past_vsn``.
Segment = Literal[
    "static_vsn",
    "past_vsn",
    "future_vsn",
    "static_encoders",
    "lstm_encoder",
    "lstm_decoder",
    "fusion_decoder",
]
SEGMENTS: tuple[str, ...] = get_args(Segment)
CheckpointMode = Literal["none", "full"]
Output = Literal["direct", "baseline"]
CHECKPOINT_MODES: tuple[str, ...] = get_args(CheckpointMode)
OUTPUTS: tuple[str, ...] = get_args(Output)
MAX_LSTM_LAYERS = 64
MAX_VOL_SIGNALS = 8  # a handful of volatility estimates; more is a mistake, not a model
#: Fields the data decides (the job fills them from the prepared data, ``fit_model_config``):
#: None in a config not yet fitted to data; never user flags.
DATA_FIELDS = (
    "num_static",
    "static_cardinalities",
    "num_past",
    "num_future",
    "lookback",
    "horizon",
    "vol_signals",
)
#: The input counts: a caller who gives all of them describes the inputs by hand, and then
#: no categoricals and no volatility signal unless given (as before these fields were None).
_COUNTS = ("num_static", "num_past", "num_future", "lookback", "horizon")


class ModelInputs(NamedTuple):
    """The data-derived fields of a fitted ``TFTConfig``, typed as set (``TFTConfig.inputs``)."""

    num_static: int
    static_cardinalities: tuple[int, ...]
    num_past: int
    num_future: int
    lookback: int
    horizon: int
    vol_signals: int


def _fail(name: str, value: object, fix: str) -> ConfigError:
    return ConfigError(f"TFTConfig.{name}={value!r}: {fix}")


@dataclass(frozen=True, kw_only=True)
class TFTConfig:
    """Architecture of a Temporal Fusion Transformer.

    Shapes the model expects: static [B, num_static], static_categorical
    [B, len(static_cardinalities)], past [B, lookback, num_past], future
    [B, horizon, num_future]; it predicts [B, horizon, len(quantiles)].

    The fields of ``DATA_FIELDS`` come from the data: left None, the job fills them from the
    prepared data (``foxhunt.jobs.fit_model_config``, which refuses a given value the data
    contradicts), and a model is never built from a config that still lacks one. Given all
    five counts (``num_static``, ``num_past``, ``num_future``, ``lookback``, ``horizon``), a
    config describes its inputs by hand: ``static_cardinalities`` then defaults to () and
    ``vol_signals`` to 0.
    """

    num_static: int | None = None
    """Static real-valued variables per window (>= 0). From the data, like every field of
    ``DATA_FIELDS``: None = filled by the job from the prepared data."""
    static_cardinalities: tuple[int, ...] | None = None
    """Number of categories of each static categorical variable (each >= 1). From the data."""
    num_past: int | None = None
    """Inputs seen over the lookback, observed and known together (>= 1). From the data."""
    num_future: int | None = None
    """Known inputs over the horizon (>= 0; 0 feeds the decoder a learned embedding). From
    the data."""
    hidden_size: int = 32
    """Width d_model of every block after variable selection."""
    variable_hidden_size: int = 8
    """Width of each variable's input embedding inside the variable selection networks."""
    attention_heads: int = setting(4, range=Range(1, 4096))
    """Heads of the interpretable attention; must divide hidden_size."""
    lookback: int | None = None
    """Past time steps the encoder sees (>= 1). From the data (``DataConfig.lookback``)."""
    horizon: int | None = None
    """Future time steps predicted (>= 1). From the data (``DataConfig.horizon``)."""
    quantiles: tuple[float, ...] = (0.1, 0.5, 0.9)
    """Predicted quantile levels, strictly increasing, each in (0, 1)."""
    dropout: float = setting(0.1, range=FRACTION)
    """Dropout rate on the input of every gating layer, in [0, 1)."""
    lstm_layers: int = 1
    """Stacked LSTM layers in the encoder and in the decoder (>= 1)."""
    output: Output = "baseline"
    """What the output head predicts. "baseline" (the default since it won on validation,
    docs/forecasting.md): a correction, in standardized units, to the Gaussian quantiles of a rolling
    volatility baseline: quantiles = batch.scale * (z_q + correction), where batch.scale [B, H]
    is the baseline's standard deviation of each target (data/volatility.py) and z_q the
    standard normal quantiles; the head starts at zero, so the untrained model forecasts
    exactly the baseline (model/baseline_head.py). Batches must then carry ``scale``.
    "direct": the quantiles themselves (eq. 23 of the paper)."""
    learn_spread: bool | None = None
    """With output="baseline": also learn a factor exp(a) per horizon step and quantile on
    z_q (a starts at 0), i.e. how much wider or narrower than Gaussian each quantile is.
    None (the default) = on for output="baseline", off for "direct"."""
    vol_signals: int | None = setting(None, range=Range(0, MAX_VOL_SIGNALS))
    """With output="baseline": volatility signals the baseline leans on (batch.vol_signal
    [B, K], each the log ratio of a faster volatility to the base one): the scale becomes
    batch.scale * exp(w . signal), w learned and starting at 0. Set from the data (1 when
    DataConfig.fast_window is on)."""
    log_scale: bool | None = None
    """With output="baseline": the network also predicts a log-volatility adjustment s per
    horizon step, and the scale becomes batch.scale * exp(s): a volatility driver (a volume
    spike, a scheduled release, a regime) multiplies volatility, which one number per step
    says and every quantile follows, where the additive correction needs each quantile to
    learn it apart (docs/forecasting.md, "Training that finds the signal"). It starts at 0.
    None (the default) = on for output="baseline"."""
    sort_quantiles: bool = True
    """Rearrange each forecast's quantiles into increasing order (Chernozhukov, Fernandez-Val
    and Galichon 2010), in training and prediction alike, so they never cross; sorting can
    only lower the pinball loss of a crossed forecast."""
    checkpointing: CheckpointMode | tuple[Segment, ...] = "none"
    """Activation checkpointing policy: "none", "full", or a tuple of names from ``SEGMENTS``.
    The constructor applies it (``TemporalFusionTransformer(config)``, ``build_model``, YAML
    ``model.checkpointing``, ``--use-gradient-checkpointing`` / ``--checkpoint-segments``): the
    named segments drop their activations in forward and recompute them in backward
    (``torch.utils.checkpoint``, non-reentrant; model/checkpointing.py). The memory planner
    may change a built model's policy later (``apply_checkpointing``)."""

    def __post_init__(self) -> None:
        if all(getattr(self, name) is not None for name in _COUNTS):  # inputs given by hand
            for name, value in (("static_cardinalities", ()), ("vol_signals", 0)):
                if getattr(self, name) is None:
                    object.__setattr__(self, name, value)
        for name, low in (("num_static", 0), ("num_past", 1), ("num_future", 0)):
            _check_int(getattr(self, name), name, low, from_data=True)
        _check_int(self.hidden_size, "hidden_size", 1)
        _check_int(self.variable_hidden_size, "variable_hidden_size", 1)
        _check_int(self.attention_heads, "attention_heads", 1)
        _check_int(self.lookback, "lookback", 1, from_data=True)
        _check_int(self.horizon, "horizon", 1, from_data=True)
        _check_int(self.lstm_layers, "lstm_layers", 1)
        if self.lstm_layers > MAX_LSTM_LAYERS:  # a module per layer: a huge count never builds
            raise _fail("lstm_layers", self.lstm_layers, f"must be <= {MAX_LSTM_LAYERS}")
        if self.hidden_size % self.attention_heads:
            raise _fail(
                "attention_heads",
                self.attention_heads,
                f"must divide hidden_size={self.hidden_size}; pick a divisor of it",
            )
        cards = self.static_cardinalities
        if isinstance(cards, list):
            object.__setattr__(self, "static_cardinalities", cards := tuple(cards))
        if cards is not None and (
            not isinstance(cards, tuple)
            or not all(_is_int(c) and 1 <= c <= MAX_SIZE for c in cards)
        ):
            raise _fail(
                "static_cardinalities",
                cards,
                f"give a tuple of ints in [1, {MAX_SIZE}], one per categorical",
            )
        self._check_quantiles()
        if isinstance(self.dropout, bool) or not isinstance(self.dropout, int | float):
            raise _fail("dropout", self.dropout, "must be a number in [0, 1)")
        if not 0.0 <= self.dropout < 1.0:
            raise _fail("dropout", self.dropout, "must be in [0, 1); use 0 to disable dropout")
        self._check_checkpointing()
        if self.output not in OUTPUTS:
            raise _fail("output", self.output, f"use one of {OUTPUTS}")
        for name in ("learn_spread", "log_scale"):  # parts of the "baseline" output
            self._check_baseline_switch(name)
        if not isinstance(self.sort_quantiles, bool):
            raise _fail("sort_quantiles", self.sort_quantiles, "must be True or False")
        _check_int(self.vol_signals, "vol_signals", 0, from_data=True)
        if self.vol_signals is not None and self.vol_signals > MAX_VOL_SIGNALS:
            raise _fail("vol_signals", self.vol_signals, f"must be <= {MAX_VOL_SIGNALS}")
        if self.vol_signals and self.output != "baseline":
            raise _fail("vol_signals", self.vol_signals, 'only applies to output="baseline"')
        check_ranges(self, "TFTConfig")  # the upper bounds the checks above leave

    def _check_baseline_switch(self, name: str) -> None:
        """A switch of the "baseline" output: None = on with it; refused on "direct"."""
        if getattr(self, name) is None:
            object.__setattr__(self, name, self.output == "baseline")
        value = getattr(self, name)
        if not isinstance(value, bool):
            raise _fail(name, value, "must be True or False")
        if value and self.output != "baseline":
            raise _fail(name, True, 'only applies to output="baseline"; set it there')

    def _check_quantiles(self) -> None:
        qs = self.quantiles
        if isinstance(qs, list):
            object.__setattr__(self, "quantiles", qs := tuple(qs))
        fix = "give a non-empty tuple of floats strictly increasing in (0, 1), e.g. (0.1, 0.5, 0.9)"
        if not isinstance(qs, tuple) or not qs:
            raise _fail("quantiles", qs, fix)
        ok = all(isinstance(q, int | float) and not isinstance(q, bool) for q in qs)
        if not ok or not all(0.0 < q < 1.0 for q in qs):
            raise _fail("quantiles", qs, fix)
        if any(a >= b for a, b in pairwise(qs)):
            raise _fail("quantiles", qs, fix)
        object.__setattr__(self, "quantiles", tuple(float(q) for q in qs))

    def _check_checkpointing(self) -> None:
        policy = self.checkpointing
        if isinstance(policy, list):
            object.__setattr__(self, "checkpointing", policy := tuple(policy))
        if isinstance(policy, str):
            if policy not in CHECKPOINT_MODES:
                raise _fail(
                    "checkpointing",
                    policy,
                    f'use "none", "full" or a tuple of segment names from {SEGMENTS}',
                )
            return
        if not isinstance(policy, tuple):
            raise _fail("checkpointing", policy, 'use "none", "full" or a tuple of segment names')
        unknown = [s for s in policy if s not in SEGMENTS]
        if unknown:
            raise _fail(
                "checkpointing", policy, f"unknown segments {unknown}; valid names are {SEGMENTS}"
            )

    @property
    def num_static_categorical(self) -> int:
        """Static categorical variables (C)."""
        return len(self.static_cardinalities or ())

    @property
    def unfilled(self) -> tuple[str, ...]:
        """The fields of ``DATA_FIELDS`` still None (empty once fitted to the data)."""
        return tuple(name for name in DATA_FIELDS if getattr(self, name) is None)

    @property
    def inputs(self) -> ModelInputs:
        """The data-derived fields; ConfigError (``require_filled``) while any is unset."""
        self.require_filled()
        return ModelInputs(*(getattr(self, name) for name in DATA_FIELDS))

    def require_filled(self) -> None:
        """ConfigError naming the data-derived fields still unset: no model is built then."""
        if self.unfilled:
            raise ConfigError(
                f"TFTConfig.{', '.join(self.unfilled)} unset: these come from the data; build "
                "the model through the job (foxhunt.jobs.fit_model_config fills them from the "
                "prepared data) or give them"
            )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (tuples become lists); ``from_dict`` rebuilds the same config."""
        d = asdict(self)
        for key, value in d.items():
            if isinstance(value, tuple):
                d[key] = list(value)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TFTConfig:
        """Inverse of ``to_dict``; unknown keys raise ConfigError naming them."""
        check_known_fields(cls, d, "TFTConfig")
        kwargs = dict(d)
        for key in ("static_cardinalities", "quantiles"):
            if isinstance(kwargs.get(key), list):
                kwargs[key] = tuple(kwargs[key])
        config = cls(**kwargs)
        # saved either fitted to its data (config.json) or not at all (a backtest's base run)
        if len(config.unfilled) not in (0, len(DATA_FIELDS)):
            raise ConfigError(
                f"TFTConfig: {', '.join(config.unfilled)} missing; a saved config gives every "
                f"field of {DATA_FIELDS} or none"
            )
        return config


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


#: No size field of a model that fits in any memory comes near this; above it torch's own
#: size arguments overflow (int64) before the memory check can say so.
MAX_SIZE = 2**31 - 1


def _check_int(value: object, name: str, minimum: int, *, from_data: bool = False) -> None:
    if value is None and from_data:  # filled by the job from the data
        return
    if not _is_int(value):
        raise _fail(name, value, f"must be an int >= {minimum}")
    assert isinstance(value, int)
    if value < minimum:
        raise _fail(name, value, f"must be >= {minimum}")
    if value > MAX_SIZE:
        raise _fail(name, value, f"must be <= {MAX_SIZE}")
