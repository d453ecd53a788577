"""The Temporal Fusion Transformer (Lim et al. 2021, figure 2), composed from its blocks.

Top-level children are the segments named in ``config.SEGMENTS`` (each a module whose
forward takes and returns tensors, so that the checkpointing transform can wrap it) plus
small glue: ``post_lstm_gate``, ``output_head`` and, for ``output="baseline"``,
``baseline`` (model/baseline_head.py). No forward knows about checkpointing: the
constructor's last step hands ``config.checkpointing`` to the checkpointing transform
(model/checkpointing.py), which wraps the named segments from outside, so the switch holds
through every door that builds a model; QAT and DDP are applied by
``foxhunt.transforms.apply_model_transforms`` and the trainer.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from foxhunt.batch import TFTBatch
from foxhunt.model.baseline_head import BaselineQuantiles
from foxhunt.model.checkpointing import apply_checkpointing
from foxhunt.model.config import TFTConfig
from foxhunt.model.fusion import TemporalFusionDecoder
from foxhunt.model.layers import GateAddNorm
from foxhunt.model.lstm import LSTMDecoder, LSTMEncoder
from foxhunt.model.static import StaticCovariateEncoders
from foxhunt.model.variable_selection import LearnedInput, VariableSelectionNetwork


@dataclass(frozen=True)
class TFTOutput:
    """What one forward pass returns. B batch, L lookback, H horizon, Q quantiles."""

    quantiles: Tensor  # [B, H, Q]
    static_weights: Tensor  # [B, S + C]: static variable importance (reals, then categoricals)
    past_weights: Tensor  # [B, L, P]: past variable importance per step
    future_weights: Tensor  # [B, H, F]: future variable importance per step
    attention: Tensor | None  # [B, H, L + H], head-averaged; None in training unless asked
    #: [B, H] the network's log-volatility adjustment s of the "baseline" output
    #: (TFTConfig.log_scale); None without one. What the range loss trains (task/loss.py)
    log_volatility: Tensor | None = None


class TemporalFusionTransformer(nn.Module):
    """Multi-horizon quantile forecaster. forward(batch) -> TFTOutput."""

    def __init__(self, config: TFTConfig) -> None:
        super().__init__()
        d = config.inputs  # the data-derived sizes; ConfigError if unset: never guessed here
        self.config = cfg = config
        h, p = cfg.hidden_size, cfg.dropout

        def vsn(n: int, cards: tuple[int, ...] = (), context: int | None = h) -> nn.Module:
            return VariableSelectionNetwork(
                n, cards, variable_size=cfg.variable_hidden_size, hidden_size=h, dropout=p,
                context_size=context,
            )  # fmt: skip

        # variable selection (section 4.2); no static variables: a learned static embedding
        has_static = d.num_static + cfg.num_static_categorical > 0
        self.static_vsn = (
            vsn(d.num_static, d.static_cardinalities, None) if has_static else LearnedInput((), h)
        )
        self.past_vsn = vsn(d.num_past)
        # no known future inputs: the decoder LSTM reads a learned [H, hidden] embedding
        self.future_vsn = vsn(d.num_future) if d.num_future else LearnedInput((d.horizon,), h)
        self.static_encoders = StaticCovariateEncoders(h, p)  # section 4.3
        self.lstm_encoder = LSTMEncoder(h, h, cfg.lstm_layers, p)  # section 4.5.1
        self.lstm_decoder = LSTMDecoder(h, h, cfg.lstm_layers, p)
        self.post_lstm_gate = GateAddNorm(h, h, p)  # eq. 17's phi~
        self.fusion_decoder = TemporalFusionDecoder(
            h, cfg.attention_heads, p, d.lookback, d.horizon
        )
        # eq. 23; with log_scale one more output: the log-volatility adjustment (channel 0)
        self.output_head = nn.Linear(h, len(cfg.quantiles) + int(bool(cfg.log_scale)))
        self.baseline: BaselineQuantiles | None = None
        if cfg.output == "baseline":  # the head predicts a correction that starts at zero
            nn.init.zeros_(self.output_head.weight)
            nn.init.zeros_(self.output_head.bias)
            self.baseline = BaselineQuantiles(
                cfg.quantiles,
                d.horizon,
                learn_spread=bool(cfg.learn_spread),
                signals=d.vol_signals,
            )
        # the one switch: a config that says checkpointing gets it, however the model is built
        apply_checkpointing(self, cfg.checkpointing)

    def forward(self, batch: TFTBatch, return_attention: bool = False) -> TFTOutput:
        """Attention weights are computed in eval mode or when ``return_attention``; in
        training they are skipped so that the fused attention kernel runs."""
        check_batch(batch, self.config)
        cfg = self.config
        # static covariates: selection, then the four contexts
        static, static_weights = self.static_vsn(batch.static, batch.static_categorical)  # [B, d]
        c_selection, c_enrichment, c_h, c_c = self.static_encoders(static)  # [B, d] each
        # temporal variable selection with the static context c_s
        past, past_weights = self.past_vsn(batch.past, None, c_selection)  # [B, L, d]
        future, future_weights = self.future_vsn(batch.future, None, c_selection)  # [B, H, d]
        # sequence to sequence: LSTM encoder from (c_h, c_c), decoder from its final state
        state = (_per_layer(c_h, cfg.lstm_layers), _per_layer(c_c, cfg.lstm_layers))
        encoded, state = self.lstm_encoder(past, state)  # [B, L, d]
        decoded, _ = self.lstm_decoder(future, state)  # [B, H, d]
        lstm_out = torch.cat([encoded, decoded], dim=1)  # [B, L + H, d]
        selected = torch.cat([past, future], dim=1)  # [B, L + H, d]
        temporal = self.post_lstm_gate(lstm_out, selected)  # phi~ [B, L + H, d]
        # static enrichment, interpretable attention, position-wise feed-forward
        need_weights = return_attention or not self.training
        fused, attention = self.fusion_decoder(temporal, c_enrichment, need_weights)  # [B, H, d]
        quantiles = self.output_head(fused)  # [B, H, Q] (+1 with log_scale)
        log_volatility = None
        if self.baseline is not None:
            assert batch.scale is not None  # check_batch
            log_scale = None
            if cfg.log_scale:
                log_scale, quantiles = quantiles[..., 0], quantiles[..., 1:]  # [B, H], [B, H, Q]
            quantiles = self.baseline(quantiles, batch.scale, batch.vol_signal, log_scale)
            log_volatility = log_scale
        if cfg.sort_quantiles:  # coherent: the q-th forecast never below the p-th, p < q
            quantiles = quantiles.sort(dim=-1).values
        return TFTOutput(
            quantiles=quantiles,
            static_weights=static_weights,
            past_weights=past_weights,
            future_weights=future_weights,
            attention=attention,
            log_volatility=log_volatility,
        )


def _per_layer(state: Tensor, layers: int) -> Tensor:
    return state.unsqueeze(0).repeat(layers, 1, 1)  # [B, d] -> [layers, B, d]


def check_batch(batch: TFTBatch, cfg: TFTConfig) -> None:
    """Raise ValueError naming the tensor, the expected and the actual shape or dtype."""
    d = cfg.inputs
    if not isinstance(batch.past, Tensor) or batch.past.dim() != 3:
        got = list(batch.past.shape) if isinstance(batch.past, Tensor) else type(batch.past)
        raise ValueError(f"batch.past: expected shape [B, {d.lookback}, {d.num_past}], got {got}")
    b = batch.past.shape[0]
    expected = {
        "static": [b, d.num_static],
        "past": [b, d.lookback, d.num_past],
        "future": [b, d.horizon, d.num_future],
    }
    for name, shape in expected.items():
        _check(getattr(batch, name), f"batch.{name}", shape, b, floating=True)
    codes = batch.static_categorical
    if cfg.num_static_categorical and codes is None:
        raise ValueError(
            f"batch.static_categorical: expected int64 codes of shape [{b}, "
            f"{cfg.num_static_categorical}] (config.static_cardinalities="
            f"{d.static_cardinalities}), got None"
        )
    if codes is not None:
        _check(
            codes, "batch.static_categorical", [b, cfg.num_static_categorical], b, floating=False
        )
    if cfg.output == "baseline":
        if batch.scale is None:
            raise ValueError(
                f'batch.scale: a model with output="baseline" forecasts relative to the '
                f"baseline's standard deviation of each target, shape [{b}, {d.horizon}], "
                "got None; use windows from a preprocessor with a volatility profile "
                '(version 2: retrain) or a model with output="direct"'
            )
        _check(batch.scale, "batch.scale", [b, d.horizon], b, floating=True)
    if d.vol_signals:
        if batch.vol_signal is None:
            raise ValueError(
                f"batch.vol_signal: this model leans on {d.vol_signals} volatility signal(s), "
                f"shape [{b}, {d.vol_signals}], got None; use windows from its own run's "
                "preprocessor (DataConfig.fast_window)"
            )
        _check(batch.vol_signal, "batch.vol_signal", [b, d.vol_signals], b, floating=True)


def _check(t: object, name: str, shape: list[int], b: int, floating: bool) -> None:
    want = "a floating-point tensor" if floating else "an int64 tensor"
    if not isinstance(t, Tensor):
        raise ValueError(f"{name}: expected {want} of shape {shape}, got {type(t).__name__}")
    if list(t.shape) != shape:
        raise ValueError(
            f"{name}: expected shape {shape} (batch size {b} taken from batch.past), "
            f"got {list(t.shape)}"
        )
    if floating and not t.is_floating_point():
        raise ValueError(f"{name}: expected a floating-point tensor, got dtype {t.dtype}")
    if not floating and t.dtype != torch.int64:
        raise ValueError(f"{name}: expected dtype torch.int64 category codes, got {t.dtype}")
