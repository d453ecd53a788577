"""QAT runs trained by foxhunt before it left torch.ao load into today's QAT model.

Their ``model.safetensors`` (and checkpoints) name the fake quantizers as torch.ao's
modules did: a ``QuantWrapper`` (``quant`` / ``module``) around a QAT Linear whose
``weight_fake_quant`` and output ``activation_post_process`` are ``FakeQuantize`` modules,
each with its observer one level down and flag buffers (``observer_enabled``, ...) that are
plain attributes now. The values are the same (``quant/fake.py`` computes what torch.ao
computed), so a load only renames: a state-dict pre-hook on the prepared model rewrites each
old key whose new name the model has, and drops the flags.
"""

from __future__ import annotations

import re
from typing import Any

from torch import nn

_RANGE = r"(min_val|max_val)"
_GRID = r"(scale|zero_point)"
#: (old key pattern, new key) pairs; the first that matches and names a key of the model wins
RENAMES = [
    (rf"(.*)\.quant\.activation_post_process\.activation_post_process\.{_RANGE}", r"\1.input_quant.\2"),
    (rf"(.*)\.quant\.activation_post_process\.{_GRID}", r"\1.input_quant.\2"),
    (rf"(.*)\.module\.weight_fake_quant\.activation_post_process\.{_RANGE}", r"\1.weight_quant.\2"),
    (rf"(.*)\.module\.weight_fake_quant\.{_GRID}", r"\1.weight_quant.\2"),
    (rf"(.*)\.module\.activation_post_process\.activation_post_process\.{_RANGE}", r"\1.output_quant.\2"),
    (rf"(.*)\.module\.activation_post_process\.{_GRID}", r"\1.output_quant.\2"),
    (r"(.*)\.module\.(weight|bias)", r"\1.linear.\2"),
    (rf"(.*\.fake_quant)\.activation_post_process\.{_RANGE}", r"\1.\2"),
]  # fmt: skip
#: torch.ao state that is no state now
DROPPED = re.compile(r".*\.(fake_quant_enabled|observer_enabled|eps)")


def legacy_names(keys: list[str], known: set[str]) -> dict[str, str | None]:
    """{old key: new key, or None to drop} for the ``keys`` of an old state that ``known``
    (the model's own keys) lacks; keys it has, or cannot place, are left out."""
    out: dict[str, str | None] = {}
    for key in keys:
        if key in known:
            continue
        for pattern, replacement in RENAMES:
            new, n = re.subn(f"^{pattern}$", replacement, key)
            if n and new in known:
                out[key] = new
                break
        else:
            if DROPPED.fullmatch(key):
                out[key] = None
    return out


class LegacyStateHook:
    """Load-state-dict pre-hook that renames a torch.ao-era QAT state in place (a class, so
    the model still pickles and deep-copies)."""

    def __call__(
        self, module: nn.Module, state_dict: dict[str, Any], prefix: str, *args: Any
    ) -> None:
        keys = [k for k in state_dict if k.startswith(prefix)]
        if not any(DROPPED.fullmatch(k) for k in keys):
            return  # a state of today's model
        known = {prefix + k for k in module.state_dict()}
        for old, new in legacy_names(keys, known).items():
            value = state_dict.pop(old)
            if new is not None:
                state_dict[new] = value


def accept_legacy_state(model: nn.Module) -> None:
    """Let ``model`` (prepared for QAT) load states saved by torch.ao-era foxhunt."""
    model.register_load_state_dict_pre_hook(LegacyStateHook())
