"""``qmon replay`` through the real Spark query: the per-structure operator (SPEC §5)."""

from __future__ import annotations

import json
import random

import pytest

from connectors import avro
from qmon import topics
from qmon.config import Config
from qmon.queues import MonitorSettings
from qmon.reference import run_reference
from tests.streams import STRUCTURE_CONFIG, random_structure_stream

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
CONFIG = Config.model_validate({"job": {"queue_buckets": 2}, **STRUCTURE_CONFIG})


def put(ts, queue, nbytes=512, structure="MSGQ1", i=[0]):
    i[0] += 1
    return {"event_id": f"p{i[0]}", "qmgr": "IMSA", "queue": queue, "op": "PUT", "ts": T0 + ts,
            "msg_bytes": nbytes, "structure": structure}


def get(ts, queue, nbytes=512, structure="MSGQ1", i=[0]):
    i[0] += 1
    return {"event_id": f"g{i[0]}", "qmgr": "IMSA", "queue": queue, "op": "GET", "ts": T0 + ts,
            "msg_bytes": nbytes, "structure": structure}


def test_alter_overflow_candidates_and_full_through_replay(replay_factory):
    # MSGQ1: INITSIZE 20 KB (40 elements), SIZE 40 KB (80), OVFLWMAX 70, no overflow structure
    records = [put(i, "1PAYROLL") for i in range(28)]          # 28/40 = 70%: alter to 28 KB (56 el)
    records += [put(100 + i, "1KEEPME") for i in range(12)]     # 40/56 = 71%: alter to SIZE 40 KB (80 el)
    records += [put(200 + i, "1ORDERS", 2048) for i in range(4)]  # 56/80 = 70% at SIZE: overflow mode
    records += [put(300, "1PAYROLL")]                            # approved queue: puts rejected
    out = replay_factory(records, CONFIG)
    alerts = [r for r in out if r["topic"] == topics.STRUCTURE]
    assert [(a["type"], a["state"]) for a in alerts] == [
        ("STRUCTURE_ALTERED", "INFO"), ("STRUCTURE_ALTERED", "INFO"), ("OVERFLOW_MODE_ENTERED", "FIRING"),
        ("QUEUE_PUTS_REJECTED", "FIRING")]
    assert [(a["size_kb_before"], a["size_kb_after"]) for a in alerts[:2]] == [(20, 28), (28, 40)]
    cands = [r for r in out if r["topic"] == topics.OVERFLOW]
    assert len(cands) == 1
    assert [(c["queue"], c["elements"], c["decision"]) for c in cands[0]["candidates"]] == [
        ("1PAYROLL", 28, "approve")]  # 56 - 28 = 28 -> 35% <= 50%: stop
    assert alerts[3]["queue"] == "1PAYROLL"


def test_structure_full_message_through_replay(replay_factory):
    records = [put(i, "1TRAN", structure="RSRC1") for i in range(17)]  # 16 elements; the 17th does not fit
    records.append(get(100, "1TRAN", structure="RSRC1"))
    out = replay_factory(records, CONFIG)
    alerts = [(a["type"], a["state"], a["message"]) for a in out if a["topic"] == topics.STRUCTURE
              and a["type"].startswith("STRUCTURE_FULL")]
    assert alerts == [("STRUCTURE_FULL", "FIRING", "CQS0205E STRUCTURE RSRC1 IS FULL"),
                      ("STRUCTURE_FULL_RELIEVED", "RESOLVED", None)]


def _normalise(topic, record):
    data = avro.encode(topics.RECORD_OF[topic], record)
    return json.dumps({"topic": topic, **avro.to_jsonable(avro.decode(topics.RECORD_OF[topic], data))},
                      sort_keys=True)


def test_structure_operator_equals_pure_module_over_random_streams(replay_factory):
    rng = random.Random(5)
    records = random_structure_stream(rng, n=600)
    out = replay_factory(records, CONFIG)
    got = sorted(json.dumps(r, sort_keys=True) for r in out if r["topic"] in (topics.STRUCTURE, topics.OVERFLOW))
    want = sorted(_normalise(e.topic, e.record) for e in run_reference(
        records, MonitorSettings(), final_clock=max(r["ts"] for r in records),
        structure_settings=CONFIG.structure_settings()))
    assert got == want
    kinds = {json.loads(g)["type"] for g in got if json.loads(g)["topic"] == topics.STRUCTURE}
    assert {"STRUCTURE_ALTERED", "OVERFLOW_MODE_ENTERED", "STRUCTURE_FULL", "STRUCTURE_FULL_RELIEVED",
            "QUEUE_OVERFLOW_ENDED", "OVERFLOW_STRUCTURE_FULL", "QUEUE_PUTS_REJECTED", "STRUCTURE_NEAR_FULL",
            "STRUCTURE_UNKNOWN"} <= kinds, kinds
