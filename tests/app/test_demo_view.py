"""The demo's live view, drawn from the records the job writes (snapshots, events, alerts), as they come
out of Avro: a field the rules rename breaks these tests, not a user's terminal."""

from __future__ import annotations

import io
import json
import typing

from qmon.app.demo import Screen, Thresholds, View, _cut
from qmon.app.render import line
from qmon.connectors import avro
from qmon.core import topics
from qmon.core.queues import MonitorSettings, QueueMonitor
from qmon.core.records import Activity, QueueSnapshot, Snapshot
from qmon.core.structures import StructureDef, StructureMonitor, StructureSettings
from tests.conftest import ROOT

T = 1_700_000_000_000


def through_avro(topic: str, record: dict) -> dict:
    """A record as a reader of ``topic`` gets it."""
    name = topics.RECORD_OF[topic]
    return avro.decode(name, avro.encode(name, record))


def structure_snapshot(puts: int, overflow: bool = False) -> dict:
    d = StructureDef("MSGQ1", size=10, initsize=10, ovflwstr="OVFQ1", ovflwsize=20, clear_hold_ms=0)
    mon = StructureMonitor("MSGQ1", StructureSettings((d,), snapshot_interval_ms=1_000))
    for i in range(puts):
        mon.on_activity(Activity(f"e{i}", "QM1", f"Q{i % 3}", "PUT", T + i, msg_bytes=100, structure="MSGQ1"))
    (snap,) = mon.snapshot(T + puts)
    record = dict(snap.record)
    if overflow:
        record.update(overflow_mode=True, queues_in_overflow=2)
    return through_avro(topics.SNAPSHOT, record)


def queue_snapshot() -> dict:
    mon = QueueMonitor("QM1", MonitorSettings(perfmev="ENABLED", snapshot_interval_ms=1_000))
    for i in range(3):
        mon.on_activity(Activity(f"q{i}", "QM1", "PAYROLL.REQUEST", "PUT", T + i, clock=T + i))
    (snap,) = mon.snapshot(T + 3)
    return through_avro(topics.SNAPSHOT, snap.record)


def perf_event() -> dict:
    return {
        "event_id": "p1",
        "ts": T,
        "qmgr": "QM1",
        "queue": "PAYROLL.REQUEST",
        "type": "QSVCINT_HIGH",
        "reason_code": 2226,
        "reason": "MQRC_Q_SERVICE_INTERVAL_HIGH",
        "high_q_depth": 3,
        "msg_enq_count": 3,
        "msg_deq_count": 0,
        "time_since_reset": 5,
        "service_time_ms": 2500,
        "service_interval_ms": 2000,
    }


def fed_view() -> View:
    view = View({"MSGQ1": Thresholds(70, 80), "MSGQ2": Thresholds(70, 85)})
    for rec in (structure_snapshot(5, overflow=True), queue_snapshot()):
        view.on_output(topics.SNAPSHOT, rec, "")
    perf = through_avro(topics.PERFORMANCE, _complete(topics.PERFORMANCE, perf_event()))
    view.on_output(topics.PERFORMANCE, perf, line(topics.PERFORMANCE, perf))
    return view


def _complete(topic: str, record: dict) -> dict:
    """``record`` with every other field of its schema at its default (null)."""
    schema = json.loads((ROOT / "avro" / f"{topics.RECORD_OF[topic]}.avsc").read_text())
    return {f["name"]: record.get(f["name"], f.get("default")) for f in schema["fields"]}


def test_the_frame_shows_structures_with_bars_overflow_mode_queues_and_the_latest_events():
    view = fed_view()
    view.set_status("simulator running")
    text = "\n".join(view.frame(12.0, width=160, height=45))
    row = next(r for r in text.splitlines() if r.strip().startswith("MSGQ1"))
    assert "[" in row and "|" in row and "!" in row and "OVERFLOW (2 queues)" in row  # usage bar, thresholds, mode
    assert "of 10 KB" in row
    assert "overflow OVFQ1:" in text
    assert "MSGQ2  (no snapshot yet)" in text  # a structure the job has not reported yet
    queue = next(r for r in text.splitlines() if "QM1/PAYROLL.REQUEST" in r and "depth" in r)
    assert "depth     3" in queue and "QSVCINT_HIGH" in queue and "service 2.5 s of 2.0 s" in queue
    assert "Latest events and alerts" in text and "MQRC_Q_SERVICE_INTERVAL_HIGH" in text
    assert "simulator running" in text.splitlines()[0]


def test_the_frame_fits_the_terminal():
    view = fed_view()
    for i in range(40):
        view.on_output(topics.DLQ, {"reason": 1}, f"\033[31mERROR\033[0m dead letter {i} " + "x" * 200)
    rows = view.frame(1.0, width=60, height=20)
    assert len(rows) <= 20
    assert all(len(_cut(r, 10_000).replace("\033[31m", "").replace("\033[0m", "")) <= 60 for r in rows)
    assert "dead letter 39" in rows[-1]  # the newest at the bottom


def test_cut_keeps_colour_codes_whole():
    assert _cut("\033[31mabcdef\033[0m", 3) == "\033[31mabc\033[0m"
    assert _cut("abc", 10) == "abc"


def test_a_view_that_cannot_draw_says_why_in_one_line_and_stops_drawing(capsys):
    view = fed_view()
    view.usage["MSGQ1"].size_kb = None  # a frame that raises
    view.thresholds = {"MSGQ1": None}
    out = io.StringIO()
    screen = Screen(view, out)
    screen.draw()
    said = capsys.readouterr().out
    assert said.count("\n") == 1 and "the live view cannot draw" in said and "one line per record" in said
    assert not screen.drawing
    assert out.getvalue().endswith("\033[?25h\033[?1049l")  # the terminal given back


def test_the_snapshot_type_declares_exactly_the_avro_schema_s_fields():
    schema = json.loads((ROOT / "avro" / "Snapshot.avsc").read_text())
    assert set(typing.get_type_hints(Snapshot)) == {f["name"] for f in schema["fields"]}
    queues = next(f for f in schema["fields"] if f["name"] == "queues")["type"]["items"]
    assert set(typing.get_type_hints(QueueSnapshot)) == {f["name"] for f in queues["fields"]}
