"""``qmon replay`` through the real Spark query: the per-structure operator."""

from __future__ import annotations

import itertools
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings

from qmon.connectors import avro
from qmon.core import topics
from qmon.core.config import Config
from qmon.core.queues import MonitorSettings
from qmon.core.reference import run_reference
from tests.strategies import structure_streams
from tests.streams import STRUCTURE_CONFIG, random_structure_stream

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
CONFIG = Config.model_validate({"job": {"queue_shards": 2}, **STRUCTURE_CONFIG})


_ids = itertools.count(1)


def put(ts, queue, nbytes=512, structure="MSGQ1"):
    return {
        "event_id": f"p{next(_ids)}",
        "qmgr": "IMSA",
        "queue": queue,
        "op": "PUT",
        "ts": T0 + ts,
        "msg_bytes": nbytes,
        "structure": structure,
    }


def get(ts, queue, nbytes=512, structure="MSGQ1"):
    return {
        "event_id": f"g{next(_ids)}",
        "qmgr": "IMSA",
        "queue": queue,
        "op": "GET",
        "ts": T0 + ts,
        "msg_bytes": nbytes,
        "structure": structure,
    }


def test_alter_overflow_candidates_and_full_through_replay(replay_factory):
    # MSGQ1: INITSIZE 20 KB (40 elements), SIZE 40 KB (80), OVFLWMAX 70, no overflow structure
    records = [put(i, "1PAYROLL") for i in range(28)]  # 28/40 = 70%: alter to 28 KB (56 el)
    records += [put(100 + i, "1KEEPME") for i in range(12)]  # 40/56 = 71%: alter to SIZE 40 KB (80 el)
    records += [put(200 + i, "1ORDERS", 2048) for i in range(4)]  # 56/80 = 70% at SIZE: overflow mode
    records += [put(300, "1PAYROLL")]  # approved queue: puts rejected
    out = replay_factory(records, CONFIG)
    alerts = [r for r in out if r["topic"] == topics.ALERTS]
    assert [(a["type"], a["state"]) for a in alerts] == [
        ("STRUCTURE_ALTERED", "INFO"),
        ("STRUCTURE_ALTERED", "INFO"),
        ("OVERFLOW_MODE_ENTERED", "FIRING"),
        ("QUEUE_PUTS_REJECTED", "FIRING"),
    ]
    assert [(a["size_kb_before"], a["size_kb_after"]) for a in alerts[:2]] == [(20, 28), (28, 40)]
    cands = [r for r in out if r["topic"] == topics.OVERFLOW]
    assert len(cands) == 1
    assert [(c["queue"], c["elements"], c["decision"]) for c in cands[0]["candidates"]] == [
        ("1PAYROLL", 28, "approve")
    ]  # 56 - 28 = 28 -> 35% <= 50%: stop
    assert alerts[3]["queue"] == "1PAYROLL"


def test_structure_full_message_through_replay(replay_factory):
    records = [put(i, "1TRAN", structure="RSRC1") for i in range(17)]  # 16 elements; the 17th does not fit
    records.append(get(100, "1TRAN", structure="RSRC1"))  # 15/16: below 95%, held for clear_hold (30 s) ...
    records.append(put(60_000, "1OTHER", structure="MSGQ2"))  # ... while event time moves on: relieved
    out = replay_factory(records, CONFIG)
    alerts = [
        (a["type"], a["state"], a["message"])
        for a in out
        if a["topic"] == topics.ALERTS and a["type"].startswith("STRUCTURE_FULL")
    ]
    assert alerts == [
        ("STRUCTURE_FULL", "FIRING", "CQS0205E STRUCTURE RSRC1 IS FULL"),
        ("STRUCTURE_FULL_RELIEVED", "RESOLVED", None),
    ]


def _normalise(topic, record):
    data = avro.encode(topics.RECORD_OF[topic], record)
    return json.dumps({"topic": topic, **avro.to_jsonable(avro.decode(topics.RECORD_OF[topic], data))}, sort_keys=True)


def _operator_equals_reference(replay_factory, records) -> list[str]:
    """Replay ``records`` through Spark and assert the structure outputs equal the pure module's; returns them."""
    out = replay_factory(records, CONFIG)
    got = sorted(json.dumps(r, sort_keys=True) for r in out if r["topic"] in (topics.ALERTS, topics.OVERFLOW))
    want = sorted(
        _normalise(e.topic, e.record)
        for e in run_reference(
            records,
            MonitorSettings(),
            final_clock=max(r["ts"] for r in records),
            structure_settings=CONFIG.structure_settings(),
        )
    )
    assert got == want
    return got


def test_structure_operator_equals_pure_module_over_random_streams(replay_factory):
    rng = random.Random(5)
    records = random_structure_stream(rng, n=600)
    got = _operator_equals_reference(replay_factory, records)
    kinds = {json.loads(g)["type"] for g in got if json.loads(g)["topic"] == topics.ALERTS}
    assert {
        "STRUCTURE_ALTERED",
        "OVERFLOW_MODE_ENTERED",
        "STRUCTURE_FULL",
        "STRUCTURE_FULL_RELIEVED",
        "QUEUE_OVERFLOW_ENDED",
        "OVERFLOW_STRUCTURE_FULL",
        "QUEUE_PUTS_REJECTED",
        "STRUCTURE_NEAR_FULL",
        "STRUCTURE_UNKNOWN",
    } <= kinds, kinds


# ---------------------------------------------------------------- exact accounting, calm alerts

EXACT = Config.model_validate(
    {
        "job": {"queue_shards": 2},
        "structures": [
            {"strname": "LONGQ", "size": 20, "lgmsgsz": 1024},  # 40 elements
            {"strname": "SMALLOVF", "size": 30, "ovflwstr": "OVFS", "ovflwsize": 10},  # 60 + 20 elements
            {"strname": "BIG", "size": 10_000},  # 20,000 elements
            {"strname": "WOBBLE", "size": 50, "ovflwmax": 100, "fullthreshold": 80},
        ],  # 100 elements
        "overflow_exit": [{"queue": "1KEEP*", "decision": "reject"}],
    }
)


def test_long_messages_are_freed_with_their_staging_part_through_replay(replay_factory):
    """30 cycles of a 3,000-byte put (2 ready + 4 staging elements) and a get without msg_bytes;
    freeing only the ready part would reach OVFLWMAX (28 of 40 elements) in the 14th cycle."""
    records = []
    for i in range(30):
        records.append(put(10 * i, "5LTERM", 3000, structure="LONGQ"))
        records.append(get(10 * i + 5, "5LTERM", None, structure="LONGQ"))
    records.append(put(1_000, "5LTERM", 100, structure="LONGQ"))
    out = replay_factory(records, EXACT)
    assert [r for r in out if r["topic"] in (topics.ALERTS, topics.OVERFLOW)] == []


def test_the_overflow_structure_capacity_is_respected_through_replay(replay_factory):
    """1BIG (30 elements) does not fit in OVFS (20); 1MID (12) does."""
    records = [put(i, "1BIG", structure="SMALLOVF") for i in range(30)]
    records += [put(100 + i, "1MID", structure="SMALLOVF") for i in range(12)]  # 42/60 = 70%
    out = replay_factory(records, EXACT)
    [cands] = [r for r in out if r["topic"] == topics.OVERFLOW]
    assert [(c["queue"], c["decision"], c["in_overflow"]) for c in cands["candidates"]] == [
        ("1BIG", "approve", False),
        ("1MID", "approve", True),
    ]
    assert cands["usage_after_pct"] == 50.0


def test_selection_runs_once_while_usage_stays_above_ovflwmax_through_replay(replay_factory):
    """The exit rejects 1KEEPME; 20 more puts above OVFLWMAX select nothing more."""
    records = [put(i, "1KEEPME", structure="SMALLOVF") for i in range(42)]  # 70%: selection
    records += [put(100 + i, "1KEEPME", structure="SMALLOVF") for i in range(10)]  # 52/60
    out = replay_factory(records, EXACT)
    assert len([r for r in out if r["topic"] == topics.OVERFLOW]) == 1


def test_thresholds_use_exact_counts_through_replay(replay_factory):
    """13,999 of 20,000 elements (69.995%) is below OVFLWMAX 70; the 14,000th element is not."""
    records = [put(i, "4SERIAL", 1000 * 512, structure="BIG") for i in range(13)]
    records.append(put(20, "4SERIAL", 999 * 512, structure="BIG"))
    below = replay_factory(records, EXACT)
    assert [r for r in below if r["topic"] in (topics.ALERTS, topics.OVERFLOW)] == []
    at = replay_factory(records + [put(30, "4SERIAL", 100, structure="BIG")], EXACT)
    assert [(a["type"], a["state"]) for a in at if a["topic"] == topics.ALERTS] == [("OVERFLOW_MODE_ENTERED", "FIRING")]


def test_near_full_wobbling_is_one_episode_through_replay(replay_factory):
    """Usage wobbling 79% <-> 80% around FULLTHRESHOLD 80 is one FIRING; it resolves once usage has
    stayed below 75% (FULLTHRESHOLD - clear_margin) for clear_hold."""
    records = [put(i, "1TRAN", structure="WOBBLE") for i in range(80)]
    for k in range(10):
        records += [get(100 + 2 * k, "1TRAN", structure="WOBBLE"), put(101 + 2 * k, "1TRAN", structure="WOBBLE")]
    records += [get(200 + k, "1TRAN", structure="WOBBLE") for k in range(6)]  # 74% from 205 ms ...
    records += [put(60_000, "1OTHER", structure="BIG")]  # ... held 30 s of event time: RESOLVED at 30,205 ms
    out = replay_factory(records, EXACT)
    assert [(a["type"], a["state"], a["ts"] - T0) for a in out if a["topic"] == topics.ALERTS] == [
        ("STRUCTURE_NEAR_FULL", "FIRING", 79),
        ("STRUCTURE_NEAR_FULL", "RESOLVED", 30_205),
    ]


@settings(
    max_examples=3,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(records=structure_streams(max_size=300))
def test_structure_operator_equals_pure_module_over_generated_streams(replay_factory, records):
    """Hypothesis-generated streams (long messages, gets with and without msg_bytes, an overflow structure,
    redeliveries, failed puts): the Spark operator's output is exactly the pure module's."""
    _operator_equals_reference(replay_factory, records)


def test_a_resource_structure_is_neither_altered_nor_overflowed_through_replay(replay_factory):
    config = Config.model_validate(
        {"structures": [{"strname": "RES2", "size": 8, "initsize": 5, "type": "resource", "fullthreshold": 80}]}
    )
    out = replay_factory([put(i, "1TRAN", structure="RES2") for i in range(9)], config)  # 9 of 10 elements
    kinds = [r["type"] for r in out if r["topic"] == topics.ALERTS]
    assert "STRUCTURE_ALTERED" not in kinds and "OVERFLOW_MODE_ENTERED" not in kinds
    assert "STRUCTURE_NEAR_FULL" in kinds  # z/OS structure full monitoring still warns
    assert not [r for r in out if r["topic"] == topics.OVERFLOW]
