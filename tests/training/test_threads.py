"""training.threads (--threads): who decides the count, the start-up line, and that the
trained weights do not depend on it beyond float rounding. No timing is asserted."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import torch

from foxhunt.errors import ConfigError
from foxhunt.training import threads as threads_module
from foxhunt.training.config import TrainingConfig
from foxhunt.training.threads import apply_threads, choose_threads, omp_threads
from helpers import make_trainer, weights


@pytest.fixture(autouse=True)
def restore_threads() -> Iterator[None]:
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)
    threads_module._ours = None


def test_explicit_count_wins_over_the_environment() -> None:
    choice = choose_threads(3, omp=2, cores=2, current=2, others=1.9)
    assert (choice.threads, choice.why) == (3, "--threads")


def test_omp_num_threads_wins_over_auto() -> None:
    choice = choose_threads(0, omp=4, cores=2, current=2, others=1.9)
    assert choice.line() == "threads: 4 (OMP_NUM_THREADS=4)"


@pytest.mark.parametrize(
    ("others", "expected"),
    [(0.1, 2), (0.6, 1), (1.3, 1), (7.5, 1), (None, 2)],
)
def test_auto_takes_the_cores_others_leave_idle(others: float | None, expected: int) -> None:
    choice = choose_threads(0, omp=None, cores=2, current=2, others=others)
    assert choice.threads == expected
    assert choice.why.startswith("auto: 2 cores")


def test_auto_never_exceeds_what_the_process_was_set_to() -> None:
    assert choose_threads(0, omp=None, cores=8, current=3, others=0.0).threads == 3
    one = choose_threads(0, omp=None, cores=8, current=1, others=None)
    assert one.threads == 1 and "set to 1 before training" in one.why


@pytest.mark.parametrize("text", ["abc", "0", "-2", "1.5"])
def test_a_bad_omp_num_threads_is_one_clear_error(text: str) -> None:
    with pytest.raises(ConfigError, match="OMP_NUM_THREADS"):
        omp_threads({"OMP_NUM_THREADS": text})


def test_omp_num_threads_parsing() -> None:
    assert omp_threads({}) is None
    assert omp_threads({"OMP_NUM_THREADS": " "}) is None
    assert omp_threads({"OMP_NUM_THREADS": "3"}) == 3
    assert omp_threads({"OMP_NUM_THREADS": "2,1"}) == 2  # nested levels: the outer is ours


def test_negative_threads_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"training\.threads must be >= 0"):
        TrainingConfig(threads=-1)


def test_apply_sets_this_process_and_logs_one_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    with caplog.at_level(logging.INFO, logger="foxhunt.train"):
        assert apply_threads(0).threads == 2
    assert torch.get_num_threads() == 2
    assert "threads: 2 (OMP_NUM_THREADS=2)" in caplog.messages
    with caplog.at_level(logging.INFO, logger="foxhunt.train"):
        apply_threads(1)
    assert torch.get_num_threads() == 1 and caplog.messages[-1] == "threads: 1 (--threads)"


def test_auto_samples_the_load_only_when_it_can_matter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads_module, "available_cores", lambda: 2)
    monkeypatch.setattr(threads_module, "busy_cores", lambda: 1.6)  # a competing process
    torch.set_num_threads(2)
    assert apply_threads(0).threads == 1 and torch.get_num_threads() == 1
    # foxhunt set that 1 itself: a later trainer in the process may take the cores back
    monkeypatch.setattr(threads_module, "busy_cores", lambda: 0.0)
    assert apply_threads(0).threads == 2
    torch.set_num_threads(1)  # the user's (or the test suite's) setting is the ceiling
    threads_module._ours = None
    monkeypatch.setattr(threads_module, "busy_cores", lambda: pytest.fail("sampled"))
    assert apply_threads(0).threads == 1


def test_busy_cores_reads_the_machine() -> None:
    busy = threads_module.busy_cores(0.05)
    assert busy is None or 0.0 <= busy <= (threads_module.os.cpu_count() or 1) + 1e-6


def test_trainer_logs_its_threads_and_weights_agree_across_counts(
    tiny_data, tiny_model_config, tiny_training, caplog: pytest.LogCaptureFixture
) -> None:
    trained = {}
    # one epoch of 3 steps: a second OpenMP thread on a busy 2-core machine can slow each
    # step a hundredfold (tests/conftest.py), and 3 AdamW steps already differ if it changed
    # the arithmetic
    short = {**tiny_training.to_dict(), "epochs": 1, "max_steps_per_epoch": 3}
    for count in (1, 2):
        config = TrainingConfig(**{**short, "threads": count})
        with caplog.at_level(logging.INFO, logger="foxhunt.train"):
            trainer = make_trainer(tiny_data, tiny_model_config, config)
        assert f"threads: {count} (--threads)" in caplog.messages
        assert trainer.threads == count == torch.get_num_threads()
        trainer.fit()
        trained[count] = weights(trainer)
    for key, value in trained[1].items():
        torch.testing.assert_close(trained[2][key], value, rtol=1e-4, atol=1e-5, msg=key)


def test_the_flag_is_generated_from_the_config() -> None:
    from foxhunt.cli.resolve import resolve
    from foxhunt.cli.train_config import train_command
    from foxhunt.errors import UsageError

    def parse(argv: list[str]) -> tuple:
        return resolve(train_command(), argv)

    _, cfg, _ = parse(["--threads", "2"])
    assert cfg.training.threads == 2
    assert parse([])[1].training.threads == 0
    with pytest.raises(UsageError, match="--threads"):
        parse(["--threads", "-1"])


def test_a_resume_may_change_the_thread_count() -> None:
    from foxhunt.training.checkpoint import config_differences

    saved = {"training": TrainingConfig(threads=2).to_dict()}
    older = {"training": {k: v for k, v in saved["training"].items() if k != "threads"}}
    assert config_differences(saved, {"training": TrainingConfig(threads=1).to_dict()}) == []
    assert config_differences(older, {"training": TrainingConfig().to_dict()}) == []
    assert config_differences(saved, {"training": TrainingConfig(lr=0.01).to_dict()})


def test_a_bad_omp_num_threads_stops_train_before_it_writes(
    monkeypatch: pytest.MonkeyPatch, tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    from foxhunt.cli import main

    monkeypatch.setenv("OMP_NUM_THREADS", "abc")
    out = tmp_path / "run"
    argv = [
        "train",
        "--synthetic-market",
        "garch",
        "--synthetic-days",
        "8",
        "--epochs",
        "1",
        "--max-steps-per-epoch",
        "1",
    ]
    code = main([*argv, "--hidden-size", "8", "--report", "false", "--output-dir", str(out)])
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert code == 2 and len(errors) == 1 and "OMP_NUM_THREADS='abc'" in errors[0]
    assert not out.exists()
