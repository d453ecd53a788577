from __future__ import annotations

import json

import pytest

from foxhunt import TFTConfig
from foxhunt.errors import ConfigError
from foxhunt.model.config import SEGMENTS

BASE = {"num_static": 2, "num_past": 5, "num_future": 1, "lookback": 8, "horizon": 2}


def make(**overrides: object) -> TFTConfig:
    return TFTConfig(**{**BASE, **overrides})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("num_static", -1),
        ("num_static", 1.5),
        ("num_past", 0),
        ("num_future", -1),
        ("hidden_size", 0),
        ("variable_hidden_size", 0),
        ("attention_heads", 0),
        ("attention_heads", 5),  # does not divide hidden_size=64
        ("lookback", 0),
        ("horizon", 0),
        ("horizon", True),
        ("lstm_layers", 0),
        ("static_cardinalities", (3, 0)),
        ("static_cardinalities", "abc"),
        ("quantiles", ()),
        ("quantiles", (0.5, 0.1)),
        ("quantiles", (0.1, 0.1)),
        ("quantiles", (0.0, 0.5)),
        ("quantiles", (0.5, 1.0)),
        ("dropout", 1.0),
        ("dropout", -0.1),
        ("dropout", "0.1"),
        ("checkpointing", "some"),
        ("checkpointing", ("past_vsn", "lstm")),
        ("checkpointing", 3),
    ],
)
def test_invalid_field_names_field_and_value(field: str, value: object) -> None:
    with pytest.raises(ConfigError) as info:
        make(**{field: value})
    message = str(info.value)
    assert f"TFTConfig.{field}=" in message
    assert repr(value) in message or repr(tuple(value)) in message  # type: ignore[arg-type]
    assert isinstance(info.value, ValueError)


def test_unknown_segment_message_lists_valid_names() -> None:
    with pytest.raises(ConfigError, match="lstm_encoder"):
        make(checkpointing=("lstm",))


def test_lists_are_normalized_to_tuples() -> None:
    cfg = make(checkpointing=["past_vsn"], quantiles=[0.2, 0.8], static_cardinalities=[3])
    assert cfg.checkpointing == ("past_vsn",)
    assert cfg.quantiles == (0.2, 0.8)
    assert cfg.static_cardinalities == (3,)


def test_checkpointing_modes_and_segments_are_accepted() -> None:
    assert make(checkpointing="full").checkpointing == "full"
    assert make(checkpointing=SEGMENTS).checkpointing == SEGMENTS


def test_to_dict_is_json_safe_and_round_trips() -> None:
    cfg = make(
        static_cardinalities=(3, 4), quantiles=(0.05, 0.5, 0.95), checkpointing=("past_vsn",)
    )
    d = json.loads(json.dumps(cfg.to_dict()))
    assert TFTConfig.from_dict(d) == cfg


def test_from_dict_rejects_unknown_keys_by_name() -> None:
    with pytest.raises(ConfigError, match="hidden_sise"):
        TFTConfig.from_dict({**BASE, "hidden_sise": 32})


def test_from_dict_missing_field_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="horizon"):
        TFTConfig.from_dict({k: v for k, v in BASE.items() if k != "horizon"})


def test_config_is_frozen_and_keyword_only() -> None:
    cfg = make()
    with pytest.raises(AttributeError):
        cfg.hidden_size = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        TFTConfig(2, 5, 1, 8, 2)  # type: ignore[misc]


# --- the data-derived fields (DATA_FIELDS): None until the job fills them from the data -----


def test_an_unfitted_config_builds_no_model_and_says_why() -> None:
    from foxhunt.model import TemporalFusionTransformer
    from foxhunt.model.config import DATA_FIELDS

    cfg = TFTConfig(hidden_size=8, attention_heads=2)
    assert cfg.unfilled == DATA_FIELDS
    with pytest.raises(ConfigError, match=r"num_static.*come from the data"):
        TemporalFusionTransformer(cfg)


def test_counts_given_by_hand_fill_the_rest_as_before() -> None:
    cfg = make()
    assert cfg.unfilled == ()
    assert (cfg.static_cardinalities, cfg.vol_signals) == ((), 0)
    assert make(vol_signals=1).vol_signals == 1


def test_a_saved_config_is_fitted_entirely_or_not_at_all() -> None:
    unfitted = TFTConfig(hidden_size=8, attention_heads=2)
    assert TFTConfig.from_dict(json.loads(json.dumps(unfitted.to_dict()))) == unfitted
    with pytest.raises(ConfigError, match="horizon"):
        TFTConfig.from_dict({**unfitted.to_dict(), **BASE, "horizon": None})


def test_the_job_fills_the_data_fields_and_refuses_a_contradiction() -> None:
    from foxhunt.data import prepare_data
    from foxhunt.jobs import fit_model_config
    from helpers import TINY_DATA

    data = prepare_data(TINY_DATA)
    cfg = fit_model_config(TFTConfig(hidden_size=8, attention_heads=2), data)
    assert cfg.unfilled == ()
    assert (cfg.lookback, cfg.horizon, cfg.vol_signals) == (16, 4, 1)
    assert fit_model_config(TFTConfig(lookback=16, hidden_size=8, attention_heads=2), data) == cfg
    with pytest.raises(ConfigError, match=r"TFTConfig\.num_past=1 but the data gives"):
        fit_model_config(TFTConfig(num_past=1, hidden_size=8, attention_heads=2), data)
