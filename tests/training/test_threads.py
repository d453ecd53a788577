"""training.threads (--threads): who decides the count, the start-up line, the bounds, and that
the trained weights do not depend on it beyond float rounding. No timing is asserted.

The environment variables' doors, in fresh processes (libgomp reads them when torch loads):
tests/training/test_thread_doors.py."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import torch

from foxhunt.errors import ConfigError
from foxhunt.training import threads as threads_module
from foxhunt.training.config import TrainingConfig
from foxhunt.training.threads import CEILING, apply_threads, choose_threads, env_threads
from helpers import make_trainer, weights


@pytest.fixture(autouse=True)
def restore_threads() -> Iterator[None]:
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)
    threads_module._ours = None
    threads_module._last = None


def test_explicit_count_wins_over_the_environment() -> None:
    choice = choose_threads(2, env=("OMP_NUM_THREADS", 1), cores=2, current=2, others=1.9)
    assert (choice.threads, choice.why, choice.warning) == (2, "--threads", None)


def test_the_environment_wins_over_the_default_and_auto() -> None:
    for requested in (None, "auto", 0):
        choice = choose_threads(
            requested, env=("MKL_NUM_THREADS", 1), cores=2, current=2, others=1.9
        )
        assert choice.line() == "threads: 1 (MKL_NUM_THREADS=1)"


@pytest.mark.parametrize("others", [0.0, 1.6, 7.5, None])
def test_the_default_is_the_usable_cores_whatever_the_load(others: float | None) -> None:
    choice = choose_threads(None, env=None, cores=2, current=2, others=others)
    assert choice.line() == "threads: 2 (the 2 usable cores)"


def test_the_default_never_exceeds_what_the_process_was_set_to() -> None:
    choice = choose_threads(None, env=None, cores=8, current=3, others=None)
    assert choice.threads == 3 and "the process's count before training" in choice.why


def test_the_default_samples_no_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads_module, "available_cores", lambda: 2)
    monkeypatch.setattr(threads_module, "busy_cores", lambda: pytest.fail("sampled the load"))
    torch.set_num_threads(2)
    assert apply_threads(None).threads == 2


@pytest.mark.parametrize(
    ("others", "expected"),
    [(0.1, 2), (0.6, 1), (1.3, 1), (7.5, 1), (None, 2)],
)
@pytest.mark.parametrize("spelling", ["auto", 0])
def test_auto_takes_the_cores_others_leave_idle(
    others: float | None, expected: int, spelling: str | int
) -> None:
    choice = choose_threads(spelling, env=None, cores=2, current=2, others=others)
    assert choice.threads == expected
    assert choice.why.startswith("auto: 2 cores")


def test_auto_never_exceeds_what_the_process_was_set_to() -> None:
    assert choose_threads("auto", env=None, cores=8, current=3, others=0.0).threads == 3
    one = choose_threads("auto", env=None, cores=8, current=1, others=None)
    assert one.threads == 1 and "set to 1 before training" in one.why


def test_a_count_above_the_cores_runs_with_one_warning_naming_them(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    choice = choose_threads(4, env=None, cores=2, current=2, others=None)
    assert choice.threads == 4 and choice.warning is not None
    assert "more than the 2 usable cores" in choice.warning
    monkeypatch.setattr(threads_module, "available_cores", lambda: 2)
    with caplog.at_level(logging.INFO, logger="foxhunt.train"):
        apply_threads(3)
        apply_threads(3)  # the trainer after its job: nothing new to say
    lines = [r for r in caplog.records if "threads" in r.getMessage()]
    assert [r.levelname for r in lines] == ["WARNING"]
    assert "threads: 3 (--threads) is more than the 2 usable cores" in lines[0].getMessage()
    assert torch.get_num_threads() == 3


@pytest.mark.parametrize("count", [CEILING + 1, 1024, -1, 2.0, True, "4", ""])
def test_a_count_outside_the_ceiling_is_refused_by_the_config(count: object) -> None:
    with pytest.raises(ConfigError, match=r"training\.threads="):
        TrainingConfig(threads=count)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"training\.threads="):
        choose_threads(count, env=None, cores=2, current=2, others=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("count", [None, "auto", 0, 1, CEILING])
def test_the_config_takes_counts_up_to_the_ceiling_and_the_words(count: object) -> None:
    assert TrainingConfig(threads=count).threads == count  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["OMP_NUM_THREADS", "MKL_NUM_THREADS"])
@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "set but empty"),
        ("  ", "set but empty"),
        ("abc", "is not a thread count"),
        ("0", "is not a thread count"),
        ("-2", "is not a thread count"),
        ("1.5", "is not a thread count"),
        ("\u0664", "is not a thread count"),  # an Arabic-Indic 4: a digit, not ASCII
        ("257", "more than 256 threads"),
        ("99999", "more than 256 threads"),
        ("9" * 5000, "more than 256 threads"),  # past int()'s 4300-digit limit
    ],
)
def test_a_bad_thread_variable_is_one_clear_error(name: str, text: str, says: str) -> None:
    with pytest.raises(ConfigError, match=name) as error:
        env_threads({name: text}, name)
    assert says in str(error.value) and "\n" not in str(error.value)
    assert len(str(error.value)) < 300


def test_thread_variable_parsing() -> None:
    assert env_threads({}, "OMP_NUM_THREADS") is None
    assert env_threads({"OMP_NUM_THREADS": " 3 "}, "OMP_NUM_THREADS") == 3
    assert env_threads({"OMP_NUM_THREADS": "2,1"}, "OMP_NUM_THREADS") == 2  # the outer level
    with pytest.raises(ConfigError, match="OMP_NUM_THREADS"):
        env_threads({"OMP_NUM_THREADS": "2,9999"}, "OMP_NUM_THREADS")
    with pytest.raises(ConfigError, match="MKL_NUM_THREADS"):
        env_threads({"MKL_NUM_THREADS": "2,1"}, "MKL_NUM_THREADS")  # MKL takes no list


def test_apply_sets_this_process_and_logs_one_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    monkeypatch.setattr(threads_module, "available_cores", lambda: 2)
    with caplog.at_level(logging.INFO, logger="foxhunt.train"):
        assert apply_threads(None).threads == 2
    assert torch.get_num_threads() == 2
    assert caplog.messages == ["threads: 2 (OMP_NUM_THREADS=2)"]
    with caplog.at_level(logging.INFO, logger="foxhunt.train"):
        apply_threads(1)
        apply_threads(1, why="recorded in config.json")  # a reason is news: said again
    assert caplog.messages[1:] == ["threads: 1 (--threads)", "threads: 1 (recorded in config.json)"]
    assert torch.get_num_threads() == 1


def test_auto_samples_the_load_only_when_it_can_matter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads_module, "available_cores", lambda: 2)
    monkeypatch.setattr(threads_module, "busy_cores", lambda: 1.6)  # a competing process
    torch.set_num_threads(2)
    assert apply_threads("auto").threads == 1 and torch.get_num_threads() == 1
    # foxhunt set that 1 itself: a later trainer in the process may take the cores back
    monkeypatch.setattr(threads_module, "busy_cores", lambda: 0.0)
    assert apply_threads("auto").threads == 2
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
    # the arithmetic beyond rounding
    short = {**tiny_training.to_dict(), "epochs": 1, "max_steps_per_epoch": 3}
    for count in (1, 2):
        config = TrainingConfig(**{**short, "threads": count})
        with caplog.at_level(logging.INFO, logger="foxhunt.train"):
            trainer = make_trainer(tiny_data, tiny_model_config, config)
        assert trainer.threads == count == torch.get_num_threads()
        trainer.fit()
        trained[count] = weights(trainer)
    assert [m for m in caplog.messages if m.startswith("threads")][-1] == "threads: 2 (--threads)"
    for key, value in trained[1].items():
        torch.testing.assert_close(trained[2][key], value, rtol=1e-4, atol=1e-5, msg=key)


def test_the_flag_is_generated_from_the_config() -> None:
    from foxhunt.cli.resolve import resolve
    from foxhunt.cli.train_config import train_command
    from foxhunt.errors import UsageError

    def parse(argv: list[str]) -> tuple:
        return resolve(train_command(), argv)

    assert parse(["--threads", "2"])[1].training.threads == 2
    assert parse(["--threads", "auto"])[1].training.threads == "auto"
    assert parse([])[1].training.threads is None
    for bad in ("-1", "1024", "two", ""):
        with pytest.raises(UsageError, match=r"^--threads \(training\.threads\): "):
            parse(["--threads", bad])


def test_a_resume_may_change_the_thread_count() -> None:
    from foxhunt.training.checkpoint import config_differences

    saved = {"training": TrainingConfig(threads=2).to_dict()}
    older = {"training": {k: v for k, v in saved["training"].items() if k != "threads"}}
    assert config_differences(saved, {"training": TrainingConfig(threads=1).to_dict()}) == []
    assert config_differences(older, {"training": TrainingConfig().to_dict()}) == []
    assert config_differences(saved, {"training": TrainingConfig(lr=0.01).to_dict()})
