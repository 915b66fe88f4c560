"""Service reports (qmon.core.service_report) over a small recorded run, every figure worked out by hand.

The run covers 2025-01-10 from 00:00 to 08:00 UTC (8 hours, 480 minutes):

* QM1/PAYROLL.IN: QUEUE_STALLED already firing at 00:00 (raised at 23:58 the day before) and resolved at 00:02,
  two episodes of 3 and 5 minutes (01:00-01:03, 02:00-02:05), one raised at 07:50 and still firing at 08:00;
  Queue Service Interval High at 03:00 and 06:00, each followed 30 minutes later by Queue Service Interval OK.
* QM2/ORDERS: Queue Service Interval OK at 00:45 (High before the range began), High at 07:00 and no OK after it.
* MSGQ1: altered at 03:50, in overflow mode from 04:00 to 04:45 (no overflow structure), with puts to two queues
  rejected from 04:10 and 04:20 until the mode ended; snapshots at 73 % (04:05) and 40 % (05:00).
* MSGQ2: in overflow mode through the whole range (every snapshot says so, no overflow alert in the range), with
  an overflow structure OVFQ2; STRUCTURE_FULL from 06:00, resolved only after 08:00.
* A journal alert, which the report leaves out.
"""

from __future__ import annotations

from typing import Any

import pytest

from qmon.core.service_report import (
    AlertSummary,
    Episode,
    ServiceIntervalSummary,
    build,
)
from qmon.core.timeconv import from_ms

T0 = 1_736_467_200_000  # 2025-01-10T00:00:00Z
MIN = 60_000
HOUR = 60 * MIN
SINCE, UNTIL = T0, T0 + 8 * HOUR


def at(hhmm: str) -> int:
    """Epoch ms of a time of 2025-01-10 (``-00:02`` is two minutes before midnight, ``08:30`` after the range)."""
    sign = -1 if hhmm.startswith("-") else 1
    h, m = hhmm.lstrip("-").split(":")
    return T0 + sign * (int(h) * HOUR + int(m) * MIN)


_ids = iter(range(1_000_000))


def alert(type_: str, state: str, alert_id: str, subject: str, when: str, **fields: Any) -> dict[str, Any]:
    """An Alert record as the Avro decoder returns it (``ts`` a UTC datetime)."""
    kind = fields.pop("kind", "QUEUE" if type_ == "QUEUE_STALLED" else "STRUCTURE")
    return {
        "event_id": fields.pop("event_id", f"e{next(_ids)}"),
        "type": type_,
        "state": state,
        "alert_id": alert_id,
        "severity": "WARNING" if state == "FIRING" else "INFO",
        "subject_kind": kind,
        "subject": subject,
        "structure": subject if kind == "STRUCTURE" else None,
        "queue": fields.pop("queue", subject if kind == "QUEUE" else None),
        "qmgr": fields.pop("qmgr", None),
        "ts": from_ms(at(when)),
        "usage_before_pct": fields.pop("before", None),
        "usage_after_pct": fields.pop("after", None),
        "size_kb_before": None,
        "size_kb_after": None,
        "message": None,
        "summary": "",
        "action": "",
        **fields,
    }


def event(type_: str, qmgr: str, queue: str, when: str, event_id: str | None = None) -> dict[str, Any]:
    """A PerformanceEvent record as decoded."""
    return {
        "event_id": event_id or f"p{next(_ids)}",
        "type": type_,
        "reason_code": {"QSVCINT_HIGH": 2226, "QSVCINT_OK": 2227}.get(type_, 2224),
        "reason": type_,
        "qmgr": qmgr,
        "queue": queue,
        "ts": from_ms(at(when)),
        "time_since_reset": 0,
        "high_q_depth": 1,
        "msg_enq_count": 1,
        "msg_deq_count": 1,
        "service_time_ms": 2_500 if type_.startswith("QSVCINT") else None,
        "service_interval_ms": 2_000 if type_.startswith("QSVCINT") else None,
    }


def snapshot(structure: str, when: str, used: int, capacity: int, mode: bool, **ovf: Any) -> dict[str, Any]:
    """A structure's Snapshot record as decoded; ``ovf``: its overflow structure's ``name``, ``elements`` and
    ``in_use``."""
    return {
        "event_id": f"s{next(_ids)}",
        "ts": from_ms(at(when)),
        "qmgr": None,
        "queues": [],
        "forgotten": [],
        "structure": structure,
        "size_kb": 1024,
        "capacity_elements": capacity,
        "used_elements": used,
        "overflow_structure": ovf.get("name"),
        "overflow_size_kb": 256 if ovf else None,
        "overflow_capacity_elements": ovf.get("elements"),
        "overflow_used_elements": ovf.get("in_use"),
        "overflow_mode": mode,
        "queues_in_overflow": 1 if mode else 0,
    }


PAYROLL = {"qmgr": "QM1"}
STALL_FIRING_AT_0752 = alert("QUEUE_STALLED", "FIRING", "st-c", "PAYROLL.IN", "07:50", **PAYROLL)

ALERTS = [
    alert("QUEUE_STALLED", "FIRING", "st-0", "PAYROLL.IN", "-00:02", **PAYROLL),  # before the range
    alert("QUEUE_STALLED", "RESOLVED", "st-0", "PAYROLL.IN", "00:02", **PAYROLL),
    alert("QUEUE_STALLED", "FIRING", "st-a", "PAYROLL.IN", "01:00", **PAYROLL),
    alert("QUEUE_STALLED", "RESOLVED", "st-a", "PAYROLL.IN", "01:03", **PAYROLL),
    alert("QUEUE_STALLED", "FIRING", "st-b", "PAYROLL.IN", "02:00", **PAYROLL),
    alert("QUEUE_STALLED", "RESOLVED", "st-b", "PAYROLL.IN", "02:05", **PAYROLL),
    STALL_FIRING_AT_0752,
    STALL_FIRING_AT_0752,  # written twice (a redelivery): the same record, counted once
    alert("STRUCTURE_ALTERED", "INFO", "alt-1", "MSGQ1", "03:50", before=70.1, after=56.0),
    alert("OVERFLOW_MODE_ENTERED", "FIRING", "ov-1", "MSGQ1", "04:00", before=69.5, after=70.2),
    alert("QUEUE_PUTS_REJECTED", "FIRING", "rj-1", "MSGQ1", "04:10", queue="1PAYTRAN", after=70.4),
    alert("QUEUE_PUTS_REJECTED", "FIRING", "rj-2", "MSGQ1", "04:20", queue="1ORDERS", after=70.6),
    alert("QUEUE_PUTS_REJECTED", "RESOLVED", "rj-1", "MSGQ1", "04:45", queue="1PAYTRAN", after=50.0),
    alert("QUEUE_PUTS_REJECTED", "RESOLVED", "rj-2", "MSGQ1", "04:45", queue="1ORDERS", after=50.0),
    alert("OVERFLOW_MODE_ENDED", "RESOLVED", "ov-1", "MSGQ1", "04:45", before=50.3, after=50.0),
    alert("STRUCTURE_FULL", "FIRING", "full-2", "MSGQ2", "06:00", before=100.0, after=100.0),
    alert("STRUCTURE_FULL_RELIEVED", "RESOLVED", "full-2", "MSGQ2", "08:30", after=90.0),  # after the range
    alert("RECEIVER_NEAR_THRESHOLD", "FIRING", "j-1", "LIB/AMQAJRN", "02:00", kind="JOURNAL", after=91.0),
]

EVENTS = [
    event("QSVCINT_HIGH", "QM1", "PAYROLL.IN", "03:00", "high-1"),
    event("QSVCINT_HIGH", "QM1", "PAYROLL.IN", "03:00", "high-1"),  # a redelivery
    event("QDEPTH_HIGH", "QM1", "PAYROLL.IN", "03:10"),  # not a service interval event
    event("QSVCINT_OK", "QM1", "PAYROLL.IN", "03:30"),
    event("QSVCINT_HIGH", "QM1", "PAYROLL.IN", "06:00"),
    event("QSVCINT_OK", "QM1", "PAYROLL.IN", "06:30"),
    event("QSVCINT_OK", "QM2", "ORDERS", "00:45"),
    event("QSVCINT_HIGH", "QM2", "ORDERS", "07:00"),
    event("QSVCINT_HIGH", "QM3", "LATE.Q", "08:00"),  # at --until: outside the range
]

SNAPSHOTS = [
    snapshot("MSGQ1", "04:05", 7_300, 10_000, True),
    snapshot("MSGQ1", "05:00", 4_000, 10_000, False),
    snapshot("MSGQ2", "01:00", 6_500, 10_000, True, name="OVFQ2", elements=1_000, in_use=300),
    snapshot("MSGQ2", "07:00", 5_000, 10_000, True, name="OVFQ2", elements=1_000, in_use=120),
]


def report(**selection: Any):
    return build(ALERTS, EVENTS, SNAPSHOTS, SINCE, UNTIL, **selection)


def test_queue_stalled_episodes_counted_with_those_open_at_either_end_of_the_range():
    (payroll,) = [q for q in report().queues if q.queue == "PAYROLL.IN"]
    assert (payroll.qmgr, payroll.subject) == ("QM1", "QM1/PAYROLL.IN")
    assert payroll.alerts == (
        AlertSummary(
            type="QUEUE_STALLED",
            episodes=4,
            open_at_since=1,
            open_at_until=1,
            in_breach_ms=20 * MIN,  # 2 (from --since) + 3 + 5 + 10 (up to --until)
            longest_ms=10 * MIN,
            resolved=2,  # raised and resolved within the range: 3 and 5 minutes
            resolve_median_ms=4 * MIN,
            resolve_max_ms=5 * MIN,
        ),
    )
    assert payroll.episodes == (
        Episode("st-0", "QUEUE_STALLED", at("00:00"), at("00:02"), open_at_since=True, open_at_until=False),
        Episode("st-a", "QUEUE_STALLED", at("01:00"), at("01:03"), open_at_since=False, open_at_until=False),
        Episode("st-b", "QUEUE_STALLED", at("02:00"), at("02:05"), open_at_since=False, open_at_until=False),
        Episode("st-c", "QUEUE_STALLED", at("07:50"), at("08:00"), open_at_since=False, open_at_until=True),
    )
    assert [e.duration_ms for e in payroll.episodes] == [2 * MIN, 3 * MIN, 5 * MIN, 10 * MIN]
    assert [e.resolve_ms for e in payroll.episodes] == [None, 3 * MIN, 5 * MIN, None]


def test_time_from_queue_service_interval_high_to_the_next_ok_is_time_not_served_within_qsvcint():
    queues = {q.subject: q for q in report().queues}
    assert list(queues) == ["QM1/PAYROLL.IN", "QM2/ORDERS"]  # LATE.Q's only event is at --until
    assert queues["QM1/PAYROLL.IN"].service_interval == ServiceIntervalSummary(
        high_events=2,
        ok_events=2,
        not_served_ms=60 * MIN,  # 03:00-03:30 and 06:00-06:30
        served_pct=87.5,  # 420 of 480 minutes
        periods=((at("03:00"), at("03:30")), (at("06:00"), at("06:30"))),
    )
    # OK first: High since before the range, so from --since; High last: not served up to --until
    assert queues["QM2/ORDERS"].service_interval == ServiceIntervalSummary(
        high_events=1,
        ok_events=1,
        not_served_ms=105 * MIN,  # 00:00-00:45 and 07:00-08:00
        served_pct=78.125,  # 375 of 480 minutes
        periods=((at("00:00"), at("00:45")), (at("07:00"), at("08:00"))),
    )
    assert queues["QM2/ORDERS"].alerts == () and queues["QM2/ORDERS"].episodes == ()


def test_a_structure_entering_and_leaving_overflow_mode():
    msgq1 = report().structures[0]
    assert msgq1.structure == "MSGQ1"
    assert msgq1.overflow_mode_ms == 45 * MIN
    assert msgq1.overflow_mode_periods == ((at("04:00"), at("04:45")),)
    assert {a.type: a for a in msgq1.alerts} == {
        "OVERFLOW_MODE_ENTERED": AlertSummary(
            "OVERFLOW_MODE_ENTERED", 1, 0, 0, 45 * MIN, 45 * MIN, 1, 45 * MIN, 45 * MIN
        ),
        # two queues' episodes overlapping from 04:20 to 04:45: 35 minutes with puts rejected, not 60
        "QUEUE_PUTS_REJECTED": AlertSummary("QUEUE_PUTS_REJECTED", 2, 0, 0, 35 * MIN, 35 * MIN, 2, 30 * MIN, 35 * MIN),
    }
    # the highest reading: a snapshot's 7,300 of 10,000 data elements, above every alert's usage
    assert (msgq1.peak_usage_pct, msgq1.peak_usage_ms) == (73.0, at("04:05"))
    assert (msgq1.overflow_structure, msgq1.peak_overflow_usage_pct, msgq1.peak_overflow_usage_ms) == (None, None, None)


def test_a_structure_in_overflow_mode_through_the_whole_range_with_an_episode_still_open():
    msgq2 = report().structures[1]
    assert msgq2.structure == "MSGQ2"
    # no overflow alert in the range and a snapshot in overflow mode: overflow mode from --since to --until
    assert msgq2.overflow_mode_ms == 480 * MIN
    assert {a.type: a for a in msgq2.alerts} == {
        "OVERFLOW_MODE_ENTERED": AlertSummary("OVERFLOW_MODE_ENTERED", 1, 1, 1, 480 * MIN, 480 * MIN, 0, None, None),
        "STRUCTURE_FULL": AlertSummary("STRUCTURE_FULL", 1, 0, 1, 120 * MIN, 120 * MIN, 0, None, None),
    }
    assert Episode(None, "OVERFLOW_MODE_ENTERED", SINCE, UNTIL, True, True) in msgq2.episodes
    # STRUCTURE_FULL's 100 % (the put that did not fit) is the peak; the overflow structure's from snapshots
    assert (msgq2.peak_usage_pct, msgq2.peak_usage_ms) == (100.0, at("06:00"))
    assert (msgq2.overflow_structure, msgq2.peak_overflow_usage_pct, msgq2.peak_overflow_usage_ms) == (
        "OVFQ2",
        30.0,
        at("01:00"),
    )


def test_an_episode_seen_only_by_its_resolved_record_takes_the_firing_type():
    relieved = alert("STRUCTURE_FULL_RELIEVED", "RESOLVED", "f", "MSGQ3", "00:30", after=90.0)
    ended = alert("OVERFLOW_MODE_ENDED", "RESOLVED", "o", "MSGQ3", "01:00", after=40.0)
    (msgq3,) = build([relieved, ended], [], [], SINCE, UNTIL).structures
    assert [(a.type, a.episodes, a.open_at_since, a.in_breach_ms) for a in msgq3.alerts] == [
        ("OVERFLOW_MODE_ENTERED", 1, 1, 60 * MIN),
        ("STRUCTURE_FULL", 1, 1, 30 * MIN),
    ]
    assert msgq3.overflow_mode_ms == 60 * MIN


def test_usage_over_time_keeps_the_highest_reading_of_each_slice_of_the_range():
    snaps = [snapshot("S", f"00:{m:02d}", 100 + m, 1_000, False) for m in range(60)]
    (s,) = build([], [], snaps, SINCE, SINCE + HOUR, usage_points=6).structures
    # six slices of ten minutes; the last snapshot of each is its highest
    assert s.usage == tuple((at(f"00:{m:02d}"), (100 + m) / 10) for m in (9, 19, 29, 39, 49, 59))
    assert (s.peak_usage_pct, s.peak_usage_ms) == (15.9, at("00:59"))


@pytest.mark.parametrize(
    ("selection", "queues", "structures"),
    [
        ({}, ["QM1/PAYROLL.IN", "QM2/ORDERS"], ["MSGQ1", "MSGQ2"]),
        ({"queues": ["PAY*"]}, ["QM1/PAYROLL.IN"], []),
        ({"queues": ["QM2/*"]}, ["QM2/ORDERS"], []),
        ({"structures": ["MSGQ2"]}, [], ["MSGQ2"]),
        ({"queues": ["*.IN"], "structures": ["MSGQ?"]}, ["QM1/PAYROLL.IN"], ["MSGQ1", "MSGQ2"]),
        ({"queues": ["payroll.in"]}, [], []),  # MQ names are case-sensitive
    ],
)
def test_queue_and_structure_patterns_select_what_is_reported(selection, queues, structures):
    r = report(**selection)
    assert [q.subject for q in r.queues] == queues
    assert [s.structure for s in r.structures] == structures


def test_an_empty_range_reports_nothing_and_a_reversed_one_is_refused():
    empty = build([], [], [], SINCE, UNTIL)
    assert (empty.queues, empty.structures, empty.range_ms) == ((), (), 8 * HOUR)
    with pytest.raises(ValueError, match="--since must be before --until"):
        build([], [], [], UNTIL, SINCE)


def test_records_with_epoch_ms_timestamps_are_read_as_well_as_datetimes():
    firing = {**alert("QUEUE_STALLED", "FIRING", "x", "Q", "01:00", qmgr="QM9"), "ts": at("01:00")}
    resolved = {**alert("QUEUE_STALLED", "RESOLVED", "x", "Q", "01:07", qmgr="QM9"), "ts": at("01:07")}
    (q,) = build([resolved, firing], [], [], SINCE, UNTIL).queues  # in any order
    assert q.alerts[0].resolve_max_ms == 7 * MIN


def test_a_shared_queue_is_one_queue_of_its_group_whichever_member_raised_its_records():
    """A shared queue's stall raised naming one member and resolved naming another is one episode, and its High and
    OK from two members one service interval, under the group's name."""
    alerts = [
        alert("QUEUE_STALLED", "FIRING", "st-s", "PAY.IN", "01:00", qmgr="QM1", qsg="QSG1"),
        alert("QUEUE_STALLED", "RESOLVED", "st-s", "PAY.IN", "01:04", qmgr="QM2", qsg="QSG1"),
    ]
    events = [
        {**event("QSVCINT_HIGH", "QM2", "PAY.IN", "02:00"), "qsg": "QSG1"},
        {**event("QSVCINT_OK", "QM1", "PAY.IN", "02:30"), "qsg": "QSG1"},
    ]
    (pay,) = build(alerts, events, [], SINCE, UNTIL).queues
    assert (pay.qmgr, pay.subject) == ("QSG1", "QSG1/PAY.IN")
    assert pay.episodes == (
        Episode("st-s", "QUEUE_STALLED", at("01:00"), at("01:04"), open_at_since=False, open_at_until=False),
    )
    assert pay.service_interval.not_served_ms == 30 * MIN
