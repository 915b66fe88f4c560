"""STRUCTURE_FILL_FORECAST and QUEUE_FILL_FORECAST through the pure reference (``run_reference``, what ``qmon
replay`` runs): each target fires ahead of its real alert with the instant it predicts, and resolves when the
real alert takes over, when the fill stops (after its hold), or, on a quiet structure or queue, by the clock."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from qmon.connectors import avro
from qmon.core.config import Config
from qmon.core.forecaster import ForecastSettings
from qmon.core.queues import MonitorSettings, QueueDefaults, QueueMonitor
from qmon.core.records import Activity
from qmon.core.reference import run_reference
from qmon.core.structures import StructureDef, StructureMonitor, StructureSettings

T0 = 1_700_000_010_000  # a multiple of the 30-second sample step
MIN = 60_000
FORECASTS = ("STRUCTURE_FILL_FORECAST", "QUEUE_FILL_FORECAST")


def structures(*defs: StructureDef, horizon_ms: int = 15 * MIN) -> StructureSettings:
    return StructureSettings(defs, forecast=ForecastSettings(horizon_ms=horizon_ms))


def queues(perfmev: str = "DISABLED", **attrs: Any) -> MonitorSettings:
    return MonitorSettings(perfmev=perfmev, queue_defaults=(QueueDefaults("*", {"MAXDEPTH": 2000, **attrs}),))


def puts(n: int, start: int = T0, every: int = 3000, queue: str = "1PAYROLL", **extra: Any) -> list[dict[str, Any]]:
    """``n`` puts of one data element, one every ``every`` ms: 10 every 30-second sample, 1 % of 2,000 a minute."""
    return [
        {"event_id": f"{queue}-p{start + i * every}", "qmgr": "IMSA", "queue": queue, "op": "PUT",
         "ts": start + i * every, "msg_bytes": 500, "structure": "MSGQ1", **extra}
        for i in range(n)
    ]  # fmt: skip


def alerts(out: list[Any], *kinds: str) -> list[dict[str, Any]]:
    return [e.record for e in out if e.record.get("type") in kinds]


MSGQ1 = StructureDef("MSGQ1", size=1000)  # 2,000 data elements, at its SIZE, OVFLWMAX 70 %: 1,400


def test_a_steady_fill_forecasts_ovflwmax_15_minutes_ahead_then_cqs_takes_over():
    out = run_reference(puts(1500), MonitorSettings(), structure_settings=structures(MSGQ1))
    [fired, resolved] = alerts(out, "STRUCTURE_FILL_FORECAST")
    [entered] = alerts(out, "OVERFLOW_MODE_ENTERED")
    # the 110th sample (55 min) is 1,100: 300 to go at 10 a sample, 30 samples of 30 s: at 70 min
    assert (fired["state"], fired["ts"], fired["eta"]) == ("FIRING", T0 + 55 * MIN, T0 + 70 * MIN)
    assert fired["message"] == "MSGQ1 reaches OVFLWMAX 70 % in about 15 min at 1.0 % a minute"
    assert fired["summary"].startswith("Structure MSGQ1 is 55.0 % used and has been rising 1.0 % a minute")
    assert (fired["severity"], fired["subject_kind"], fired["subject"]) == ("WARNING", "STRUCTURE", "MSGQ1")
    assert entered["ts"] == T0 + 1399 * 3000  # the 1,400th put: 15 minutes less 3 s after the FIRING
    assert (resolved["state"], resolved["alert_id"], resolved["ts"]) == ("RESOLVED", fired["alert_id"], entered["ts"])
    assert "reached OVFLWMAX 70 %" in resolved["summary"] and resolved["eta"] is None
    assert all(a["eta"] is None for a in alerts(out, "OVERFLOW_MODE_ENTERED", "QUEUE_PUTS_REJECTED"))
    decoded = avro.decode("Alert", avro.encode("Alert", fired))
    assert avro.to_jsonable(decoded)["eta"] == fired["eta"]


def test_a_resource_structure_forecasts_full_not_ovflwmax():
    rsrc = StructureDef("MSGQ1", size=1000, resource=True, fullthreshold=100)
    out = run_reference(puts(2100), MonitorSettings(), structure_settings=structures(rsrc))
    [fired, resolved] = alerts(out, "STRUCTURE_FILL_FORECAST")
    [full] = alerts(out, "STRUCTURE_FULL")
    assert fired["message"] == "MSGQ1 reaches 100 % (full) in about 15 min at 1.0 % a minute"
    assert (fired["ts"], fired["eta"]) == (T0 + 85 * MIN, T0 + 100 * MIN)
    assert "puts are rejected (CQS0205E)" in fired["summary"]
    assert full["ts"] == T0 + 2000 * 3000  # the 2,001st put does not fit
    assert (resolved["ts"], resolved["alert_id"]) == (full["ts"] - 3000, fired["alert_id"])  # the 2,000th filled it
    assert resolved["summary"] == (
        "Structure MSGQ1 reached 100 % (full) at 2023-11-14T23:53:27.000Z, forecast for 2023-11-14T23:53:30.000Z: "
        "the next put that does not fit raises STRUCTURE_FULL. It is 100.0 % used now."
    )


def test_a_structure_below_its_size_is_altered_before_it_is_full_so_full_is_not_forecast():
    grows = StructureDef("MSGQ1", size=2000, initsize=1000)
    out = run_reference(puts(1500), MonitorSettings(), structure_settings=structures(grows))
    [fired, resolved] = alerts(out, "STRUCTURE_FILL_FORECAST")
    assert "OVFLWMAX" in fired["message"]
    [altered] = alerts(out, "STRUCTURE_ALTERED")
    assert resolved["ts"] == altered["ts"] and "CQS alters the structure" in resolved["summary"]


def test_the_overflow_structure_filling_is_forecast_before_it_is_full():
    """At OVFLWMAX 1PAYROLL (1,400 elements) moves to the overflow structure of 2,000; its puts go on there."""
    with_ovf = StructureDef("MSGQ1", size=1000, ovflwstr="MSGQ1OV", ovflwsize=1000)
    out = run_reference(puts(2100), MonitorSettings(), structure_settings=structures(with_ovf))
    forecasts = alerts(out, "STRUCTURE_FILL_FORECAST")
    ovf = [a for a in forecasts if "MSGQ1OV" in (a["message"] or a["summary"])]
    assert [a["state"] for a in ovf] == ["FIRING", "RESOLVED"]
    [full] = alerts(out, "OVERFLOW_STRUCTURE_FULL")
    assert (
        ovf[0]["message"]
        == "MSGQ1OV (overflow structure of MSGQ1) reaches 100 % (full) in about 15 min at 1.0 % a minute"
    )
    # the 2,000th element fills it (100 min), the next put is rejected
    assert ovf[0]["eta"] == full["ts"] == T0 + 100 * MIN and ovf[1]["ts"] == full["ts"] - 3000
    assert [a["state"] for a in forecasts if a not in ovf] == ["FIRING", "RESOLVED"]  # OVFLWMAX, once: the
    # queue's move to the overflow structure is no fill of either (its samples start again)


def _fill_then_balance(level: int, minutes: int) -> list[dict[str, Any]]:
    """A fill of 10 a sample up to ``level``, then a put and a get every 3 s for ``minutes``."""
    recs = puts(level)
    t = T0 + level * 3000
    for i in range(minutes * 20):
        recs.append({**puts(1, t + i * 3000)[0], "event_id": f"bp{i}"})
        recs.append({**puts(1, t + i * 3000 + 1)[0], "event_id": f"bg{i}", "op": "GET"})
    return recs


def test_a_fill_that_stops_short_resolves_once_the_trend_no_longer_reaches_it():
    out = run_reference(_fill_then_balance(1240, 30), MonitorSettings(), structure_settings=structures(MSGQ1))
    [fired, resolved] = alerts(out, "STRUCTURE_FILL_FORECAST")
    assert fired["state"] == "FIRING" and resolved["state"] == "RESOLVED"
    assert not alerts(out, "OVERFLOW_MODE_ENTERED")
    stopped = T0 + 1240 * 3000
    assert stopped < resolved["ts"] < stopped + 15 * MIN
    assert "no longer reaches OVFLWMAX 70 % within 15 min" in resolved["summary"]


def test_a_quiet_structure_whose_fill_stopped_resolves_by_the_clock():
    """No record after the fill: the job's timer (here ``final_clock``) takes the samples of a firing forecast."""
    settings = structures(MSGQ1)
    out = run_reference(puts(1240), MonitorSettings(), structure_settings=settings, final_clock=T0 + 200 * MIN)
    [fired, resolved] = alerts(out, "STRUCTURE_FILL_FORECAST")
    assert resolved["state"] == "RESOLVED" and resolved["ts"] < T0 + 100 * MIN
    mon = StructureMonitor("MSGQ1", settings)
    for r in puts(1240):
        mon.on_activity(Activity(r["event_id"], "IMSA", r["queue"], "PUT", r["ts"], msg_bytes=500, clock=r["ts"] + 7))
    assert mon.state["forecast"] is not None and mon.state["forecast"]["on"]
    assert mon.next_scan_clock() == mon.state["forecast"]["at"] + 7  # the next sample, on the arrival clock


def test_a_consumer_draining_in_batches_is_never_forecast():
    """20 % up to 60 % over 4 minutes, drained back in one batch, for 3 hours: never at OVFLWMAX."""
    recs, t = [], T0
    for cycle in range(45):
        recs.extend(puts(800, t, every=300, queue="1BATCH"))
        t += 240_000
        recs.extend({**puts(1, t + i, queue="1BATCH")[0], "op": "GET", "event_id": f"g{cycle}-{i}"} for i in range(800))
        t += 1000
    out = run_reference(recs, MonitorSettings(), structure_settings=structures(MSGQ1), final_clock=t)
    assert not alerts(out, *FORECASTS)


def test_forecasts_off_raise_nothing_and_keep_no_samples():
    settings = structures(MSGQ1, horizon_ms=0)
    out = run_reference(puts(1500), queues(), structure_settings=settings)
    assert not alerts(out, *FORECASTS) and alerts(out, "OVERFLOW_MODE_ENTERED")
    mon = QueueMonitor("IMSA", replace(queues(), forecast=ForecastSettings(horizon_ms=0)))
    mon.on_activity(Activity("p", "IMSA", "Q", "PUT", T0))
    assert mon.queues["Q"]["forecast"] is None


# ---------------------------------------------------------------- queues


def _queue_puts(n: int, **extra: Any) -> list[dict[str, Any]]:
    return [{**r, "queue": "PAYROLL.IN", "qmgr": "QM1", "structure": None, **extra} for r in puts(n)]


def test_a_queue_filling_towards_maxdepth_is_forecast_and_a_rejected_put_takes_over():
    recs = _queue_puts(2000) + [{**_queue_puts(1)[0], "event_id": "full", "ts": T0 + 2000 * 3000, "reason": 2053}]
    out = run_reference(recs, queues())
    [fired, resolved] = alerts(out, "QUEUE_FILL_FORECAST")
    assert fired["message"] == "PAYROLL.IN on QM1 reaches MAXDEPTH 2000 in about 15 min at 20 messages a minute"
    assert (fired["ts"], fired["eta"]) == (T0 + 85 * MIN, T0 + 100 * MIN)
    assert (fired["subject_kind"], fired["subject"], fired["queue"], fired["qmgr"]) == (
        "QUEUE",
        "PAYROLL.IN",
        "PAYROLL.IN",
        "QM1",
    )
    assert "when puts fail with MQRC_Q_FULL (2053)" in fired["summary"]
    assert resolved["ts"] == T0 + 1999 * 3000  # the 2,000th put: the queue is at MAXDEPTH
    assert "it reached MAXDEPTH 2000" in resolved["summary"]


def test_qdepthhi_is_forecast_where_depth_events_are_enabled_and_the_event_takes_over():
    settings = queues("ENABLED", QDEPTHHI=70, QDPHIEV=True)
    out = run_reference(_queue_puts(1500), settings)
    [fired, resolved] = alerts(out, "QUEUE_FILL_FORECAST")
    assert fired["message"] == (
        "PAYROLL.IN on QM1 reaches QDEPTHHI 70 % (1400 messages) in about 15 min at 20 messages a minute"
    )
    [high] = [e.record for e in out if e.record.get("type") == "QDEPTH_HIGH"]
    assert resolved["ts"] == high["ts"] and "the Queue Depth High event (QDEPTH_HIGH) takes over" in resolved["summary"]
    quiet = run_reference(_queue_puts(1500), queues("DISABLED", QDEPTHHI=70, QDPHIEV=True))
    assert not alerts(quiet, "QUEUE_FILL_FORECAST")  # PERFMEV disabled: no QDEPTHHI, and MAXDEPTH is 25 min off


def test_a_quiet_queue_whose_fill_stopped_resolves_by_the_clock():
    settings = queues()
    out = run_reference(_queue_puts(1840), settings, final_clock=T0 + 300 * MIN)
    [fired, resolved] = alerts(out, "QUEUE_FILL_FORECAST")
    assert resolved["state"] == "RESOLVED" and resolved["ts"] < T0 + 120 * MIN
    mon = QueueMonitor("QM1", settings)
    for r in _queue_puts(1840):
        mon.on_activity(Activity(r["event_id"], "QM1", r["queue"], "PUT", r["ts"], clock=r["ts"] + 5))
    fc = mon.queues["PAYROLL.IN"]["forecast"]
    assert fc is not None and fc["on"] and mon.next_stall_clock() == fc["at"] + 5
    assert mon.on_clock(fc["at"] + 4) == []  # not yet
    mon.pack()
    assert not mon.forgettable("PAYROLL.IN", mon.queues["PAYROLL.IN"])


def test_the_configuration_sets_the_horizon_and_the_confidence():
    config = Config.model_validate({"forecast": {"horizon": "30 minutes", "min_confidence": 0.7}})
    assert config.monitor_settings().forecast == ForecastSettings(30 * MIN, 0.7)
    assert config.structure_settings().forecast == ForecastSettings(30 * MIN, 0.7)
    assert Config().monitor_settings().forecast == ForecastSettings()
    assert Config.model_validate({"forecast": {"horizon": "0 s"}}).structure_settings().forecast.step_ms == 0
