"""`foxhunt train` on 2 ranks as torchrun runs it: rank 0 writes, resume is exact, a dead or
hung rank stops the others with a clear error instead of a hang."""

import json
from pathlib import Path
from typing import Any

import pytest
from ddp_harness import Outcome, cli_args, launch, reserved_ports
from ddp_workers import cli_worker
from safetensors.torch import load_file


def train(tmp_path: Path, name: str, *args: str, **kwargs: Any) -> Outcome:
    return launch(cli_worker, tmp_path / f"logs-{name}", argv=cli_args(*args), **kwargs)


def epochs_in_history(run: Path) -> list[int]:
    lines = (run / "history.jsonl").read_text().splitlines()
    return [r["epoch"] for r in map(json.loads, lines) if r["event"] == "epoch"]


def test_resume_under_ddp_equals_two_straight_epochs(tmp_path: Path) -> None:
    straight, split = tmp_path / "straight", tmp_path / "split"
    runs = [  # one launch, three runs in turn (a fresh spawn each would triple the time)
        cli_args("--epochs", "2", "--output-dir", str(straight)),
        cli_args("--epochs", "1", "--output-dir", str(split)),
        cli_args("--epochs", "2", "--resume", str(split)),
    ]
    with reserved_ports(len(runs)) as ports:
        outcome = launch(cli_worker, tmp_path / "logs", runs=runs, ports=ports)
    assert outcome.exitcodes == [0, 0], outcome.report()
    # rank 0 alone prints and logs at INFO
    assert outcome.logs[0].count("run saved to") == 3
    assert "run saved to" not in outcome.logs[1]
    assert "INFO" not in outcome.logs[1]
    assert "resumed from" in outcome.logs[0]
    a, b = load_file(straight / "model.safetensors"), load_file(split / "model.safetensors")
    assert a.keys() == b.keys()
    assert all(bool((a[k] == b[k]).all()) for k in a), "resumed DDP run differs from straight"
    # one writer: each epoch recorded once
    assert epochs_in_history(straight) == [0, 1]
    assert epochs_in_history(split) == [0, 1]


def test_a_rank_that_dies_stops_the_other_with_a_clear_error(tmp_path: Path) -> None:
    out = tmp_path / "run"
    outcome = train(
        tmp_path, "die", "--epochs", "3", "--dist-timeout", "30", "--output-dir", str(out),
        die_at_step=3, primary=0, timeout_s=90,
    )  # fmt: skip
    assert outcome.exitcodes == [1, 3], outcome.report()
    assert "another rank failed" in outcome.logs[0], outcome.report()
    assert "Traceback" not in outcome.logs[0]
    assert outcome.seconds[0] - outcome.seconds[1] < 30  # well within the timeout


@pytest.mark.alone  # a 5 s --dist-timeout: a busy neighbour could stall a healthy step that long
def test_a_hung_rank_makes_the_other_fail_after_the_timeout(tmp_path: Path) -> None:
    out = tmp_path / "run"
    outcome = train(
        tmp_path, "hang", "--epochs", "3", "--dist-timeout", "5", "--output-dir", str(out),
        hang_at_step=3, primary=0, timeout_s=90,
    )  # fmt: skip
    # rank 0 gives up on its own; the harness then kills the hung rank, as torchrun would
    assert outcome.exitcodes[0] == 1, outcome.report()
    assert outcome.hung == [1]
    assert "did not answer within --dist-timeout 5s" in outcome.logs[0], outcome.report()


def test_only_rank_0_logs_to_tensorboard(tmp_path: Path) -> None:
    accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    out = tmp_path / "run"
    outcome = train(
        tmp_path, "tb", "--epochs", "2", "--output-dir", str(out), "--logger", "tensorboard",
        timeout_s=180,  # importing tensorboard on a busy machine
    )  # fmt: skip
    assert outcome.exitcodes == [0, 0], outcome.report()
    assert len(list((out / "tensorboard").iterdir())) == 1  # one writer: one event file
    events = accumulator.EventAccumulator(str(out / "tensorboard"))
    events.Reload()
    assert len(events.Scalars("epoch/val_loss")) == 2


def test_ddp_ranks_share_one_feature_store_and_train_as_in_memory(tmp_path: Path) -> None:
    store = tmp_path / "store"
    runs = [  # in memory, then the store written (one rank writes, the other waits), then reused
        cli_args("--epochs", "1", "--output-dir", str(tmp_path / "memory")),
        cli_args(
            "--epochs", "1", "--output-dir", str(tmp_path / "first"), "--feature-store", str(store)
        ),
        cli_args(
            "--epochs", "1", "--output-dir", str(tmp_path / "second"), "--feature-store", str(store)
        ),
    ]
    with reserved_ports(len(runs)) as ports:
        outcome = launch(
            cli_worker,
            tmp_path / "logs",
            runs=runs,
            ports=ports,
            timeout_s=300,  # three runs
        )
    assert outcome.exitcodes == [0, 0], outcome.report()
    assert len([p for p in store.iterdir() if not p.name.startswith(".")]) == 1
    assert not [p for p in store.iterdir() if p.name.startswith(".staging-")]
    expected = load_file(tmp_path / "memory" / "model.safetensors")
    for run in ("first", "second"):
        weights = load_file(tmp_path / run / "model.safetensors")
        assert all(bool((weights[k] == expected[k]).all()) for k in expected), run
