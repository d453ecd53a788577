"""The "baseline" output form: quantiles relative to a volatility baseline's Gaussian ones.

    quantile_q = scale * (z_q * exp(a_hq) + correction_q)

`scale` [B, H] is the baseline's standard deviation of each target (batch.scale), z_q the
standard normal quantile of level q, `correction` the output head's value in standardized
units and `a` an optional learned log-spread per horizon step and quantile. The head and `a`
start at zero, so an untrained model forecasts exactly the baseline's Gaussian quantiles and
training only has to learn where the baseline is wrong.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn


class BaselineQuantiles(nn.Module):
    """(correction [B, H, Q], scale [B, H]) -> quantiles [B, H, Q] in the units of scale."""

    z: Tensor  # [Q] standard normal quantiles of the levels

    def __init__(self, quantiles: Sequence[float], horizon: int, *, learn_spread: bool) -> None:
        super().__init__()
        z = torch.special.ndtri(torch.tensor(tuple(quantiles), dtype=torch.float64))
        # derived from the config, not learned: kept out of the state dict
        self.register_buffer("z", z.float(), persistent=False)  # [Q]
        self.log_spread = (
            nn.Parameter(torch.zeros(horizon, len(quantiles))) if learn_spread else None
        )  # [H, Q]

    def forward(self, correction: Tensor, scale: Tensor) -> Tensor:
        z = self.z
        if self.log_spread is not None:
            z = z * self.log_spread.exp()  # [H, Q]
        return scale.unsqueeze(-1) * (z + correction)  # [B, H, Q]
