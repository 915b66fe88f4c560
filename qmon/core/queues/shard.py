"""What every component of a queue-manager shard's rules shares: its settings and state, the queues' attributes
and statistics, and how a performance event is made.  Pure."""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any

from qmon.core import topics
from qmon.core.forecaster import start
from qmon.core.ids import event_id
from qmon.core.interest import Registry, work_available
from qmon.core.lazy import Lazy
from qmon.core.queues.settings import MonitorSettings
from qmon.core.queues.state import STATE_VERSION, QueueState, StateVersionError
from qmon.core.reasons import (
    MQRC_Q_DEPTH_HIGH,
    MQRC_Q_DEPTH_LOW,
    MQRC_Q_FULL,
    MQRC_Q_SERVICE_INTERVAL_HIGH,
    MQRC_Q_SERVICE_INTERVAL_OK,
)
from qmon.core.records import Emit

REASON_NAMES = {
    "QSVCINT_HIGH": (MQRC_Q_SERVICE_INTERVAL_HIGH, "MQRC_Q_SERVICE_INTERVAL_HIGH"),
    "QSVCINT_OK": (MQRC_Q_SERVICE_INTERVAL_OK, "MQRC_Q_SERVICE_INTERVAL_OK"),
    "QDEPTH_HIGH": (MQRC_Q_DEPTH_HIGH, "MQRC_Q_DEPTH_HIGH"),
    "QDEPTH_LOW": (MQRC_Q_DEPTH_LOW, "MQRC_Q_DEPTH_LOW"),
    "Q_FULL": (MQRC_Q_FULL, "MQRC_Q_FULL"),
}


class Shard:
    """One shard of one queue manager: its settings, its state and the helpers every component of its rules uses
    (``QueueMonitor`` gives each part the shard, and the other components it calls)."""

    def __init__(
        self,
        qmgr: str,
        settings: MonitorSettings,
        state: dict[str, Any] | None = None,
        decode: Callable[[Any], QueueState] | None = None,
    ):
        """``qmgr``: the queue manager whose queues the shard holds, or a queue-sharing group's name for a shard of
        the group's shared queues (``qmon.core.sharing``); ``decode``: the queues are stored encoded, each decoded
        when used (``qmon.core.lazy``)."""
        self.qmgr = qmgr
        self.settings = settings
        #: the queue-sharing group whose shared queues the shard holds (its name, as ``qmgr``), else None
        self.qsg = qmgr if settings.sharing.group_named(qmgr) is not None else None
        if state is None:
            state = {"v": STATE_VERSION, "perfmev": None, "queues": {}, "index": {}}
        elif state.get("v") != STATE_VERSION:
            raise StateVersionError(f"queue manager {qmgr}", state.get("v"))
        if decode is not None:
            state["queues"] = Lazy(state["queues"], decode)
        self.state: dict[str, Any] = state
        self.queues: MutableMapping[str, QueueState] = state["queues"]
        self.index: dict[str, list[Any]] = state.setdefault("index", {})

    @property
    def interest(self) -> Registry:
        return Registry(self.state.setdefault("interest", {}))

    def notify(self, queue: str, depth: int, ts: int, source: str) -> list[Emit]:
        """WorkAvailable for every client registered for ``queue`` (it just went from empty to non-empty)."""
        if not self.state.get("interest"):
            return []
        return [Emit(*work_available(self.qmgr, queue, c, depth, ts, source)) for c in self.interest.clients_for(queue)]

    @property
    def perfmev(self) -> str:
        return self.state["perfmev"] or self.settings.perfmev

    def member_perfmev(self, member: str | None) -> str:
        """A group's shard: the PERFMEV of the member ``member`` (the configured default until its ALTER QMGR)."""
        return (member is not None and self.state.get("member_perfmev", {}).get(member)) or self.settings.perfmev

    def perfmev_of(self, q: QueueState) -> str:
        """The PERFMEV ``q``'s events follow: its queue manager's; a shared queue's, that of the member whose put,
        get or START was applied last (``by``), as the queue manager that performs an operation is the one
        that would raise its event."""
        return self.perfmev if self.qsg is None else self.member_perfmev(q.get("member"))

    def named(self, q: QueueState) -> tuple[str, str | None]:
        """(qmgr, qsg) a record about ``q`` names: its queue manager and None; for a shared queue, the member of
        its latest put, get or START, and the group."""
        if self.qsg is None:
            return self.qmgr, None
        return q.get("member") or self.qmgr, self.qsg

    def about(self, queue: str) -> str:
        """``queue`` as an alert's summary names it: ``Queue Q on QM1``, ``Shared queue Q of queue-sharing group
        QSG1``."""
        if self.qsg is None:
            return f"Queue {queue} on {self.qmgr}"
        return f"Shared queue {queue} of queue-sharing group {self.qsg}"

    def queue(self, name: str, ts: int) -> QueueState:
        """Queue ``name``'s state, made (with the attributes the configuration gives its name) when first used
        (at event time ``ts``)."""
        q = self.queues.get(name)
        if q is None:
            q = QueueState(
                depth=0,
                svc_timer_start=None,
                svc_timer_clock=None,
                attrs=self.settings.attrs_for(name),
                defined=False,
                reset_ts=None,
                high_depth=0,
                enq=0,
                deq=0,
                last_ts=ts,
                stall_alert_id=None,
                stall_ok=None,
                forecast=start(self.settings.forecast, ts, 1) if self.settings.forecast.step_ms else None,
                unseen=0,
                puts=[],
                last_put=None,
                last_get=None,
                member=None,
            )
            self.queues[name] = q
        return q

    def event(
        self, q: QueueState, queue: str, kind: str, ts: int, source_id: str, service_time: int | None = None
    ) -> Emit:
        """The performance event ``kind`` of ``q`` with the statistics since their last reset, which it resets
        (IBM MQ, *Performance events*)."""
        code, reason = REASON_NAMES[kind]
        reset_ts = q["reset_ts"] if q["reset_ts"] is not None else ts
        qmgr, qsg = self.named(q)
        # (a shared queue's: the member too, since two members' records may carry the same event_id)
        ids = (self.qmgr, queue) if qsg is None else (self.qmgr, queue, qmgr)
        record = {
            "event_id": event_id("perf", kind, *ids, source_id),
            "type": kind,
            "reason_code": code,
            "reason": reason,
            "qmgr": qmgr,
            "queue": queue,
            "ts": ts,
            "time_since_reset": max(0, (ts - reset_ts) // 1000),
            "high_q_depth": q["high_depth"],
            "msg_enq_count": q["enq"],
            "msg_deq_count": q["deq"],
            "service_time_ms": service_time,
            "service_interval_ms": q["attrs"]["QSVCINT"] if kind.startswith("QSVCINT") else None,
            "qsg": qsg,
        }
        if not kind.startswith("QSVCINT"):
            record["service_time_ms"] = None
        self.reset_stats(q, ts)
        return Emit(topics.PERFORMANCE, f"{self.qmgr}/{queue}", record)

    @staticmethod
    def reset_stats(q: QueueState, ts: int) -> None:
        q["reset_ts"] = ts
        q["high_depth"] = q["depth"]
        q["enq"] = 0
        q["deq"] = 0

    def touch_all(self) -> None:
        """Use every queue (so that ``QueueMonitor.pack`` refreshes every index entry): what a shard-wide change
        needs."""
        for name in self.queues:
            self.queues[name]
