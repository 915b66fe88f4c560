"""`qmon tail qmon.events.snapshot qmon.events.progress`: one readable line per status record."""

from qmon.app.render import line
from qmon.core import topics


def test_snapshot_and_progress_lines():
    shard = {"ts": 0, "qmgr": "QM1", "queues": [{"queue": "A", "depth": 3}], "forgotten": ["OLD"]}
    assert line(topics.SNAPSHOT, shard).endswith("SNAPSHOT QM1 A=3 forgotten: OLD")
    s = {"ts": 0, "structure": "MSGQ1", "used_elements": 15, "capacity_elements": 20, "overflow_mode": False}
    assert line(topics.SNAPSHOT, s).endswith("SNAPSHOT MSGQ1 15/20 elements (75.0%)")
    s.update(ovflwmax_eta=720_000, full_eta=None)
    assert line(topics.SNAPSHOT, s).endswith("SNAPSHOT MSGQ1 15/20 elements (75.0%), OVFLWMAX at 00:12:00.000")
    p = {"ts": 0, "batch_id": 4, "input_rows": 9, "duration_ms": 700, "inputs": [{"end_offset": 5, "latest_offset": 8}]}
    assert line(topics.PROGRESS, p).endswith("PROGRESS batch 4 9 records in 700 ms, lag 3")


def test_a_shared_queue_s_lines_name_its_group_and_the_member():
    perf = {
        "type": "QSVCINT_HIGH",
        "qmgr": "QM2",
        "qsg": "QSG1",
        "queue": "PAY.IN",
        "ts": 0,
        "reason_code": 2226,
        "reason": "MQRC_Q_SERVICE_INTERVAL_HIGH",
        "msg_enq_count": 1,
        "msg_deq_count": 1,
        "high_q_depth": 1,
        "time_since_reset": 0,
    }
    assert "QSVCINT_HIGH  QSG1/PAY.IN (QM2) reason 2226" in line(topics.PERFORMANCE, perf)
    stalled = {"type": "QUEUE_STALLED", "state": "FIRING", "subject_kind": "QUEUE", "subject": "PAY.IN",
               "qmgr": "QM1", "qsg": "QSG1", "ts": 0, "severity": "WARNING", "summary": "s"}  # fmt: skip
    assert "QUEUE_STALLED FIRING QSG1/PAY.IN (QM1) | s" in line(topics.ALERTS, stalled)
