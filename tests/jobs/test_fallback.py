"""`TrainingConfig.head_fallback`: another base's calibrated head served when it beats the kept
model on validation (jobs/fallback.py)."""

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from foxhunt.data import DataConfig
from foxhunt.jobs.base import BaseChoice
from foxhunt.jobs.fallback import HeadFallback, fall_back
from foxhunt.jobs.options import JobOptions, JobResult
from foxhunt.jobs.resume import trained_base
from foxhunt.jobs.train import train
from foxhunt.model.baseline_head import BaselineQuantiles
from foxhunt.serving import load_run
from foxhunt.training.calibrate import head_forecasts
from foxhunt.training.inference import predict_windows
from helpers import garch_bars, tiny_run, tiny_training

QUANTILES = (0.1, 0.5, 0.9)


@pytest.fixture(scope="module")
def garch(tmp_path_factory: pytest.TempPathFactory) -> DataConfig:
    """A GARCH-t market with nothing else in it: its GARCH-t head beats the rolling one's."""
    path = tmp_path_factory.mktemp("garch") / "bars.parquet"
    garch_bars(40, 1).to_parquet(path)
    return DataConfig(path=path, lookback=16, horizon=2, feature_groups=())


@pytest.fixture(scope="module")
def served(garch: DataConfig, tmp_path_factory: pytest.TempPathFactory) -> JobResult:
    config = tiny_run(data=garch, training=tiny_training(head_fallback=True))  # the default
    return train(config, tmp_path_factory.mktemp("run") / "run")


def test_a_garch_market_serves_the_garch_head(served: JobResult) -> None:
    base, training = served.metrics["base"], served.metrics["training"]
    assert base["name"] == "garch_t" and base["trained_on"] == "realized_vol"
    heads = base["head_validation_loss_bp"]
    assert set(heads) == {"realized_vol", "ewma", "har", "garch_t"}
    assert heads["garch_t"] < heads["realized_vol"]
    assert training["served_head"] == "garch_t" and training["kept_initial"]
    assert "the garch_t base's calibrated head replaced the kept model" in served.table
    assert served.data is not None and served.data.preprocessor.base == "garch_t"


def test_the_served_model_is_the_initial_network_under_the_garch_head(served: JobResult) -> None:
    assert served.model is not None and served.data is not None
    head = served.model.baseline
    assert isinstance(head, BaselineQuantiles)
    with torch.no_grad():
        pred, _, _ = predict_windows(served.model, served.data.validation)
    alone, _ = head_forecasts(head, served.data.validation)
    np.testing.assert_allclose(pred, alone.numpy(), rtol=1e-5, atol=1e-6)


def test_the_saved_run_loads_with_its_served_base_and_forecasts_alike(served: JobResult) -> None:
    loaded = load_run(served.run_dir)
    assert served.model is not None and served.data is not None
    assert loaded.preprocessor.base == "garch_t"
    with torch.no_grad():
        again = predict_windows(loaded.model, served.data.test)[0]
        first = predict_windows(served.model, served.data.test)[0]
    np.testing.assert_array_equal(again, first)


def test_a_resume_trains_on_the_base_the_network_trained_on(
    served: JobResult, garch: DataConfig
) -> None:
    assert trained_base(served.run_dir, "garch_t") == "realized_vol"
    longer = tiny_run(data=garch, training=tiny_training(epochs=2, head_fallback=True))
    again = train(longer, served.run_dir, options=JobOptions(resume=True))
    assert again.metrics["base"]["trained_on"] == "realized_vol"  # not refused, not rebased
    assert again.metrics["training"]["epochs_run"] == 2


def test_trained_base_ignores_a_damaged_record(tmp_path: Path) -> None:
    assert trained_base(tmp_path, "ewma") == "ewma"  # no metrics.json
    for base in ({"trained_on": "nonsense"}, "text", {"trained_on": 3}):
        (tmp_path / "metrics.json").write_text(json.dumps({"base": base}))
        assert trained_base(tmp_path, "ewma") == "ewma"


def test_switched_off_nothing_is_prepared(garch: DataConfig, tmp_path: Path) -> None:
    result = train(
        tiny_run(data=garch, training=tiny_training(head_fallback=False)), tmp_path / "run"
    )
    assert "base" not in result.metrics and result.metrics["training"]["served_head"] is None


# the decision itself, on planted per-window losses


class _Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.network = nn.Linear(2, 2)
        self.baseline = BaselineQuantiles(QUANTILES, 2, learn_spread=True, signals=1)


def _decide(kept: np.ndarray, losses: np.ndarray, *, trained: bool) -> tuple[Any, _Model, Any]:
    model, windows = _Model(), len(kept)
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():  # the kept model: trained away from its initial weights
        for p in model.parameters():
            p.add_(1.0)
    head = {"log_spread": torch.full((2, 3), 0.25), "signal_weight": torch.tensor([0.5])}
    other = SimpleNamespace(validation=list(range(windows)))
    fallback = HeadFallback(name="garch_t", data=other, head=head, losses=losses)  # type: ignore[arg-type]
    base = BaseChoice(name="realized_vol", setting="realized_vol", losses={}, baselines=None)
    data = SimpleNamespace(validation=list(range(windows)))
    served = fall_back(
        tiny_run(),
        model,
        initial,
        kept,
        trained=trained,
        fallback=fallback,
        base=base,
        data=data,  # type: ignore[arg-type]
    )
    return served, model, initial


def test_a_head_replaces_a_trained_network_only_with_confidence() -> None:
    rng = np.random.default_rng(0)
    kept = rng.normal(1.0, 0.1, 200)
    noise = kept + rng.normal(0.0, 0.05, 200) - 0.001  # lower on average, by noise's width
    served, model, _ = _decide(kept, noise, trained=True)
    assert served.head is None and served.base.name == "realized_vol"
    assert (
        float(model.network.weight.detach().sum()) != 0.0 and model.baseline.log_spread is not None
    )
    assert torch.equal(model.baseline.log_spread, torch.ones(2, 3))  # the kept model, untouched
    served, model, initial = _decide(kept, kept - 0.05, trained=True)
    assert served.head == "garch_t" and served.base.trained_on == "realized_vol"
    assert torch.equal(model.network.weight, initial["network.weight"])  # the initial network
    assert torch.equal(model.baseline.log_spread, torch.full((2, 3), 0.25))  # the head's fit


def test_a_head_replaces_the_kept_head_by_its_mean() -> None:
    kept = np.full(50, 1.0)
    served, _, _ = _decide(kept, kept - 1e-6, trained=False)
    assert served.head == "garch_t"
    served, _, _ = _decide(kept, kept + 1e-6, trained=False)
    assert served.head is None


def test_the_fallback_is_on_by_default_and_off_for_saved_runs() -> None:
    from foxhunt.migrations import sections_of
    from foxhunt.training.config import TrainingConfig

    assert TrainingConfig().head_fallback
    old = sections_of({"format": 2, "data": {}, "model": {}, "training": {}})
    assert old["training"]["head_fallback"] is False  # runs made before it served their model
