"""One structure's rules in one object: ``StructureMonitor`` applies puts, gets and timers to a structure's
state and returns the records they raise.  Its rules live by concept: data elements (``accounting``), alter
and overflow mode (``overflow``), full and near full (``full``), fill forecasts (``fill_forecast``).  Pure."""

from __future__ import annotations

from qmon.core import topics
from qmon.core.ids import event_id
from qmon.core.lazy import live
from qmon.core.records import Activity, Emit, Snapshot
from qmon.core.structures.accounting import DataElements
from qmon.core.structures.fill_forecast import FillForecast
from qmon.core.structures.full import FullMonitoring
from qmon.core.structures.overflow import AlterAndOverflow


class StructureMonitor(DataElements, AlterAndOverflow, FullMonitoring, FillForecast):
    """The state and rules of one primary structure (and its overflow structure)."""

    def on_activity(self, rec: Activity) -> list[Emit]:
        """One put, get or START (duplicates were dropped ahead of the rules: ``qmon.core.dedup``)."""
        if self.definition is None:
            return self._unknown(rec)
        out = self._catch_up(rec.ts)
        out.extend(self._forecast(rec.ts, rec.event_id))  # (the samples due see the usage before this record)
        st = self.state
        if st["last_ts"] is None or rec.ts >= st["last_ts"]:
            st["last_ts"], st["last_clock"] = rec.ts, rec.clock if rec.clock is not None else st["last_clock"]
        if rec.reason is not None or rec.op == "START":
            return out  # a failed operation changes nothing; START carries no sizes
        emits = self._put(rec) if rec.op == "PUT" else self._get(rec) if rec.op == "GET" else []
        out.extend(emits)
        out.extend(self._forecast_reached(rec, emits))
        return out

    def _unknown(self, rec: Activity) -> list[Emit]:
        if self.state["unknown"]:
            return []
        self.state["unknown"] = True
        aid = event_id("unknown-structure", self.name)
        return [
            self._emit(
                "STRUCTURE_UNKNOWN",
                "INFO",
                aid,
                "INFO",
                rec.ts,
                rec.event_id,
                queue=rec.queue,
                qmgr=rec.qmgr,
                summary=(
                    f"Activity names structure {self.name}, which is not in qmon's configuration, "
                    "so its usage is not accounted."
                ),
                action=(
                    f"Add {self.name} under structures: in the configuration file (strname, size, "
                    "ovflwmax, ...) and restart the job."
                ),
            )
        ]

    def next_scan_clock(self) -> int | None:
        """The arrival-clock time of the next overflow scan, alert resolution or forecast sample (while a forecast
        fires) due (for a Spark timer), or None."""
        st, d = self.state, self.definition
        if st["last_clock"] is None or st["last_ts"] is None or d is None:
            return None
        due = [since + d.clear_hold_ms for since in st.get("clear", {}).values()]
        if st["next_scan"] is not None and st["mode_alert_id"] is not None:
            due.append(st["next_scan"])
        if (sample := self.forecast_due()) is not None:
            due.append(sample)
        if not due:
            return None
        return st["last_clock"] + max(0, min(due) - st["last_ts"])

    def snapshot(self, clock: int) -> list[Emit]:
        """The structure's usage, if it changed (a queue was used) since its last snapshot, at most once per
        ``snapshot_interval_ms`` of the arrival clock (``snapshot_due`` is a deadline of the unit's timer)."""
        interval, d, st = self.settings.snapshot_interval_ms, self.definition, self.state
        if interval <= 0 or d is None:
            return []
        snap = st.setdefault("snap", {"at": None, "dirty": False})
        snap["dirty"] = bool(snap["dirty"] or live(st["queues"]))
        if not snap["dirty"] or (snap["at"] is not None and clock < snap["at"] + interval):
            return []
        in_mode = st["mode_alert_id"] is not None
        record: Snapshot = {
            "event_id": event_id("snapshot", self.name, clock),
            "ts": st["last_ts"] if st["last_ts"] is not None else clock,
            "structure": self.name,
            "size_kb": st["size_kb"],
            "capacity_elements": self.capacity,
            "used_elements": st["used"],
            "overflow_structure": d.ovflwstr,
            "overflow_size_kb": d.ovflwsize if d.ovflwstr else None,
            "overflow_capacity_elements": self.ovf_capacity if d.ovflwstr else None,
            "overflow_used_elements": st["ovf_used"] if d.ovflwstr else None,
            "overflow_mode": in_mode,
            # approved queues exist only in overflow mode (its end clears them): no need to decode them all
            "queues_in_overflow": sum(1 for q in st["queues"].values() if q["ovf"]) if in_mode else 0,
            "ovflwmax": None if d.resource else d.ovflwmax,  # resource structures have no overflow function
            "fullthreshold": d.fullthreshold,
        }
        etas = self.outlook()
        record["ovflwmax_eta"], record["full_eta"] = etas["OVFLWMAX"], etas["FULL"]
        record["overflow_full_eta"] = etas["OVERFLOW_FULL"]
        snap.update(at=clock, dirty=False)
        return [Emit(topics.SNAPSHOT, self.name, dict(record))]

    def snapshot_due(self) -> int | None:
        snap = self.state.get("snap")
        if self.settings.snapshot_interval_ms <= 0 or not snap or snap["at"] is None or not snap["dirty"]:
            return None
        return int(snap["at"]) + self.settings.snapshot_interval_ms

    def on_clock(self, clock: int) -> list[Emit]:
        """The arrival clock reached ``clock``: run the scan, resolutions and forecast samples due by the matching
        event time."""
        st = self.state
        if st["last_clock"] is None or st["last_ts"] is None:
            return []
        now_ts = st["last_ts"] + (clock - st["last_clock"])
        return self._catch_up(now_ts) + self._forecast_clock(now_ts)
