"""DDP on 2 CPU processes (gloo) against one process: same global batch, same result."""

from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from ddp_harness import FirstStepGrads, launch, max_difference, tiny_trainer
from ddp_workers import fit_worker

from foxhunt.model.config import SEGMENTS
from helpers import tiny_data, weights

# a torch build without torch.distributed or gloo cannot run these; a broken import of
# foxhunt's own modules is a failure, never a skip
pytestmark = pytest.mark.skipif(
    not (dist.is_available() and dist.is_gloo_available()),
    reason="this torch build has no torch.distributed gloo backend",
)
TOLERANCE = 1e-6


def results(out: Path, world_size: int = 2) -> list[dict]:
    return [torch.load(out / f"rank{r}.pt") for r in range(world_size)]


def single_process(checkpointing: str = "none") -> tuple[dict, FirstStepGrads, list]:
    trainer = tiny_trainer(tiny_data(), checkpointing=checkpointing)
    first = FirstStepGrads()
    trainer.callbacks = [first]
    trainer.fit()
    return weights(trainer), first, trainer.state.history


def assert_matches_single_process(ranks: list[dict], checkpointing: str = "none") -> None:
    reference, first, history = single_process(checkpointing)
    for r in ranks:
        assert r["ddp"] == "DistributedDataParallel"
        assert r["params_without_grad"] == []  # find_unused_parameters=False holds
        assert max_difference(r["weights"], ranks[0]["weights"]) == 0.0  # ranks stay in sync
    # DDP's averaged gradient of two half batches is the gradient of the global batch
    grads = ranks[0]["first_grads"]
    assert grads.keys() == first.grads.keys()
    assert max_difference(grads, first.grads) < TOLERANCE
    # Weights after 6 AdamW steps. A parameter whose true gradient is 0 (the attention key
    # bias: softmax ignores a shift shared by all keys; the static selection weights: a softmax
    # over one variable) gets a gradient of rounding noise, which differs between one and two
    # processes, and Adam scales noise up to lr-sized steps: those are held to lr * steps.
    noise_only = {n for n, g in first.grads.items() if g.numel() and float(g.abs().max()) < 1e-7}
    real = {k: v for k, v in ranks[0]["weights"].items() if k not in noise_only}
    assert max_difference(real, {k: reference[k] for k in real}) < TOLERANCE
    for name in noise_only:
        assert float((ranks[0]["weights"][name] - reference[name]).abs().max()) < 1e-3 * 6
    for got, want in zip(ranks[0]["history"], history, strict=True):
        assert got["epoch"] == want["epoch"]
        assert got["train_loss"] == pytest.approx(want["train_loss"], abs=TOLERANCE)
        assert got["val_loss"] == pytest.approx(want["val_loss"], abs=TOLERANCE)


def test_two_ranks_match_one_process_on_the_same_global_batch(tmp_path: Path) -> None:
    # dropout 0: with dropout each rank draws its own masks, so no single process can match
    outcome = launch(fit_worker, tmp_path, dropout=0.0)
    assert outcome.exitcodes == [0, 0], outcome.report()
    ranks = results(tmp_path)
    assert ranks[0]["history"] == ranks[1]["history"]  # identical on every rank
    assert_matches_single_process(ranks)


def test_gradient_checkpointing_under_ddp_matches_one_plain_process(tmp_path: Path) -> None:
    outcome = launch(fit_worker, tmp_path, dropout=0.0, checkpointing="full")
    assert outcome.exitcodes == [0, 0], outcome.report()
    ranks = results(tmp_path)
    assert [r["checkpointed"] for r in ranks] == [list(SEGMENTS)] * 2  # under DDP, every rank
    assert_matches_single_process(ranks)  # the single process is plain: checkpointing "none"


def test_nonfinite_loss_on_one_rank_skips_the_step_on_every_rank(tmp_path: Path) -> None:
    outcome = launch(fit_worker, tmp_path, dropout=0.1, nan_on_rank=1)
    assert outcome.exitcodes == [0, 0], outcome.report()
    ranks = results(tmp_path)
    assert [r["skipped"] for r in ranks] == [1, 1]
    assert [r["steps"] for r in ranks] == [5, 5]  # 2 epochs x 3 batches, one skipped
    assert max_difference(ranks[0]["weights"], ranks[1]["weights"]) == 0.0
    assert all(torch.isfinite(v).all() for v in ranks[0]["weights"].values())
    assert "non-finite loss nan at step 1" in outcome.logs[0]


def test_a_stop_requested_on_the_main_rank_stops_every_rank(tmp_path: Path) -> None:
    """Callbacks run on rank 0 only (the job's); its request_stop must end every rank's loop,
    or rank 1 would wait in the next epoch's all-reduce until the timeout."""
    outcome = launch(fit_worker, tmp_path, epochs=3, stop_on_main=True)
    assert outcome.exitcodes == [0, 0], outcome.report()
    ranks = results(tmp_path)
    assert [len(r["history"]) for r in ranks] == [1, 1]
