"""What every component of a structure's rules shares: its definition, its state and its measures, and how an
alert about it is made.  Pure."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from qmon.core import topics
from qmon.core.ids import event_id
from qmon.core.lazy import Lazy
from qmon.core.records import Emit, SubjectKind
from qmon.core.records import alert as _alert
from qmon.core.structures.data_elements import usage_pct
from qmon.core.structures.definitions import StructureSettings
from qmon.core.structures.state import STATE_VERSION, StateVersionError, StructureQueueState


class Structure:
    """One primary structure (and its overflow structure): definition, state, measures, alerts; what every component
    of its rules uses (``StructureMonitor`` gives each component the structure, and the other components it calls).  Its
    ``definition`` and ``state`` stay the same objects for the monitor's life, so a component may keep them."""

    def __init__(
        self,
        strname: str,
        settings: StructureSettings,
        state: dict[str, Any] | None = None,
        decode: Callable[[Any], StructureQueueState] | None = None,
    ):
        """``decode``: the queues are stored encoded, each decoded when used (``qmon.core.lazy``)."""
        self.name = strname
        self.settings = settings
        self.definition = settings.get(strname)
        if state is None:
            size = self.definition.initsize or self.definition.size if self.definition else 0
            state = {
                "v": STATE_VERSION,
                "size_kb": size,
                "used": 0,
                "overflow_used": 0,
                "queues": {},
                "mode_alert_id": None,
                "full_alert_id": None,
                "near_alert_id": None,
                "ovf_full_alert_id": None,
                "next_scan": None,
                "last_ts": None,
                "last_clock": None,
                "rejected": 0,
                "unknown": False,
                "above": False,
                "clear": {},
                "forecast": None,
            }
        elif state.get("v") != STATE_VERSION:
            raise StateVersionError(f"structure {strname}", state.get("v"))
        if decode is not None:
            state["queues"] = Lazy(state["queues"], decode)
        self.state = state

    @property
    def capacity(self) -> int:
        return 2 * self.state["size_kb"]

    @property
    def ovf_capacity(self) -> int:
        return 2 * (self.definition.ovflwsize or 0) if self.definition and self.definition.ovflwstr else 0

    def usage(self) -> float:
        return usage_pct(self.state["used"], self.capacity)

    def ovf_usage(self) -> float:
        return usage_pct(self.state["overflow_used"], self.ovf_capacity)

    def queue(self, name: str) -> dict[str, Any]:
        """Queue ``name``'s share of the structure, made when first used."""
        q = self.state["queues"].get(name)
        if q is None:
            q = self.state["queues"][name] = {
                "messages": 0,
                "elements": 0,
                "in_overflow": False,
                "put_rejected": False,
                "fifo": [],
            }
        return q

    def alert(
        self,
        type_: str,
        state: str,
        alert_id: str,
        severity: str,
        ts: int,
        source: str,
        *,
        summary: str,
        action: str,
        queue: str | None = None,
        qmgr: str | None = None,
        message: str | None = None,
        **numbers: Any,
    ) -> Emit:
        """An alert about the structure (``numbers``: its usage and sizes before and after, as it has them)."""
        rec = _alert(
            event_id("structure", self.name, type_, state, source, queue),
            type_,
            state,
            alert_id,
            severity,
            subject_kind=SubjectKind.STRUCTURE,
            subject=self.name,
            structure=self.name,
            queue=queue,
            qmgr=qmgr,
            ts=ts,
            summary=summary,
            action=action,
            message=message,
            **numbers,
        )
        return Emit(topics.ALERTS, self.name, rec)
