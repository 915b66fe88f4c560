"""One structure's rules in one object: ``StructureMonitor`` applies puts, gets and timers to a structure's
state and returns the records they raise.  It is made of components, one concept each, over the structure they share
(``structure``): data elements (``accounting``), alter and overflow mode (``overflow``), full and near full
(``full``), fill forecasts (``fill_forecast``).  Pure."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from qmon.core import topics
from qmon.core.ids import event_id
from qmon.core.lazy import live
from qmon.core.records import Activity, Emit, Snapshot
from qmon.core.structures.accounting import DataElements
from qmon.core.structures.definitions import StructureSettings
from qmon.core.structures.fill_forecast import StructureFillForecast
from qmon.core.structures.full import FullMonitoring
from qmon.core.structures.overflow import AlterAndOverflow
from qmon.core.structures.state import StructureQueueState
from qmon.core.structures.structure import Structure


class StructureMonitor:
    """The state and rules of one primary structure (and its overflow structure).

    Its components, each given the structure (definition, state, measures, alerts) and the other components it calls:

    * ``data_elements``: a put or a get on the data elements in use; after it, it calls ``overflow`` (OVFLWMAX
      reached or left, overflow mode ended) and ``full`` (near full, the holds);
    * ``overflow``: alter and overflow mode, and the scans due by event time (``catch_up``, ``due``);
    * ``full``: full and near full, and the holds' ends due by event time (``catch_up``, ``due``);
    * ``forecast``: STRUCTURE_FILL_FORECAST, its samples before a record (``catch_up``) or on the clock
      (``on_clock``, ``due``), and the episodes a record ends (``on_activity``).
    """

    def __init__(
        self,
        strname: str,
        settings: StructureSettings,
        state: dict[str, Any] | None = None,
        decode: Callable[[Any], StructureQueueState] | None = None,
    ):
        """``decode``: the queues are stored encoded, each decoded when used (``qmon.core.lazy``)."""
        structure = self.structure = Structure(strname, settings, state, decode)
        self.name, self.settings, self.definition = structure.name, structure.settings, structure.definition
        self.state: dict[str, Any] = structure.state
        self.overflow = AlterAndOverflow(structure)
        self.full = FullMonitoring(structure)
        self.data_elements = DataElements(structure, self.overflow, self.full)
        self.forecast = StructureFillForecast(structure)

    @property
    def capacity(self) -> int:
        """The primary structure's data elements."""
        return self.structure.capacity

    @property
    def ovf_capacity(self) -> int:
        """The overflow structure's data elements (0 without one)."""
        return self.structure.ovf_capacity

    def usage(self) -> float:
        """Primary usage, % (rounded)."""
        return self.structure.usage()

    def ovf_usage(self) -> float:
        """Overflow structure usage, % (rounded)."""
        return self.structure.ovf_usage()

    # ---------------------------------------------------------------- a record's route

    def on_activity(self, rec: Activity) -> list[Emit]:
        """One put, get or START (duplicates were dropped ahead of the rules: ``qmon.core.dedup``)."""
        if self.definition is None:
            return self._unknown(rec)
        # what event time has already made due (the holds' ends, scans, forecast samples) comes first
        out = self.full.catch_up(rec.ts)
        out.extend(self.overflow.catch_up(rec.ts))
        out.extend(self.forecast.catch_up(rec.ts, rec.event_id))  # (the samples due see the usage before this record)
        st = self.state
        if st["last_ts"] is None or rec.ts >= st["last_ts"]:
            st["last_ts"], st["last_clock"] = rec.ts, rec.clock if rec.clock is not None else st["last_clock"]
        if rec.reason is not None or rec.op == "START":
            return out  # a failed operation changes nothing; START carries no sizes
        data_elements = self.data_elements
        emits = data_elements.put(rec) if rec.op == "PUT" else data_elements.get(rec) if rec.op == "GET" else []
        out.extend(emits)
        out.extend(self.forecast.on_activity(rec, emits))
        return out

    def _unknown(self, rec: Activity) -> list[Emit]:
        if self.state["unknown"]:
            return []
        self.state["unknown"] = True
        aid = event_id("unknown-structure", self.name)
        return [
            self.structure.alert(
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

    # ---------------------------------------------------------------- the timers

    def next_scan_clock(self) -> int | None:
        """The arrival-clock time of the next overflow scan, alert resolution or forecast sample (while a forecast
        fires) due (for a Spark timer), or None."""
        st = self.state
        if st["last_clock"] is None or st["last_ts"] is None or self.definition is None:
            return None
        due = [at for at in (self.full.due(), self.overflow.due(), self.forecast.due()) if at is not None]
        if not due:
            return None
        return st["last_clock"] + max(0, min(due) - st["last_ts"])

    def on_clock(self, clock: int) -> list[Emit]:
        """The arrival clock reached ``clock``: run the resolutions, scan and forecast samples due by the matching
        event time."""
        st = self.state
        if st["last_clock"] is None or st["last_ts"] is None:
            return []
        now_ts = st["last_ts"] + (clock - st["last_clock"])
        return self.full.catch_up(now_ts) + self.overflow.catch_up(now_ts) + self.forecast.on_clock(now_ts)

    def forecast_due(self) -> int | None:
        """Event time of the next sample while a forecast fires (a quiet structure's timer), else None."""
        return self.forecast.due()

    def outlook(self) -> dict[str, int | None]:
        """Target -> the instant the trend reaches it, None for the others: for snapshots
        (``StructureFillForecast.outlook``)."""
        return self.forecast.outlook()

    # ---------------------------------------------------------------- snapshots

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
            "capacity_elements": self.structure.capacity,
            "used_elements": st["used"],
            "overflow_structure": d.ovflwstr,
            "overflow_size_kb": d.ovflwsize if d.ovflwstr else None,
            "overflow_capacity_elements": self.structure.ovf_capacity if d.ovflwstr else None,
            "overflow_used_elements": st["overflow_used"] if d.ovflwstr else None,
            "overflow_mode": in_mode,
            # approved queues exist only in overflow mode (its end clears them): no need to decode them all
            "queues_in_overflow": sum(1 for q in st["queues"].values() if q["in_overflow"]) if in_mode else 0,
            "ovflwmax": None if d.resource else d.ovflwmax,  # resource structures have no overflow function
            "fullthreshold": d.fullthreshold,
        }
        etas = self.forecast.outlook()
        record["ovflwmax_eta"], record["full_eta"] = etas["OVFLWMAX"], etas["FULL"]
        record["overflow_full_eta"] = etas["OVERFLOW_FULL"]
        snap.update(at=clock, dirty=False)
        return [Emit(topics.SNAPSHOT, self.name, dict(record))]

    def snapshot_due(self) -> int | None:
        snap = self.state.get("snap")
        if self.settings.snapshot_interval_ms <= 0 or not snap or snap["at"] is None or not snap["dirty"]:
            return None
        return int(snap["at"]) + self.settings.snapshot_interval_ms
