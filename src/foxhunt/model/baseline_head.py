"""The "baseline" output form: quantiles relative to a volatility baseline's Gaussian ones.

    quantile_q = scale * exp(w . signal + s) * (z_q * exp(a_hq) + correction_q)

`scale` [B, H] is the baseline's standard deviation of each target (batch.scale), z_q the
standard normal quantile of level q, `correction` the output head's value in standardized
units, `a` an optional learned log-spread per horizon step and quantile, and `signal` [B, K]
optional volatility signals (batch.vol_signal: log of a fast volatility over the base one)
with learned weights `w`, and `s` [B, H] the network's optional log-volatility adjustment
(TFTConfig.log_scale). With w = 1/2 the scale is the geometric mean of the two
volatilities: a log-linear (HAR-like) volatility forecast. The head, `a` and `w` start at
zero, so an untrained model forecasts exactly the baseline's Gaussian quantiles and training
only has to learn where the baseline is wrong.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn


class BaselineQuantiles(nn.Module):
    """(correction [B, H, Q], scale [B, H], signal [B, K], log_scale [B, H]) -> quantiles
    [B, H, Q] in the units of scale."""

    z: Tensor  # [Q] standard normal quantiles of the levels

    def __init__(
        self, quantiles: Sequence[float], horizon: int, *, learn_spread: bool, signals: int = 0
    ) -> None:
        super().__init__()
        z = torch.special.ndtri(torch.tensor(tuple(quantiles), dtype=torch.float64))
        # derived from the config, not learned: kept out of the state dict
        self.register_buffer("z", z.float(), persistent=False)  # [Q]
        self.log_spread = (
            nn.Parameter(torch.zeros(horizon, len(quantiles))) if learn_spread else None
        )  # [H, Q]
        self.signal_weight = nn.Parameter(torch.zeros(signals)) if signals else None  # [K]

    def forward(
        self,
        correction: Tensor,
        scale: Tensor,
        signal: Tensor | None = None,
        log_scale: Tensor | None = None,
    ) -> Tensor:
        z = self.z
        if self.log_spread is not None:
            z = z * self.log_spread.exp()  # [H, Q]
        if self.signal_weight is not None:
            assert signal is not None  # check_batch
            scale = scale * (signal @ self.signal_weight).exp().unsqueeze(-1)  # [B, H]
        if log_scale is not None:
            scale = scale * log_scale.exp()  # [B, H]
        return scale.unsqueeze(-1) * (z + correction)  # [B, H, Q]
