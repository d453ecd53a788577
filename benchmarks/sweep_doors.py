"""The hostile sweep of issue 42's new doors: `foxhunt planted`, training on planted bars (the
oracle rows), `--feature-store`, `--feature-groups`, `--base`, the `foxhunt::grn_cells` op's
environment, and backtest's fold 0. Each case runs `foxhunt` in a fresh process (a timeout
each) in a folder of its own, and gets one verdict (docs/reliability.md, section 9):

    good          what it should: exit 0 doing the right thing, or exit 2 with one
                  `foxhunt: error:` line naming the file/field at fault
    traceback     exit 1 (`internal error`), a Python traceback, or killed by a signal
    unclear       a refusal in more than one line, or one that does not name what is wrong;
                  or exit 2 where the input was valid
    silent-wrong  exit 0 where it should have refused, or a result that is not what was asked
    data-loss     a file that existed before (bars, a run, a store entry) changed or vanished
    hang          still running at its timeout

Cases that need a full or read-only folder mount a small tmpfs (root only; skipped
otherwise). Kept out of the test suite: a minute or two per door on a busy 2-core machine.

    .venv/bin/python benchmarks/sweep_doors.py                   # every case
    .venv/bin/python benchmarks/sweep_doors.py --only planted    # cases whose door starts so
    .venv/bin/python benchmarks/sweep_doors.py --json out.json   # the verdicts as JSON too
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _sweep_cases import CASES, SHARED
from _sweep_cases2 import CASES2, restore
from _sweep_kit import VERDICTS, Case, Result, mounts, snapshot

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Outcome:
    case: Case
    verdict: str
    why: str
    seconds: float


def foxhunt(
    argv: list[str], cwd: Path, env: dict[str, str], timeout: float, *, fsize: int | None = None
) -> Result:
    cmd = [sys.executable, "-m", "foxhunt", *argv]
    limit = None
    if fsize is not None:
        import resource

        def limit() -> None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=limit,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        hung = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        hung = True
    return Result(proc.returncode, out, err, hung, time.perf_counter() - start)


def killed_midway(case: Case, work: Path, env: dict[str, str]) -> None:
    """Start `case.argv`, kill -9 it once `case.kill_when(work)` holds (or after kill_after)."""
    cmd = [sys.executable, "-m", "foxhunt", *case.argv]
    proc = subprocess.Popen(
        cmd,
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + case.timeout
    start = time.monotonic()
    while proc.poll() is None and time.monotonic() < deadline:
        if case.kill_when is not None and case.kill_when(work):
            break
        if case.kill_when is None and time.monotonic() - start >= (case.kill_after or 0):
            break
        time.sleep(0.05)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def together(case: Case, work: Path, env: dict[str, str]) -> Result:
    """`case.argv` twice at once; the worse of the two results."""
    cmd = [sys.executable, "-m", "foxhunt", *case.argv]
    procs = [
        subprocess.Popen(
            [*cmd[:-1], f"{cmd[-1]}{i}"],
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in (1, 2)
    ]
    start = time.perf_counter()
    results = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=case.timeout)
            results.append(Result(p.returncode, out, err, False, 0.0))
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            results.append(Result(p.returncode, out, err, True, 0.0))
    worst = max(results, key=lambda r: (r.hung, r.code != 0))
    worst.seconds = time.perf_counter() - start
    return worst


def judge(case: Case, work: Path, res: Result, before: dict[str, bytes | None]) -> tuple[str, str]:
    err = res.err
    if res.hung:
        return "hang", f"still running after {case.timeout:.0f} s"
    if "Traceback" in err or res.code == 1 or res.code < 0 or "internal error" in err:
        line = next((x for x in err.splitlines() if "error" in x.lower()), err[-200:])
        return "traceback", f"exit {res.code}: {line.strip()[:200]}"
    after = snapshot(work, case.keep)
    changed = [p for p in case.keep if before.get(p) != after.get(p)]
    if changed:
        return "data-loss", f"changed or gone: {changed}"
    errors = [x for x in err.splitlines() if x.startswith("foxhunt: error:")]
    if case.expect == "refuse":
        if res.code == 0:
            return "silent-wrong", "exit 0 where a refusal was due"
        if res.code != 2 or len(errors) != 1:
            return "unclear", f"exit {res.code}, {len(errors)} error lines: {err[-200:]!r}"
        missing = [w for w in case.mentions if w.lower() not in errors[0].lower()]
        if missing:
            return "unclear", f"does not name {missing}: {errors[0][:200]}"
    elif res.code != 0:
        return "unclear", f"exit {res.code} on a valid input: {(errors or [err[-200:]])[0]}"
    found = None if case.check is None else case.check(work, res)
    if found is not None:  # a wrong result outranks a missing word
        return found
    missing = [w for w in case.mentions if w.lower() not in (err + res.out).lower()]
    if case.expect == "ok" and missing:
        return "unclear", f"output does not say {missing}"
    line = errors[0] if errors else "exit 0"
    return "good", line[:200]


def run_case(case: Case, root: Path, env: dict[str, str]) -> Outcome:
    work = root / case.slug
    while work.exists():  # two cases of one name
        work = work.with_name(work.name + "+")
    work.mkdir(parents=True)
    env = {**env, **{k: v.format(w=work) for k, v in case.env.items()}}
    try:
        if case.setup is not None:
            case.setup(work)
    except mounts.Unavailable as exc:
        return Outcome(case, "skipped", str(exc), 0.0)
    before = snapshot(work, case.keep)
    if case.kill_when is not None or case.kill_after is not None:
        killed_midway(case, work, env)
    if case.twice:
        res = together(case, work, env)
    else:
        argv = case.rerun or case.argv
        res = foxhunt(argv, work, env, case.timeout, fsize=case.fsize)
    verdict, why = judge(case, work, res, before)
    return Outcome(case, verdict, why, res.seconds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", default="", help="run the cases whose door starts so (a comma-separated list)"
    )
    parser.add_argument(
        "--case", default="", help="run the cases whose name holds this (or any of a|b|...)"
    )
    parser.add_argument("--start", default="", help="skip the cases before the first so named")
    parser.add_argument("--json", type=Path, help="write the verdicts here too")
    parser.add_argument("--src", type=Path, default=REPO / "src", help="foxhunt's source")
    parser.add_argument("--keep", action="store_true", help="keep the cases' folders")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="foxhunt-sweep-"))
    env = {**os.environ, "PYTHONPATH": str(args.src.resolve())}
    env.setdefault("TORCH_EXTENSIONS_DIR", str(Path.home() / ".cache" / "foxhunt-sweep-ext"))
    SHARED.make(root / "shared", env)
    outcomes = []
    try:
        for case in [*CASES, *CASES2]:
            names = args.case.split("|")
            if not case.door.startswith(tuple(args.only.split(","))) or not any(
                n in case.name for n in names
            ):
                continue
            if args.start and args.start not in case.name:
                continue
            args.start = ""  # found: every case from here on
            outcome = run_case(case, root, env)
            outcomes.append(outcome)
            print(
                f"{outcome.verdict:12s} {case.door:16s} {case.name}: {outcome.why} "
                f"({outcome.seconds:.0f} s)",
                flush=True,
            )
    finally:
        restore()  # a kernel case's damaged cache
        mounts.release_all()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print_table(outcomes)
    if args.json:
        rows = [
            {"door": o.case.door, "case": o.case.name, "verdict": o.verdict, "why": o.why}
            for o in outcomes
        ]
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


def print_table(outcomes: list[Outcome]) -> None:
    doors = list(dict.fromkeys(o.case.door for o in outcomes))
    print("\n| door | " + " | ".join(VERDICTS) + " |")
    print("| --- |" + " --- |" * len(VERDICTS))
    for door in doors:
        counts = Counter(o.verdict for o in outcomes if o.case.door == door)
        cells = " | ".join(str(counts.get(v, "")) for v in VERDICTS)
        print(f"| {door} | {cells} |")
    total = Counter(o.verdict for o in outcomes)
    print("| all | " + " | ".join(str(total.get(v, 0)) for v in VERDICTS) + " |")
    print(f"({len(outcomes)} cases; skipped: {total.get('skipped', 0)})")


if __name__ == "__main__":
    sys.exit(main())
