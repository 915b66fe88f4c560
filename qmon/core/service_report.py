"""Service reports: what ``qmon report`` computes from qmon's own output records over a time range.  Pure.

It takes decoded records (dicts, as the Avro decoder returns them: Alert, PerformanceEvent and Snapshot) and
the range ``[since_ms, until_ms)`` and returns plain dataclasses, per queue and per structure:

* **Alert episodes.** An episode is an ``alert_id`` from its FIRING record to its RESOLVED record, counted
  under the FIRING record's type (an episode seen only by its RESOLVED record takes the type its FIRING had:
  STRUCTURE_FULL for STRUCTURE_FULL_RELIEVED, OVERFLOW_MODE_ENTERED for OVERFLOW_MODE_ENDED).  Only the part
  inside the range counts: an episode already open at ``since_ms`` (its RESOLVED is in the range, its FIRING
  is not) counts from ``since_ms``, and one still open at ``until_ms`` up to ``until_ms``.  Time in breach is
  the time at least one episode of the type was open (episodes of one type overlap only for
  QUEUE_PUTS_REJECTED, one per queue); time to resolve is taken over the episodes raised and resolved within
  the range, the only ones whose length is known.
* **Queue Service Interval High and OK** (IBM MQ's queue service interval events, QSVCINT_HIGH and
  QSVCINT_OK on ``qmon.events.performance``): MQ raises a High event once a get has not come within QSVCINT
  and then raises nothing more until a get comes within QSVCINT again, which raises an OK event.  The time
  from each High event to the next OK event of the queue is time not served within QSVCINT; the rest of the
  range is served within it.  An OK event with no High event before it in the range closes a High that began
  before the range (MQ raises OK events only after a High event), so that time counts from ``since_ms``; a
  High event with no OK after it counts up to ``until_ms``.
* **Overflow mode** of a structure: its OVERFLOW_MODE_ENTERED episodes.  With no overflow alert in the range,
  a snapshot in the range that says the structure is in overflow mode means it was throughout the range (it
  could not have entered or left it without an alert): one episode open at both ends.
* **Peak usage**: the highest usage of a structure read in the range, from its alerts' ``usage_before_pct``
  and ``usage_after_pct`` and its snapshots' data elements; the overflow structure's from
  OVERFLOW_STRUCTURE_FULL alerts (whose usage fields are the overflow structure's) and snapshots.

Records outside the range are ignored, as are journal alerts, INFO alerts (except for usage) and records
whose ``event_id`` was already seen (a redelivery).  Times are epoch milliseconds; nothing reads the clock.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from qmon.core.structures.data_elements import usage_pct
from qmon.core.timeconv import to_ms

#: The RESOLVED record's type of the episodes that end with a record of their own type -> the FIRING type.
FIRING_TYPE_OF = {"STRUCTURE_FULL_RELIEVED": "STRUCTURE_FULL", "OVERFLOW_MODE_ENDED": "OVERFLOW_MODE_ENTERED"}

OVERFLOW_MODE = "OVERFLOW_MODE_ENTERED"
HIGH, OK = "QSVCINT_HIGH", "QSVCINT_OK"

#: How many points of usage over time a structure keeps for plots: the range is cut into this many slices.
USAGE_POINTS = 500

Period = tuple[int, int]


@dataclass(frozen=True)
class Episode:
    """One alert episode, cut to the range: ``start_ms`` is ``since`` when it was already open then
    (``open_at_since``), ``end_ms`` is ``until`` when it was still open then (``open_at_until``).
    ``alert_id`` is None for an overflow mode known only from snapshots."""

    alert_id: str | None
    type: str
    start_ms: int
    end_ms: int
    open_at_since: bool
    open_at_until: bool

    @property
    def duration_ms(self) -> int:
        """Its time inside the range."""
        return self.end_ms - self.start_ms

    @property
    def resolve_ms(self) -> int | None:
        """From FIRING to RESOLVED, when both are in the range."""
        return None if self.open_at_since or self.open_at_until else self.duration_ms


@dataclass(frozen=True)
class AlertSummary:
    """The episodes of one alert type on one queue or structure."""

    type: str
    episodes: int
    open_at_since: int
    open_at_until: int
    in_breach_ms: int  # the time at least one of them was open, inside the range
    longest_ms: int
    resolved: int  # raised and resolved within the range
    resolve_median_ms: int | None  # over those (to the millisecond)
    resolve_max_ms: int | None


@dataclass(frozen=True)
class ServiceIntervalSummary:
    """A queue's Queue Service Interval High and OK events in the range, and what they say of its service."""

    high_events: int
    ok_events: int
    not_served_ms: int  # from each High event to the next OK event, inside the range
    served_pct: float  # the rest of the range, in per cent of it
    periods: tuple[Period, ...]  # the times not served within QSVCINT


@dataclass(frozen=True)
class QueueReport:
    qmgr: str
    queue: str
    alerts: tuple[AlertSummary, ...]
    episodes: tuple[Episode, ...]
    service_interval: ServiceIntervalSummary | None  # None: no High or OK event in the range

    @property
    def subject(self) -> str:
        return f"{self.qmgr}/{self.queue}"


@dataclass(frozen=True)
class StructureReport:
    structure: str
    alerts: tuple[AlertSummary, ...]
    episodes: tuple[Episode, ...]
    overflow_mode_ms: int
    overflow_mode_periods: tuple[Period, ...]
    peak_usage_pct: float | None  # None: no usage read in the range
    peak_usage_ms: int | None  # when (the first time, if reached more than once)
    overflow_structure: str | None
    peak_overflow_usage_pct: float | None
    peak_overflow_usage_ms: int | None
    usage: tuple[tuple[int, float], ...]  # (ts, per cent): the highest reading of each slice of the range

    @property
    def subject(self) -> str:
        return self.structure


@dataclass(frozen=True)
class ServiceReport:
    since_ms: int
    until_ms: int
    queues: tuple[QueueReport, ...]
    structures: tuple[StructureReport, ...]

    @property
    def range_ms(self) -> int:
        return self.until_ms - self.since_ms


# ---------------------------------------------------------------- selection


def _selected(patterns: Sequence[str], *names: str) -> bool:
    """Whether any of ``names`` matches any of ``patterns`` (``*`` and ``?`` wildcards, case-sensitive as MQ
    and IMS names are)."""
    return any(fnmatchcase(name, p) for p in patterns for name in names)


@dataclass(frozen=True)
class Selection:
    """Which queues and structures a report covers: every one when no pattern is given; with patterns of one
    kind only, those of that kind that match and none of the other."""

    queues: tuple[str, ...] = ()
    structures: tuple[str, ...] = ()

    def queue(self, qmgr: str, queue: str) -> bool:
        if not self.queues:
            return not self.structures
        return _selected(self.queues, queue, f"{qmgr}/{queue}")

    def structure(self, name: str) -> bool:
        if not self.structures:
            return not self.queues
        return _selected(self.structures, name)


# ---------------------------------------------------------------- episodes


def union_ms(periods: Iterable[Period]) -> int:
    """The length of the union of ``periods``."""
    total, reach = 0, None
    for start, end in sorted(periods):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def merged(periods: Iterable[Period]) -> tuple[Period, ...]:
    """``periods`` joined where they overlap or touch, in order."""
    out: list[Period] = []
    for start, end in sorted(periods):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return tuple(out)


def summarise(type_: str, episodes: Sequence[Episode]) -> AlertSummary:
    """The summary of one type's ``episodes``."""
    resolved = sorted(r for e in episodes if (r := e.resolve_ms) is not None)
    return AlertSummary(
        type=type_,
        episodes=len(episodes),
        open_at_since=sum(e.open_at_since for e in episodes),
        open_at_until=sum(e.open_at_until for e in episodes),
        in_breach_ms=union_ms((e.start_ms, e.end_ms) for e in episodes),
        longest_ms=max((e.duration_ms for e in episodes), default=0),
        resolved=len(resolved),
        resolve_median_ms=round(statistics.median(resolved)) if resolved else None,
        resolve_max_ms=resolved[-1] if resolved else None,
    )


@dataclass
class _Open:
    """What the range shows of one ``alert_id``."""

    type: str
    firing_ms: int | None = None
    resolved_ms: int | None = None


def _episodes(records: Sequence[Mapping[str, Any]], since_ms: int, until_ms: int) -> list[Episode]:
    """The episodes of one subject's FIRING and RESOLVED records (in the range), by start."""
    seen: dict[str, _Open] = {}
    for r in records:
        ts = to_ms(r["ts"])
        if r["state"] == "FIRING":
            o = seen.setdefault(r["alert_id"], _Open(r["type"]))
            o.type = r["type"]
            o.firing_ms = ts if o.firing_ms is None else min(o.firing_ms, ts)
        else:
            o = seen.setdefault(r["alert_id"], _Open(FIRING_TYPE_OF.get(r["type"], r["type"])))
            o.resolved_ms = ts if o.resolved_ms is None else min(o.resolved_ms, ts)
    out = []
    for aid, o in seen.items():
        start = since_ms if o.firing_ms is None else o.firing_ms
        end = until_ms if o.resolved_ms is None else max(start, o.resolved_ms)
        out.append(Episode(aid, o.type, start, end, o.firing_ms is None, o.resolved_ms is None))
    return sorted(out, key=lambda e: (e.start_ms, e.end_ms, e.type, e.alert_id or ""))


def _summaries(episodes: Sequence[Episode]) -> tuple[AlertSummary, ...]:
    types = sorted({e.type for e in episodes})
    return tuple(summarise(t, [e for e in episodes if e.type == t]) for t in types)


# ---------------------------------------------------------------- queue service interval


def service_interval(events: Sequence[tuple[int, str]], since_ms: int, until_ms: int) -> ServiceIntervalSummary:
    """A queue's (ts, QSVCINT_HIGH or QSVCINT_OK) events in the range, in order, as the module's text says."""
    periods: list[Period] = []
    high_since: int | None = None
    for n, (ts, type_) in enumerate(events):
        if type_ == HIGH:
            if high_since is None:
                high_since = ts
        elif high_since is not None:
            periods.append((high_since, ts))
            high_since = None
        elif n == 0:  # High since before the range
            periods.append((since_ms, ts))
    if high_since is not None:
        periods.append((high_since, until_ms))
    not_served = union_ms(periods)
    return ServiceIntervalSummary(
        high_events=sum(1 for _ts, t in events if t == HIGH),
        ok_events=sum(1 for _ts, t in events if t == OK),
        not_served_ms=not_served,
        served_pct=100.0 * (until_ms - since_ms - not_served) / (until_ms - since_ms),
        periods=tuple(periods),
    )


# ---------------------------------------------------------------- structure usage


class _Usage:
    """The peak usage of a structure and its overflow structure, and the highest reading of each slice."""

    def __init__(self, since_ms: int, until_ms: int, points: int) -> None:
        self.since, self.span, self.points = since_ms, until_ms - since_ms, max(1, points)
        self.peak: tuple[float, int] | None = None  # (pct, ts)
        self.ovf_peak: tuple[float, int] | None = None
        self.overflow_structure: str | None = None
        self.slices: dict[int, tuple[int, float]] = {}
        self.mode_seen = False  # a snapshot in overflow mode

    @staticmethod
    def _higher(peak: tuple[float, int] | None, pct: float, ts: int) -> tuple[float, int]:
        if peak is None or pct > peak[0] or (pct == peak[0] and ts < peak[1]):
            return (pct, ts)
        return peak

    def primary(self, pct: float | None, ts: int) -> None:
        if pct is None:
            return
        self.peak = self._higher(self.peak, pct, ts)
        i = (ts - self.since) * self.points // self.span
        old = self.slices.get(i)
        if old is None or pct > old[1] or (pct == old[1] and ts < old[0]):
            self.slices[i] = (ts, pct)

    def overflow(self, pct: float | None, ts: int) -> None:
        if pct is not None:
            self.ovf_peak = self._higher(self.ovf_peak, pct, ts)


# ---------------------------------------------------------------- the report


def _in_range(ts: int, since_ms: int, until_ms: int) -> bool:
    return since_ms <= ts < until_ms


def _first_time(records: Iterable[Mapping[str, Any]], since_ms: int, until_ms: int) -> Iterable[Mapping[str, Any]]:
    """The records in the range whose ``event_id`` has not come before (a redelivery is the same record)."""
    seen: set[str] = set()
    for r in records:
        if not _in_range(to_ms(r["ts"]), since_ms, until_ms):
            continue
        eid = r.get("event_id")
        if eid is not None:
            if eid in seen:
                continue
            seen.add(eid)
        yield r


def build(
    alerts: Iterable[Mapping[str, Any]],
    performance: Iterable[Mapping[str, Any]],
    snapshots: Iterable[Mapping[str, Any]],
    since_ms: int,
    until_ms: int,
    *,
    queues: Sequence[str] = (),
    structures: Sequence[str] = (),
    usage_points: int = USAGE_POINTS,
) -> ServiceReport:
    """The report of the range ``[since_ms, until_ms)`` over decoded Alert, PerformanceEvent and Snapshot
    records (in any order; each iterable is read once, in turn), for the queues matching ``queues`` and the
    structures matching ``structures`` (patterns with ``*`` and ``?``; a queue's pattern is matched against
    its name and against ``QMGR/QUEUE``)."""
    if since_ms >= until_ms:
        msg = "--since must be before --until"
        raise ValueError(msg)
    select = Selection(tuple(queues), tuple(structures))
    queue_alerts: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    structure_alerts: dict[str, list[Mapping[str, Any]]] = {}
    usage: dict[str, _Usage] = {}

    def usage_of(name: str) -> _Usage:
        if name not in usage:
            usage[name] = _Usage(since_ms, until_ms, usage_points)
        return usage[name]

    for r in _first_time(alerts, since_ms, until_ms):
        kind, subject, ts = r["subject_kind"], r["subject"], to_ms(r["ts"])
        if kind == "QUEUE":
            key = (r.get("qsg") or r.get("qmgr") or "", subject)  # a shared queue: its group's, whichever member
            if select.queue(*key) and r["state"] in ("FIRING", "RESOLVED"):
                queue_alerts.setdefault(key, []).append(r)
        elif kind == "STRUCTURE" and select.structure(subject):
            if r["state"] in ("FIRING", "RESOLVED"):
                structure_alerts.setdefault(subject, []).append(r)
            u = usage_of(subject)
            record = u.overflow if r["type"] == "OVERFLOW_STRUCTURE_FULL" else u.primary
            for pct in (r.get("usage_before_pct"), r.get("usage_after_pct")):
                record(pct, ts)

    qsvcint: dict[tuple[str, str], list[tuple[int, int, str]]] = {}
    for n, r in enumerate(_first_time(performance, since_ms, until_ms)):
        key = (r.get("qsg") or r["qmgr"], r["queue"])
        if r["type"] in (HIGH, OK) and select.queue(*key):
            qsvcint.setdefault(key, []).append((to_ms(r["ts"]), n, r["type"]))

    for r in snapshots:
        name, ts = r.get("structure"), to_ms(r["ts"])
        if name is None or not _in_range(ts, since_ms, until_ms) or not select.structure(name):
            continue
        u = usage_of(name)
        if r.get("capacity_elements"):
            u.primary(usage_pct(r.get("used_elements") or 0, r["capacity_elements"]), ts)
        if r.get("overflow_structure"):
            u.overflow_structure = r["overflow_structure"]
            if r.get("overflow_capacity_elements"):
                u.overflow(usage_pct(r.get("overflow_used_elements") or 0, r["overflow_capacity_elements"]), ts)
        if r.get("overflow_mode"):
            u.mode_seen = True

    queue_reports = []
    for qmgr, queue in sorted(queue_alerts.keys() | qsvcint.keys()):
        episodes = _episodes(queue_alerts.get((qmgr, queue), []), since_ms, until_ms)
        events = [(ts, t) for ts, _n, t in sorted(qsvcint.get((qmgr, queue), []))]
        queue_reports.append(
            QueueReport(
                qmgr=qmgr,
                queue=queue,
                alerts=_summaries(episodes),
                episodes=tuple(episodes),
                service_interval=service_interval(events, since_ms, until_ms) if events else None,
            )
        )

    structure_reports = []
    for name in sorted(structure_alerts.keys() | usage.keys()):
        episodes = _episodes(structure_alerts.get(name, []), since_ms, until_ms)
        u = usage_of(name)
        if u.mode_seen and not any(e.type == OVERFLOW_MODE for e in episodes):
            episodes = [Episode(None, OVERFLOW_MODE, since_ms, until_ms, True, True), *episodes]
        mode = merged((e.start_ms, e.end_ms) for e in episodes if e.type == OVERFLOW_MODE)
        structure_reports.append(
            StructureReport(
                structure=name,
                alerts=_summaries(episodes),
                episodes=tuple(episodes),
                overflow_mode_ms=union_ms(mode),
                overflow_mode_periods=mode,
                peak_usage_pct=u.peak[0] if u.peak else None,
                peak_usage_ms=u.peak[1] if u.peak else None,
                overflow_structure=u.overflow_structure,
                peak_overflow_usage_pct=u.ovf_peak[0] if u.ovf_peak else None,
                peak_overflow_usage_ms=u.ovf_peak[1] if u.ovf_peak else None,
                usage=tuple(u.slices[i] for i in sorted(u.slices)),
            )
        )
    return ServiceReport(since_ms, until_ms, tuple(queue_reports), tuple(structure_reports))
