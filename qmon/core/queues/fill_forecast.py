"""QUEUE_FILL_FORECAST: a queue whose depth will reach MAXDEPTH, or QDEPTHHI where depth events are enabled,
within ``forecast.horizon`` at its current trend.  Beyond IBM MQ, whose queue depth events (IBM MQ, *Queue
depth events*) come once the depth is there.  The forecasts never change the queue's service timer, statistics or performance events.  Pure.

Targets, each its own episode:

* **MAXDEPTH**: the depth reaching MAXDEPTH (the queue's, as its depth events read it: configured, set by
  DEFINE or ALTER QLOCAL, else MQ's default), where puts fail with MQRC_Q_FULL.
* **QDEPTHHI**: the depth reaching QDEPTHHI % of MAXDEPTH while PERFMEV is ENABLED and QDPHIEV is enabled,
  where MQ raises a Queue Depth High event.

Each resolves when its threshold is reached (the depth is there, or, for MAXDEPTH, a put failed with
MQRC_Q_FULL), when it no longer applies, or as ``qmon.core.forecaster`` says otherwise.
"""

from __future__ import annotations

import logging

from qmon.core import topics
from qmon.core.forecaster import Decision, Forecaster, Target, start
from qmon.core.ids import event_id
from qmon.core.queues.shard import Shard
from qmon.core.queues.state import QueueState
from qmon.core.reasons import MQRC_Q_FULL
from qmon.core.records import Activity, Emit, SubjectKind, alert, iso, minutes, plural, within

logger = logging.getLogger(__name__)


class QueueFillForecast:
    """The fill forecasts of a shard's queues: the samples due before a record (``catch_up``), the episodes a
    record ends (``on_activity``), and while one fires, the arrival-clock deadline of the next sample (``due``,
    ``on_clock``)."""

    def __init__(self, shard: Shard):
        self.shard = shard
        self.settings = shard.settings

    def _targets(self, q: QueueState) -> list[Target]:
        a, depth = q["attrs"], q["depth"]
        maxdepth, out = a["MAXDEPTH"], []
        if depth < maxdepth:
            out.append(Target("MAXDEPTH", 0, maxdepth))
        high = -(-a["QDEPTHHI"] * maxdepth // 100)  # the least depth at or above QDEPTHHI %
        if self.shard.perfmev_of(q) == "ENABLED" and a["QDPHIEV"] and depth < high:
            out.append(Target("QDEPTHHI", 0, high))
        return out

    def catch_up(self, queue: str, q: QueueState, ts: int, source: str) -> list[Emit]:
        """The samples due by event time ``ts`` (before the record at ``ts`` applies), judged; the forecasts
        started, or stopped, as the settings say."""
        settings, fc = self.settings.forecast, q["forecast"]
        if fc is not None and ts < fc["at"] and fc["step"] == settings.step_ms:
            return []  # no sample due (most records)
        out: list[Emit] = []
        if fc is not None and fc["step"] != settings.step_ms:
            out = [
                self._record(queue, q, d, source) for d in Forecaster(settings, fc, (self.shard.qmgr, queue)).close(ts)
            ]
            fc = q["forecast"] = None
        if fc is None and settings.step_ms:
            fc = q["forecast"] = start(settings, ts, 1)
        if fc is not None:
            decisions = Forecaster(settings, fc, (self.shard.qmgr, queue)).advance(ts, [q["depth"]], self._targets(q))
            out.extend(self._record(queue, q, d, f"forecast:{d.key}@{d.at}") for d in decisions)
        return out

    def on_activity(self, rec: Activity, q: QueueState, clock: int) -> list[Emit]:
        """After ``rec``: FIRING forecasts whose threshold it reached, or that no longer apply, resolve; while one
        fires, the queue keeps its newest [event time, arrival clock] for its timer."""
        fc = q["forecast"]
        if fc is None or not fc["on"]:
            return []
        a, depth, out = q["attrs"], q["depth"], []
        reached = {
            "MAXDEPTH": depth >= a["MAXDEPTH"] or (rec.op == "PUT" and rec.reason == MQRC_Q_FULL),
            "QDEPTHHI": depth * 100 >= a["QDEPTHHI"] * a["MAXDEPTH"],
        }
        active = {t.key for t in self._targets(q)}
        forecaster = Forecaster(self.settings.forecast, fc, (self.shard.qmgr, rec.queue))
        for key in sorted(fc["on"]):
            if reached[key] or key not in active:
                decision = forecaster.reached(key, rec.ts, "reached" if reached[key] else "gone")
                if decision is not None:
                    out.append(self._record(rec.queue, q, decision, f"{rec.event_id}:{key}"))
        if fc["on"]:
            fc["clk"] = [rec.ts, clock]
        else:
            fc.pop("clk", None)
        return out

    def due(self, q: QueueState) -> int | None:
        """The arrival-clock time of the queue's next sample while a forecast fires (its timer), else None."""
        fc = q["forecast"]
        if fc is None or not fc["on"] or "clk" not in fc:
            return None
        ts, clock = fc["clk"]
        return clock + max(0, fc["at"] - ts)

    def on_clock(self, queue: str, q: QueueState, clock: int) -> list[Emit]:
        """The arrival clock reached ``clock``: while a forecast fires, the queue's samples due by the matching
        event time are taken and judged (a quiet queue's depth stays as it is)."""
        fc = q["forecast"]
        if self.due(q) is None or fc is None:
            return []
        ts, at = fc["clk"]
        out = self.catch_up(queue, q, ts + (clock - at), f"clock@{clock}")
        if q["forecast"] is not None and not q["forecast"]["on"]:
            q["forecast"].pop("clk", None)
        return out

    # ---------------------------------------------------------------- the records

    def _record(self, queue: str, q: QueueState, d: Decision, source: str) -> Emit:
        a, depth = q["attrs"], q["depth"]
        if d.key == "MAXDEPTH":
            goal = f"MAXDEPTH {a['MAXDEPTH']}"
            then = "when puts fail with MQRC_Q_FULL (2053)"
            takes_over = "puts fail with MQRC_Q_FULL, and MQ raises a Queue Full event where QDPMAXEV is enabled"
        else:
            goal = f"QDEPTHHI {a['QDEPTHHI']} % ({plural(-(-a['QDEPTHHI'] * a['MAXDEPTH'] // 100), 'message')})"
            then = "when MQ raises a Queue Depth High event (MQRC_Q_DEPTH_HIGH, 2224)"
            takes_over = "the Queue Depth High event (QDEPTH_HIGH) takes over"
        shard = self.shard
        holds = f"{shard.about(queue)} holds {plural(depth, 'message')}"
        qmgr, qsg = shard.named(q)
        message, eta = None, None
        if d.state == "FIRING":
            assert d.trend is not None and d.eta is not None
            rate = _per_minute(d.trend.per_minute)
            where = f"on {shard.qmgr}" if qsg is None else f"of {qsg}"
            message = f"{queue} {where} reaches {goal} {within(d.eta - d.at)} at {rate} a minute"
            summary = (
                f"{holds} and has been growing {rate} a minute over the last "
                f"{minutes(self.settings.forecast.horizon_ms)} (confidence {d.trend.confidence:.2f}): at that "
                f"rate it reaches {goal} at {iso(d.eta)}, {then}."
            )
            action = (
                f"Check the consumers of {queue} (DISPLAY QSTATUS({queue}) TYPE(HANDLE)); start or add consumers, "
                f"or, if the backlog is expected, raise MAXDEPTH (ALTER QLOCAL({queue}) MAXDEPTH(n)) before then."
            )
            severity, eta = "WARNING", d.eta
        else:
            if d.why == "reached":
                forecast = f", forecast for {iso(d.eta)}" if d.eta is not None else ""
                why = f"it reached {goal} at {iso(d.at)}{forecast}: {takes_over}."
            elif d.why == "gone":
                why = f"the forecast of {goal} no longer applies ({self._gone(d.key)})."
            else:
                growing = d.trend is not None and d.trend.slope > 0
                trend = f"growing {_per_minute(d.trend.per_minute)} a minute" if growing and d.trend else "not growing"
                confidence = d.trend.confidence if d.trend is not None else 0.0
                why = (
                    f"at its trend ({trend}, confidence {confidence:.2f}) it no longer reaches {goal} within "
                    f"{minutes(self.settings.forecast.horizon_ms)}."
                )
            summary, action, severity = f"{holds}: {why}", "None.", "INFO"
        record = alert(
            event_id("queue-forecast", shard.qmgr, queue, d.state, d.key, source),
            "QUEUE_FILL_FORECAST",
            d.state,
            d.alert_id,
            severity,
            subject_kind=SubjectKind.QUEUE,
            subject=queue,
            queue=queue,
            qmgr=qmgr,
            qsg=qsg,
            ts=d.at,
            message=message,
            summary=summary,
            action=action,
            eta=eta,
        )
        return Emit(topics.ALERTS, f"{shard.qmgr}/{queue}", record)

    def _gone(self, key: str) -> str:
        if not self.settings.forecast.step_ms:
            return "forecasts are turned off"
        if key == "QDEPTHHI":
            return "queue depth high events are not enabled for it"
        return "its MAXDEPTH or the forecast's settings changed"


def _per_minute(per_minute: float) -> str:
    """Messages a minute, as an alert says it: whole numbers, tenths below ten."""
    return f"{per_minute:.1f} messages" if abs(per_minute) < 10 else f"{per_minute:.0f} messages"
