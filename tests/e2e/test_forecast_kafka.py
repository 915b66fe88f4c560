"""What qmon does beyond IBM MQ and CQS, through the real path in one run of the job: a CF structure and a
queue filling steadily, as QueueActivity on Kafka, give STRUCTURE_FILL_FORECAST and QUEUE_FILL_FORECAST on the
alerts topic ahead of the real alerts, each with the instant it predicts; a shared queue's puts on one member
and gets on another give the service interval and depth events one queue manager would, whether the
configuration shares it or a member's DEFINE ... QSGDISP(SHARED) alone does.  All exactly as the pure rules give
them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from qmon.connectors import avro
from qmon.connectors.clients import send_commands
from qmon.connectors.kafka import ensure_topics
from qmon.core import topics
from qmon.core.config import Config
from qmon.core.reference import run_reference
from qmon.streaming.job import run
from tests.core.test_shared_queues import workload as shared_workload
from tests.e2e.test_job_kafka import outputs, produce_activity

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

T0 = 1_700_000_010_000  # a multiple of the 30-second sample step
T0_SHARED = 1_700_000_000_000  # the shared-queue workload's
MIN = 60_000
WATCHED = ("STRUCTURE_FILL_FORECAST", "QUEUE_FILL_FORECAST", "OVERFLOW_MODE_ENTERED")


def _fill(n: int) -> list[dict[str, Any]]:
    """``n`` puts of one data element each to IMSA's 1PAYROLL on MSGQ1, one every 3 s."""
    return [
        {"event_id": f"p{i}", "qmgr": "IMSA", "queue": "1PAYROLL", "op": "PUT", "ts": T0 + i * 3000,
         "depth_after": None, "msg_bytes": 500, "structure": "MSGQ1", "reason": None}
        for i in range(n)
    ]  # fmt: skip


def _shared(put_on: str, get_on: str) -> list[dict[str, Any]]:
    """PAY.IN's puts on ``put_on`` and gets on ``get_on`` of ``tests/core/test_shared_queues.py``'s workload:
    service interval High and OK, depth high and low."""
    return [r for r in shared_workload(put_on, get_on) if r.get("queue") == "PAY.IN"]


#: a queue no pattern shares, given its attributes by the DEFINE that makes it shared
ORD4 = (
    "DEFINE QLOCAL('ORD4.MQSC') {}QSVCINT(10000) QSVCIEV(HIGH) MAXDEPTH(10) QDEPTHHI(30) QDEPTHLO(10) QDPHIEV(ENABLED)"
)


def _defined_by_mqsc(put_on: str, get_on: str, define_on: str, disp: str) -> list[dict[str, Any]]:
    """``_shared``'s workload on ORD4.MQSC, its DEFINE sent on ``define_on`` before any activity."""
    define = {"ts": T0_SHARED, "qmgr": define_on, "command": ORD4.format(disp), "command_id": "ord4"}
    return [define, *({**r, "queue": "ORD4.MQSC"} for r in _shared(put_on, get_on))]


def _performance(records: list[dict[str, Any]], config: Config) -> list[dict[str, Any]]:
    """The pure rules' performance events of ``records``, as they read back from the topic."""
    return [
        avro.decode("PerformanceEvent", avro.encode("PerformanceEvent", e.record))
        for e in run_reference(records, config.monitor_settings())
        if e.topic == topics.PERFORMANCE
    ]


def _jsonable(records: list[dict[str, Any]], drop: frozenset[str] = frozenset()) -> list[str]:
    return sorted(json.dumps({k: v for k, v in avro.to_jsonable(r).items() if k not in drop}, sort_keys=True)
                  for r in records)  # fmt: skip


def test_a_steady_fill_is_forecast_and_a_shared_queue_is_one_queue_through_kafka(
    spark, kafka_bootstrap, prefix, tmp_path
):
    config = Config.model_validate(
        {
            "kafka": {"topic_prefix": prefix, "partitions": 2},
            "job": {"queue_shards": 2, "shuffle_partitions": 2, "watermark_delay": "0 seconds"},
            "monitor": {"perfmev": "ENABLED"},
            "qsgs": [
                {"name": "QSG1", "members": ["QM1", "QM2"], "shared_queues": ["PAY.*"]},
                {"name": "QSG4", "members": ["F4QA", "F4QB", "F4QC"], "shared_queues": ["SHR4.*"]},
            ],
            "structures": [{"strname": "MSGQ1", "size": 1000}],  # at its SIZE: OVFLWMAX 70 % is 1,400 elements
            "queues": [
                {"pattern": "1PAYROLL", "maxdepth": 1600},  # its puts reach 1,500
                {"pattern": "PAY.*", "qsvciev": "HIGH", "qsvcint": 10_000, "maxdepth": 10, "qdepthhi": 30,
                 "qdepthlo": 10, "qdphiev": "ENABLED"},
            ],
        }
    )  # fmt: skip
    shared = _shared("QM1", "QM2")
    by_mqsc = _defined_by_mqsc("F4QA", "F4QC", "F4QC", "QSGDISP(SHARED) ")
    records = _fill(1500) + shared
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    send_commands(kafka_bootstrap, "F4QC", [by_mqsc[0]["command"]], ts=T0_SHARED, prefix=prefix)
    produce_activity(kafka_bootstrap, prefix, records + by_mqsc[1:])
    assert run(config, kafka_bootstrap, str(tmp_path / "ckpt"), available_now=True, spark=spark) == 0
    out = outputs(kafka_bootstrap, prefix)
    live = [r for t, r in out if t == topics.ALERTS and r["type"] in WATCHED]
    want = [
        e.record
        for e in run_reference(records, config.monitor_settings(), structure_settings=config.structure_settings())
        if e.topic == topics.ALERTS and e.record["type"] in WATCHED
    ]

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        eta = r["eta"]
        eta = int(eta.timestamp() * 1000) if hasattr(eta, "timestamp") else eta
        ts = r["ts"]
        ts = int(ts.timestamp() * 1000) if hasattr(ts, "timestamp") else ts
        return (r["type"], r["state"], ts, eta, r["event_id"])

    assert sorted(map(key, live)) == sorted(map(key, want))
    fired = [r for r in map(key, live) if r[:2] == ("STRUCTURE_FILL_FORECAST", "FIRING")]
    entered = [r for r in map(key, live) if r[0] == "OVERFLOW_MODE_ENTERED"]
    assert fired and entered
    assert any(r[:2] == ("QUEUE_FILL_FORECAST", "FIRING") for r in map(key, live))
    assert fired[0][2] == T0 + 55 * MIN and fired[0][3] == T0 + 70 * MIN  # 15 minutes ahead, with its instant
    assert fired[0][2] < entered[0][2] <= fired[0][3]

    # the shared queue: the pure rules' events, event_ids included ...
    live_shared = [r for t, r in out if t == topics.PERFORMANCE and r["queue"] == "PAY.IN"]
    assert _jsonable(live_shared) == _jsonable(_performance(shared, config))
    # ... each naming the group and the member whose put or get raised it ...
    raised_by = {(r["type"], r["qmgr"], r["qsg"]) for r in live_shared}
    assert raised_by == {
        ("QDEPTH_HIGH", "QM1", "QSG1"),  # the third put
        ("QSVCINT_HIGH", "QM2", "QSG1"),  # the gets after 13 s and 26 s
        ("QSVCINT_OK", "QM2", "QSG1"),
        ("QDEPTH_LOW", "QM2", "QSG1"),
    }
    # ... and the events QM9, in no group, gives with all of them on its own PAY.IN
    naming = frozenset({"event_id", "qmgr", "qsg"})
    assert _jsonable(live_shared, naming) == _jsonable(_performance(_shared("QM9", "QM9"), config), naming)

    # a queue shared by its DEFINE ... QSGDISP(SHARED) alone: accepted, then one queue for every member, whose
    # events are the pure rules' and, but for their names, those of QM9's own ORD4.MQSC
    [reply] = [r for t, r in out if t == topics.REPLIES and r["message"].startswith("DEFINE QLOCAL('ORD4.MQSC')")]
    assert reply["ok"] and reply["qmgr"] == "F4QC" and "shared queue of queue-sharing group QSG4" in reply["message"]
    live_ord4 = [r for t, r in out if t == topics.PERFORMANCE and r["queue"] == "ORD4.MQSC"]
    assert _jsonable(live_ord4) == _jsonable(_performance(by_mqsc, config))
    assert {(r["type"], r["qmgr"], r["qsg"]) for r in live_ord4} == {
        ("QDEPTH_HIGH", "F4QA", "QSG4"),
        ("QSVCINT_HIGH", "F4QC", "QSG4"),
        ("QSVCINT_OK", "F4QC", "QSG4"),
        ("QDEPTH_LOW", "F4QC", "QSG4"),
    }
    alone = _defined_by_mqsc("QM9", "QM9", "QM9", "")
    assert _jsonable(live_ord4, naming) == _jsonable(_performance(alone, config), naming)
