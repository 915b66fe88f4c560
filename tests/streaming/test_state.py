"""Operator state at rest (qmon.streaming.state): MessagePack of plain data, versioned."""

from __future__ import annotations

import pytest

from qmon.core.queues import STATE_VERSION, MonitorSettings, QueueMonitor
from qmon.core.records import Activity
from qmon.streaming import state as stored


def shard() -> QueueMonitor:
    mon = QueueMonitor("QM1", MonitorSettings(perfmev="ENABLED"))
    for i in range(3):
        mon.on_activity(Activity(f"p{i}", "QM1", "PAYROLL.IN", "PUT", 1_000 + i, msg_bytes=100))
    mon.pack()  # the remembered ids packed as the operator stores them (str, bytes, bytes)
    return mon


def test_a_shard_round_trips_as_plain_data():
    mon = shard()
    blob = stored.dumps(mon.state)
    assert blob[:1] != b"\x80"  # not a pickle
    again = QueueMonitor("QM1", mon.settings, stored.loads(blob))
    assert again.queues["PAYROLL.IN"]["depth"] == 3
    assert again.on_activity(Activity("p1", "QM1", "PAYROLL.IN", "PUT", 1_001, msg_bytes=100)) == []  # a duplicate
    assert again.queues["PAYROLL.IN"]["depth"] == 3


def test_a_version_1_shard_stored_as_plain_data_loads_and_is_written_back_current():
    state = shard().state
    state["v"] = 1
    q = state["queues"]["PAYROLL.IN"]
    q["timer"], q["timer_clock"], q["stall"] = (
        q.pop("svc_timer_start"),
        q.pop("svc_timer_clock"),
        q.pop("stall_alert_id"),
    )

    mon = QueueMonitor("QM1", MonitorSettings(perfmev="ENABLED"), stored.loads(stored.dumps(state)))
    assert mon.state["v"] == STATE_VERSION and mon.queues["PAYROLL.IN"]["svc_timer_start"] == 1_000
    assert stored.loads(stored.dumps(mon.state))["v"] == STATE_VERSION


def test_a_value_that_is_not_a_versioned_state_is_refused():
    with pytest.raises(stored.StoredStateError):
        stored.loads(stored.dumps({"queues": {}}))
