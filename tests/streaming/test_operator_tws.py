"""The stateful operator without a query (PySpark 4.3's ``TwsTester``): timer reconciliation, TTL expiry and
pass-through rows, in milliseconds.  The rules themselves are tested on the pure modules; these tests cover
what the adapter adds: loading and storing state, the one event-time timer per key, and rows it must not touch."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyspark.sql.streaming.tws_tester")

from pyspark.sql.streaming.tws_tester import TwsTester  # noqa: E402

from qmon.core import topics  # noqa: E402
from qmon.core.queues import MonitorSettings  # noqa: E402
from qmon.core.structures import StructureSettings  # noqa: E402
from qmon.core.timeconv import to_ms  # noqa: E402
from qmon.streaming import state as stored  # noqa: E402
from qmon.streaming.operators import MonitorProcessor  # noqa: E402
from tests.streaming.routed import command, decoded, frame, put, row  # noqa: E402

KEY = ("Q", "", 0)  # a group of queue-manager shards: (unit, unit_name, bucket)


class OneColumnKey(MonitorProcessor):
    """TwsTester hands the grouping key over as ``(key,)``; the job's key is three columns."""

    def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:
        return super().handleInputRows(key[0], rows, timerValues)

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Any:
        return super().handleExpiredTimer(key[0], timerValues, expiredTimerInfo)


def make_tester(ttl_ms: int = 0) -> TwsTester:
    processor = OneColumnKey(MonitorSettings(), StructureSettings(), ttl_ms)
    # the job's watermark runs on the broker's append time, the routed row's ``clock``
    return TwsTester(processor, timeMode="EventTime", eventTimeExtractor=lambda r: int(r["clock"]))


def test_one_event_time_timer_at_the_stall_deadline_fires_and_is_cleared():
    t = make_tester()
    out = t.testInPandas(
        KEY,
        frame(
            command(1, "ALTER QMGR PERFMEV(ENABLED)", 1),
            command(1, "ALTER QLOCAL(PAY.IN) QSVCIEV(HIGH) QSVCINT(1000)", 2),
            put(5_000, "PAY.IN", 3),
        ),
    )
    assert [r["ok"] for topic, r in decoded(out) if topic == topics.REPLIES] == [True, True]
    assert t.peekValueState("event_timer", KEY) == (6_001,)  # the put's clock + QSVCINT + 1: the one timer of the key
    assert decoded(t.setWatermark(6_000)) == []  # not yet
    fired = decoded(t.setWatermark(6_001))
    assert [(r["type"], r["state"], to_ms(r["ts"])) for _, r in fired] == [("QUEUE_STALLED", "FIRING", 6_000)]
    assert t.peekValueState("event_timer", KEY) is None  # the stall fired: nothing else is due


def test_the_timer_moves_to_the_earliest_deadline_and_goes_when_nothing_is_watched():
    t = make_tester()
    t.testInPandas(
        KEY,
        frame(
            command(1, "ALTER QMGR PERFMEV(ENABLED)", 1),
            command(1, "ALTER QLOCAL(A) QSVCIEV(HIGH) QSVCINT(5000)", 2),
            command(1, "ALTER QLOCAL(B) QSVCIEV(HIGH) QSVCINT(1000)", 3),
            put(1_000, "A", 4),
        ),
    )
    assert t.peekValueState("event_timer", KEY) == (6_001,)
    t.testInPandas(KEY, frame(put(2_000, "B", 5)))
    assert t.peekValueState("event_timer", KEY) == (3_001,)  # B's deadline comes first
    get_a = row("A", 2_500, seq=6, event_id="g6", queue="A", op="GET")
    get_b = row("A", 2_600, seq=7, event_id="g7", queue="B", op="GET")
    t.testInPandas(KEY, frame(get_a, get_b))  # both emptied: nothing left to watch
    assert t.peekValueState("event_timer", KEY) is None


def test_idle_empty_queues_expire_after_the_ttl_and_queues_with_messages_stay():
    t = make_tester(ttl_ms=10_000)
    t.testInPandas(
        KEY,
        frame(put(1, "FULL.Q", 1), put(1, "EMPTY.Q", 2), row("A", 2, seq=3, event_id="g3", queue="EMPTY.Q", op="GET")),
    )
    t.testInPandas(KEY, frame(put(20_000, "NEW.Q", 4)))
    (blob,) = t.peekValueState("shard", KEY)
    assert set(stored.loads(stored.load_group(blob)["shards"]["QM1"]["0"])["queues"]) == {"FULL.Q", "NEW.Q"}


def test_dead_letters_and_error_replies_pass_through_untouched():
    t = make_tester()
    value = b"\x00\x01 not Avro, and not to be decoded by the operator"
    passing = row("P", 7_000, seq=42, out_topic=topics.DLQ, out_key="k", out_value=value, rank=3)
    out = t.testInPandas(KEY, frame(passing))
    assert list(out["topic"]) == [topics.DLQ] and bytes(out["value"][0]) == value
    assert (out["key"][0], out["order_ts"][0], out["order_seq"][0], out["order_idx"][0]) == ("k", 7_000, 42, 3)
    assert t.peekValueState("shard", KEY) is None  # a batch of pass-through rows loads and stores no state
