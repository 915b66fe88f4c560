"""What every part of a structure's rules shares: its definition, its state and its measures, and how an
alert about it is made.  Pure."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from qmon.core import topics
from qmon.core.ids import event_id
from qmon.core.lazy import Lazy
from qmon.core.records import Activity, Emit, SubjectKind, alert
from qmon.core.structures.data_elements import usage_pct
from qmon.core.structures.definitions import StructureSettings
from qmon.core.structures.state import STATE_VERSION, StateVersionError, StructureQueueState


class StructureBase:
    """One primary structure (and its overflow structure): definition, state, measures, alerts.  The rules
    are in the parts ``StructureMonitor`` is made of; the ones a part calls in another are declared here."""

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
                "ovf_used": 0,
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
                "fc": None,
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
        return usage_pct(self.state["ovf_used"], self.ovf_capacity)

    def _q(self, name: str) -> dict[str, Any]:
        q = self.state["queues"].get(name)
        if q is None:
            q = self.state["queues"][name] = {"msgs": 0, "el": 0, "ovf": False, "rej": False, "fifo": []}
        return q

    def _emit(
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
        rec = alert(
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

    # ---------------------------------------------------------- the parts' rules, as the others call them

    def _threshold(self, rec: Activity, before: tuple[int, int]) -> list[Emit]:  # AlterAndOverflow
        raise NotImplementedError

    def _rearm(self) -> list[Emit]:  # AlterAndOverflow
        raise NotImplementedError

    def _end_overflow(self, ts: int, source: str, before: tuple[int, int]) -> list[Emit]:  # AlterAndOverflow
        raise NotImplementedError

    def _near_full(self, rec: Activity, before: tuple[int, int]) -> list[Emit]:  # FullMonitoring
        raise NotImplementedError

    def _restart_hold(self, key: str, ts: int) -> None:  # FullMonitoring
        raise NotImplementedError

    def _track_clear(self, ts: int) -> list[Emit]:  # FullMonitoring
        raise NotImplementedError

    def _resolve_due(self, now_ts: int) -> list[Emit]:  # FullMonitoring
        raise NotImplementedError
