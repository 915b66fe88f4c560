"""Per-queue rules of IBM MQ: queue service interval events, queue depth events,
statistics, and qmon's stall alert.  Pure: no Spark, no Kafka, no clock.

The rules follow seed 001 (``Queue service interval events algorithm``) and
SPEC §3, §4 and §9:

* The service timer is reset to the operation's time after a PUT to an empty
  queue and after a GET that leaves the queue non-empty; a GET that empties the
  queue turns it OFF; START sets it to the start time when depth > 0.
* After a PUT or GET the elapsed time ``t - start`` is compared with QSVCINT:
  ``elapsed > QSVCINT`` with HIGH enabled gives QSVCINT_HIGH (on a put or a
  get); ``elapsed <= QSVCINT`` on a GET with OK enabled gives QSVCINT_OK.
  Equality is OK, never High.  High and OK enable each other (flip-flop).
* Events need PERFMEV ENABLED on the queue manager; timer and statistics are
  kept regardless, so enabling takes effect on the next put or get.
* An event's statistics run from the previous reset up to and including the
  generating operation; then they reset.
* A queue seen non-empty while its timer is OFF (qmon started against a running
  queue manager: a PUT whose ``depth_after`` shows messages were there before) has
  its timer started at that record's time, as at queue-manager start-up.
* The stall alert (beyond MQ) fires once when a watched queue goes longer than
  QSVCINT without a get.  It resolves once the queue has been *served in time* —
  gets within QSVCINT of the service timer's start, or emptied — for
  ``stall_clear_hold`` of event time (or at once on START); a late get or a new
  gap longer than QSVCINT within the hold keeps the same episode going.  A slow or
  erratic consumer is one episode, not one per get.

The monitor is a *shard* of one queue manager: the Spark job splits a queue
manager's queues over a few shards (buckets) so that the fixed per-key cost of
a stateful operator is paid per shard, not per queue.  A shard holds the
queue-manager settings (PERFMEV) itself, because every command that concerns
the whole queue manager is delivered to every shard.

State is made of plain dicts and lists only, so that it pickles compactly and
survives code changes that do not change its shape.
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

from qmon.core import topics
from qmon.core.dedup import Recent
from qmon.core.ids import event_id
from qmon.core.interest import Registry, listing, work_available
from qmon.core.interest import matches as _interest_match
from qmon.core.journals import JournalMonitor, JournalState, JournalStatus
from qmon.core.journals import migrate as migrate_journals
from qmon.core.lazy import Lazy, live
from qmon.core.mqsc import Command, canonical, split_part
from qmon.core.reasons import (
    MQRC_Q_DEPTH_HIGH,
    MQRC_Q_DEPTH_LOW,
    MQRC_Q_FULL,
    MQRC_Q_SERVICE_INTERVAL_HIGH,
    MQRC_Q_SERVICE_INTERVAL_OK,
)
from qmon.core.records import Activity, Emit, Snapshot, SubjectKind
from qmon.core.records import alert as _alert
from qmon.core.records import iso as _iso
from qmon.core.records import plural as _plural

logger = logging.getLogger(__name__)

#: the version of a shard's state (``ShardState``); older versions are migrated when loaded (``migrate``).
#: 1: qmon 0.1.  2: ``svc_timer_start``, ``svc_timer_clock``, ``stall_alert_id`` (were ``timer``, ``timer_clock``,
#: ``stall``) and the journals' ``*_alert_id`` fields.  3: the ``index``.  4: nothing for the rules to migrate:
#: the operator stores each queue by position (``qmon.streaming.state``), which a build reading version 3
#: would take for a map; this number makes such a build refuse it.
STATE_VERSION = 4

REASON_NAMES = {
    "QSVCINT_HIGH": (MQRC_Q_SERVICE_INTERVAL_HIGH, "MQRC_Q_SERVICE_INTERVAL_HIGH"),
    "QSVCINT_OK": (MQRC_Q_SERVICE_INTERVAL_OK, "MQRC_Q_SERVICE_INTERVAL_OK"),
    "QDEPTH_HIGH": (MQRC_Q_DEPTH_HIGH, "MQRC_Q_DEPTH_HIGH"),
    "QDEPTH_LOW": (MQRC_Q_DEPTH_LOW, "MQRC_Q_DEPTH_LOW"),
    "Q_FULL": (MQRC_Q_FULL, "MQRC_Q_FULL"),
}

#: MQ's defaults for the attributes qmon models (SPEC §2).
MQ_DEFAULTS: dict[str, Any] = {
    "QSVCIEV": "NONE",
    "QSVCINT": 999_999_999,
    "MAXDEPTH": 5000,
    "QDEPTHHI": 80,
    "QDEPTHLO": 20,
    "QDPHIEV": False,
    "QDPLOEV": False,
    "QDPMAXEV": False,
}


class QueueState(TypedDict):
    depth: int
    svc_timer_start: int | None  # MQ's service timer: when it started (event time, ms), None when OFF
    svc_timer_clock: int | None  # the same instant on the arrival clock (for the stall deadline)
    attrs: dict[str, Any]  # QSVCIEV (current enabled event), QSVCINT, MAXDEPTH, QDEPTHHI/LO, QDP*EV
    defined: bool  # DEFINE QLOCAL was seen (so a second DEFINE needs REPLACE)
    reset_ts: int | None
    high_depth: int
    enq: int
    deq: int
    last_ts: int  # newest event time seen (for TTL)
    recent: Any  # event_id -> ts, for duplicate suppression (packed at rest: qmon.core.dedup)
    stall_alert_id: str | None  # alert_id of the firing QUEUE_STALLED episode
    # [event time, arrival clock] since the queue has been served in time while a stall fires (the hold);
    # absent in state written before the hold existed
    stall_ok: NotRequired[list[int] | None]


class ShardState(TypedDict):
    """One shard of a queue manager's queues: the value the operator stores per (qmgr, bucket)."""

    v: int  # STATE_VERSION
    perfmev: str | None  # PERFMEV set by ALTER QMGR (None: the configured default)
    queues: dict[str, QueueState]
    interest: NotRequired[dict[str, list[str]]]  # registrations of interest: queue or generic name -> sorted clients
    journals: NotRequired[dict[str, JournalState]]  # LIB/AMQxJRN -> its state
    # queue -> [last_ts, its next deadline on the arrival clock or None, forgettable]: what the shard-wide
    # passes (the Spark timer, the timer's firing, TTL expiry) need of a queue, so they decode only the
    # queues concerned (``qmon.core.lazy``); kept for the queues used at every ``pack``
    index: NotRequired[dict[str, list[Any]]]
    # the last snapshot's arrival clock, the queues used and forgotten since (``snapshot``)
    snap: NotRequired[dict[str, Any]]


def migrate(state: dict[str, Any]) -> ShardState:
    """A shard's state of an earlier version, brought to ``STATE_VERSION`` in place (a newer one is refused)."""
    version = state.get("v")
    if not isinstance(version, int) or version > STATE_VERSION:
        raise ValueError(f"queue state has version {version!r}, this qmon reads up to {STATE_VERSION}")
    if version < 2:
        for q in state["queues"].values():  # (a version 1 or 2 shard holds its queues as plain maps)
            q["svc_timer_start"] = q.pop("timer")
            q["svc_timer_clock"] = q.pop("timer_clock")
            q["stall_alert_id"] = q.pop("stall")
        migrate_journals(state.get("journals") or {})
    if version < 3:
        state.pop("index", None)  # built by the monitor from every queue, once
    state["v"] = STATE_VERSION
    return state  # type: ignore[return-value]


@dataclass(frozen=True)
class QueueDefaults:
    """Attribute defaults for queues whose name matches ``pattern`` (MQ generic name or glob)."""

    pattern: str
    attrs: dict[str, Any]

    def matches(self, queue: str) -> bool:
        return fnmatch.fnmatchcase(queue, self.pattern)


@dataclass(frozen=True)
class MonitorSettings:
    """What the per-queue rules take from configuration."""

    perfmev: str = "DISABLED"
    queue_defaults: tuple[QueueDefaults, ...] = ()
    dedup_window_ms: int = 10 * 60 * 1000
    dedup_max: int = 256
    journal_near_pct: int = 90
    stall_clear_hold_ms: int = 30_000  # a stall resolves once the queue has been served in time this long
    snapshot_interval_ms: int = 0  # at most one snapshot per shard this often (arrival clock); 0: none

    def attrs_for(self, queue: str) -> dict[str, Any]:
        attrs = dict(MQ_DEFAULTS)
        for rule in self.queue_defaults:
            if rule.matches(queue):
                attrs.update(rule.attrs)
                break
        return attrs


class QueueMonitor:
    """The per-queue rules for one shard of one queue manager."""

    def __init__(
        self,
        qmgr: str,
        settings: MonitorSettings,
        state: dict[str, Any] | None = None,
        decode: Callable[[Any], QueueState] | None = None,
    ):
        """``decode``: the queues are stored encoded, each decoded when used (``qmon.core.lazy``)."""
        self.qmgr = qmgr
        self.settings = settings
        if state is None:
            state = {"v": STATE_VERSION, "perfmev": None, "queues": {}, "index": {}}
        elif state.get("v") != STATE_VERSION:
            state = migrate(state)  # type: ignore[assignment]
        if decode is not None:
            state["queues"] = Lazy(state["queues"], decode)
        self.state: dict[str, Any] = state
        self.queues: MutableMapping[str, QueueState] = state["queues"]
        self.recent = Recent(settings.dedup_window_ms, settings.dedup_max)
        if "index" not in state:  # a shard stored before the index: every queue, once
            state["index"] = {}
            self._touch_all()
        self.index: dict[str, list[Any]] = state["index"]

    # ------------------------------------------------------------ helpers

    @property
    def interest(self) -> Registry:
        return Registry(self.state.setdefault("interest", {}))

    def _notify(self, queue: str, depth: int, ts: int, source: str) -> list[Emit]:
        """WorkAvailable for every client registered for ``queue`` (it just went from empty to non-empty)."""
        if not self.state.get("interest"):
            return []
        return [Emit(*work_available(self.qmgr, queue, c, depth, ts, source)) for c in self.interest.clients_for(queue)]

    def on_journal(self, status: JournalStatus) -> list[Emit]:
        """Journal receiver status of this queue manager (SPEC §8)."""
        journals = JournalMonitor(self.qmgr, self.state.setdefault("journals", {}), self.settings.journal_near_pct)
        return [Emit(*e) for e in journals.on_status(status)]

    @property
    def perfmev(self) -> str:
        return self.state["perfmev"] or self.settings.perfmev

    def _queue(self, name: str, ts: int) -> QueueState:
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
                recent={},
                stall_alert_id=None,
                stall_ok=None,
            )
            self.queues[name] = q
        return q

    def _event(
        self, q: QueueState, queue: str, kind: str, ts: int, source_id: str, service_time: int | None = None
    ) -> Emit:
        code, reason = REASON_NAMES[kind]
        reset_ts = q["reset_ts"] if q["reset_ts"] is not None else ts
        record = {
            "event_id": event_id("perf", kind, self.qmgr, queue, source_id),
            "type": kind,
            "reason_code": code,
            "reason": reason,
            "qmgr": self.qmgr,
            "queue": queue,
            "ts": ts,
            "time_since_reset": max(0, (ts - reset_ts) // 1000),
            "high_q_depth": q["high_depth"],
            "msg_enq_count": q["enq"],
            "msg_deq_count": q["deq"],
            "service_time_ms": service_time,
            "service_interval_ms": q["attrs"]["QSVCINT"] if kind.startswith("QSVCINT") else None,
        }
        if not kind.startswith("QSVCINT"):
            record["service_time_ms"] = None
        self._reset_stats(q, ts)
        return Emit(topics.PERFORMANCE, f"{self.qmgr}/{queue}", record)

    @staticmethod
    def _reset_stats(q: QueueState, ts: int) -> None:
        q["reset_ts"] = ts
        q["high_depth"] = q["depth"]
        q["enq"] = 0
        q["deq"] = 0

    def _duplicate(self, q: QueueState, rec: Activity) -> bool:
        return self.recent.duplicate(q, rec.event_id, rec.ts)

    def pack(self) -> None:
        """Make the state compact to store: the remembered event ids of the queues used, packed, and their
        index entries brought up to date."""
        self.recent.pack()
        for name, q in live(self.queues).items():
            self.index[name] = [q["last_ts"], self._due(q), self.forgettable(name, q)]

    def _touch_all(self) -> None:
        """Use every queue (so that ``pack`` refreshes every index entry): what a shard-wide change needs."""
        for name in self.queues:
            self.queues[name]

    # ------------------------------------------------------------ activity

    def screen(self, recs: list[Activity]) -> list[bool]:
        """Which of ``recs`` are duplicates: what ``on_activity`` would find applying them in turn with nothing
        else in between (no command, journal or expiry), found for each queue's records at once
        (``qmon.core.dedup``).  The records that are not are then given to ``on_activity(rec, screened=True)``,
        which does not look again; each queue used is created as its first record would create it."""
        return self.recent.screen(recs, lambda rec: self._queue(rec.queue, rec.ts), lambda rec: rec.event_id)

    def on_screened(self, recs: list[Activity]) -> list[tuple[Activity, list[Emit]]]:
        """``on_activity(rec, screened=True)`` for each of ``recs`` in turn (records ``screen`` found new):
        exactly its outputs and state.  Returns (record, its outputs) for the records that had any.

        The common case without the rules' checks: a put or get to a queue qmon knows, with no stall alert
        firing, that starts no stall, raises no service interval or depth event and (with interest
        registered) does not fill an empty queue, only moves the queue's depth, counts and service timer;
        such a record is applied here, every condition decided before anything changes, and any other goes
        to ``on_activity`` (property test: ``tests/core/test_quiet_run.py``).  Nothing here changes PERFMEV
        or the interest registered, so both are read once."""
        out: list[tuple[Activity, list[Emit]]] = []
        queues, on_activity = self.queues, self.on_activity
        enabled = self.perfmev == "ENABLED"
        interest = bool(self.state.get("interest"))
        for rec in recs:
            q = queues.get(rec.queue)
            if q is not None and q["stall_alert_id"] is None:
                ts, a, start, depth, op = rec.ts, q["attrs"], q["svc_timer_start"], q["depth"], rec.op
                interval, iev = a["QSVCINT"], a["QSVCIEV"]
                quiet = False
                if start is not None and depth > 0 and enabled and iev != "NONE" and ts - start > interval:
                    pass  # a stall event time has passed (``_catch_up_stall``)
                elif rec.reason is not None:  # a failed put or get changes nothing (unless it says Q_FULL)
                    quiet = op != "START" and not (
                        op == "PUT" and rec.reason == MQRC_Q_FULL and enabled and a["QDPMAXEV"]
                    )
                elif op == "PUT":
                    before = depth if rec.depth_after is None else max(0, rec.depth_after - 1)
                    after = before + 1 if rec.depth_after is None else max(0, rec.depth_after)
                    quiet = not (  # (a timer this put starts has run 0 ms: QSVCINT >= 0, config and MQSC refuse less)
                        (before > 0 and start is not None and enabled and iev == "HIGH" and ts - start > interval)
                        or (before == 0 and interest)
                        or (enabled and a["QDPHIEV"] and after * 100 >= a["QDEPTHHI"] * a["MAXDEPTH"])
                    )
                    if quiet:
                        q["depth"] = after
                        if start is None or before == 0:
                            q["svc_timer_start"], q["svc_timer_clock"] = ts, rec.clock if rec.clock is not None else ts
                        q["enq"] += 1
                        if after > q["high_depth"]:
                            q["high_depth"] = after
                elif op == "GET":
                    before = depth if rec.depth_after is None else rec.depth_after + 1
                    after = max(0, before - 1) if rec.depth_after is None else max(0, rec.depth_after)
                    elapsed = ts - start if before > 0 and start is not None and enabled else None
                    quiet = not (
                        (elapsed is not None and (iev == "HIGH" if elapsed > interval else iev == "OK"))
                        or (enabled and a["QDPLOEV"] and after * 100 <= a["QDEPTHLO"] * a["MAXDEPTH"])
                    )
                    if quiet:
                        q["deq"] += 1
                        q["depth"] = after
                        if after > 0:
                            q["svc_timer_start"], q["svc_timer_clock"] = ts, rec.clock if rec.clock is not None else ts
                        else:
                            q["svc_timer_start"] = q["svc_timer_clock"] = None
                if quiet:
                    if ts > q["last_ts"]:
                        q["last_ts"] = ts
                    if q["reset_ts"] is None:
                        q["reset_ts"] = ts
                    continue
            if emits := on_activity(rec, screened=True):
                out.append((rec, emits))
        return out

    def on_activity(self, rec: Activity, screened: bool = False) -> list[Emit]:
        """One put, get or START; ``screened``: ``screen`` has found it is not a duplicate (and remembered it)."""
        q = self._queue(rec.queue, rec.ts)
        if not screened and self._duplicate(q, rec):
            return []
        if rec.ts > q["last_ts"]:
            q["last_ts"] = rec.ts
        if q["reset_ts"] is None:
            q["reset_ts"] = rec.ts
        clock = rec.clock if rec.clock is not None else rec.ts
        out: list[Emit] = []
        # A stall that event time has already passed (the timer would have fired) is raised
        # first, so the output does not depend on where micro-batches happen to split.
        out.extend(self._catch_up_stall(rec.queue, q, rec.ts))
        enabled = self.perfmev == "ENABLED"
        a = q["attrs"]
        if rec.op == "START":
            was_empty = q["depth"] == 0
            if rec.depth_after is not None:
                q["depth"] = max(0, rec.depth_after)
            if was_empty and q["depth"] > 0:
                out.extend(self._notify(rec.queue, q["depth"], rec.ts, rec.event_id))
            q["svc_timer_start"] = rec.ts if q["depth"] > 0 else None
            q["svc_timer_clock"] = clock if q["depth"] > 0 else None
            self._reset_stats(q, rec.ts)
            out.extend(self._resolve_stall(rec.queue, q, rec.ts, "the queue manager restarted"))
            return out
        if rec.reason is not None:
            # A failed operation changes no depth and drives no service timer.
            if rec.op == "PUT" and rec.reason == MQRC_Q_FULL and enabled and a["QDPMAXEV"]:
                out.append(self._event(q, rec.queue, "Q_FULL", rec.ts, rec.event_id))
                a["QDPMAXEV"] = False
                a["QDPLOEV"] = True
            return out
        if rec.op == "PUT":
            before = q["depth"] if rec.depth_after is None else max(0, rec.depth_after - 1)
            after = before + 1 if rec.depth_after is None else max(0, rec.depth_after)
            q["depth"] = after
            if before > 0 and q["svc_timer_start"] is None:
                # Seen non-empty with the timer OFF: qmon started against a running queue manager (or
                # missed the put that filled it).  As at queue-manager start-up (seed 001) the timer runs
                # from now.
                q["svc_timer_start"] = rec.ts
                q["svc_timer_clock"] = clock
            q["enq"] += 1
            q["high_depth"] = max(q["high_depth"], after)
            # A put to an empty queue (``depth_after`` 1: the gets that emptied it were not seen) finds the timer
            # OFF (IBM MQ, "Queue service interval events": "If the queue becomes empty ... the timer is put into an
            # OFF state, to be restarted on the next put"): it restarts below and measures nothing now.
            if before > 0 and q["svc_timer_start"] is not None and enabled and a["QSVCIEV"] == "HIGH":
                elapsed = rec.ts - q["svc_timer_start"]
                if elapsed > a["QSVCINT"]:
                    out.append(self._event(q, rec.queue, "QSVCINT_HIGH", rec.ts, rec.event_id, elapsed))
                    a["QSVCIEV"] = "OK"
            if before == 0:
                q["svc_timer_start"] = rec.ts
                q["svc_timer_clock"] = clock
                out.extend(self._notify(rec.queue, after, rec.ts, rec.event_id))
            if enabled and a["QDPHIEV"] and after * 100 >= a["QDEPTHHI"] * a["MAXDEPTH"]:
                out.append(self._event(q, rec.queue, "QDEPTH_HIGH", rec.ts, rec.event_id))
                a["QDPHIEV"] = False
                a["QDPLOEV"] = True
                a["QDPMAXEV"] = True
            return out
        # GET
        before = q["depth"] if rec.depth_after is None else rec.depth_after + 1
        after = max(0, before - 1) if rec.depth_after is None else max(0, rec.depth_after)
        q["deq"] += 1
        q["depth"] = after
        # served within its interval (what MQ would call OK), or emptied: the end of a stall episode
        served = after == 0 or (q["svc_timer_start"] is not None and rec.ts - q["svc_timer_start"] <= a["QSVCINT"])
        if before > 0 and q["svc_timer_start"] is not None and enabled:
            elapsed = rec.ts - q["svc_timer_start"]
            if elapsed > a["QSVCINT"] and a["QSVCIEV"] == "HIGH":
                out.append(self._event(q, rec.queue, "QSVCINT_HIGH", rec.ts, rec.event_id, elapsed))
                a["QSVCIEV"] = "OK"
            elif elapsed <= a["QSVCINT"] and a["QSVCIEV"] == "OK":
                out.append(self._event(q, rec.queue, "QSVCINT_OK", rec.ts, rec.event_id, elapsed))
                a["QSVCIEV"] = "HIGH"
        if after > 0:
            q["svc_timer_start"] = rec.ts
            q["svc_timer_clock"] = clock
        else:
            q["svc_timer_start"] = None
            q["svc_timer_clock"] = None
        if enabled and a["QDPLOEV"] and after * 100 <= a["QDEPTHLO"] * a["MAXDEPTH"]:
            out.append(self._event(q, rec.queue, "QDEPTH_LOW", rec.ts, rec.event_id))
            a["QDPLOEV"] = False
            a["QDPHIEV"] = True
            a["QDPMAXEV"] = True
        if q["stall_alert_id"] is not None:
            if not served:
                q["stall_ok"] = None  # a late get: still not served in time
            elif q.get("stall_ok") is None:
                q["stall_ok"] = [rec.ts, clock]  # served in time from now: resolved if it lasts the hold
            out.extend(self._settle_stall(rec.queue, q, rec.ts))
        return out

    # ------------------------------------------------------------ stall alert (SPEC §9)

    def _stall_watched(self, q: QueueState) -> bool:
        return (
            q["svc_timer_start"] is not None
            and q["depth"] > 0
            and self.perfmev == "ENABLED"
            and q["attrs"]["QSVCIEV"] != "NONE"
            and q["stall_alert_id"] is None
        )

    def _catch_up_stall(self, queue: str, q: QueueState, now_ts: int) -> list[Emit]:
        out = self._settle_stall(queue, q, now_ts)
        if self._stall_watched(q) and now_ts - q["svc_timer_start"] > q["attrs"]["QSVCINT"]:  # type: ignore[operator]
            out.append(self._fire_stall(queue, q))
        return out

    def _settle_stall(self, queue: str, q: QueueState, now_ts: int, clock: int | None = None) -> list[Emit]:
        """A FIRING stall whose queue has been served in time since ``stall_ok``: RESOLVED at the end of the
        hold if event time ``now_ts`` (or the arrival clock ``clock``) has reached it, unless the queue
        went unserved for longer than QSVCINT again first (a relapse: the same episode goes on)."""
        ok = q.get("stall_ok")
        if q["stall_alert_id"] is None or ok is None:
            return []
        hold = self.settings.stall_clear_hold_ms
        interval = q["attrs"]["QSVCINT"]
        if clock is None:
            due, now, start = ok[0] + hold, now_ts, q["svc_timer_start"]
        else:
            due, now, start = ok[1] + hold, clock, q["svc_timer_clock"]
        if q["depth"] > 0 and start is not None and now - start > interval and start + interval < due:
            q["stall_ok"] = None  # relapsed before the hold ended
            return []
        if now < due:
            return []
        return self._resolve_stall(
            queue,
            q,
            ok[0] + hold,
            f"it has been served within its service interval for {hold // 1000} s since {_iso(ok[0])}"
            if hold
            else "a get served it within its service interval or emptied it",
        )

    def _fire_stall(self, queue: str, q: QueueState) -> Emit:
        start = q["svc_timer_start"]
        assert start is not None
        interval = q["attrs"]["QSVCINT"]
        deadline = start + interval
        alert_id = event_id("stall", self.qmgr, queue, start)
        q["stall_alert_id"] = alert_id
        record = _alert(
            event_id("stall-firing", alert_id),
            "QUEUE_STALLED",
            "FIRING",
            alert_id,
            "WARNING",
            subject_kind=SubjectKind.QUEUE,
            subject=queue,
            queue=queue,
            qmgr=self.qmgr,
            ts=deadline,
            summary=(
                f"Queue {queue} on {self.qmgr} holds {_plural(q['depth'], 'message')} and has not been "
                f"served for more than its service interval of {interval} ms (no get since "
                f"{_iso(start)}). MQ raises no event until the next put or get."
            ),
            action=(
                f"Check that the consumer of {queue} is running and not blocked (DISPLAY QSTATUS({queue}) "
                "TYPE(HANDLE) shows who has it open for input); restart it or add consumers."
            ),
        )
        return Emit(topics.ALERTS, f"{self.qmgr}/{queue}", record)

    def _resolve_stall(self, queue: str, q: QueueState, ts: int, why: str) -> list[Emit]:
        alert_id = q["stall_alert_id"]
        q["stall_ok"] = None
        if alert_id is None:
            return []
        q["stall_alert_id"] = None
        record = _alert(
            event_id("stall-resolved", alert_id),
            "QUEUE_STALLED",
            "RESOLVED",
            alert_id,
            "INFO",
            subject_kind=SubjectKind.QUEUE,
            subject=queue,
            queue=queue,
            qmgr=self.qmgr,
            ts=ts,
            summary=f"Queue {queue} on {self.qmgr} is being served again: {why} (at {_iso(ts)}).",
            action="None.",
        )
        return [Emit(topics.ALERTS, f"{self.qmgr}/{queue}", record)]

    def _due(self, q: QueueState) -> int | None:
        """The arrival-clock time at which ``on_clock`` has something to do for ``q``, or None: its stall
        (strictly past QSVCINT), or while a stall fires and the queue is served in time, the end of the hold.
        (A relapse before the hold ends needs no deadline: the queue's next record, or the end of the hold,
        sees it first.)"""
        if self._stall_watched(q) and q["svc_timer_clock"] is not None:
            return q["svc_timer_clock"] + q["attrs"]["QSVCINT"] + 1
        if q["stall_alert_id"] is not None and (ok := q.get("stall_ok")) is not None:
            return ok[1] + self.settings.stall_clear_hold_ms
        return None

    def next_stall_clock(self) -> int | None:
        """The arrival-clock time at which the earliest queue has something due (for a Spark timer)."""
        used = live(self.queues)
        dues = [due for name, (_, due, _) in self.index.items() if due is not None and name not in used]
        dues.extend(due for q in used.values() if (due := self._due(q)) is not None)
        return min(dues) if dues else None

    def on_clock(self, clock: int) -> list[Emit]:
        """The arrival clock reached ``clock``: raise every stall now overdue (strictly past QSVCINT), and
        resolve or relapse the firing ones whose hold or interval has passed."""
        out = []
        used = live(self.queues)
        names = set(used).union(n for n, (_, due, _) in self.index.items() if due is not None and due <= clock)
        for name in sorted(names):
            q = self.queues[name]
            out.extend(self._settle_stall(name, q, 0, clock))
            if self._stall_watched(q) and q["svc_timer_clock"] is not None:
                if clock - q["svc_timer_clock"] > q["attrs"]["QSVCINT"]:
                    out.append(self._fire_stall(name, q))
        return out

    # ------------------------------------------------------------ commands

    def on_command(self, cmd: Command, ts: int, command_id: str, reply: bool) -> list[Emit]:
        """Apply a parsed command; the reply is emitted only when ``reply`` (one shard answers)."""
        ok, message = True, ""
        if cmd.obj == "QMGR" and cmd.verb == "ALTER":
            if "PERFMEV" in cmd.attrs:
                self.state["perfmev"] = cmd.attrs["PERFMEV"]
                self._touch_all()  # every queue's stall deadline depends on it
            message = f"AMQ8005I: IBM MQ queue manager {self.qmgr} changed."
        elif cmd.obj == "QMGR" and cmd.verb == "PING":
            message = f"AMQ8018I: Start IBM MQ queue manager {self.qmgr} acknowledged (PING QMGR)."
        elif cmd.obj == "QLOCAL":
            name = cmd.name
            assert name is not None
            known = name in self.queues
            q = self._queue(name, ts)
            if cmd.verb == "DEFINE":
                if q["defined"] and not cmd.attrs.get("REPLACE"):
                    ok = False
                    message = f"AMQ8150E: IBM MQ object {name} already exists (use REPLACE to redefine it)."
                else:
                    attrs = self.settings.attrs_for(name)
                    attrs.update({k: v for k, v in cmd.attrs.items() if k != "REPLACE"})
                    q["attrs"] = attrs
                    q["defined"] = True
                    message = f"AMQ8006I: IBM MQ queue {name} created."
            else:
                q["attrs"].update(cmd.attrs)
                message = f"AMQ8008I: IBM MQ queue {name} changed."
                if not known:
                    message += " (qmon has seen no activity for it yet; the attributes apply when it has.)"
        elif cmd.obj == "INTEREST":
            return self._interest(cmd, ts, command_id, reply)
        elif cmd.obj == "QSTATS":
            name = cmd.name
            assert name is not None
            if cmd.generic:
                return self._reset_qstats_generic(cmd, ts, command_id, reply)
            q = self._queue(name, ts)
            message = self._qstats_detail(name, q, ts)
            self._reset_stats(q, ts)
        else:
            ok, message = False, f"{cmd.verb} {cmd.obj} is not handled by the queue monitor."
        if ignored := cmd.ignored:
            message += f" Not modelled by qmon, accepted and ignored: {', '.join(ignored)}."
        if not reply:
            return []
        return [command_reply(command_id, self.qmgr, ts, ok, f"{canonical(cmd)}: {message}")]

    def _interest(self, cmd: Command, ts: int, command_id: str, reply: bool) -> list[Emit]:
        """REGISTER / DEREGISTER INTEREST.  Every shard receives every interest command and holds all
        registrations; each tells of work on its own queues, shard 0 replies (``reply``)."""
        pattern, client = cmd.name, cmd.attrs["CLIENT"]
        assert pattern is not None
        registry = self.interest
        out: list[Emit] = []
        if cmd.verb == "REGISTER":
            ok = True
            if registry.register(pattern, client):
                message = f"client {client} registered interest in {pattern}."
                # work already there: one WorkAvailable per queue of this shard it covers, unless
                # another registration of the client covers the queue (it has been told already)
                names = sorted(self.queues) if pattern.endswith("*") else [pattern] if pattern in self.queues else []
                for name in names:
                    q = self.queues[name]
                    if (
                        q["depth"] > 0
                        and _interest_match(pattern, name)
                        and not registry.covered_otherwise(client, name, pattern)
                    ):
                        out.append(Emit(*work_available(self.qmgr, name, client, q["depth"], ts, command_id)))
                if reply:
                    message += registry.lterm_warning(pattern, client)
            else:
                message = f"client {client} was already registered for {pattern}; nothing changed."
        elif pattern == registry.EVERYTHING:
            # DEREGISTER INTEREST QUEUE(*): every registration of the client (CQS does this for an
            # IMS that terminates), exact and generic, ``*`` itself included
            removed = registry.deregister_all(client)
            ok = bool(removed)
            message = (
                f"client {client} deregistered from every name it had registered ({len(removed)}): {listing(removed)}."
                if removed
                else f"client {client} has no interest registered in any queue."
            )
        else:
            ok = registry.deregister(pattern, client)
            message = (
                f"client {client} deregistered from {pattern}."
                if ok
                else f"client {client} has no interest registered in {pattern}."
            )
        if reply:
            out.append(command_reply(command_id, self.qmgr, ts, ok, f"{canonical(cmd)}: {message}"))
        return out

    @staticmethod
    def _qstats_detail(name: str, q: QueueState, ts: int) -> str:
        reset_ts = q["reset_ts"] if q["reset_ts"] is not None else ts
        return (
            f"AMQ8450I: Display queue status details. QUEUE({name}) RESETINT({max(0, (ts - reset_ts) // 1000)}) "
            f"HIQDEPTH({q['high_depth']}) MSGSIN({q['enq']}) MSGSOUT({q['deq']})"
        )

    def _reset_qstats_generic(self, cmd: Command, ts: int, command_id: str, reply: bool) -> list[Emit]:
        """RESET QSTATS with a generic name: reset every queue of this shard it matches.

        A shard holds only its own queues' statistics, so the job delivers the command to every
        shard with the shard's part in the command id (``k/N``, ``qmon.core.mqsc.split_part``) and each
        replies with its part: the reply says ``part k of N`` and has an event_id of its own.  The
        pure reference (one monitor, no parts) and a single shard give one reply listing them all."""
        assert cmd.name is not None
        command_id, part, parts = split_part(command_id)
        prefix = cmd.name[:-1]
        lines = []
        for name in sorted(n for n in self.queues if n.startswith(prefix)):
            q = self.queues[name]
            lines.append(self._qstats_detail(name, q, ts))
            self._reset_stats(q, ts)
        if not reply:
            return []
        where = f"part {part} of {parts}: " if parts > 1 else ""
        if lines:
            found = f"{len(lines)} queue{'' if len(lines) == 1 else 's'} reset" + (" in this part" if parts > 1 else "")
            message = f"{canonical(cmd)}: {where}{found}:\n" + "\n".join(lines)
        else:
            found = "no matching queue in this part." if parts > 1 else f"no queue matches {cmd.name}; nothing reset."
            message = f"{canonical(cmd)}: {where}{found}"
        out = command_reply(command_id, self.qmgr, ts, True, message)
        if parts > 1:  # each part its own record, so consumers dropping duplicates keep them all
            out.record["event_id"] = event_id("reply", command_id, "part", part, parts)
        return [out]

    # ------------------------------------------------------------ TTL

    def forgettable(self, name: str, q: QueueState) -> bool:
        """Only an empty queue with the settings it would get anew (not DEFINEd, not ALTERed, no High/OK
        flip-flop state) and no FIRING alert may be forgotten: nothing an operator or MQ would keep is lost."""
        return (
            q["depth"] == 0
            and not q["defined"]
            and q["stall_alert_id"] is None
            and q["svc_timer_start"] is None
            and q["attrs"] == self.settings.attrs_for(name)
        )

    def expire(self, now_ts: int, ttl_ms: int) -> list[str]:
        """Forget idle queues (no activity for ``ttl_ms`` of event time) that are ``forgettable``."""
        used = live(self.queues)
        gone = [n for n, q in used.items() if now_ts - q["last_ts"] > ttl_ms and self.forgettable(n, q)]
        gone.extend(
            n for n, (last_ts, _, idle) in self.index.items() if idle and now_ts - last_ts > ttl_ms and n not in used
        )
        for n in sorted(gone):
            del self.queues[n]
            self.index.pop(n, None)
        if gone and self.settings.snapshot_interval_ms > 0:  # the exporter drops their series
            snap = self._snap()
            snap["gone"] = sorted(set(snap["gone"]).union(gone))
            snap["dirty"] = [n for n in snap["dirty"] if n not in gone]
        return sorted(gone)

    # ------------------------------------------------------------ snapshot (gauges: qmon metrics)

    def _snap(self) -> dict[str, Any]:
        snap: dict[str, Any] = self.state.setdefault("snap", {"at": None, "dirty": [], "gone": []})
        return snap

    def snapshot(self, clock: int) -> list[Emit]:
        """The depths of the queues used since the shard's last snapshot, and the queues it forgot, at most
        once per ``snapshot_interval_ms`` of the arrival clock (a queue that changed in between waits for the
        next one: ``snapshot_due`` is a deadline of the unit's timer)."""
        interval = self.settings.snapshot_interval_ms
        if interval <= 0:
            return []
        snap = self._snap()
        dirty = set(snap["dirty"]).union(live(self.queues))
        if not dirty and not snap["gone"]:
            return []
        if snap["at"] is not None and clock < snap["at"] + interval:
            snap["dirty"] = sorted(dirty)
            return []
        names = sorted(n for n in dirty if n in self.queues)
        queues = [self.queues[n] for n in names]
        record: Snapshot = {
            "event_id": event_id("snapshot", self.qmgr, clock, *names, "", *snap["gone"]),
            "ts": max((q["last_ts"] for q in queues), default=clock),
            "qmgr": self.qmgr,
            "queues": [
                {"queue": n, "depth": q["depth"], "service_timer_start": q["svc_timer_start"]}
                for n, q in zip(names, queues, strict=True)
            ],
            "forgotten": list(snap["gone"]),
        }
        snap.update(at=clock, dirty=[], gone=[])
        return [Emit(topics.SNAPSHOT, self.qmgr, dict(record))]

    def snapshot_due(self) -> int | None:
        """The arrival-clock time of the next snapshot, if the shard has changes waiting for it."""
        snap = self.state.get("snap")
        if self.settings.snapshot_interval_ms <= 0 or not snap or snap["at"] is None:
            return None
        if snap["dirty"] or snap["gone"]:
            return int(snap["at"]) + self.settings.snapshot_interval_ms
        return None


def command_reply(command_id: str, qmgr: str | None, ts: int | None, ok: bool, message: str) -> Emit:
    record = {
        "event_id": event_id("reply", command_id),
        "command_id": command_id,
        "qmgr": qmgr,
        "ts": ts,
        "ok": ok,
        "message": message,
    }
    return Emit(topics.REPLIES, command_id, record)
