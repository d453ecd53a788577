"""Calibration of the baseline output before the first epoch (training/calibrate.py)."""

from collections.abc import Sequence
from dataclasses import replace

import pytest
import torch

from foxhunt.batch import TFTBatch
from foxhunt.data import PreparedData
from foxhunt.migrations import sections_of
from foxhunt.model.config import TFTConfig
from foxhunt.model.tft import TemporalFusionTransformer
from foxhunt.training.calibrate import calibrate_baseline


class PlantedWindows(torch.utils.data.Dataset[TFTBatch]):
    """Targets whose true standard deviation is scale * exp(0.5 * signal): the geometric mean
    of the base and the fast volatility, so the right signal weight is 0.5."""

    def __init__(self, n: int = 4000, horizon: int = 3, seed: int = 0, weight: float = 0.5) -> None:
        g = torch.Generator().manual_seed(seed)
        self.scale = torch.rand(n, horizon, generator=g) + 0.5
        self.signal = torch.randn(n, 1, generator=g) * 0.6
        sd = self.scale * (weight * self.signal).exp()
        self.target = sd * torch.randn(n, horizon, generator=g)

    def __len__(self) -> int:
        return len(self.target)

    def __getitems__(self, rows: Sequence[int]) -> TFTBatch:
        i = torch.as_tensor(rows)
        n, h = len(i), self.target.shape[1]
        return TFTBatch(
            static=torch.zeros(n, 0),
            past=torch.zeros(n, 2, 1),
            future=torch.zeros(n, h, 0),
            target=self.target[i],
            scale=self.scale[i],
            vol_signal=self.signal[i],
        )


def _model(**overrides: object) -> TemporalFusionTransformer:
    kwargs: dict[str, object] = {
        "num_static": 0, "num_past": 1, "num_future": 0, "lookback": 2, "horizon": 3,
        "hidden_size": 8, "variable_hidden_size": 4, "attention_heads": 2,
        "output": "baseline", "vol_signals": 1,
    }  # fmt: skip
    torch.manual_seed(0)
    return TemporalFusionTransformer(TFTConfig(**{**kwargs, **overrides}))  # type: ignore[arg-type]


def test_calibration_recovers_a_planted_signal_weight() -> None:
    model = _model()
    record = calibrate_baseline(model, PlantedWindows(), model.config.quantiles)
    assert record is not None and record["train_loss_after"] < record["train_loss_before"]
    assert model.baseline is not None and model.baseline.signal_weight is not None
    assert model.baseline.signal_weight.dtype == torch.float32  # back to the model's dtype
    assert float(model.baseline.signal_weight.detach()) == pytest.approx(0.5, abs=0.05)
    assert model.baseline.signal_weight.grad is None


def test_a_fit_that_does_worse_on_validation_is_dropped() -> None:
    """Train says weight 0.5, validation says -0.5: the model starts at its base instead."""
    model = _model()
    quantiles = model.config.quantiles
    against = PlantedWindows(seed=1, weight=-0.5)
    record = calibrate_baseline(model, PlantedWindows(), quantiles, validation=against)
    assert record is not None and record["val_loss_fitted"] > record["val_loss_before"]
    assert model.baseline is not None and model.baseline.signal_weight is not None
    assert float(model.baseline.signal_weight.detach().abs()) == 0.0
    assert record["train_loss_after"] == record["train_loss_before"]
    kept = _model()  # a validation span that agrees keeps the fit
    record = calibrate_baseline(
        kept, PlantedWindows(), quantiles, validation=PlantedWindows(seed=2)
    )
    assert record is not None and record["val_loss_fitted"] < record["val_loss_before"]
    assert kept.baseline is not None and kept.baseline.signal_weight is not None
    assert float(kept.baseline.signal_weight.detach()) == pytest.approx(0.5, abs=0.05)


def test_calibration_fits_the_spread_and_is_deterministic() -> None:
    a, b = _model(learn_spread=True), _model(learn_spread=True)
    for model in (a, b):
        calibrate_baseline(model, PlantedWindows(), model.config.quantiles)
    assert a.baseline is not None and a.baseline.log_spread is not None
    assert a.baseline.log_spread.abs().sum() > 0
    for (name, x), y in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert torch.equal(x, y), name


def test_nothing_to_calibrate_is_a_no_op() -> None:
    direct = _model(output="direct", vol_signals=0)
    assert calibrate_baseline(direct, PlantedWindows(), direct.config.quantiles) is None
    plain = _model(vol_signals=0, learn_spread=False)
    assert calibrate_baseline(plain, PlantedWindows(), plain.config.quantiles) is None


def test_calibration_on_real_windows_lowers_the_train_loss(
    tiny_data: PreparedData, tiny_model_config: TFTConfig
) -> None:
    assert tiny_model_config.vol_signals == 1  # fit_model_config: the data has a fast window
    torch.manual_seed(0)
    model = TemporalFusionTransformer(replace(tiny_model_config, learn_spread=True))
    record = calibrate_baseline(
        model, tiny_data.train, tiny_model_config.quantiles, loss_weighting="inverse_scale"
    )
    assert record is not None
    assert record["train_loss_after"] <= record["train_loss_before"]
    assert set(record) >= {"signal_weight", "log_spread", "event"}


def test_configs_saved_before_these_fields_read_as_they_trained() -> None:
    from foxhunt.data import DataConfig
    from foxhunt.training.checkpoint import config_differences
    from foxhunt.training.config import TrainingConfig

    training = TrainingConfig().to_dict()
    data = DataConfig().to_dict()
    for key in ("calibrate", "initial_confidence", "validate_initial"):
        del training[key]
    old = TrainingConfig.from_dict(sections_of({"training": training})["training"])
    assert (old.calibrate, old.initial_confidence, old.validate_initial) == (False, 0.0, False)
    del data["fast_window"]
    assert DataConfig.from_dict(sections_of({"data": data})["data"]).fast_window == 0
    # a checkpoint without the fields matches a run that has their values then
    assert config_differences({"training": training}, {"training": old.to_dict()}) == []
    assert config_differences({"training": training}, {"training": TrainingConfig().to_dict()})
