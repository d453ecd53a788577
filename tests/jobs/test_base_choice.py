"""`DataConfig.base`: the base volatility behind the model's scale, chosen on validation."""

import logging
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from foxhunt.data import DataConfig, PreparedData, prepare_data
from foxhunt.data.preprocess import ROLLING_BASE
from foxhunt.errors import ConfigError
from foxhunt.jobs.base import BaseChoice, choose_base
from foxhunt.jobs.train import train
from helpers import garch_bars, tiny_run


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> DataConfig:
    path = tmp_path_factory.mktemp("garch") / "bars.parquet"
    garch_bars(40, 1).to_parquet(path)
    return DataConfig(path=path, lookback=16, horizon=2)


@pytest.fixture(scope="module")
def planted_data(planted: DataConfig) -> PreparedData:
    return prepare_data(planted)


def choose(
    data: PreparedData, config: DataConfig, base: str
) -> tuple[PreparedData, BaseChoice | None]:
    return choose_base(tiny_run(data=replace(config, base=base)), data, resumed=None)


def test_auto_picks_the_planted_best(
    planted: DataConfig, planted_data: PreparedData, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="foxhunt.train"):
        data, choice = choose(planted_data, planted, "auto")
    assert choice is not None and choice.name == "garch_t"
    losses = choice.losses
    assert set(losses) == {"realized_vol", "ewma", "har", "garch_t"}
    assert min(losses, key=lambda k: losses[k] or np.inf) == "garch_t"
    assert losses["realized_vol"] > 1.02 * losses["garch_t"]  # clearly, not by a hair
    for name in losses:  # each candidate's score is logged
        assert f"base {name}: mean quantile loss" in caplog.text
    # the windows are the same; only their scale changed, and the run saves the base
    assert data.preprocessor.base == "garch_t" and data.encoded is None
    for split in ("train", "validation", "test"):
        before, after = getattr(planted_data, split), getattr(data, split)
        assert np.array_equal(before.anchors.numpy(), after.anchors.numpy())
        assert before.base_volatility is not None and after.base_volatility is not None
        assert not np.allclose(before.base_volatility.numpy(), after.base_volatility.numpy())


def test_explicit_base_is_kept_and_rolling_changes_nothing(
    planted: DataConfig, planted_data: PreparedData
) -> None:
    data, choice = choose(planted_data, planted, "ewma")
    assert choice is not None and choice.name == "ewma" and set(choice.losses) == {"ewma"}
    assert data.preprocessor.base == "ewma" and data.preprocessor.base_filter is not None
    same, none = choose(planted_data, planted, ROLLING_BASE)
    assert none is None and same.validation is planted_data.validation


def test_unfittable_base_is_skipped_by_auto_and_refused_when_named(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # 5 sessions: 3.5 of training, short of the week of bars the HAR's longest lag needs
    config = DataConfig(synthetic_market="garch", synthetic_days=5, lookback=16, horizon=4)
    data = prepare_data(config)
    with caplog.at_level(logging.WARNING):
        _, choice = choose(data, config, "auto")
    assert choice is not None and choice.losses["har"] is None and choice.name != "har"
    assert "base har skipped" in caplog.text and "HAR needs" in caplog.text
    with pytest.raises(ConfigError, match=r"DataConfig.base='har'.*HAR needs.*--base auto"):
        choose(data, config, "har")


def test_resume_keeps_the_saved_base(planted: DataConfig, planted_data: PreparedData) -> None:
    data, choice = choose_base(
        tiny_run(data=replace(planted, base="auto")), planted_data, resumed="ewma"
    )
    assert choice is not None and choice.name == "ewma" and choice.losses == {}
    assert data.preprocessor.base == "ewma"
    with pytest.raises(ConfigError, match="differs from the saved run's base"):
        choose_base(tiny_run(data=replace(planted, base="har")), planted_data, resumed="ewma")


def test_job_records_the_choice(planted: DataConfig, tmp_path: Path) -> None:
    result = train(tiny_run(data=replace(planted, base="auto")), tmp_path / "run")
    record = result.metrics["base"]
    assert record["name"] == "garch_t" and record["setting"] == "auto"
    # the untrained model's forecast on validation is the chosen base's, scored as chosen
    reference = result.metrics["validation_baselines"]["base:garch_t"]["mean_quantile_loss"]
    assert reference == pytest.approx(record["validation_loss_bp"]["garch_t"], rel=1e-6)
