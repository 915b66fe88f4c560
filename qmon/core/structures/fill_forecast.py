"""STRUCTURE_FILL_FORECAST: a structure whose usage will reach OVFLWMAX, or be full, within ``forecast.horizon``
at its current trend; also its overflow structure filling.  Beyond IMS and z/OS, which report a threshold once
it is crossed (IMS, *CQS structure overflow function*; z/OS structure full monitoring).  The forecasts never change the structure's accounting or its CQS alerts.  Pure.

Targets, each its own episode:

* **OVFLWMAX**: primary usage reaching OVFLWMAX, where CQS alters the structure or puts it into overflow
  mode.  Not for resource structures (no overflow function), not while usage is at or above it, and not in
  overflow mode without an overflow structure (CQS checks the threshold no more).
* **FULL**: primary usage reaching 100 %, once the structure is at its SIZE (below it, OVFLWMAX comes first
  and alters it) or is a resource structure, while STRUCTURE_FULL does not fire.
* **OVERFLOW_FULL**: the overflow structure (OVFLWSTR) reaching 100 %, while OVERFLOW_STRUCTURE_FULL does not
  fire.

Each resolves when its threshold is reached (the real alert takes over), as ``qmon.core.forecaster`` says
otherwise.  Levels are data elements, so an alter that grows the structure moves its thresholds, not its
samples; a selection that moves queues to the overflow structure moves elements from one level to the other,
which is no fill, so the samples start again.
"""

from __future__ import annotations

import logging

from qmon.core import topics
from qmon.core.forecaster import Decision, Forecaster, Target, start
from qmon.core.records import Activity, Emit, iso, minutes, within
from qmon.core.structures.data_elements import usage_pct
from qmon.core.structures.structure import Structure

logger = logging.getLogger(__name__)

#: the real alerts that take over when a target is reached
TAKES_OVER = {
    "OVFLWMAX": "CQS alters the structure or puts it into overflow mode (STRUCTURE_ALTERED, OVERFLOW_MODE_ENTERED)",
    "FULL": "the next put that does not fit raises STRUCTURE_FULL",
    "OVERFLOW_FULL": "the next put to a queue in overflow that does not fit raises OVERFLOW_STRUCTURE_FULL",
}


class StructureFillForecast:
    """The fill forecasts of a structure: the samples due before a record (``catch_up``) or on the clock
    (``on_clock``, ``due``), the episodes a record ends (``on_activity``), and the trend's outlook for
    snapshots (``outlook``)."""

    def __init__(self, structure: Structure):
        self.structure = structure
        self.settings = structure.settings
        self.definition = structure.definition
        self.state = structure.state

    def _series(self) -> int:
        """Levels forecast: primary usage, and overflow usage with an overflow structure."""
        return 2 if self.definition is not None and self.definition.ovflwstr else 1

    def _levels(self) -> list[int]:
        st = self.state
        return [st["used"], st["overflow_used"]][: self._series()]

    def _targets(self) -> list[Target]:
        d, st, s = self.definition, self.state, self.structure
        assert d is not None
        cap, out = s.capacity, []
        ovflwmax = -(-d.ovflwmax * cap // 100)  # the fewest elements at or above OVFLWMAX
        if not d.resource and not st["above"] and (st["mode_alert_id"] is None or d.ovflwstr):
            if st["used"] < ovflwmax:
                out.append(Target("OVFLWMAX", 0, ovflwmax))
        if (d.resource or st["size_kb"] >= d.size) and st["full_alert_id"] is None and st["used"] < cap:
            out.append(Target("FULL", 0, cap))
        if d.ovflwstr and st["ovf_full_alert_id"] is None and st["overflow_used"] < s.ovf_capacity:
            out.append(Target("OVERFLOW_FULL", 1, s.ovf_capacity))
        return out

    def _forecaster(self, ts: int, source: str) -> tuple[Forecaster | None, list[Emit]]:
        """The structure's forecaster, started (or stopped, resolving its episodes) as the settings say."""
        st, settings = self.state, self.settings.forecast
        fc, out = st["forecast"], []
        if fc is not None and (fc["step"] != settings.step_ms or len(fc["s"]) != self._series()):
            out = [self._record(d, source) for d in Forecaster(settings, fc, (self.structure.name,)).close(ts)]
            fc = st["forecast"] = None
        if fc is None and settings.step_ms:
            fc = st["forecast"] = start(settings, ts, self._series())
        return (Forecaster(settings, fc, (self.structure.name,)) if fc is not None else None), out

    def catch_up(self, ts: int, source: str) -> list[Emit]:
        """The samples due by event time ``ts`` (before the record at ``ts`` applies), judged."""
        now = self.state["forecast"]
        if now is not None and ts < now["at"] and now["step"] == self.settings.forecast.step_ms:
            return []  # no sample due (most records)
        fc, out = self._forecaster(ts, source)
        if fc is not None:
            decisions = fc.advance(ts, self._levels(), self._targets())
            out.extend(self._record(d, f"forecast:{d.key}@{d.at}") for d in decisions)
        return out

    def on_activity(self, rec: Activity, emits: list[Emit]) -> list[Emit]:
        """After ``rec`` (which raised ``emits``): FIRING forecasts whose threshold it reached, or that no
        longer apply, resolve."""
        fc = self.state["forecast"]
        if fc is None or (not emits and not fc["on"]):
            return []  # (nothing fires, and no selection moved queues: nothing to resolve or restart)
        forecaster, d, st = Forecaster(self.settings.forecast, fc, (self.structure.name,)), self.definition, self.state
        assert d is not None
        if d.ovflwstr and any(
            c["in_overflow"] for e in emits if e.topic == topics.OVERFLOW for c in e.record["candidates"]
        ):
            forecaster.restart()  # queues moved between the structures: their elements are no fill
        if not fc["on"]:
            return []
        types = {e.record.get("type") for e in emits if e.topic == topics.ALERTS}
        reached = {
            "OVFLWMAX": bool(types & {"STRUCTURE_ALTERED", "OVERFLOW_MODE_ENTERED"})
            or any(e.topic == topics.OVERFLOW for e in emits)
            or st["used"] * 100 >= d.ovflwmax * self.structure.capacity,
            "FULL": st["full_alert_id"] is not None or st["used"] >= self.structure.capacity,
            "OVERFLOW_FULL": st["ovf_full_alert_id"] is not None or st["overflow_used"] >= self.structure.ovf_capacity,
        }
        active = {t.key for t in self._targets()}
        out = []
        for key in sorted(fc["on"]):
            if reached[key] or key not in active:
                decision = forecaster.reached(key, rec.ts, "reached" if reached[key] else "gone")
                if decision is not None:
                    out.append(self._record(decision, f"{rec.event_id}:{key}", rec))
        return out

    def outlook(self) -> dict[str, int | None]:
        """Target -> the instant the trend reaches it (``Forecaster.outlook``), None for the others: for
        snapshots."""
        fc, out = self.state["forecast"], dict.fromkeys(("OVFLWMAX", "FULL", "OVERFLOW_FULL"))
        if fc is not None and self.definition is not None:
            out.update(Forecaster(self.settings.forecast, fc, (self.structure.name,)).outlook(self._targets()))
        return out

    def due(self) -> int | None:
        """Event time of the next sample while a forecast fires (a quiet structure's timer), else None."""
        fc = self.state["forecast"]
        return fc["at"] if fc is not None and fc["on"] else None

    def on_clock(self, now_ts: int) -> list[Emit]:
        """The clock reached event time ``now_ts``: while a forecast fires, its samples are taken and judged
        (a quiet structure's level stays as it is)."""
        if self.due() is None:
            return []
        return self.catch_up(now_ts, f"clock@{now_ts}")

    # ---------------------------------------------------------------- the records

    def _record(self, d: Decision, source: str, rec: Activity | None = None) -> Emit:
        defn, st, s = self.definition, self.state, self.structure
        assert defn is not None
        overflow = d.key == "OVERFLOW_FULL"
        what = f"Overflow structure {defn.ovflwstr} of {s.name}" if overflow else f"Structure {s.name}"
        cap = s.ovf_capacity if overflow else s.capacity
        used = st["overflow_used"] if overflow else st["used"]
        usage = usage_pct(used, cap)
        goal = f"OVFLWMAX {defn.ovflwmax} %" if d.key == "OVFLWMAX" else "100 % (full)"
        queue, qmgr = (rec.queue, rec.qmgr) if rec is not None else (None, None)
        if d.state == "FIRING":
            assert d.trend is not None and d.eta is not None
            rate = d.trend.per_minute * 100 / cap if cap else 0.0
            name = f"{defn.ovflwstr} (overflow structure of {s.name})" if overflow else s.name
            window = minutes(self.settings.forecast.horizon_ms)
            then = {
                "OVFLWMAX": "when CQS alters it or, at its maximum size, puts it into overflow mode",
                "FULL": "when its puts are rejected (CQS0205E)",
                "OVERFLOW_FULL": "when puts to the queues in overflow are rejected (OVERFLOW_STRUCTURE_FULL)",
            }[d.key]
            action = {
                "OVFLWMAX": (
                    f"Find the queues of {s.name} that are growing (IMS /DISPLAY QCNT) and start or speed up "
                    "their consumers; if the load is expected, alter the structure larger before then "
                    "(SETXCF START,ALTER, up to SIZE in the CFRM policy)."
                ),
                "FULL": (
                    f"Drain the queues holding {s.name}'s storage (start their consumers, or /DEQUEUE messages "
                    "nobody will read), or enlarge it in the CFRM policy or define an overflow structure before then."
                ),
                "OVERFLOW_FULL": (
                    f"Drain the queues in overflow, or enlarge {defn.ovflwstr} in the CFRM policy before then."
                ),
            }[d.key]
            return s.alert(
                "STRUCTURE_FILL_FORECAST",
                "FIRING",
                d.alert_id,
                "WARNING",
                d.at,
                source,
                message=f"{name} reaches {goal} {within(d.eta - d.at)} at {rate:.1f} % a minute",
                summary=(
                    f"{what} is {usage} % used and has been rising {rate:.1f} % a minute over the last {window} "
                    f"(confidence {d.trend.confidence:.2f}): at that rate it reaches {goal} at {iso(d.eta)}, {then}."
                ),
                action=action,
                eta=d.eta,
                usage_before_pct=usage,
                usage_after_pct=usage,
            )
        if d.why == "reached":
            forecast = f", forecast for {iso(d.eta)}" if d.eta is not None else ""
            summary = f"{what} reached {goal} at {iso(d.at)}{forecast}: {TAKES_OVER[d.key]}. It is {usage} % used now."
        elif d.why == "gone":
            summary = f"{what} is {usage} % used; the forecast of {goal} no longer applies ({self._gone(d.key)})."
        else:
            rate = d.trend.per_minute * 100 / cap if d.trend is not None and cap else 0.0
            trend = f"rising {rate:.1f} % a minute" if rate > 0 else "not rising"
            summary = (
                f"{what} is {usage} % used: at its trend ({trend}, confidence "
                f"{d.trend.confidence if d.trend is not None else 0:.2f}) it no longer reaches {goal} within "
                f"{minutes(self.settings.forecast.horizon_ms)}."
            )
        return s.alert(
            "STRUCTURE_FILL_FORECAST",
            "RESOLVED",
            d.alert_id,
            "INFO",
            d.at,
            source,
            queue=queue,
            qmgr=qmgr,
            summary=summary,
            action="None.",
            usage_before_pct=usage,
            usage_after_pct=usage,
        )

    def _gone(self, key: str) -> str:
        d, st = self.definition, self.state
        assert d is not None
        if not self.settings.forecast.step_ms:
            return "forecasts are turned off"
        if key == "OVFLWMAX" and st["mode_alert_id"] is not None and not d.ovflwstr:
            return "in overflow mode without an overflow structure CQS checks the threshold no more"
        return "the structure's definition or the forecast's settings changed"
