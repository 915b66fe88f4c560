"""Remembered event ids, packed at rest (qmon.core.dedup), and the monitors across store/load cycles."""

import pickle

from qmon.core.dedup import Recent, pack, unpack
from qmon.core.queues import MonitorSettings, QueueMonitor
from qmon.core.records import Activity
from qmon.core.structures import StructureDef, StructureMonitor, StructureSettings


def test_pack_round_trip_keeps_ids_ts_and_order():
    recent = {"b2": 5, "a\x1f1": 7, "": 9, "é" * 40: 11, "\x00x": 13}
    again = unpack(pack(recent))
    assert again == recent and list(again) == list(recent)
    assert unpack(pack({})) == {}


def test_duplicates_are_found_across_pack_and_pickle():
    r = Recent(window_ms=1000, keep=3)
    q = {}
    assert not r.duplicate(q, "e1", 100)
    r.pack()
    assert isinstance(q["recent"], tuple)
    q = pickle.loads(pickle.dumps(q))
    r = Recent(window_ms=1000, keep=3)
    assert r.duplicate(q, "e1", 150)
    assert not r.duplicate(q, "e2", 160)


def test_oldest_forgotten_by_count_and_window_after_unpacking():
    r = Recent(window_ms=1000, keep=2)
    q = {}
    for i, ts in enumerate((0, 10, 20)):
        r.duplicate(q, f"e{i}", ts)
    r.pack()
    r = Recent(window_ms=1000, keep=2)
    assert not r.duplicate(q, "e0", 30)  # e0 was evicted by count
    assert not r.duplicate(q, "e9", 5000)  # everything else falls out of the window
    assert list(q["recent"]) == ["e9"]


def test_only_touched_holders_are_unpacked():
    r = Recent(window_ms=1000, keep=8)
    a, b = {}, {}
    r.duplicate(a, "x", 1)
    r.duplicate(b, "y", 1)
    r.pack()
    r = Recent(window_ms=1000, keep=8)
    r.duplicate(a, "z", 2)
    assert isinstance(a["recent"], dict) and isinstance(b["recent"], tuple)
    r.pack()
    assert isinstance(a["recent"], tuple)


def store_and_load(state):
    return pickle.loads(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))


def test_queue_monitor_ignores_a_redelivery_in_a_later_batch():
    settings = MonitorSettings(perfmev="ENABLED")
    mon = QueueMonitor("QM1", settings)
    put = Activity("e1", "QM1", "Q1", "PUT", 1000, None, 10, None, None, None, None)
    mon.on_activity(put)
    mon.pack()
    mon = QueueMonitor("QM1", settings, store_and_load(mon.state))
    assert mon.on_activity(put) == []
    assert mon.queues["Q1"]["depth"] == 1


def test_structure_monitor_ignores_a_redelivery_in_a_later_batch():
    settings = StructureSettings((StructureDef("MSGQ1", size=1000),))
    mon = StructureMonitor("MSGQ1", settings)
    put = Activity("e1", "IMSA", "Q1", "PUT", 1000, msg_bytes=512)
    mon.on_activity(put)
    used = mon.state["used"]
    mon.pack()
    mon = StructureMonitor("MSGQ1", settings, store_and_load(mon.state))
    assert mon.on_activity(put) == []
    assert mon.state["used"] == used
