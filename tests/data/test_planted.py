"""The planted-signal market: its oracle is right, every driver is causal, bad configs name
the field."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from foxhunt.data.planted import PlantedConfig, generate_planted, oracle_quantiles
from foxhunt.data.planted.files import planted_config_of, write_planted
from foxhunt.data.planted.generate import draws, timeline
from foxhunt.errors import ConfigError

LEVELS = (0.1, 0.5, 0.9)


def _returns(frame, symbols):  # [T, S] log returns, as the oracle forecasts them
    closes = [np.log(frame.loc[frame["symbol"] == s, "close"].to_numpy()) for s in symbols]
    opens = [np.log(frame.loc[frame["symbol"] == s, "open"].to_numpy()) for s in symbols]
    return np.stack([c - o for c, o in zip(closes, opens, strict=True)], axis=1)


@pytest.mark.parametrize("kind", ["bars", "latent"])
def test_the_oracle_covers_its_quantiles_within_binomial_error(kind):
    """One step ahead, each bar's probability integral transform under the true law is
    independent and uniform, so the share of returns below each forecast quantile is
    binomial around the level: within 4 standard errors on ~10,000 bars."""
    cfg = PlantedConfig(days=24, seed=5, symbols=("ES", "NQ"), cross_lead=0.5)
    made = generate_planted(cfg)
    high = made.latent["high"].to_numpy().reshape(2, -1).T
    oracle = oracle_quantiles(made.frame, cfg, horizon=1, quantiles=LEVELS, kind=kind,
                              latent_high=high, paths=400)  # fmt: skip
    r = _returns(made.frame, cfg.symbols)
    t = np.searchsorted(timeline(cfg).times_ns, oracle.anchors_ns)
    realized = r[t + 1]  # [W, S]
    below = realized[..., None] < oracle.quantiles[:, :, 0, :]  # [W, S, Q]
    n = below.shape[0] * below.shape[1]
    for i, level in enumerate(LEVELS):
        share = below[..., i].mean()
        assert abs(share - level) < 4 * np.sqrt(level * (1 - level) / n), (kind, level, share)


def test_the_oracle_from_the_latent_state_is_the_floor():
    """The oracle that knows the regime loses no more than the one that filters it."""
    cfg = PlantedConfig(days=30, seed=2, regime_size=3.0, regime_volume=0.2)
    made = generate_planted(cfg)
    high = made.latent["high"].to_numpy()[:, None]
    r = _returns(made.frame, cfg.symbols)[:, 0]
    losses = {}
    for kind in ("bars", "latent"):
        o = oracle_quantiles(made.frame, cfg, horizon=1, quantiles=LEVELS, kind=kind,
                             latent_high=high, paths=400)  # fmt: skip
        t = np.searchsorted(timeline(cfg).times_ns, o.anchors_ns)
        e = r[t + 1][:, None] - o.quantiles[:, 0, 0, :]
        q = np.asarray(LEVELS)
        losses[kind] = np.maximum(q * e, (q - 1) * e).mean()
    assert losses["latent"] <= losses["bars"] * 1.001, losses


def _changed(cfg: PlantedConfig, t: int, plant) -> tuple:
    first, shocks = draws(cfg, len(timeline(cfg).times_ns))
    planted = {k: v.copy() for k, v in vars(shocks).items()}
    plant(planted, t)
    before = generate_planted(cfg, (first, shocks))
    after = generate_planted(cfg, (first, type(shocks)(**planted)))
    return before, after


def _rows_before(made, symbol, t):
    rows = made.frame.index[made.frame["symbol"] == symbol][:t]
    return made.frame.loc[rows], made.latent.loc[rows]


@pytest.mark.parametrize(
    ("driver", "plant", "moved"),
    [
        ("volume_lead", lambda s, t: s["spike"].__setitem__((t, 0), 0.0), "ES"),
        ("regime", lambda s, t: s["switch"].__setitem__((t, 0), 0.0), "ES"),
        ("cross_lead", lambda s, t: s["z"].__setitem__((t, 0), 6.0), "NQ"),
    ],
)
def test_a_driver_planted_at_a_bar_moves_nothing_before_it(driver, plant, moved):
    """A volume spike, a regime switch or a leader's jump planted at bar t: every bar and
    latent value of every symbol before t is unchanged, and the driven symbol's volatility
    after t moves (the driver works)."""
    cfg = PlantedConfig(days=4, seed=1, symbols=("ES", "NQ"), cross_lead=0.8)
    t = 500
    before, after = _changed(cfg, t, plant)
    for symbol in cfg.symbols:
        for a, b in zip(_rows_before(before, symbol, t), _rows_before(after, symbol, t),
                        strict=True):  # fmt: skip
            assert a.equals(b), (driver, symbol)
    rows = np.flatnonzero(before.frame["symbol"] == moved)[t + 1 : t + 4]
    sigma_before = before.latent["sigma"].to_numpy()[rows]
    sigma_after = after.latent["sigma"].to_numpy()[rows]
    assert not np.allclose(sigma_before, sigma_after), driver


def test_the_release_moves_only_its_own_bar_and_later():
    cfg = PlantedConfig(days=6, seed=3)
    on, off = generate_planted(cfg), generate_planted(cfg.without("event"))
    line = timeline(cfg)
    first = int(np.flatnonzero(np.isin(line.weekday, cfg.event_weekdays)
                               & (line.minute == cfg.event_minute))[0])  # fmt: skip
    assert on.frame.iloc[:first].equals(off.frame.iloc[:first])
    ratio = on.latent["sigma"].to_numpy()[first] / off.latent["sigma"].to_numpy()[first]
    assert ratio == pytest.approx(cfg.event_size)


def test_the_same_config_gives_the_same_bars_and_a_file_remembers_it(tmp_path):
    cfg = PlantedConfig(days=2, seed=9)
    a, b = generate_planted(cfg), generate_planted(cfg)
    assert a.frame.equals(b.frame)
    path = tmp_path / "bars.parquet"
    write_planted(a, path)
    assert planted_config_of(path) == cfg
    path.write_bytes(path.read_bytes() + b"\0")  # edited: no longer the generator's bars
    assert planted_config_of(path) is None
    record = json.loads((tmp_path / "bars.parquet.planted.json").read_text())
    assert record["planted"]["days"] == 2


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"days": 0}, "PlantedConfig.days"),
        ({"volume_lead": 9.0}, "PlantedConfig.volume_lead"),
        ({"event_size": 0.5}, "PlantedConfig.event_size"),
        ({"calendar": "NOT_A_CALENDAR"}, "PlantedConfig.calendar"),
        ({"cross_lead": 0.5}, "PlantedConfig.cross_lead"),
        ({"event_weekdays": (6,)}, "PlantedConfig.event_weekdays"),
        ({"event_minute": 602}, "PlantedConfig.event_minute"),
    ],
)
def test_a_bad_config_names_its_field(change, field):
    with pytest.raises(ConfigError, match=field):
        dataclasses.replace(PlantedConfig(), **change)
