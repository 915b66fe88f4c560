"""``qmon report``'s reader (connectors.reportreader) without a broker: the output topics' records, Avro-encoded
as the job writes them, read through a stand-in for ``connectors.topicrange``: each topic under the configured
prefix, from ten minutes before --since, decoded (what does not decode skipped), and the figures of the pure
module.  ``run_records`` is also what ``test_report_kafka.py`` puts on a real broker.

The run: an hour from ``since``.  QM1/PAYROLL.IN has QUEUE_STALLED already firing at ``since`` (raised two hours
before) until +2 min, episodes of 3 and 5 minutes, and one raised 5 minutes before ``until`` and still firing;
Queue Service Interval High at +20 min and OK at +27.5 min (87.5 % of the hour served within QSVCINT).  MSGQ1 is
in overflow mode from +5 to +25 min, its snapshot at +6 min reading 7,500 of 10,000 data elements in use."""

from __future__ import annotations

from typing import Any

import pytest

from qmon.connectors import avro, reportreader, topicrange
from qmon.core import topics
from qmon.core.records import SubjectKind, alert

MIN = 60_000
SINCE = 1_736_467_200_000  # 2025-01-10T00:00:00Z
UNTIL = SINCE + 60 * MIN


def run_records(since: int) -> dict[str, list[tuple[bytes, bytes]]]:
    """(key, value) records of the run beginning at ``since``, by logical output topic, Avro-encoded."""

    def stalled(state: str, aid: str, ts: int) -> dict[str, Any]:
        return alert(f"{aid}-{state}", "QUEUE_STALLED", state, aid, "WARNING", subject_kind=SubjectKind.QUEUE,
                     subject="PAYROLL.IN", queue="PAYROLL.IN", qmgr="QM1", ts=ts, summary="", action="")  # fmt: skip

    def overflow(type_: str, state: str, ts: int, pct: float) -> dict[str, Any]:
        return alert(f"ov-{state}", type_, state, "ov", "WARNING", subject_kind=SubjectKind.STRUCTURE,
                     subject="MSGQ1", structure="MSGQ1", ts=ts, summary="", action="",
                     usage_before_pct=pct, usage_after_pct=pct)  # fmt: skip

    def event(type_: str, ts: int) -> dict[str, Any]:
        return {"event_id": f"{type_}-{ts}", "type": type_, "reason_code": 2226 if type_ == "QSVCINT_HIGH" else 2227,
                "reason": type_, "qmgr": "QM1", "queue": "PAYROLL.IN", "ts": ts, "time_since_reset": 1,
                "high_q_depth": 3, "msg_enq_count": 3, "msg_deq_count": 1, "service_time_ms": 2_500,
                "service_interval_ms": 2_000}  # fmt: skip

    snapshot = {"event_id": "snap-1", "ts": since + 6 * MIN, "qmgr": None, "queues": [], "forgotten": [],
                "structure": "MSGQ1", "size_kb": 1_024, "capacity_elements": 10_000, "used_elements": 7_500,
                "overflow_structure": None, "overflow_size_kb": None, "overflow_capacity_elements": None,
                "overflow_used_elements": None, "overflow_mode": True, "queues_in_overflow": 2}  # fmt: skip
    alerts = [
        stalled("FIRING", "st-0", since - 120 * MIN),  # before the range: read, and left out
        stalled("RESOLVED", "st-0", since + 2 * MIN),
        stalled("FIRING", "st-a", since + 10 * MIN),
        stalled("RESOLVED", "st-a", since + 13 * MIN),
        stalled("FIRING", "st-b", since + 30 * MIN),
        stalled("RESOLVED", "st-b", since + 35 * MIN),
        stalled("FIRING", "st-c", since + 55 * MIN),
        overflow("OVERFLOW_MODE_ENTERED", "FIRING", since + 5 * MIN, 70.5),
        overflow("OVERFLOW_MODE_ENDED", "RESOLVED", since + 25 * MIN, 50.0),
    ]
    return {
        topics.ALERTS: [
            *((a["subject"].encode(), avro.encode("Alert", a)) for a in alerts),
            (b"x", b"not an Alert"),
        ],
        topics.PERFORMANCE: [
            (b"QM1/PAYROLL.IN", avro.encode("PerformanceEvent", event(t, ts)))
            for t, ts in (("QSVCINT_HIGH", since + 20 * MIN), ("QSVCINT_OK", since + 27 * MIN + 30_000))
        ],
        topics.SNAPSHOT: [(b"MSGQ1", avro.encode("Snapshot", snapshot))],
    }


def check(report: Any, since: int) -> None:
    """The figures of the run beginning at ``since``, worked out by hand."""
    (payroll,) = report.queues
    assert payroll.subject == "QM1/PAYROLL.IN"
    (stall,) = payroll.alerts
    assert (stall.type, stall.episodes, stall.open_at_since, stall.open_at_until) == ("QUEUE_STALLED", 4, 1, 1)
    assert (stall.in_breach_ms, stall.longest_ms) == (15 * MIN, 5 * MIN)  # 2 + 3 + 5 + 5
    assert (stall.resolved, stall.resolve_median_ms, stall.resolve_max_ms) == (2, 4 * MIN, 5 * MIN)
    assert payroll.service_interval is not None
    assert (payroll.service_interval.not_served_ms, payroll.service_interval.served_pct) == (7 * MIN + 30_000, 87.5)
    (msgq1,) = report.structures
    assert (msgq1.structure, msgq1.overflow_mode_ms) == ("MSGQ1", 20 * MIN)
    assert (msgq1.peak_usage_pct, msgq1.peak_usage_ms) == (75.0, since + 6 * MIN)


@pytest.fixture
def reads(monkeypatch):
    """``topicrange.records`` over ``run_records(SINCE)`` under the prefix ``east``, with the calls it had."""
    by_topic = {topics.physical(t, "east"): rows for t, rows in run_records(SINCE).items()}
    calls: list[dict[str, Any]] = []

    def records(bootstrap, topic, security=None, **kw):
        calls.append({"bootstrap": bootstrap, "topic": topic, **kw})
        if topic not in by_topic:
            raise topicrange.NoSuchTopic(topic)
        for offset, (_key, value) in enumerate(by_topic[topic]):
            yield topicrange.Raw(0, offset, SINCE + 61 * MIN, value)

    monkeypatch.setattr(topicrange, "records", records)
    return calls


def test_the_output_topics_are_read_from_ten_minutes_before_since_and_decoded(reads, caplog):
    report = reportreader.read("b:9092", None, prefix="east", since_ms=SINCE, until_ms=UNTIL)
    check(report, SINCE)
    assert [(c["topic"], c["since_ms"], c["group_prefix"]) for c in reads] == [
        ("east.events.alerts", SINCE - 10 * MIN, "qmon-report"),
        ("east.events.performance", SINCE - 10 * MIN, "qmon-report"),
        ("east.events.snapshot", SINCE - 10 * MIN, "qmon-report"),
    ]
    assert "east.events.alerts: 1 record(s) that are not Alert records were skipped" in caplog.text


def test_patterns_reach_the_report(reads):
    report = reportreader.read("b", None, prefix="east", since_ms=SINCE, until_ms=UNTIL, structures=["MSGQ*"])
    assert [s.structure for s in report.structures] == ["MSGQ1"] and report.queues == ()


def test_a_missing_output_topic_is_named(reads):
    with pytest.raises(reportreader.ReportReadError, match=r"the topic west\.events\.alerts does not exist"):
        reportreader.read("b", None, prefix="west", since_ms=SINCE, until_ms=UNTIL)
