import logging
from typing import Any

import pytest
import torch
from torch import nn

from foxhunt.memory import MemoryProfiler


def make_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(*(nn.Sequential(nn.Linear(1024, 1024), nn.Tanh()) for _ in range(2)))


def run_loop(keep_graphs: bool, profiler: MemoryProfiler, steps: int = 40) -> list[Any]:
    model = make_model()
    x = torch.randn(256, 1024)  # each graph holds ~2.5 MB
    kept: list[Any] = []
    profiler.on_epoch_start()
    for _ in range(steps):
        loss = model(x).pow(2).mean()
        if keep_graphs:
            kept.append(loss)  # the bug: every graph and its activations stay alive
        else:
            loss.backward()
            kept.append(loss.item())
            model.zero_grad(set_to_none=True)
        profiler.on_step_end()
    profiler.on_epoch_end()
    return kept


def test_leaky_loop_triggers_the_warning(caplog: pytest.LogCaptureFixture) -> None:
    events: list[dict[str, Any]] = []
    profiler = MemoryProfiler(
        torch.device("cpu"), log_every=5, leak_threshold_mb=50, sink=events.append
    )
    with caplog.at_level(logging.WARNING, logger="foxhunt.memory"):
        kept = run_loop(keep_graphs=True, profiler=profiler)
    assert len(kept) == 40
    warnings = [e for e in events if e["event"] == "memory_leak_warning"]
    assert len(warnings) == 1, "warn once per epoch, not every N steps"
    assert warnings[0]["growth_mb"] > 50
    assert "memory grew" in caplog.text
    end = next(e for e in events if e["event"] == "memory_epoch_end")
    assert end["delta_mb"] > 60  # 40 graphs of ~2.5 MB each


def test_clean_loop_does_not_warn(caplog: pytest.LogCaptureFixture) -> None:
    events: list[dict[str, Any]] = []
    profiler = MemoryProfiler(
        torch.device("cpu"), log_every=5, leak_threshold_mb=50, sink=events.append
    )
    run_loop(keep_graphs=False, profiler=profiler)  # warm-up: allocator caches settle
    with caplog.at_level(logging.WARNING, logger="foxhunt.memory"):
        run_loop(keep_graphs=False, profiler=profiler)
    assert not [e for e in events if e["event"] == "memory_leak_warning"]
    assert "memory grew" not in caplog.text
    steps = [e for e in events if e["event"] == "memory_step"]
    assert len(steps) == 2 * 40 // 5


def test_cpu_snapshot_is_sane() -> None:
    snap = MemoryProfiler(torch.device("cpu")).snapshot()
    assert snap.backend == "cpu"
    assert 0 < snap.used_mb <= snap.peak_mb <= snap.total_mb


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_snapshot_tracks_allocations() -> None:
    profiler = MemoryProfiler(torch.device("cuda"))
    before = profiler.snapshot()
    block = torch.empty(64 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    after = profiler.snapshot()
    assert after.backend == "cuda"
    assert after.used_mb - before.used_mb >= 63
    assert after.peak_mb >= after.used_mb
    del block


def test_state_carries_the_epoch_over_a_resume() -> None:
    events: list[dict[str, Any]] = []
    before = MemoryProfiler(torch.device("cpu"), log_every=3, sink=events.append)
    before.on_epoch_start()
    for _ in range(4):
        before.on_step_end()
    state = before.state_dict()
    assert state == {"step_in_epoch": 4, "warned_this_epoch": False}
    events.clear()
    after = MemoryProfiler(torch.device("cpu"), log_every=3, sink=events.append)
    after.load_state_dict(state)
    for _ in range(2):
        after.on_step_end()  # steps 5 and 6 of the epoch: the 6th logs, as it would have
    # this process's own baseline first: growth is never measured against another's memory
    assert [e["event"] for e in events] == ["memory_epoch_start", "memory_step"]
    assert after.state_dict()["step_in_epoch"] == 6
