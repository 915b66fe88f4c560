"""Interest (IMS, *IMS Shared Queues Functions and Facilities*) and generic RESET QSTATS through the real
Spark query, with a queue manager split over shards: refused queue types under a generic registration, the
LTERM warning, ``DEREGISTER INTEREST QUEUE(*)``, and a generic RESET QSTATS answered in parts."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings

from qmon.connectors import avro
from qmon.core import topics
from qmon.core.config import Config
from qmon.core.mqsc import join_parts, reply_part
from qmon.core.queues import MonitorSettings
from qmon.core.reference import run_reference
from tests.strategies import interest_streams

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
BUCKETS = 3
_ids = itertools.count(1)


def cmd(ts, text, qmgr="PLEX1", **kw):
    return {"ts": T0 + ts, "qmgr": qmgr, "command": text, **kw}


def act(ts, op, queue, qmgr="PLEX1", **kw):
    # an event_id of its own, so that the pure reference derives the same output ids
    return {"event_id": f"a{next(_ids)}", "ts": T0 + ts, "qmgr": qmgr, "queue": queue, "op": op, **kw}


def of(out, topic):
    return [r for r in out if r["topic"] == topic]


def config(shards=BUCKETS):
    return Config.model_validate({"job": {"queue_shards": shards}})


def not_in_bucket_0(spark, candidates, buckets=BUCKETS):
    """The first candidate queue name the job places outside shard 0 (the shard that replies), so
    the test shows that replies do not depend on where the queue lives."""
    from pyspark.sql import functions as F

    row = (
        spark.range(1)
        .select(*[F.pmod(F.xxhash64(F.lit(n)), F.lit(buckets)).alias(f"b{i}") for i, n in enumerate(candidates)])
        .first()
    )
    for i, name in enumerate(candidates):
        if row[i] != 0:
            return name
    raise AssertionError(f"every candidate lands in shard 0: {candidates}")


def _normalise(topic, record):
    data = avro.encode(topics.RECORD_OF[topic], record)
    return json.dumps({"topic": topic, **avro.to_jsonable(avro.decode(topics.RECORD_OF[topic], data))}, sort_keys=True)


def test_generic_interest_skips_refused_queues_warns_on_lterms_and_deregisters_a_client_whole(replay_factory, spark):
    tran = not_in_bucket_0(spark, [f"1PAYTR{i}" for i in range(10)])
    lterm = not_in_bucket_0(spark, [f"5LTERM{i}" for i in range(10)])
    records = [
        act(1_000, "PUT", tran),
        act(1_000, "PUT", "2PAYTRAN"),  # work on a staging queue ...
        act(1_000, "PUT", "9OTMA01"),  # ... and on an OTMA ready queue
        cmd(2_000, "REGISTER INTEREST QUEUE(*) CLIENT(IMSA)", command_id="r1"),  # told of tran only
        cmd(2_000, "REGISTER INTEREST QUEUE(2*) CLIENT(IMSA)", command_id="r2"),  # refused
        cmd(2_000, f"REGISTER INTEREST QUEUE({tran}) CLIENT(IMSA)", command_id="r3"),
        act(3_000, "PUT", lterm),  # IMSA (*) told
        act(3_000, "PUT", "3SUSPEND"),  # never
        act(3_000, "START", "7APPC01", depth_after=3),  # never
        cmd(4_000, f"REGISTER INTEREST QUEUE({lterm}) CLIENT(IMSB)", command_id="w1"),  # warned: IMSA (*)
        cmd(5_000, "DEREGISTER INTEREST QUEUE(*) CLIENT(IMSA)", command_id="d1"),
        cmd(5_000, "DEREGISTER INTEREST QUEUE(*) CLIENT(IMSA)", command_id="d2"),
        act(6_000, "GET", lterm),
        act(6_000, "GET", tran),
        act(7_000, "PUT", lterm),  # IMSB only
        act(7_000, "PUT", tran),  # nobody
    ]
    out = replay_factory(records, config())
    notes = sorted((n["client"], n["queue"], n["ts"] - T0) for n in of(out, topics.NOTIFY))
    assert notes == sorted(
        [("IMSA", tran, 2_000), ("IMSA", lterm, 3_000), ("IMSB", lterm, 4_000), ("IMSB", lterm, 7_000)]
    )
    replies = {r["command_id"]: r for r in of(out, topics.REPLIES)}
    assert len(of(out, topics.REPLIES)) == len(replies) == 6  # one reply per command, shards or not
    assert replies["r1"]["ok"] and replies["r3"]["ok"]
    assert replies["r2"]["ok"] is False and "generic name matches only transaction staging" in replies["r2"]["message"]
    assert (
        replies["w1"]["ok"] is True and "Warning" in replies["w1"]["message"] and "IMSA (*)" in replies["w1"]["message"]
    )
    assert replies["d1"]["ok"] is True and f"(2): *, {tran}." in replies["d1"]["message"]
    assert replies["d2"]["ok"] is False and "no interest registered in any queue" in replies["d2"]["message"]
    # the sharded operator says exactly what the pure module says with one monitor
    valid = [r for r in records if r.get("command_id") != "r2"]
    want = sorted(
        _normalise(e.topic, e.record)
        for e in run_reference(valid, MonitorSettings())
        if e.topic in (topics.NOTIFY, topics.REPLIES)
    )
    got = sorted(
        json.dumps(r, sort_keys=True)
        for r in out
        if r["topic"] in (topics.NOTIFY, topics.REPLIES) and r.get("command_id") != "r2"
    )
    assert got == want


def test_reset_qstats_with_a_generic_name_replies_once_per_shard_and_the_parts_join(replay_factory, spark):
    far = not_in_bucket_0(spark, [f"PAYROLL.Q{i}" for i in range(10)])
    queues = sorted({"PAYROLL.A", "PAYROLL.B", far})
    records = [act(1_000 + i, "PUT", q, qmgr="QM1") for i, q in enumerate(queues)]
    records += [
        act(1_500, "PUT", "PAYROLL.A", qmgr="QM1"),
        act(1_600, "GET", "PAYROLL.A", qmgr="QM1"),
        act(1_700, "PUT", "OTHER", qmgr="QM1"),
        cmd(11_000, "RESET QSTATS(PAYROLL.*)", qmgr="QM1", command_id="rq"),
        cmd(12_000, "RESET QSTATS(OTHER)", qmgr="QM1", command_id="ro"),
        cmd(12_000, "RESET QSTATS(PAYROLL.*)", qmgr="QM1", command_id="rq2"),
    ]
    out = replay_factory(records, config())
    parts = [r for r in of(out, topics.REPLIES) if r["command_id"] == "rq"]
    assert sorted(reply_part(r["message"]) for r in parts) == [(k, BUCKETS) for k in range(1, BUCKETS + 1)]
    assert len({r["event_id"] for r in parts}) == BUCKETS and all(r["ok"] for r in parts)
    joined = join_parts(parts)
    assert joined is not None and joined["ok"]
    lines = joined["message"].splitlines()
    assert lines[0] == f"RESET QSTATS('PAYROLL.*'): {len(queues)} queues reset (the replies of {BUCKETS} shards joined)"
    assert [line.split("QUEUE(")[1].split(")")[0] for line in lines[1:]] == queues
    assert "QUEUE(PAYROLL.A) RESETINT(10) HIQDEPTH(2) MSGSIN(2) MSGSOUT(1)" in joined["message"]
    # the other queue was not reset; the matching ones were
    [other] = [r for r in of(out, topics.REPLIES) if r["command_id"] == "ro"]
    assert "MSGSIN(1)" in other["message"]
    again = join_parts([r for r in of(out, topics.REPLIES) if r["command_id"] == "rq2"])
    assert again is not None and "QUEUE(PAYROLL.A) RESETINT(1) HIQDEPTH(1) MSGSIN(0) MSGSOUT(0)" in again["message"]


def test_reset_qstats_with_a_generic_name_on_one_shard_is_one_reply_as_the_pure_module_gives(replay_factory):
    records = [
        act(1_000, "PUT", "PAYROLL.A", qmgr="QM1"),
        act(1_100, "PUT", "PAYROLL.B", qmgr="QM1"),
        cmd(5_000, "RESET QSTATS(PAYROLL.*)", qmgr="QM1", command_id="rq"),
    ]
    out = replay_factory(records, config(1))
    [reply] = of(out, topics.REPLIES)
    assert reply_part(reply["message"]) is None and reply["message"].startswith("RESET QSTATS('PAYROLL.*'): 2 queues")
    [want] = [e for e in run_reference(records, MonitorSettings()) if e.topic == topics.REPLIES]
    assert json.dumps(reply, sort_keys=True) == _normalise(want.topic, want.record)


@settings(
    max_examples=3,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(records=interest_streams())
def test_operator_equals_pure_module_over_generated_interest_streams(replay_factory, records):
    """Hypothesis-generated streams on IMS queue types with exact and generic registrations of several
    clients, whole-client deregistration and queues first seen non-empty, over 3 shards: the Spark
    operator's notifications, replies and events are exactly the pure module's (queue_shards 1 there,
    so RESET QSTATS with a generic name is compared by what it reset, not by its parts)."""
    config = Config.model_validate({"job": {"queue_shards": 3}})
    out = replay_factory(records, config)
    compared = (topics.PERFORMANCE, topics.ALERTS, topics.NOTIFY)
    got = sorted(json.dumps(r, sort_keys=True) for r in out if r["topic"] in compared)
    want = sorted(
        _normalise(e.topic, e.record)
        for e in run_reference(records, MonitorSettings(), final_clock=max(r["ts"] for r in records))
        if e.topic in compared
    )
    assert got == want
    replies = [r for r in out if r["topic"] == topics.REPLIES]
    ids = {r["command_id"] for r in records if "command" in r}
    assert ids <= {r["command_id"] for r in replies}  # every command answered
