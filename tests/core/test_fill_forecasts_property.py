"""Forecasts never change the MQ and CQS events (hypothesis): over generated streams of activity and commands,
the pure reference with fill forecasts and without gives the same records but the forecasts' own, in the same
order, with the same ids; and every forecast episode is one FIRING then at most one RESOLVED."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qmon.core.config import Config
from qmon.core.forecaster import ForecastSettings
from qmon.core.queues import MonitorSettings, QueueDefaults
from qmon.core.records import Emit
from qmon.core.reference import run_reference
from tests.strategies import structure_streams
from tests.streams import STRUCTURE_CONFIG, random_stream, random_structure_stream

FORECASTS = ("STRUCTURE_FILL_FORECAST", "QUEUE_FILL_FORECAST")
STRUCTURES = Config.model_validate(STRUCTURE_CONFIG).structure_settings()
QUEUES = MonitorSettings(
    perfmev="ENABLED",
    queue_defaults=(QueueDefaults("Q*", {"MAXDEPTH": 12, "QDEPTHHI": 50, "QDPHIEV": True, "QDPMAXEV": True}),),
)
#: horizons: a short one (a 2-second step) for the forecasts to fire within these streams, and the default
HORIZONS = st.sampled_from([60_000, 15 * 60_000])


def _run(records: list[dict[str, Any]], horizon_ms: int, final_clock: int | None) -> list[Emit]:
    forecast = ForecastSettings(horizon_ms=horizon_ms, min_confidence=0.3)
    return run_reference(
        records,
        replace(QUEUES, forecast=forecast),
        final_clock=final_clock,
        structure_settings=replace(STRUCTURES, forecast=forecast),
    )


def _without_forecasts(out: list[Emit]) -> list[Emit]:
    return [e for e in out if e.record.get("type") not in FORECASTS]


def _episodes(out: list[Emit]) -> None:
    seen: dict[str, str] = {}
    for e in out:
        r = e.record
        if r.get("type") in FORECASTS:
            if r["state"] == "FIRING":
                assert r["alert_id"] not in seen and r["eta"] is not None and r["eta"] >= r["ts"]
            else:
                assert seen.get(r["alert_id"]) == "FIRING" and r["eta"] is None
            seen[r["alert_id"]] = r["state"]


def _stretched(records: list[dict[str, Any]], factor: int) -> list[dict[str, Any]]:
    """The same stream over ``factor`` times the time, so that it spans samples of either horizon."""
    t0 = records[0]["ts"]
    return [{**r, "ts": t0 + (r["ts"] - t0) * factor} for r in records]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=structure_streams(), horizon_ms=HORIZONS, factor=st.sampled_from([1, 7]), clock=st.booleans())
def test_a_structure_s_cqs_records_are_the_same_with_forecasts_and_without(records, horizon_ms, factor, clock):
    records = _stretched(records, factor)
    final = records[-1]["ts"] + 3_600_000 if clock else None
    with_forecasts = _run(records, horizon_ms, final)
    assert _without_forecasts(with_forecasts) == _run(records, 0, final)
    _episodes(with_forecasts)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), horizon_ms=HORIZONS, clock=st.booleans())
def test_a_queue_s_mq_events_are_the_same_with_forecasts_and_without(seed, n, horizon_ms, clock):
    """Puts (some failing with MQRC_Q_FULL), gets, STARTs and MQSC commands (MAXDEPTH, QDEPTHHI, PERFMEV)."""
    records = _stretched(random_stream(random.Random(seed), "QM1", n=n, queues=3), 5)
    final = records[-1]["ts"] + 3_600_000 if clock else None
    with_forecasts = _run(records, horizon_ms, final)
    assert _without_forecasts(with_forecasts) == _run(records, 0, final)
    _episodes(with_forecasts)


def test_the_streams_above_do_raise_forecasts():
    """Not vacuous: the short horizon's forecasts fire in such streams, for structures and for queues."""
    kinds: set[str] = set()
    for seed in range(20):
        rng = random.Random(seed)
        records = _stretched(random_stream(rng, "QM1", n=300, queues=3), 5) + random_structure_stream(rng)
        kinds.update(e.record["type"] for e in _run(records, 60_000, None) if e.record.get("type") in FORECASTS)
    assert kinds == set(FORECASTS)
