"""Snapshots for gauges (qmon.events.snapshot): a unit that changed publishes its state at most once per
monitor.snapshot_interval of the arrival clock; what changed in between waits for the unit's timer."""

from qmon.connectors import avro
from qmon.core import topics
from qmon.core.lazy import Lazy
from qmon.core.queues import MonitorSettings, QueueMonitor
from qmon.core.records import Activity
from qmon.core.structures import StructureDef, StructureMonitor, StructureSettings
from qmon.core.timeconv import to_ms

T = 1_700_000_000_000
QS = MonitorSettings(perfmev="ENABLED", snapshot_interval_ms=10_000)


def act(i, queue, op, ts, **kw):
    return Activity(f"e{i}", "QM1", queue, op, ts, clock=ts, **kw)


def batch(mon, records):
    """One micro-batch as the operator runs it: the rules, then the snapshot, then the state stored."""
    for r in records:
        mon.on_activity(r)
    out = mon.snapshot(max(r.clock for r in records))
    mon.pack()
    return out


def reload(mon: QueueMonitor) -> QueueMonitor:
    """The next batch sees the stored state, with no queue used yet."""
    state = dict(mon.state)
    state["queues"] = Lazy(dict(mon.queues.items()), lambda q: q)
    return QueueMonitor("QM1", mon.settings, state)


def test_first_change_is_published_at_once_then_at_most_once_an_interval():
    mon = QueueMonitor("QM1", QS)
    (snap,) = batch(mon, [act(1, "A", "PUT", T), act(2, "A", "PUT", T + 1), act(3, "B", "PUT", T + 2)])
    assert snap.topic == topics.SNAPSHOT and snap.key == "QM1"
    assert [(q["queue"], q["depth"], q["service_timer_start"]) for q in snap.record["queues"]] == [
        ("A", 2, T),
        ("B", 1, T + 2),
    ]
    assert snap.record["ts"] == T + 2 and snap.record["forgotten"] == []
    mon = reload(mon)
    assert batch(mon, [act(4, "A", "GET", T + 5_000)]) == []  # within the interval: waits
    assert mon.snapshot_due() == T + 10_002  # the unit's timer brings it: an interval after the last one
    mon = reload(mon)
    assert mon.snapshot(T + 10_001) == []
    (late,) = mon.snapshot(T + 10_002)
    assert [(q["queue"], q["depth"], q["service_timer_start"]) for q in late.record["queues"]] == [("A", 1, T + 5_000)]
    assert mon.snapshot_due() is None  # nothing changed since
    mon = reload(mon)
    assert mon.snapshot(T + 60_000) == []


def test_a_queue_s_snapshot_gives_its_oldest_message_s_put_and_its_last_put_and_get_none_where_unseen():
    """``oldest_message_put`` (MSGAGE is the time since), ``last_put`` and ``last_get`` (LPUTDATE/LPUTTIME,
    LGETDATE/LGETTIME); null, never 0, where the queue is empty, qmon did not see the oldest messages' puts, or it
    saw no put or get."""
    mon = QueueMonitor("QM1", QS)
    (snap,) = batch(
        mon,
        [
            act(1, "A", "PUT", T),
            act(2, "A", "PUT", T + 1_000),
            act(3, "A", "GET", T + 2_000),
            act(4, "B", "PUT", T + 3_000),
            act(5, "B", "GET", T + 4_000),
            act(6, "C", "GET", T + 5_000, depth_after=2),  # 3 there, their puts unseen
        ],
    )
    assert snap.record["queues"] == [
        {"queue": "A", "depth": 1, "service_timer_start": T + 2_000, "oldest_message_put": T + 1_000,
         "last_put": T + 1_000, "last_get": T + 2_000},
        {"queue": "B", "depth": 0, "service_timer_start": None, "oldest_message_put": None,
         "last_put": T + 3_000, "last_get": T + 4_000},
        {"queue": "C", "depth": 2, "service_timer_start": T + 5_000, "oldest_message_put": None,
         "last_put": None, "last_get": T + 5_000},
    ]  # fmt: skip
    back = avro.decode("Snapshot", avro.encode("Snapshot", snap.record))
    assert [[q[f] and to_ms(q[f]) for f in ("oldest_message_put", "last_put", "last_get")] for q in back["queues"]] == [
        [T + 1_000, T + 1_000, T + 2_000],
        [None, T + 3_000, T + 4_000],
        [None, None, T + 5_000],
    ]


def test_a_forgotten_queue_is_named_so_its_series_go():
    mon = QueueMonitor("QM1", QS)
    batch(mon, [act(1, "A", "PUT", T), act(2, "A", "GET", T + 1)])
    mon = reload(mon)
    assert mon.expire(T + 100_000, 50_000) == ["A"]
    (snap,) = mon.snapshot(T + 100_000)
    assert snap.record["queues"] == [] and snap.record["forgotten"] == ["A"]


def test_no_snapshots_when_the_interval_is_zero():
    mon = QueueMonitor("QM1", MonitorSettings(perfmev="ENABLED"))
    assert batch(mon, [act(1, "A", "PUT", T)]) == []
    assert mon.snapshot_due() is None


def test_a_structure_publishes_its_usage_and_overflow():
    d = StructureDef("MSGQ1", size=10, initsize=10, ovflwstr="OVFQ1", ovflwsize=20, clear_hold_ms=0)
    mon = StructureMonitor("MSGQ1", StructureSettings((d,), snapshot_interval_ms=10_000))
    for i in range(3):
        mon.on_activity(Activity(f"e{i}", "IMSA", "APP.Q1", "PUT", T + i, msg_bytes=512, clock=T + i))
    (snap,) = mon.snapshot(T + 2)
    r = snap.record
    assert snap.key == "MSGQ1" and r["structure"] == "MSGQ1" and r.get("qmgr") is None
    assert (r["size_kb"], r["capacity_elements"], r["used_elements"]) == (10, 20, 3)
    assert (r["overflow_structure"], r["overflow_size_kb"], r["overflow_capacity_elements"]) == ("OVFQ1", 20, 40)
    assert (r["overflow_used_elements"], r["overflow_mode"], r["queues_in_overflow"]) == (0, False, 0)
    assert (r["ovflwmax"], r["fullthreshold"]) == (70, 80)  # the definition's (CQS's defaults here)
    back = avro.decode("Snapshot", avro.encode("Snapshot", r))
    assert (back["ovflwmax"], back["fullthreshold"]) == (70, 80)
    state = dict(mon.state)
    state["queues"] = Lazy(dict(mon.state["queues"].items()), lambda q: q)
    mon = StructureMonitor("MSGQ1", mon.settings, state)  # the next batch, no queue used
    assert mon.snapshot(T + 20_000) == []  # unchanged since


def test_a_resource_structure_s_snapshot_has_no_ovflwmax():
    d = StructureDef("RSRC1", size=10, resource=True, fullthreshold=90)
    mon = StructureMonitor("RSRC1", StructureSettings((d,), snapshot_interval_ms=10_000))
    mon.on_activity(Activity("e0", "IMSA", "APP.Q1", "PUT", T, msg_bytes=512, clock=T))
    (snap,) = mon.snapshot(T)
    assert (snap.record["ovflwmax"], snap.record["fullthreshold"]) == (None, 90)


def test_a_structure_s_snapshot_says_when_its_trend_reaches_its_thresholds():
    """A steady fill of 10 data elements every 30 s: the snapshot says when it reaches OVFLWMAX (whether or not
    within the forecast's horizon); flat, it says nothing."""
    t0 = 1_700_000_010_000  # a multiple of the 30-second sample step
    d = StructureDef("MSGQ1", size=1000)  # 2,000 elements, at its SIZE: OVFLWMAX at 1,400, full at 2,000
    mon = StructureMonitor("MSGQ1", StructureSettings((d,), snapshot_interval_ms=10_000))
    for i in range(600):  # a put every 3 s for 30 min: a sample every 30 s, 10 more each
        mon.on_activity(Activity(f"e{i}", "IMSA", "1PAYROLL", "PUT", t0 + i * 3000, msg_bytes=500, clock=t0 + i * 3000))
    (snap,) = mon.snapshot(t0 + 1_800_000)
    r = snap.record
    # the newest sample, 590 at 29.5 min: 810 more to OVFLWMAX at 10 a sample: 81 samples, 40.5 min later
    assert (r["ovflwmax_eta"], r["full_eta"], r["overflow_full_eta"]) == (t0 + 70 * 60_000, t0 + 100 * 60_000, None)
    flat = StructureMonitor("MSGQ1", mon.settings)
    for i in range(600):
        flat.on_activity(
            Activity(f"f{i}", "IMSA", "1PAYROLL", "PUT" if i % 2 == 0 else "GET", t0 + i * 3000, msg_bytes=500)
        )
    (snap,) = flat.snapshot(t0 + 1_800_000)
    assert (snap.record["ovflwmax_eta"], snap.record["full_eta"]) == (None, None)
