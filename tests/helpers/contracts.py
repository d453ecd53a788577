"""Two overlapping ES contracts, the later one 20 points above: the roll test files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from foxhunt.data import generate_bars

PER_SESSION = 276  # 5-minute bars of a 23-hour session
OFFSET = 20.0  # points: the later contract trades this far above the earlier one
ROLL_SESSION = 12  # the first session in which the later contract trades more


def _contract(base: pd.DataFrame, name: str, sessions: range, offset: float) -> pd.DataFrame:
    rows = base.iloc[sessions.start * PER_SESSION : sessions.stop * PER_SESSION].copy()
    rows[["open", "high", "low", "close"]] += offset
    session = np.arange(len(rows)) // PER_SESSION + sessions.start
    active = (session < ROLL_SESSION) == (name == "ESH5")
    rows["volume"] = np.where(active, rows["volume"], rows["volume"] // 5)
    rows["contract"] = name
    return rows


def write_contract_files(root: Path) -> dict[str, Path]:
    """ESH5 in sessions 0-15, ESM5 (+20 points) in sessions 8-23, shuffled, with a contract
    column ("contracts"); and the continuous series a vendor ships without one
    ("continuous": ESH5, then ESM5 from session 12's first bar)."""
    base = generate_bars(days=24, seed=7, reopen_gap=0.5)  # reopenings as quiet as real ES's
    early = _contract(base, "ESH5", range(0, 16), 0.0)
    late = _contract(base, "ESM5", range(8, 24), OFFSET)
    paths = {"contracts": root / "contracts.parquet", "continuous": root / "continuous.parquet"}
    pd.concat([late, early]).sample(frac=1.0, random_state=0).to_parquet(paths["contracts"])
    cut = ROLL_SESSION * PER_SESSION
    vendor = pd.concat([early.iloc[:cut], late.iloc[cut - 8 * PER_SESSION :]])
    vendor.drop(columns="contract").to_parquet(paths["continuous"])
    return paths
