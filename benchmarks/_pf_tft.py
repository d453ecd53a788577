"""pytorch-forecasting's TFT, built directly and fed synthetic batches (no TimeSeriesDataSet).

pytorch-forecasting is an optional dependency (``pip install -e .[bench]``); import this
module only after checking that ``pytorch_forecasting`` imports.

Variable layout of the ``x_reals`` tensors ([B, T, 225] at the reference config):

    columns 0 .. S-1          static reals (constant over time)       -> static VSN
    columns S .. S+O-1        observed-only reals                     -> encoder VSN
    columns S+O .. S+O+K-1    known reals                             -> encoder and decoder VSN

so pytorch-forecasting's encoder selects among O + K variables (foxhunt's ``num_past``, the
observed inputs first and then the known ones, as foxhunt's data pipeline orders them) and its
decoder among K (foxhunt's ``num_future``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from pytorch_forecasting.data.encoders import TorchNormalizer
from pytorch_forecasting.metrics import QuantileLoss
from pytorch_forecasting.models.temporal_fusion_transformer import TemporalFusionTransformer
from torch import Tensor, nn

__all__ = ["PFInputs", "PFLayout", "build_pf_tft", "pf_inputs", "pf_loss", "pf_prediction"]


@dataclass(frozen=True, kw_only=True)
class PFLayout:
    """Names of pytorch-forecasting's continuous variables, in ``x_reals`` order."""

    static: tuple[str, ...]
    observed: tuple[str, ...]
    known: tuple[str, ...]

    @classmethod
    def make(cls, *, num_static: int, num_observed: int, num_known: int) -> PFLayout:
        return cls(
            static=tuple(f"static_{i}" for i in range(num_static)),
            observed=tuple(f"observed_{i}" for i in range(num_observed)),
            known=tuple(f"known_{i}" for i in range(num_known)),
        )

    @property
    def x_reals(self) -> list[str]:
        return [*self.static, *self.observed, *self.known]


#: pytorch-forecasting's model input: the dict its dataloader would yield as ``x``.
PFInputs = dict[str, Tensor]


def build_pf_tft(
    layout: PFLayout,
    *,
    hidden_size: int,
    hidden_continuous_size: int,
    attention_heads: int,
    quantiles: Sequence[float],
    dropout: float,
    lookback: int,
    lstm_layers: int = 1,
) -> TemporalFusionTransformer:
    """pytorch-forecasting's TFT for ``layout``, with its QuantileLoss on ``quantiles``.

    The output transformer is an identity ``TorchNormalizer``: predictions are rescaled with
    ``target_scale`` (centre 0, scale 1 in ``pf_inputs``) exactly as in a dataset-built model.
    """
    with warnings.catch_warnings():  # lightning warns that `loss` is saved as a hyperparameter
        warnings.simplefilter("ignore")
        model = TemporalFusionTransformer(
            hidden_size=hidden_size,
            lstm_layers=lstm_layers,
            dropout=dropout,
            output_size=len(quantiles),
            loss=QuantileLoss(quantiles=list(quantiles)),
            attention_head_size=attention_heads,
            max_encoder_length=lookback,
            static_reals=list(layout.static),
            time_varying_reals_encoder=[*layout.observed, *layout.known],
            time_varying_reals_decoder=list(layout.known),
            x_reals=layout.x_reals,
            hidden_continuous_size=hidden_continuous_size,
            output_transformer=TorchNormalizer(method="identity", center=False),
            logging_metrics=nn.ModuleList(),
        )
    return model


def pf_inputs(
    *,
    static: Tensor,
    past_observed: Tensor,
    past_known: Tensor,
    future_known: Tensor,
    target_past: Tensor,
    target: Tensor,
) -> PFInputs:
    """The ``x`` dict pytorch-forecasting's TFT reads, from foxhunt-style tensors.

    static [B, S], past_observed [B, L, O], past_known [B, L, K], future_known [B, H, K],
    target_past [B, L], target [B, H]. The decoder's observed columns are zero: the decoder
    never reads them. Every window has the full lookback and horizon.
    """
    batch, lookback, _ = past_observed.shape
    horizon = future_known.shape[1]
    num_observed = past_observed.shape[-1]
    encoder_cont = torch.cat(
        [static[:, None].expand(-1, lookback, -1), past_observed, past_known], dim=-1
    )  # [B, L, S + O + K]
    decoder_cont = torch.cat(
        [
            static[:, None].expand(-1, horizon, -1),
            future_known.new_zeros(batch, horizon, num_observed),
            future_known,
        ],
        dim=-1,
    )  # [B, H, S + O + K]
    return {
        "encoder_cat": torch.zeros(batch, lookback, 0, dtype=torch.long),
        "decoder_cat": torch.zeros(batch, horizon, 0, dtype=torch.long),
        "encoder_cont": encoder_cont.contiguous(),
        "decoder_cont": decoder_cont.contiguous(),
        "encoder_lengths": torch.full((batch,), lookback, dtype=torch.long),
        "decoder_lengths": torch.full((batch,), horizon, dtype=torch.long),
        "encoder_target": target_past,
        "decoder_target": target,
        "target_scale": torch.tensor([[0.0, 1.0]]).expand(batch, -1).contiguous(),
        "groups": torch.zeros(batch, 1, dtype=torch.long),
        "decoder_time_idx": torch.arange(lookback, lookback + horizon).expand(batch, -1),
    }


def pf_prediction(model: TemporalFusionTransformer, x: PFInputs) -> Tensor:
    """Quantile predictions [B, H, Q]."""
    return model(x)["prediction"]


def pf_loss(model: TemporalFusionTransformer, prediction: Tensor, target: Tensor) -> Tensor:
    """pytorch-forecasting's QuantileLoss as its training step computes it.

    Its pinball loss is twice foxhunt's (it multiplies by 2; both average over quantiles).
    """
    return model.loss(prediction, (target, None))
