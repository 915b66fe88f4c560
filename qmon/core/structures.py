"""IMS CQS structure accounting and decisions: usage, alter, overflow mode, overflow
candidates through the overflow exit, leaving overflow, structure full.  Pure: no Spark,
no Kafka, no clock.  Follows SPEC §5 and seeds 000 and 004.

* Capacity is counted in 512-byte **data elements**: a structure of K KB holds 2·K
  elements; a message takes ceil(bytes / 512) elements, at least 1.
* IMS queue names begin with a queue-type digit (1 transaction ready, 2 transaction
  staging, ..., 9 OTMA ready).  A message longer than ``lgmsgsz`` puts its first
  ``lgmsgsz`` bytes on its ready queue and the rest on the staging queue (1→2, 5→6).
* After each put that leaves primary usage ≥ OVFLWMAX: **alter** (grow towards SIZE, to the
  smallest whole-KB size that brings usage to OVFLWMAX − 20 or below) and, if usage is still
  at or above OVFLWMAX, **overflow mode**: candidates (not staging, not in overflow, not
  empty; most elements first, ties by name) are offered one at a time to the **overflow
  exit** until primary usage without the approved queues is ≤ OVFLWMAX − 20, 512 queues are
  approved, or the list runs out.
* With an overflow structure (OVFLWSTR) the approved queues move there; a scan every
  ``overflow_scan_interval`` of event time returns the empty ones (QUEUE_OVERFLOW_ENDED) and
  ends overflow mode when none remain.  Without one, puts to approved queues are rejected
  and the structure leaves overflow mode when usage falls to OVFLWMAX − 20 or below.
* A put that does not fit is rejected: STRUCTURE_FULL (``CQS0205E STRUCTURE name IS FULL``)
  once per episode, relieved by the next get that frees space.  Crossing ``fullthreshold``
  raises STRUCTURE_NEAR_FULL once and resolves when usage drops below it.

Choices where IBM's documentation is silent (docs/design/semantics.md):

* A GET frees exactly what the put of that message took, ready and staging parts, in FIFO
  order per queue (seed 004: MSG2A and MSG2B are deleted together).  Each queue keeps its
  messages' sizes as runs ``[count, ready elements, staging elements]`` (equal sizes share a
  run), at most ``FIFO_MAX_RUNS`` runs: past that the two oldest runs merge, their gets then
  free the run's average and its last get the rest, so totals stay exact.  A GET with
  ``msg_bytes`` takes the oldest message of that size if one is queued (a get by message id).
  A GET for a queue with no message qmon saw put frees nothing.
* Thresholds compare exact element counts (``used * 100 >= pct * capacity``); percentages
  are rounded for display only.
* Candidate selection runs when the threshold is *reached*: primary usage goes from below
  OVFLWMAX to at or above it.  Usage that stays above it selects nothing more; it is reached
  again once usage has been below OVFLWMAX (after a selection moved queues, or gets).
* The overflow structure has a size: an approved queue moves only if its elements fit in the
  overflow structure's free space; otherwise it stays in the primary, not in overflow mode
  (``in_overflow`` false in the OverflowCandidates record), and selection goes on with the
  next candidate.
* Hysteresis: STRUCTURE_NEAR_FULL resolves when usage has stayed below FULLTHRESHOLD −
  ``clear_margin`` points for ``clear_hold`` of event time; STRUCTURE_FULL and
  OVERFLOW_STRUCTURE_FULL when it has stayed below 100 − ``clear_margin`` that long (defaults 5
  points, 30 s).  The RESOLVED carries the instant the hold ended; a quiet structure gets it from
  the Spark timer, as for the scan.
* START carries a depth but no sizes, so it does not change structure accounting.
* Near-full is judged after alter and overflow have acted on the put, so a crossing that
  an alter removes at once raises nothing.
* The overflow scan timer runs in event time; when a structure is quiet the Spark job
  advances it on the arrival clock, as for the stall alert.
"""

from __future__ import annotations

import fnmatch
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

from qmon.core import topics
from qmon.core.dedup import Recent
from qmon.core.ids import event_id
from qmon.core.lazy import Lazy, live
from qmon.core.records import Activity, Emit, Snapshot, SubjectKind, alert

ELEMENT_BYTES = 512
MAX_APPROVED = 512
#: the version of a structure's state (``StructureState``); older versions are migrated when loaded (``migrate``).
#: 1: no per-queue FIFO.  2: FIFO runs, ``above``, ``clear``.  3: the firing alerts' ids in ``*_alert_id``
#: (were ``mode``, ``full``, ``near``, ``ovf_full``).  4: nothing for the rules to migrate: the operator stores
#: each queue's share by position (``qmon.streaming.state``), which a build reading version 3 would take for
#: a map; this number makes such a build refuse it.
STATE_VERSION = 4
#: the condition (hold key in ``clear``) -> the state field with the id of its firing alert
ALERT_ID_OF = {
    "mode": "mode_alert_id",
    "full": "full_alert_id",
    "near": "near_alert_id",
    "ovf_full": "ovf_full_alert_id",
}
#: runs of message sizes kept per queue (see _fifo_push); bounded state per queue
FIFO_MAX_RUNS = 64

#: IMS queue types (SPEC §5.1): first character of the queue name.
QUEUE_TYPES = {
    "1": "transaction ready",
    "2": "transaction staging",
    "3": "suspend",
    "4": "serial",
    "5": "LTERM ready",
    "6": "LTERM staging",
    "7": "APPC ready",
    "8": "remote ready",
    "9": "OTMA ready",
}
STAGING_OF = {"1": "2", "5": "6"}
STAGING_TYPES = frozenset({"2", "6"})


def queue_type(queue: str) -> str | None:
    """The IMS queue-type digit of ``queue``, or None for a name that is not an IMS queue name."""
    return queue[0] if queue and queue[0] in QUEUE_TYPES else None


def staging_queue(queue: str) -> str | None:
    """The staging queue that holds the rest of a long message put to ``queue`` (1→2, 5→6)."""
    t = queue_type(queue)
    return STAGING_OF[t] + queue[1:] if t in STAGING_OF else None


def elements(nbytes: int | None) -> int:
    """Data elements a message of ``nbytes`` takes: ceil(bytes / 512), at least 1."""
    return max(1, -(-int(nbytes or 0) // ELEMENT_BYTES))


def at_or_above(used: int, capacity: int, pct: int | float) -> bool:
    """``used / capacity >= pct %`` on exact counts (69.995 % is below 70 %)."""
    return used * 100 >= pct * capacity


def _fifo_push(fifo: list[list[int]], ready: int, staging: int) -> None:
    """Queue a message of ``ready`` + ``staging`` elements.  Runs ``[count, ready, staging]`` hold
    totals; a message of the newest run's size joins it.  Past FIFO_MAX_RUNS the two oldest runs
    merge: their messages then free the run's average, the last one the rest (totals stay exact)."""
    if fifo:
        last = fifo[-1]
        c, r, s = last
        if r == ready * c and s == staging * c:
            last[0], last[1], last[2] = c + 1, r + ready, s + staging
            return
    fifo.append([1, ready, staging])
    if len(fifo) > FIFO_MAX_RUNS:
        (c1, r1, s1), (c2, r2, s2) = fifo[0], fifo[1]
        fifo[0:2] = [[c1 + c2, r1 + r2, s1 + s2]]


def _fifo_take(fifo: list[list[int]], want: tuple[int, int] | None = None) -> tuple[int, int] | None:
    """Take the oldest message (or the oldest of exactly ``want`` = (ready, staging) elements, if
    one is queued); returns its (ready, staging) elements, or None when nothing is queued."""
    if not fifo:
        return None
    i = 0
    if want is not None:
        for j, (c, r, s) in enumerate(fifo):
            if r == want[0] * c and s == want[1] * c:
                i = j
                break
    run = fifo[i]
    c, r, s = run
    if c == 1:
        del fifo[i]
        return r, s
    fr, fs = r // c, s // c
    run[0], run[1], run[2] = c - 1, r - fr, s - fs
    return fr, fs


# ---------------------------------------------------------------- the overflow exit


@dataclass(frozen=True)
class ExitRule:
    queue: str  # MQ-style generic name or glob
    decision: str  # approve | reject


@dataclass(frozen=True)
class OverflowExit:
    """The overflow exit: an ordered rule list (first match wins, default approve) or a callable
    ``module:function`` taking (structure, queue, elements) and returning approve/reject (or a bool)."""

    rules: tuple[ExitRule, ...] = ()
    callable_path: str | None = None

    def _callable(self) -> Callable[..., Any]:
        module, _, name = (self.callable_path or "").partition(":")
        return getattr(importlib.import_module(module), name)

    def decide(self, structure: str, queue: str, elems: int) -> str:
        if self.callable_path:
            result = self._callable()(structure, queue, elems)
            if isinstance(result, bool):
                return "approve" if result else "reject"
            result = str(result).lower()
            if result not in ("approve", "reject"):
                raise ValueError(f"overflow exit {self.callable_path} returned {result!r}; expected approve or reject")
            return result
        for rule in self.rules:
            if fnmatch.fnmatchcase(queue, rule.queue):
                return rule.decision
        return "approve"


# ---------------------------------------------------------------- definitions


@dataclass(frozen=True)
class StructureDef:
    """A CQSSGxxx STRUCTURE statement plus its CFRM policy entry (sizes in KB)."""

    strname: str
    size: int
    initsize: int | None = None
    ovflwmax: int = 70
    ovflwstr: str | None = None
    ovflwsize: int | None = None
    fullthreshold: int = 80
    lgmsgsz: int = 4096
    overflow_scan_interval_ms: int = 15 * 60 * 1000
    resource: bool = False  # resource structures never overflow
    clear_margin: int = 5  # points below a threshold an alert needs to resolve (hysteresis) ...
    clear_hold_ms: int = 30_000  # ... for this long (event time) without going back above it

    @property
    def target(self) -> int:
        """OVFLWMAX − 20: the usage alter and candidate selection aim for."""
        return max(0, self.ovflwmax - 20)


@dataclass(frozen=True)
class StructureSettings:
    structures: tuple[StructureDef, ...] = ()
    overflow_exit: OverflowExit = field(default_factory=OverflowExit)
    dedup_window_ms: int = 10 * 60 * 1000
    dedup_max: int = 256  # per queue, as the queue monitor
    snapshot_interval_ms: int = 0  # at most one snapshot per structure this often (arrival clock); 0: none

    def get(self, strname: str) -> StructureDef | None:
        for s in self.structures:
            if s.strname == strname:
                return s
        return None


class StructureQueueState(TypedDict):
    """One queue's share of a structure."""

    msgs: int  # messages on the queue
    el: int  # data elements they hold (ready and staging parts, in whichever structure holds them)
    ovf: bool  # the queue is in the overflow structure (or approved with none: its puts are rejected)
    rej: bool  # a put was rejected since it was approved (one OVERFLOW_PUT_REJECTED per queue)
    fifo: list[list[int]]  # its messages oldest first, as runs [count, ready elements, staging elements]
    recent: NotRequired[Any]  # remembered event ids (qmon.core.dedup; packed at rest)


class StructureState(TypedDict):
    """One primary structure (and its overflow structure): the value the operator stores per structure."""

    snap: NotRequired[dict[str, Any]]  # the last snapshot's arrival clock, and whether it changed since

    v: int  # STATE_VERSION
    size_kb: int  # current size (INITSIZE, then as ALTERed)
    used: int  # data elements in use in the primary
    ovf_used: int  # data elements in use in the overflow structure
    queues: dict[str, StructureQueueState]  # (each stored encoded by the operator: qmon.core.lazy)
    mode_alert_id: str | None  # the overflow-mode episode (OVERFLOW_MODE_ENTERED), if in overflow mode
    full_alert_id: str | None  # the firing STRUCTURE_FULL episode, if any
    near_alert_id: str | None  # the firing STRUCTURE_NEAR_FULL episode, if any
    ovf_full_alert_id: str | None  # the firing OVERFLOW_STRUCTURE_FULL episode, if any
    next_scan: int | None  # event time of the next overflow-threshold scan (in overflow mode)
    last_ts: int | None  # newest event time seen
    last_clock: int | None  # the arrival clock at that time
    recent: dict[str, int]  # (unused since state 2: ids are remembered per queue)
    rejected: int  # puts rejected in this overflow-mode episode
    unknown: bool  # activity named this structure but it is not configured (warned once)
    above: bool  # usage is at or above OVFLWMAX (selection runs when it is reached from below)
    clear: dict[str, int]  # condition -> event time since when its clear condition has held (the hold)


def _dedup_key(rec: Activity) -> str:
    """What a structure remembers of a record for duplicate suppression: its event_id within its queue manager."""
    return rec.event_id if rec.qmgr is None else f"{rec.qmgr}\x1f{rec.event_id}"


def _pct(used: int, capacity: int) -> float:
    """Usage for display (rounded); decisions use ``at_or_above`` on exact counts."""
    return min(100.0, round(100.0 * used / capacity, 2)) if capacity > 0 else 100.0


# ---------------------------------------------------------------- the monitor


class StructureMonitor:
    """The state and rules of one primary structure (and its overflow structure)."""

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
        self.d = settings.get(strname)
        if state is None:
            size = self.d.initsize or self.d.size if self.d else 0
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
                "recent": {},
                "rejected": 0,
                "unknown": False,
                "above": False,
                "clear": {},
            }
        elif state.get("v", 1) != STATE_VERSION:
            state = migrate(state)  # type: ignore[assignment]
        if decode is not None:
            state["queues"] = Lazy(state["queues"], decode)
        self.state = state
        self.recent = Recent(settings.dedup_window_ms, settings.dedup_max)

    # ---------------------------------------------------------- measures

    @property
    def capacity(self) -> int:
        return 2 * self.state["size_kb"]

    @property
    def ovf_capacity(self) -> int:
        return 2 * (self.d.ovflwsize or 0) if self.d and self.d.ovflwstr else 0

    def usage(self) -> float:
        return _pct(self.state["used"], self.capacity)

    def ovf_usage(self) -> float:
        return _pct(self.state["ovf_used"], self.ovf_capacity)

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

    # ---------------------------------------------------------- input

    def _duplicate(self, rec: Activity) -> bool:
        """A repeated event_id for the same queue, within the dedup window and count (as the queue monitor)."""
        return self.recent.duplicate(self._q(rec.queue), _dedup_key(rec), rec.ts)

    def pack(self) -> None:
        """Make the state compact to store (the remembered event ids of the queues touched)."""
        self.recent.pack()

    def screen(self, recs: list[Activity]) -> list[bool]:
        """Which of ``recs`` are duplicates, as ``on_activity`` would find them applying them in turn, found
        for each queue's records at once (``qmon.core.dedup``); then ``on_activity(rec, screened=True)`` for
        the others.  (Nothing in the rules forgets a queue's ids between two records.)"""
        if self.d is None:
            return [False] * len(recs)  # a structure not configured remembers no ids (``on_activity``)
        return self.recent.screen(recs, lambda rec: self._q(rec.queue), _dedup_key)

    def on_activity(self, rec: Activity, screened: bool = False) -> list[Emit]:
        """One put, get or START; ``screened``: ``screen`` has found it is not a duplicate (and remembered it)."""
        if self.d is None:
            return self._unknown(rec)
        if not screened and self._duplicate(rec):
            return []
        out = self._catch_up(rec.ts)
        st = self.state
        if st["last_ts"] is None or rec.ts >= st["last_ts"]:
            st["last_ts"], st["last_clock"] = rec.ts, rec.clock if rec.clock is not None else st["last_clock"]
        if rec.reason is not None or rec.op == "START":
            return out  # a failed operation changes nothing; START carries no sizes
        if rec.op == "PUT":
            out.extend(self._put(rec))
        elif rec.op == "GET":
            out.extend(self._get(rec))
        return out

    def on_screened(self, recs: list[Activity]) -> list[tuple[Activity, list[Emit]]]:
        """``on_activity(rec, screened=True)`` for each of ``recs`` in turn (records ``screen`` found new):
        exactly its outputs and state, with the records that can raise nothing applied by ``_quiet_run``.
        Returns (record, its outputs) for the records that had any."""
        out: list[tuple[Activity, list[Emit]]] = []
        i, n = 0, len(recs)
        while i < n:
            j = self._quiet_run(recs, i)
            if j < n:  # a record that may raise something (or a state with something firing): the rules
                rec = recs[j]
                if emits := self.on_activity(rec, screened=True):
                    out.append((rec, emits))
                j += 1
            i = j
        return out

    def _quiet_run(self, recs: list[Activity], i: int) -> int:
        """The common case, without the rules' checks: while nothing is firing, no hold or overflow mode
        runs, and each put leaves primary usage below both OVFLWMAX and FULLTHRESHOLD, a put or get only
        moves counts and FIFO runs (``_put``, ``_get`` raise nothing and change nothing else).  Applies
        ``recs[i:]`` from ``i`` while that holds; returns the index of the first record it did not apply.
        Exactly what ``on_activity(rec, screened=True)`` does to such a record (property test:
        ``tests/core/test_quiet_run.py``)."""
        d, st = self.d, self.state
        if (
            d is None
            or st["mode_alert_id"] is not None  # (queues are in overflow only in overflow mode)
            or st["full_alert_id"] is not None
            or st["near_alert_id"] is not None
            or st["ovf_full_alert_id"] is not None
            or st.get("clear") != {}  # (a hold running; missing: the rules add it at the first put or get)
            or st["above"]
        ):
            return i
        cap = self.capacity
        # a put may take usage up to (but not onto) the lower of the two thresholds, and never past capacity
        limit = min(cap * min(d.ovflwmax, d.fullthreshold), cap * 100)
        used = st["used"]
        if used * 100 >= limit:
            return i
        queues, lgmsgsz = st["queues"], d.lgmsgsz
        last_ts, last_clock = st["last_ts"], st["last_clock"]
        n = len(recs)
        try:
            while i < n:
                rec = recs[i]
                op, queue, nbytes = rec.op, rec.queue, rec.msg_bytes
                if rec.reason is None and op == "PUT":
                    q = queues.get(queue)
                    if q is not None and q["ovf"]:
                        break
                    staging = staging_queue(queue) if nbytes is not None and nbytes > lgmsgsz else None
                    if staging is None:
                        ready, rest = max(1, -(-int(nbytes or 0) // ELEMENT_BYTES)), 0
                    else:
                        sq = queues.get(staging)
                        if sq is not None and sq["ovf"]:
                            break
                        ready, rest = elements(lgmsgsz), elements(nbytes - lgmsgsz)  # type: ignore[operator]
                    if (used + ready + rest) * 100 >= limit:
                        break  # it may reach a threshold: the rules
                    if q is None:
                        q = self._q(queue)
                    q["msgs"] += 1
                    q["el"] += ready
                    if staging is not None:
                        sq = self._q(staging)
                        sq["msgs"] += 1
                        sq["el"] += rest
                    used += ready + rest
                    st["used"] = used
                    _fifo_push(q["fifo"], ready, rest)
                elif rec.reason is None and op == "GET":
                    q = queues.get(queue)
                    if q is not None and q["fifo"]:
                        self._free(rec, q)  # (as ``_get``; a get only lowers usage: nothing to check)
                        used = st["used"]
                # (a failed operation or a START changes nothing but the newest ts)
                if last_ts is None or rec.ts >= last_ts:
                    last_ts, last_clock = rec.ts, rec.clock if rec.clock is not None else last_clock
                i += 1
        finally:
            st["last_ts"], st["last_clock"] = last_ts, last_clock
        return i

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

    def _split(self, queue: str, nbytes: int | None) -> list[tuple[str, int]]:
        """(queue, elements) parts of a message: long messages to 1/5 queues spill to staging."""
        assert self.d is not None
        staging = staging_queue(queue)
        if staging and nbytes is not None and nbytes > self.d.lgmsgsz:
            return [(queue, elements(self.d.lgmsgsz)), (staging, elements(nbytes - self.d.lgmsgsz))]
        return [(queue, elements(nbytes))]

    def _in_overflow_structure(self, queue: str) -> bool:
        q = self.state["queues"].get(queue)
        return bool(q and q["ovf"] and self.d and self.d.ovflwstr)

    def _put(self, rec: Activity) -> list[Emit]:
        d, st = self.d, self.state
        assert d is not None
        out: list[Emit] = []
        q = self._q(rec.queue)
        if q["ovf"] and not d.ovflwstr:  # §5.2 (4): puts to approved queues are rejected
            st["rejected"] += 1
            if not q["rej"]:
                q["rej"] = True
                out.append(
                    self._emit(
                        "QUEUE_PUTS_REJECTED",
                        "FIRING",
                        event_id("rejected", self.name, rec.queue, st["mode_alert_id"]),
                        "CRITICAL",
                        rec.ts,
                        rec.event_id,
                        queue=rec.queue,
                        qmgr=rec.qmgr,
                        usage_before_pct=self.usage(),
                        usage_after_pct=self.usage(),
                        summary=(
                            f"Structure {self.name} is in overflow mode with no overflow structure: puts to "
                            f"queue {rec.queue}, chosen by the overflow exit, are rejected until usage falls "
                            f"to {d.target}%."
                        ),
                        action=(
                            f"Drain {rec.queue} (start or speed up its consumer), or define an overflow "
                            f"structure (OVFLWSTR) for {self.name} in CQSSGxxx and the CFRM policy."
                        ),
                    )
                )
            return out
        parts = self._split(rec.queue, rec.msg_bytes)
        primary_need = sum(n for name, n in parts if not self._in_overflow_structure(name))
        ovf_need = sum(n for name, n in parts if self._in_overflow_structure(name))
        before = (st["used"], self.capacity)  # usage before, rounded only if reported
        if ovf_need and st["ovf_used"] + ovf_need > self.ovf_capacity:
            st["rejected"] += 1
            if st["ovf_full_alert_id"] is None:
                aid = st["ovf_full_alert_id"] = event_id("ovf-full", self.name, rec.event_id)
                out.append(
                    self._emit(
                        "OVERFLOW_STRUCTURE_FULL",
                        "FIRING",
                        aid,
                        "CRITICAL",
                        rec.ts,
                        rec.event_id,
                        queue=rec.queue,
                        qmgr=rec.qmgr,
                        usage_before_pct=self.ovf_usage(),
                        usage_after_pct=self.ovf_usage(),
                        message=f"CQS0205E STRUCTURE {d.ovflwstr} IS FULL",
                        summary=(
                            f"Overflow structure {d.ovflwstr} of {self.name} is full: puts to the queues in "
                            f"overflow ({rec.queue} first) are rejected; the primary structure carries on."
                        ),
                        action=(
                            f"Drain the queues in overflow, or enlarge {d.ovflwstr} in the CFRM policy "
                            "(SETXCF START,ALTER or a policy change and rebuild)."
                        ),
                    )
                )
            self._restart_hold("ovf_full", rec.ts)  # after the FIRING: the hold starts over
            return out
        if primary_need and st["used"] + primary_need > self.capacity:
            st["rejected"] += 1
            if st["full_alert_id"] is None:
                aid = st["full_alert_id"] = event_id("full", self.name, rec.event_id)
                out.append(
                    self._emit(
                        "STRUCTURE_FULL",
                        "FIRING",
                        aid,
                        "CRITICAL",
                        rec.ts,
                        rec.event_id,
                        queue=rec.queue,
                        qmgr=rec.qmgr,
                        usage_before_pct=_pct(*before),
                        usage_after_pct=_pct(*before),
                        size_kb_before=st["size_kb"],
                        size_kb_after=st["size_kb"],
                        message=f"CQS0205E STRUCTURE {self.name} IS FULL",
                        summary=(
                            f"Structure {self.name} is full ({st['used']} of {self.capacity} data elements): "
                            f"puts are rejected (first: {rec.queue} from {rec.qmgr}); gets still work."
                        ),
                        action=(
                            f"Find the queues holding {self.name}'s storage and drain them (start their "
                            "consumers, or /DEQUEUE messages nobody will read); enlarge the structure in the "
                            "CFRM policy or define an overflow structure."
                        ),
                    )
                )
            self._restart_hold("full", rec.ts)  # after the FIRING: the hold starts over
            return out
        for name, n in parts:
            pq = self._q(name)
            pq["msgs"] += 1
            pq["el"] += n
            if self._in_overflow_structure(name):
                st["ovf_used"] += n
            else:
                st["used"] += n
        _fifo_push(q["fifo"], parts[0][1], parts[1][1] if len(parts) > 1 else 0)
        if at_or_above(st["used"], self.capacity, d.ovflwmax):
            if not st["above"]:  # reached: from below OVFLWMAX to at or above it
                st["above"] = True
                out.extend(self._threshold(rec, before))
        out.extend(self._rearm())
        out.extend(self._near_full(rec, before))
        out.extend(self._track_clear(rec.ts))
        return out

    def _rearm(self) -> list[Emit]:
        """Usage below OVFLWMAX again: the next time it reaches the threshold counts as reached again."""
        d, st = self.d, self.state
        assert d is not None
        if st["above"] and not at_or_above(st["used"], self.capacity, d.ovflwmax):
            st["above"] = False
        return []

    def _threshold(self, rec: Activity, before: tuple[int, int]) -> list[Emit]:
        """§5.2: primary usage ≥ OVFLWMAX after a put: alter, then overflow mode and candidates."""
        d, st = self.d, self.state
        assert d is not None
        out: list[Emit] = []
        if d.resource:
            # IMS, "CQS structure overflow function": "Structure overflow is not supported for resource
            # structures", and the alter at OVFLWMAX is that function's first action: neither happens.
            return out
        if st["mode_alert_id"] is not None and not d.ovflwstr:
            return out  # without an overflow structure the threshold is not checked again
        if st["size_kb"] < d.size:
            old = st["size_kb"]
            usage_before = self.usage()
            target = d.target
            want = -(-st["used"] * 100 // (2 * target)) if target > 0 else d.size
            st["size_kb"] = max(old, min(d.size, want))
            aid = event_id("alter", self.name, rec.event_id)
            out.append(
                self._emit(
                    "STRUCTURE_ALTERED",
                    "INFO",
                    aid,
                    "INFO",
                    rec.ts,
                    rec.event_id,
                    queue=rec.queue,
                    qmgr=rec.qmgr,
                    usage_before_pct=usage_before,
                    usage_after_pct=self.usage(),
                    size_kb_before=old,
                    size_kb_after=st["size_kb"],
                    summary=(
                        f"Structure {self.name} reached {usage_before}% (OVFLWMAX {d.ovflwmax}%) and was altered "
                        f"from {old} KB to {st['size_kb']} KB; usage is now {self.usage()}%."
                        + (" It is at its maximum SIZE." if st["size_kb"] >= d.size else "")
                    ),
                    action=(
                        "None now. If alters recur, raise INITSIZE in the CFRM policy; at SIZE the next "
                        "threshold puts the structure into overflow mode."
                    ),
                )
            )
            if not at_or_above(st["used"], self.capacity, d.ovflwmax):
                return out
        if st["mode_alert_id"] is None:
            aid = st["mode_alert_id"] = event_id("overflow", self.name, rec.event_id)
            if d.ovflwstr:
                st["next_scan"] = rec.ts + d.overflow_scan_interval_ms
            out.append(
                self._emit(
                    "OVERFLOW_MODE_ENTERED",
                    "FIRING",
                    aid,
                    "WARNING",
                    rec.ts,
                    rec.event_id,
                    queue=rec.queue,
                    qmgr=rec.qmgr,
                    usage_before_pct=_pct(*before),
                    usage_after_pct=self.usage(),
                    size_kb_before=st["size_kb"],
                    size_kb_after=st["size_kb"],
                    summary=(
                        f"Structure {self.name} is {self.usage()}% used at its maximum size of {st['size_kb']} KB "
                        f"(OVFLWMAX {d.ovflwmax}%) and entered overflow mode: the largest queues are offered to "
                        "the overflow exit"
                        + (
                            f" and moved to {d.ovflwstr}."
                            if d.ovflwstr
                            else "; puts to the approved ones will be rejected."
                        )
                    ),
                    action=(
                        "See the OverflowCandidates record on qmon.events.overflow for the queues chosen; drain "
                        "them or fix their consumers. Consider a larger SIZE in the CFRM policy."
                    ),
                )
            )
        out.extend(self._select(rec))
        return out

    def _select(self, rec: Activity) -> list[Emit]:
        """§5.3: offer candidates to the overflow exit; one OverflowCandidates record."""
        d, st = self.d, self.state
        assert d is not None
        usage_before = self.usage()
        pool = sorted(
            (
                (q["el"], name)
                for name, q in st["queues"].items()
                if queue_type(name) not in STAGING_TYPES and not q["ovf"] and q["el"] > 0
            ),
            key=lambda x: (-x[0], x[1]),
        )
        remaining = st["used"]
        ovf_free = self.ovf_capacity - st["ovf_used"]
        candidates: list[dict[str, Any]] = []
        approved: list[str] = []
        for el, name in pool:
            if remaining * 100 <= d.target * self.capacity or len(approved) >= MAX_APPROVED:
                break
            decision = self.settings.overflow_exit.decide(self.name, name, el)
            fits = not d.ovflwstr or el <= ovf_free  # the overflow structure has a size (seed 004)
            candidates.append(
                {"queue": name, "elements": el, "decision": decision, "in_overflow": decision == "approve" and fits}
            )
            if decision == "approve" and fits:
                approved.append(name)
                remaining -= el
                if d.ovflwstr:
                    ovf_free -= el
        out = [
            Emit(
                topics.OVERFLOW,
                self.name,
                {
                    "event_id": event_id("candidates", self.name, rec.event_id),
                    "structure": self.name,
                    "ts": rec.ts,
                    "usage_pct": usage_before,
                    "target_pct": float(d.target),
                    "candidates": candidates,
                    "usage_after_pct": _pct(remaining, self.capacity),
                },
            )
        ]
        for name in approved:
            q = st["queues"][name]
            q["ovf"] = True
            if d.ovflwstr:
                st["used"] -= q["el"]
                st["ovf_used"] += q["el"]
        return out

    def _get(self, rec: Activity) -> list[Emit]:
        d, st = self.d, self.state
        assert d is not None
        q = st["queues"].get(rec.queue)
        if q is None or not q["fifo"]:
            return []  # no message qmon saw put (activity before qmon started): nothing to free
        before = (st["used"], self.capacity)  # usage before, rounded only if reported
        self._free(rec, q)
        out: list[Emit] = []
        if st["mode_alert_id"] is not None and not d.ovflwstr and st["used"] * 100 <= d.target * self.capacity:
            out.extend(self._end_overflow(rec.ts, rec.event_id, before))
        out.extend(self._rearm())
        out.extend(self._near_full(rec, before))
        out.extend(self._track_clear(rec.ts))
        return out

    def _free(self, rec: Activity, q: StructureQueueState) -> None:
        """What a get frees: the oldest message of ``rec``'s queue ``q`` (its FIFO not empty), or the oldest of
        ``rec``'s size, ready and staging parts, each at most what its queue holds."""
        st = self.state
        want = None
        if rec.msg_bytes is not None:
            split = self._split(rec.queue, rec.msg_bytes)
            want = (split[0][1], split[1][1] if len(split) > 1 else 0)
        taken = _fifo_take(q["fifo"], want)
        assert taken is not None
        ready, staging = taken
        parts = [(rec.queue, ready)]
        staging_name = staging_queue(rec.queue)
        if staging and staging_name is not None:
            parts.append((staging_name, staging))
        for name, n in parts:
            pq = st["queues"].get(name)
            if pq is None:
                continue
            n = min(n, pq["el"])
            if pq["msgs"] > 0 and (n > 0 or name == rec.queue):
                pq["msgs"] -= 1  # (a staging part of a merged run's average may be 0 elements)
            pq["el"] -= n
            if self._in_overflow_structure(name):
                st["ovf_used"] -= n
            else:
                st["used"] -= n

    # ---------------------------------------------------------- hysteresis: margin and hold

    def _clear(self, key: str) -> bool:
        """Whether the condition that ends alert ``key`` holds: usage ``clear_margin`` points below its threshold."""
        d, st = self.d, self.state
        assert d is not None
        if key == "near":  # (the configuration keeps clear_margin below fullthreshold)
            return not at_or_above(st["used"], self.capacity, max(1, d.fullthreshold - d.clear_margin))
        if key == "full":
            return not at_or_above(st["used"], self.capacity, 100 - d.clear_margin)
        return not at_or_above(st["ovf_used"], self.ovf_capacity, 100 - d.clear_margin)

    def _restart_hold(self, key: str, ts: int) -> None:
        """A rejected put: the structure is full again, so the hold starts over — at this put if usage is
        below the clear level all the same (a message larger than the free space), else when it gets there."""
        clear = self.state.setdefault("clear", {})
        if self.state[ALERT_ID_OF[key]] is not None and self._clear(key):
            clear[key] = ts
        else:
            clear.pop(key, None)

    def _track_clear(self, ts: int) -> list[Emit]:
        """After an operation: note since when each firing alert's clear condition has held (forget it when
        usage went back up), and resolve those that held ``clear_hold``."""
        st = self.state
        clear = st.setdefault("clear", {})
        if (
            not clear
            and st["full_alert_id"] is None
            and st["ovf_full_alert_id"] is None
            and st["near_alert_id"] is None
        ):
            return []  # nothing firing, no hold running: nothing to note or resolve
        for key in ("full", "ovf_full", "near"):
            if st[ALERT_ID_OF[key]] is not None and self._clear(key):
                clear.setdefault(key, ts)
            else:
                clear.pop(key, None)
        return self._resolve_due(ts)

    def _resolve_due(self, now_ts: int) -> list[Emit]:
        """RESOLVED, at the instant the hold ended, for every alert whose clear condition held ``clear_hold``
        by event time ``now_ts``."""
        d, st = self.d, self.state
        assert d is not None
        out: list[Emit] = []
        for key in ("full", "ovf_full", "near"):
            since = st.get("clear", {}).get(key)
            if since is None or now_ts < since + d.clear_hold_ms:
                continue
            at = since + d.clear_hold_ms
            del st["clear"][key]
            aid, st[ALERT_ID_OF[key]] = st[ALERT_ID_OF[key]], None
            usage, src = self.usage(), f"clear@{at}"
            held = f" for {d.clear_hold_ms // 1000} s" if d.clear_hold_ms else ""
            if key == "full":
                out.append(
                    self._emit(
                        "STRUCTURE_FULL_RELIEVED",
                        "RESOLVED",
                        aid,
                        "INFO",
                        at,
                        src,
                        usage_before_pct=usage,
                        usage_after_pct=usage,
                        summary=(
                            f"Structure {self.name} is no longer full: it has been below {100 - d.clear_margin}% "
                            f"used{held} ({usage}% now)."
                        ),
                        action="None; check that the consumers keep up.",
                    )
                )
            elif key == "ovf_full":
                out.append(
                    self._emit(
                        "OVERFLOW_STRUCTURE_FULL",
                        "RESOLVED",
                        aid,
                        "INFO",
                        at,
                        src,
                        usage_before_pct=self.ovf_usage(),
                        usage_after_pct=self.ovf_usage(),
                        summary=(
                            f"Overflow structure {d.ovflwstr} of {self.name} has room again: below "
                            f"{100 - d.clear_margin}% used{held} ({self.ovf_usage()}% now)."
                        ),
                        action="None.",
                    )
                )
            else:
                out.append(
                    self._emit(
                        "STRUCTURE_NEAR_FULL",
                        "RESOLVED",
                        aid,
                        "INFO",
                        at,
                        src,
                        usage_before_pct=usage,
                        usage_after_pct=usage,
                        message=f"IXC586I STRUCTURE {self.name} IS NOW BELOW STRUCTURE FULL MONITORING THRESHOLD",
                        summary=(
                            f"Structure {self.name} is {usage}% used: it has been more than {d.clear_margin} points "
                            f"below its full threshold of {d.fullthreshold}%{held}."
                        ),
                        action="None.",
                    )
                )
        return out

    def _end_overflow(self, ts: int, source: str, before: tuple[int, int]) -> list[Emit]:
        d, st = self.d, self.state
        assert d is not None
        aid, st["mode_alert_id"] = st["mode_alert_id"], None
        st["next_scan"] = None
        st["above"] = False  # out of overflow mode: the next put at or above OVFLWMAX reaches it again
        out: list[Emit] = []
        for name in sorted(st["queues"]):
            q = st["queues"][name]
            if q["rej"]:
                out.append(
                    self._emit(
                        "QUEUE_PUTS_REJECTED",
                        "RESOLVED",
                        event_id("rejected", self.name, name, aid),
                        "INFO",
                        ts,
                        source,
                        queue=name,
                        usage_before_pct=_pct(*before),
                        usage_after_pct=self.usage(),
                        summary=f"Puts to queue {name} are accepted again: {self.name} left overflow mode.",
                        action="None.",
                    )
                )
            q["ovf"] = q["rej"] = False
        return out + [
            self._emit(
                "OVERFLOW_MODE_ENDED",
                "RESOLVED",
                aid,
                "INFO",
                ts,
                source,
                usage_before_pct=_pct(*before),
                usage_after_pct=self.usage(),
                size_kb_before=st["size_kb"],
                size_kb_after=st["size_kb"],
                summary=(
                    f"Structure {self.name} left overflow mode at {self.usage()}% used"
                    + (
                        ": no queue remains in the overflow structure."
                        if d.ovflwstr
                        else f" (at or below {d.target}%); puts to all its queues are accepted again."
                    )
                ),
                action="None.",
            )
        ]

    def _near_full(self, rec: Activity, before: tuple[int, int]) -> list[Emit]:
        d, st = self.d, self.state
        assert d is not None
        if st["near_alert_id"] is None and at_or_above(st["used"], self.capacity, d.fullthreshold):
            usage = self.usage()
            aid = st["near_alert_id"] = event_id("near", self.name, rec.event_id)
            return [
                self._emit(
                    "STRUCTURE_NEAR_FULL",
                    "FIRING",
                    aid,
                    "WARNING",
                    rec.ts,
                    rec.event_id,
                    queue=rec.queue,
                    qmgr=rec.qmgr,
                    usage_before_pct=_pct(*before),
                    usage_after_pct=usage,
                    size_kb_before=st["size_kb"],
                    size_kb_after=st["size_kb"],
                    message=f"IXC585E STRUCTURE {self.name} IS AT OR ABOVE STRUCTURE FULL MONITORING THRESHOLD OF "
                    f"{d.fullthreshold}%",
                    summary=(
                        f"Structure {self.name} is {usage}% used, at or above its full threshold of "
                        f"{d.fullthreshold}%; at 100% puts are rejected (CQS0205E)."
                    ),
                    action=(
                        "Find the deepest queues of the structure and drain them; consider a larger SIZE or an "
                        "overflow structure."
                    ),
                )
            ]
        return []

    # ---------------------------------------------------------- the overflow scan

    def _scan(self, at: int) -> list[Emit]:
        """§5.4: queues in overflow that are empty leave it; none left ends overflow mode."""
        d, st = self.d, self.state
        assert d is not None
        out: list[Emit] = []
        before = (st["used"], self.capacity)  # usage before, rounded only if reported
        for name in sorted(st["queues"]):
            q = st["queues"][name]
            if q["ovf"] and q["msgs"] == 0:
                q["ovf"] = False
                out.append(
                    self._emit(
                        "QUEUE_OVERFLOW_ENDED",
                        "INFO",
                        event_id("ovf-queue", self.name, name, at),
                        "INFO",
                        at,
                        f"scan@{at}",
                        queue=name,
                        summary=f"Queue {name} is empty and has left overflow structure {d.ovflwstr} of {self.name}.",
                        action="None.",
                    )
                )
        if not any(q["ovf"] for q in st["queues"].values()):
            out.extend(self._end_overflow(at, f"scan@{at}", before))
        else:
            st["next_scan"] = at + d.overflow_scan_interval_ms
        return out

    def _catch_up(self, now_ts: int) -> list[Emit]:
        """Run the scans due by event time ``now_ts`` (a scan at t applies before activity at t)."""
        st = self.state
        out: list[Emit] = self._resolve_due(now_ts)
        if st["next_scan"] is not None and st["mode_alert_id"] is not None and now_ts >= st["next_scan"]:
            d = self.d
            assert d is not None
            at = st["next_scan"]
            out.extend(self._scan(at))
            if st["next_scan"] is not None and st["next_scan"] <= now_ts:
                # nothing changes between scans without activity: the next one that matters is after now
                k = (now_ts - st["next_scan"]) // d.overflow_scan_interval_ms + 1
                st["next_scan"] += k * d.overflow_scan_interval_ms
        return out

    def next_scan_clock(self) -> int | None:
        """The arrival-clock time of the next overflow scan or alert resolution due (for a Spark timer), or None."""
        st, d = self.state, self.d
        if st["last_clock"] is None or st["last_ts"] is None or d is None:
            return None
        due = [since + d.clear_hold_ms for since in st.get("clear", {}).values()]
        if st["next_scan"] is not None and st["mode_alert_id"] is not None:
            due.append(st["next_scan"])
        if not due:
            return None
        return st["last_clock"] + max(0, min(due) - st["last_ts"])

    # ---------------------------------------------------------- snapshot (gauges: qmon metrics)

    def snapshot(self, clock: int) -> list[Emit]:
        """The structure's usage, if it changed (a queue was used) since its last snapshot, at most once per
        ``snapshot_interval_ms`` of the arrival clock (``snapshot_due`` is a deadline of the unit's timer)."""
        interval, d, st = self.settings.snapshot_interval_ms, self.d, self.state
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
        }
        snap.update(at=clock, dirty=False)
        return [Emit(topics.SNAPSHOT, self.name, dict(record))]

    def snapshot_due(self) -> int | None:
        snap = self.state.get("snap")
        if self.settings.snapshot_interval_ms <= 0 or not snap or snap["at"] is None or not snap["dirty"]:
            return None
        return int(snap["at"]) + self.settings.snapshot_interval_ms

    def on_clock(self, clock: int) -> list[Emit]:
        """The arrival clock reached ``clock``: run the scan due by the matching event time."""
        st = self.state
        if st["last_clock"] is None or st["last_ts"] is None:
            return []
        return self._catch_up(st["last_ts"] + (clock - st["last_clock"]))


def migrate(state: dict[str, Any]) -> StructureState:
    """A structure's state of an earlier version, brought to ``STATE_VERSION`` in place (a newer one is refused)."""
    version = state.get("v", 1)
    if not isinstance(version, int) or version > STATE_VERSION:
        raise ValueError(f"structure state has version {version!r}, this qmon reads up to {STATE_VERSION}")
    if version < 2:
        _migrate_1(state)
    if version < 3:
        for old, new in ALERT_ID_OF.items():
            state[new] = state.pop(old, None)
    state["v"] = STATE_VERSION
    return state  # type: ignore[return-value]


def _migrate_1(state: dict[str, Any]) -> None:
    """State version 1 (no per-queue FIFO, no ``above``) to 2: a queue's messages become one run of its
    totals, so its gets free the average and the last one the rest.  Version 1 did not link a long
    message's staging part to its ready part, so a ready queue's run takes all of its staging queue's
    elements: draining the ready queue frees them, and usage returns to 0 once everything is got."""
    queues = state["queues"]
    for name, q in sorted(queues.items(), key=lambda kv: queue_type(kv[0]) in STAGING_TYPES):
        if "fifo" in q:
            continue
        staging = staging_queue(name)
        sq = queues.get(staging) if staging else None
        if q["msgs"] > 0 and sq is not None and "fifo" not in sq and sq["el"] > 0:
            q["fifo"] = [[q["msgs"], q["el"], sq["el"]]]
            sq["fifo"] = []  # its elements are freed with the ready queue's messages
        else:
            q["fifo"] = [[q["msgs"], q["el"], 0]] if q["msgs"] > 0 else []
    state.setdefault("above", False)
    state.setdefault("clear", {})
