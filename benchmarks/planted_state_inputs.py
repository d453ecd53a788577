"""Is it the inputs or the learning? A planted market with the oracle's own state as inputs.

Writes a copy of a planted market (`foxhunt planted`) with columns that hold what the oracle
from the bars knows and the feature library may not show, each computed from the bars up to
that row (causal: the generator's observable path and its Hamilton filter), and the copy's
own record (same config, the copy's SHA-256), so a run on it still scores the oracle:

    lead_c      the row's own decayed leader moves c (the cross-instrument driver's state,
                dynamics.advance; 0 for the leader)
    lead_high   the probability that the leader is in its high regime (oracle.regime_probability),
                which sets the drift of the followers' c over the forecast horizon

Train on the copy with those columns as past inputs and compare the gap closed with the same
run without them. If the state itself does not lift the followers' share, no input of the
leader will; what holds the network back is then the learning, not what it is shown:

    .venv/bin/python -m foxhunt planted /tmp/all.parquet --symbols ES,NQ --cross-lead 0.5 \
        --days 240 --seed 0
    .venv/bin/python benchmarks/planted_state_inputs.py /tmp/all.parquet /tmp/state.parquet
    .venv/bin/python -m foxhunt train --parquet-file /tmp/state.parquet --max-gap 10min \
        --seed 0 --feature-groups activity:12,cross:1 --observed-columns lead_c,lead_high
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from foxhunt.data.planted.config import PlantedConfig
from foxhunt.data.planted.files import planted_config_of, write_planted
from foxhunt.data.planted.generate import PlantedBars
from foxhunt.data.planted.oracle import read_bars, regime_probability

COLUMNS = ("lead_c", "lead_high")


def state_columns(frame: pd.DataFrame, cfg: PlantedConfig) -> dict[str, np.ndarray]:
    """The oracle's state per row of `frame` (the bars `cfg` made)."""
    read = read_bars(frame, cfg)
    c = np.array([state.c for state in read.path[1:]])  # [T, S]: after each bar
    high = regime_probability(read.law, read.clock, read.seen, read.path)  # [T, S]
    symbols = frame["symbol"].astype(str).to_numpy()
    out = {name: np.zeros(len(frame)) for name in COLUMNS}
    for j, symbol in enumerate(cfg.symbols):
        rows = symbols == symbol  # the generator's rows: each symbol's bars in time order
        out["lead_c"][rows] = c[:, j]
        out["lead_high"][rows] = high[:, 0]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bars", type=Path, help="a planted market of several symbols")
    parser.add_argument("out", type=Path, help="the copy with the state columns (.parquet)")
    args = parser.parse_args()
    if not args.bars.is_file():
        print(f"{args.bars}: no such file; write one with foxhunt planted", file=sys.stderr)
        sys.exit(2)
    cfg = planted_config_of(args.bars)
    if cfg is None or len(cfg.symbols) < 2 or cfg.cross_lead <= 0:
        print(f"{args.bars}: not a planted market with a cross lead", file=sys.stderr)
        sys.exit(2)
    frame = pd.read_parquet(args.bars)
    copy = frame.assign(**state_columns(frame, cfg))
    # foxhunt planted's own writer: the copy and its record (the config, the copy's SHA-256)
    # both or neither; it reads the frame and the config, not the latent path
    write_planted(PlantedBars(frame=copy, latent=pd.DataFrame(), config=cfg), args.out)
    print(f"{args.out}: {len(copy)} bars with {', '.join(COLUMNS)} (no timing: any CPU)")


if __name__ == "__main__":
    main()
