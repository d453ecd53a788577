"""`foxhunt diagnose`'s checks: the overfit check's verdict and the learning-rate range test."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from foxhunt.data import PreparedData
from foxhunt.jobs.diagnose import Diagnosis, run_checks, strict, summary
from foxhunt.jobs.options import JobSetting
from foxhunt.jobs.prepare import PreparedRun
from foxhunt.model import TemporalFusionTransformer
from foxhunt.model.config import TFTConfig
from foxhunt.training.diagnose_config import DiagnoseConfig
from foxhunt.training.lr_range import LRRange, lr_range_test, rates, smooth, suggestions
from foxhunt.training.overfit import OverfitResult, overfit_check
from helpers import fitted, tiny_model, tiny_run, tiny_training


def _model(config: TFTConfig) -> TemporalFusionTransformer:
    torch.manual_seed(0)
    return TemporalFusionTransformer(replace(config, dropout=0.0))


def test_the_verdict_follows_the_ratio() -> None:
    def result(head: float, final: float) -> OverfitResult:
        return OverfitResult(
            windows=8, steps=1, lr=1e-3, head_loss=head, final_loss=final, threshold=0.5
        )

    assert result(1.0, 0.3).passed and result(1.0, 0.3).to_dict()["verdict"] == "PASS"
    assert not result(1.0, 0.6).passed and result(1.0, 0.6).to_dict()["verdict"] == "FAIL"
    assert not result(0.0, 0.0).passed  # no loss to fall from: no verdict of success
    assert not result(1.0, math.nan).passed


def test_an_overfit_check_that_cannot_move_fails(
    tiny_data: PreparedData, tiny_model_config: TFTConfig
) -> None:
    training = tiny_training()
    model = _model(tiny_model_config)
    result = overfit_check(
        model, tiny_data.train, training, tiny_model_config.quantiles,
        windows=16, steps=2, threshold=0.5, lr=0.0,
    )  # fmt: skip
    assert result.windows == 16 and result.head_loss > 0
    assert result.ratio == pytest.approx(1.0)
    assert not result.passed
    assert result.diagnostics["grad_norm/output_head"] > 0  # gradients flowed, nothing moved
    assert result.diagnostics["update_ratio/past_vsn"] == 0.0


def test_a_real_rate_lowers_the_loss_of_the_sample(
    tiny_data: PreparedData, tiny_model_config: TFTConfig
) -> None:
    model = _model(tiny_model_config)
    result = overfit_check(
        model, tiny_data.train, tiny_training(), tiny_model_config.quantiles,
        windows=16, steps=6, threshold=0.99, lr=3e-2,
    )  # fmt: skip
    assert result.final_loss < result.head_loss


def test_rates_smoothing_and_suggestions() -> None:
    lrs = rates(1e-6, 1.0, 7)
    assert lrs[0] == pytest.approx(1e-6) and lrs[-1] == pytest.approx(1.0)
    assert np.allclose(np.diff(np.log10(lrs)), 1.0)
    assert smooth([2.0, 2.0, 2.0]) == pytest.approx([2.0, 2.0, 2.0])  # bias-corrected
    curve = [1.0, 1.0, 0.99, 0.6, 0.3, 0.29, 3.0]  # falls fastest around 1e-3
    at_min, steepest = suggestions(list(lrs), curve)
    assert at_min == pytest.approx(1e-1)
    assert steepest == pytest.approx(1e-3)
    assert math.isnan(suggestions([1e-3], [0.5])[0])


def test_the_suggestion_needs_a_real_fall() -> None:
    lrs = [1e-4, 1e-3, 1e-2, 1e-1]

    def found(smoothed: list[float], stopped: str) -> LRRange:
        at_min, steepest = suggestions(lrs, smoothed)
        return LRRange(lrs, smoothed, smoothed, smoothed, stopped, at_min, steepest)

    fell = found([1.0, 0.9, 0.5, 0.8], "end")
    assert fell.suggested == pytest.approx(1e-3) and math.isnan(fell.lr_diverged)
    flat = found([1.0, 0.999, 1.0, 1.001], "diverged")  # noise, then it blew up at 1e-1
    assert math.isnan(flat.suggested) and flat.lr_diverged == pytest.approx(1e-1)
    assert "suggested lr none" in summary(Diagnosis(_fit(), flat, 1e-3))


def _fit() -> OverfitResult:
    return OverfitResult(windows=1, steps=1, lr=0.0, head_loss=0.0, final_loss=0.0, threshold=0.5)


def test_still_falling_reads_the_second_half() -> None:
    def result(losses: list[float]) -> OverfitResult:
        return OverfitResult(
            windows=8, steps=4, lr=1e-3, head_loss=1.0, final_loss=0.9, threshold=0.5,
            losses=losses,
        )  # fmt: skip

    assert result([1.0, 0.99, 0.95, 0.9]).still_falling
    assert not result([1.0, 0.9, 0.9, 0.899]).still_falling
    assert "still falling" in summary(Diagnosis(result([1.0, 0.99, 0.95, 0.9]), _empty(), 1e-3))


def _empty() -> LRRange:
    return LRRange([], [], [], [], "not finite", math.nan, math.nan)


def test_the_range_test_stops_on_divergence_with_a_finite_suggestion(
    tiny_data: PreparedData,
) -> None:
    # the paper's head: it starts far from the data, so a good rate lowers the loss at once
    config = fitted(tiny_model(output="direct"), tiny_data)
    found = lr_range_test(
        _model(config), tiny_data.train, tiny_training(grad_clip=0.0), config.quantiles,
        start=1e-3, end=1e5, steps=16,
    )  # fmt: skip
    assert found.stopped in ("diverged", "not finite")
    assert len(found.lrs) < 16 and found.lr_diverged == found.lrs[-1]
    assert found.drop >= 0.01  # the loss fell before it blew up: a tenth of its lowest's rate
    assert math.isfinite(found.suggested)
    assert found.suggested == pytest.approx(found.lr_at_min / 10)
    assert found.suggested < found.lr_diverged


def test_a_gentle_range_runs_to_its_end(
    tiny_data: PreparedData, tiny_model_config: TFTConfig
) -> None:
    found = lr_range_test(
        _model(tiny_model_config), tiny_data.train, tiny_training(), tiny_model_config.quantiles,
        start=1e-7, end=1e-6, steps=3,
    )  # fmt: skip
    assert found.stopped == "end" and len(found.lrs) == len(found.losses) == 3


def test_the_job_runs_both_checks_on_fresh_models(
    tiny_data: PreparedData, tiny_model_config: TFTConfig, tmp_path: Path
) -> None:
    config = tiny_run(model=tiny_model_config, training=tiny_training(calibrate=False))
    prepared = PreparedRun(config=config, data=tiny_data)
    settings = DiagnoseConfig(overfit_windows=8, overfit_steps=1, lr_range_steps=2)
    diagnosis = run_checks(prepared, settings, JobSetting(output_dir=tmp_path))
    assert diagnosis.overfit.windows == 8 and len(diagnosis.lr_range.lrs) == 2
    text = summary(diagnosis)
    assert "overfit check: 8 training windows" in text and "suggested lr" in text
    json.dumps(diagnosis.to_dict(), allow_nan=False)  # strict JSON


def test_diagnose_json_is_strict() -> None:
    empty = _empty()
    fit = OverfitResult(windows=1, steps=1, lr=0.0, head_loss=0.0, final_loss=0.0, threshold=0.5)
    tree = Diagnosis(fit, empty, 1e-3).to_dict()
    assert tree["lr_range"]["suggested"] is None and tree["overfit"]["ratio"] is None
    assert tree["lr_range"]["lr_diverged"] is None
    assert strict({"a": [math.inf, 1.0]}) == {"a": [None, 1.0]}
    assert "NOTHING TO FIT" in summary(Diagnosis(fit, empty, 1e-3))  # a loss of 0 throughout
    stuck = OverfitResult(windows=1, steps=1, lr=0.0, head_loss=1.0, final_loss=1.0, threshold=0.5)
    assert "FAIL" in summary(Diagnosis(stuck, empty, 1e-3))
