"""The single-process side of foxhunt.training.distributed: environment, seeds, errors."""

import logging

import pytest
import torch.distributed as dist

from foxhunt.cli.train import check_world_size
from foxhunt.errors import ConfigError
from foxhunt.runs import RunConfig
from foxhunt.training.config import TrainingConfig
from foxhunt.training.distributed import (
    DistributedContext,
    DistributedError,
    context_from_environment,
    init_distributed,
    main_decides,
    peer_failures,
    quiet_other_ranks,
    rank_step_seed,
)

TORCHRUN_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE")


@pytest.fixture
def no_torchrun(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in TORCHRUN_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_without_torchrun_it_is_one_process(no_torchrun: pytest.MonkeyPatch) -> None:
    ctx = init_distributed("cpu", timeout_s=5)
    assert ctx == DistributedContext(timeout_s=5)
    assert not ctx.enabled and ctx.is_main
    assert not dist.is_initialized()


def test_rank_and_world_size_come_from_the_environment(no_torchrun: pytest.MonkeyPatch) -> None:
    no_torchrun.setenv("RANK", "5")
    no_torchrun.setenv("LOCAL_RANK", "1")
    no_torchrun.setenv("WORLD_SIZE", "8")
    ctx = context_from_environment(timeout_s=12)
    assert (ctx.rank, ctx.local_rank, ctx.world_size, ctx.timeout_s) == (5, 1, 8, 12)
    assert ctx.enabled and not ctx.is_main


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"RANK": "2", "WORLD_SIZE": "2"}, "rank 2 of world size 2"),
        ({"RANK": "x", "WORLD_SIZE": "2"}, "RANK='x' is not an integer"),
    ],
)
def test_an_impossible_environment_is_refused(
    no_torchrun: pytest.MonkeyPatch, env: dict[str, str], message: str
) -> None:
    for name, value in env.items():
        no_torchrun.setenv(name, value)
    with pytest.raises(ConfigError, match=message):
        context_from_environment()


def test_timeout_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="--dist-timeout"):
        DistributedContext(timeout_s=0)


def test_global_batch_must_split_evenly() -> None:
    config = RunConfig.__new__(RunConfig)
    object.__setattr__(config, "training", TrainingConfig(batch_size=30))
    check_world_size(config, DistributedContext(rank=0, world_size=3))
    with pytest.raises(ConfigError, match="--batch-size 30 is the global batch"):
        check_world_size(config, DistributedContext(rank=0, world_size=4))


def test_dropout_seeds_differ_per_rank_and_batch_and_repeat() -> None:
    seeds = {
        rank_step_seed(7, rank, epoch, batch)
        for rank in range(4)
        for epoch in range(3)
        for batch in range(50)
    }
    assert len(seeds) == 4 * 3 * 50
    assert rank_step_seed(7, 1, 2, 3) == rank_step_seed(7, 1, 2, 3)
    assert all(0 <= s < 2**63 for s in seeds)


def test_main_decides_alone_is_a_plain_call() -> None:
    assert main_decides(DistributedContext(), lambda: 42) == 42


def test_peer_failures_are_named_only_under_ddp() -> None:
    lost = "[third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer"
    with (
        pytest.raises(RuntimeError, match="Connection closed"),
        peer_failures(DistributedContext()),
    ):
        raise RuntimeError(lost)
    ctx = DistributedContext(rank=1, world_size=2, timeout_s=9)
    with pytest.raises(RuntimeError, match=r"^out of memory$"), peer_failures(ctx):
        raise RuntimeError("out of memory")  # a local error is not blamed on the peers
    expected = r"rank 1/2: .*another rank failed.*9s.*\(\[third_party/gloo.*by peer\)$"
    with pytest.raises(DistributedError, match=expected) as raised, peer_failures(ctx):
        raise RuntimeError(lost + "\nmore details")
    assert DistributedError.exit_code != 0
    assert raised.value.leave_at_once  # the CLI exits as soon as it is reported
    assert not DistributedError("could not form the group").leave_at_once


def test_other_ranks_log_warnings_only() -> None:
    logger = logging.getLogger("foxhunt")
    level, handlers = logger.level, logger.handlers[:]
    handler = logging.StreamHandler()
    logger.handlers[:] = [handler]
    try:
        quiet_other_ranks(DistributedContext(rank=0, world_size=2))
        assert logger.level == level
        quiet_other_ranks(DistributedContext(rank=1, world_size=2))
        assert logger.level == logging.WARNING
        assert handler.formatter is not None
        assert "[rank 1]" in handler.formatter.format(logging.makeLogRecord({"msg": "m"}))
    finally:
        logger.setLevel(level)
        logger.handlers[:] = handlers


def test_gloo_timeouts_in_any_wording_are_collective_failures() -> None:
    from foxhunt.training.distributed import is_collective_failure

    assert is_collective_failure(RuntimeError("Application timeout caused pair closure"))
    assert is_collective_failure(RuntimeError("[gloo/transport] Timed out waiting 5000ms"))
    assert not is_collective_failure(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))
