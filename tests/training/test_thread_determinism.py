"""The same seed and thread count train the same bits whatever else the machine runs: a
competing process takes cores (and so changes when each thread runs), never how a sum is
split. Two threads, once quiet and once beside two busy processes; no timing is asserted."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from foxhunt.training import threads as threads_module
from helpers import make_trainer, tiny_training, weights

#: a process that keeps one core busy until killed
BUSY = "while True: pass"


@contextmanager
def competing(processes: int) -> Iterator[None]:
    """`processes` busy loops beside the test, each on a core of its own if it can get one."""
    started = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(processes)]
    try:
        yield
    finally:
        for process in started:
            process.kill()
            process.wait()


def test_two_threads_train_the_same_bits_quiet_and_beside_a_busy_process(
    tiny_data, tiny_model_config
) -> None:
    before = torch.get_num_threads()
    # two steps and their validation: enough to pass every op of a step, the LayerNorm and
    # LSTM gradients whose sums are split by thread included
    training = tiny_training(threads=2, max_steps_per_epoch=2, validate_initial=False)
    trained = []
    try:
        for busy in (0, 2):
            with competing(busy):
                trainer = make_trainer(tiny_data, tiny_model_config, training)
                assert torch.get_num_threads() == 2
                trainer.fit()
            trained.append(weights(trainer))
    finally:
        torch.set_num_threads(before)
        threads_module._ours = threads_module._last = None
    quiet, loaded = trained
    assert quiet.keys() == loaded.keys()
    differ = [name for name in quiet if not torch.equal(quiet[name], loaded[name])]
    assert not differ, f"weights differ beside a busy process: {differ}"
