"""Start-up: `foxhunt --help` and every `foxhunt <command> --help` import no torch, scipy or
matplotlib (they once took seconds for a help text); the top-level help imports no pandas
either (every command's arguments are generated from its config dataclasses, and a command
reads DataConfig, which needs pandas, only when it parses its own line). One fresh
interpreter runs every help in turn, the top-level one first, and says which modules were
loaded after each."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from foxhunt.cli import build_parser

#: imported by no help text
HEAVY = ("torch", "scipy", "matplotlib")
#: the commands whose help reads no DataConfig: no pandas either
NO_DATA = ("export",)

CODE = """
import contextlib, io, json, sys
from foxhunt.cli import main

watched = {"torch", "scipy", "matplotlib", "pandas"}
out = []
for command in json.loads(sys.argv[1]):
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        try:
            code = main([*command, "--help"])
        except SystemExit as exc:
            code = exc.code
    loaded = sorted(watched & {name.split(".")[0] for name in sys.modules})
    out.append([" ".join(["foxhunt", *command, "--help"]), code, text.getvalue(), loaded])
print(json.dumps(out))
"""


def command_names() -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


def test_no_help_imports_torch_scipy_or_matplotlib() -> None:
    names = command_names()
    assert {"train", "predict", *NO_DATA} < set(names), names
    order = [[]] + [[n] for n in NO_DATA] + [[n] for n in names if n not in NO_DATA]
    run = subprocess.run(
        [sys.executable, "-c", CODE, json.dumps(order)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout.splitlines()[-1])
    assert len(found) == len(names) + 1
    for line, code, text, loaded in found:
        assert code in (0, None) and "usage:" in text, (line, code, text[:300])
        assert not set(HEAVY) & set(loaded), f"{line} imported {loaded}"
        if line.split()[1] in ("--help", *NO_DATA):
            assert "pandas" not in loaded, f"{line} imported {loaded}"
    train = next(text for line, _, text, _ in found if line == "foxhunt train --help")
    assert "--hidden-size" in train and "--lr" in train  # the generated flags are listed
    predict = next(text for line, _, text, _ in found if line == "foxhunt predict --help")
    assert "--parquet-file" in predict and "RUN_DIR" in predict  # DataConfig's, and its own


def test_loading_and_scoring_import_neither_scipy_stats_nor_scipy_signal() -> None:
    """What loads a saved run and scores it (predict, evaluate, export, report, the jobs)
    imports the runs, baselines, scoring and the task; scipy.stats and scipy.signal took 1-2 s
    more each. The tests of difference use scipy.special's functions behind scipy.stats' (the
    same numbers), the baselines import scipy.signal where they filter."""
    modules = "foxhunt.runs, foxhunt.baselines, foxhunt.task, foxhunt.scoring, foxhunt.report"
    code = f"import sys, {modules}, foxhunt.jobs.base; print(sorted(sys.modules))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    loaded = set(json.loads(run.stdout.replace("'", '"')))
    assert {"foxhunt.baselines.ewma", "foxhunt.task.difference", "torch"} <= loaded
    assert not {"scipy.stats", "scipy.signal"} & loaded
