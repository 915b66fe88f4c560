"""The demo's live view, drawn from the records the job writes (snapshots, events, alerts), as they come
out of Avro: a field the rules rename breaks these tests, not a user's terminal."""

from __future__ import annotations

import datetime as dt
import io
import json
import typing

from qmon.app.demo import Screen, Thresholds, View, _cut
from qmon.app.render import line
from qmon.connectors import avro
from qmon.core import topics
from qmon.core.forecaster import ForecastSettings
from qmon.core.queues import MonitorSettings, QueueMonitor
from qmon.core.records import Activity, QueueSnapshot, Snapshot
from qmon.core.structures import StructureDef, StructureMonitor, StructureSettings
from qmon.core.timeconv import to_ms
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


def structure_row(view: View, name: str = "MSGQ1") -> str:
    return next(r for r in view.frame(1.0, width=200, height=45) if r.strip().startswith(name))


def overflow_row(view: View) -> str:
    return next(r for r in view.frame(1.0, width=200, height=45) if r.strip().startswith("overflow "))


def with_etas(record: dict, **seconds: float | None) -> dict:
    """``record`` (a structure's snapshot as Avro decodes it) with ``field=s``: that eta ``s`` seconds after its ts."""
    later = {k: None if s is None else record["ts"] + dt.timedelta(seconds=s) for k, s in seconds.items()}
    return {**record, **later}


def test_each_structure_shows_when_its_trend_reaches_ovflwmax_and_full_from_its_latest_snapshot():
    view = View({"MSGQ1": Thresholds(70, 80)})
    snap = with_etas(structure_snapshot(5, overflow=True), ovflwmax_eta=12, full_eta=39.2, overflow_full_eta=200)
    view.on_output(topics.SNAPSHOT, snap, "")
    row = structure_row(view)
    assert row.endswith("OVERFLOW (2 queues)  OVFLWMAX in 12 s, full in 40 s"), row
    assert overflow_row(view).endswith("% used, full in 3 min")
    text = "\n".join(view.frame(1.0, width=200, height=45))
    assert "time to OVFLWMAX and 100 % (full)" in text
    # the latest snapshot says: heading for full only, in hours; then for nothing
    view.on_output(topics.SNAPSHOT, with_etas(snap, ovflwmax_eta=None, full_eta=3 * 3600, overflow_full_eta=None), "")
    assert structure_row(view).endswith("OVERFLOW (2 queues)  full in 3 h")
    assert overflow_row(view).endswith("% used")
    view.on_output(topics.SNAPSHOT, with_etas(snap, ovflwmax_eta=None, full_eta=None, overflow_full_eta=None), "")
    assert structure_row(view).endswith("OVERFLOW (2 queues)") and " in " not in structure_row(view)


def test_a_trend_already_at_its_threshold_reads_now_and_written_epoch_ms_read_as_decoded_ones():
    view = View({"MSGQ1": Thresholds(70, 80)})
    snap = structure_snapshot(5)
    ts = to_ms(snap["ts"])
    view.on_output(topics.SNAPSHOT, {**snap, "ts": ts, "ovflwmax_eta": ts - 500, "full_eta": ts + 90_001}, "")
    assert structure_row(view).endswith("KB  OVFLWMAX now, full in 91 s")


def test_a_fill_forecast_shows_among_the_latest_alerts_and_its_structure_counts_down():
    """A structure filling steadily, its fill forecast 30 s ahead: the forecast's FIRING is in the latest events
    and alerts as any alert is, and the structure's row says when its trend reaches OVFLWMAX and full."""
    d = StructureDef("MSGQ1", size=256, initsize=256, ovflwstr="OVFQ1", ovflwsize=512, clear_hold_ms=0)
    settings = StructureSettings((d,), snapshot_interval_ms=1_000, forecast=ForecastSettings(horizon_ms=30_000))
    mon = StructureMonitor("MSGQ1", settings)
    alerts = []
    for i in range(200):  # one data element every 100 ms: OVFLWMAX (359 of 512) at 35.9 s, full at 51.2 s
        act = Activity(f"e{i}", "IMSA", f"1TRAN{i % 3}", "PUT", T + 100 * i, msg_bytes=512, structure="MSGQ1")
        alerts += [e.record for e in mon.on_activity(act) if e.topic == topics.ALERTS]
    (forecast,) = alerts
    assert forecast["type"] == "STRUCTURE_FILL_FORECAST" and forecast["state"] == "FIRING"
    (snap,) = mon.snapshot(T + 20_000)  # the newest put at 19.9 s
    view = View({"MSGQ1": Thresholds(70, 80)})
    view.on_output(topics.SNAPSHOT, through_avro(topics.SNAPSHOT, snap.record), "")
    alert = through_avro(topics.ALERTS, forecast)
    view.on_output(topics.ALERTS, alert, line(topics.ALERTS, alert))
    text = "\n".join(view.frame(20.0, width=200, height=45))
    assert structure_row(view).endswith("of 256 KB  OVFLWMAX in 16 s, full in 32 s")
    latest = text.split("Latest events and alerts", 1)[1]
    assert "STRUCTURE_FILL_FORECAST FIRING MSGQ1" in latest and "reaches OVFLWMAX 70 % in under a minute" in latest
    assert view.firing["STRUCTURE_FILL_FORECAST"] == 1 and len(view.episodes["STRUCTURE_FILL_FORECAST"]) == 1


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
