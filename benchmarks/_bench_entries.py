"""The rows benchmarks/throughput.py times in its interleaved rounds: the reference shape's
two libraries, foxhunt at 1 thread under contention, and each further shape's libraries with
foxhunt plain and checkpointed; and their results once the rounds are done."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from types import ModuleType
from typing import Any

from _bench_config import BenchConfig, ModelShape
from _bench_measure import memory_shortfall, saved_for_backward_bytes
from _bench_models import (
    FoxhuntRunner,
    PFRunner,
    Runner,
    Trainer,
    parameter_count,
    synthetic_batches,
)
from _bench_rounds import Entry, EntryResult, Rounds


def build_entries(
    config: BenchConfig, pf: ModuleType | None, say: Callable[[str], None]
) -> tuple[list[Entry], dict[str, Runner]]:
    """The timed rows: the reference shape's two libraries (and foxhunt at 1 thread under
    contention), then each of `config.shapes` with foxhunt plain and checkpointed."""
    entries: list[Entry] = []
    runners: dict[str, Runner] = {}

    def add(label: str, shape_name: str, runner: Runner, shape: ModelShape, **kw: Any) -> None:
        batches = synthetic_batches(shape, 2, config.seed)
        trainer = Trainer(runner, batches, config.lr)
        entries.append(
            Entry(
                label,
                shape_name,
                shape,
                trainer,
                kw.get("steps", config.steps),
                kw.get("threads", config.threads),
                # steps of seconds: the step that counts the FLOP warmed it, none needed after
                warmup=0 if "steps" in kw else None,
            )
        )
        runners[label] = runner
        say(f"{label}: {parameter_count(runner.model):,} parameters")

    shape = config.shape
    if pf is not None:  # pf first: pf, foxhunt, pf, ...
        add("pytorch-forecasting", "reference", PFRunner(shape, config.seed, pf), shape)
    add("foxhunt", "reference", FoxhuntRunner(shape, config.seed), shape)
    if config.contention:
        add("foxhunt, 1 thread", "reference", FoxhuntRunner(shape, config.seed), shape, threads=1)
    for name, big in config.shapes:
        steps = config.large_steps
        if pf is not None:
            runner = PFRunner(big, config.seed, pf)
            short = memory_shortfall(runner, big)
            if short is None:
                add(f"{name} pytorch-forecasting", name, runner, big, steps=steps)
            else:
                say(f"{name} pytorch-forecasting skipped: {short}")
        add(f"{name} foxhunt", name, FoxhuntRunner(big, config.seed), big, steps=steps)
        full = replace(big, checkpointing="full")
        add(
            f"{name} foxhunt checkpointed",
            name,
            FoxhuntRunner(full, config.seed),
            full,
            steps=steps,
        )
    return entries, runners


def entry_results(
    entries: list[Entry], rounds: Rounds, runners: dict[str, Runner]
) -> list[EntryResult]:
    results = []
    for entry in entries:
        batch = synthetic_batches(entry.shape, 1, 0)[0]
        saved = saved_for_backward_bytes(runners[entry.label], batch)
        round_s = [t.median_s for t in rounds.timings[entry.label]]
        results.append(EntryResult.of(entry, round_s, saved))
    return results
