"""Alter and overflow mode: at OVFLWMAX the structure is altered towards SIZE; still at or above it, CQS
enters overflow mode, offers the candidate queues to the overflow exit, moves the approved ones to the
overflow structure (or rejects their puts), and the scan every ``overflow_scan_interval`` returns the empty
ones (IMS, *CQS structure overflow function*).  Pure."""

from __future__ import annotations

import heapq
from typing import Any

from qmon.core import topics
from qmon.core.ids import event_id
from qmon.core.records import Activity, Emit
from qmon.core.structures.data_elements import STAGING_TYPES, at_or_above, queue_type, usage_pct
from qmon.core.structures.structure import Structure

MAX_APPROVED = 512


class AlterAndOverflow:
    """The overflow function of a structure: OVFLWMAX reached by a put (``threshold``) and left again
    (``rearm``), the end of overflow mode without an overflow structure (``end``), and the scans due by event
    time (``catch_up``, ``due``)."""

    def __init__(self, structure: Structure):
        self.structure = structure
        self.settings = structure.settings
        self.definition = structure.definition
        self.state = structure.state

    def rearm(self) -> None:
        """Usage below OVFLWMAX again: the next time it reaches the threshold counts as reached again."""
        d, st = self.definition, self.state
        assert d is not None
        if st["above"] and not at_or_above(st["used"], self.structure.capacity, d.ovflwmax):
            st["above"] = False

    def threshold(self, rec: Activity, before: tuple[int, int]) -> list[Emit]:
        """Primary usage ≥ OVFLWMAX after a put: alter, then overflow mode and candidates."""
        d, st, s = self.definition, self.state, self.structure
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
            usage_before = s.usage()
            target = d.target
            want = -(-st["used"] * 100 // (2 * target)) if target > 0 else d.size
            st["size_kb"] = max(old, min(d.size, want))
            aid = event_id("alter", s.name, rec.event_id)
            out.append(
                s.alert(
                    "STRUCTURE_ALTERED",
                    "INFO",
                    aid,
                    "INFO",
                    rec.ts,
                    rec.event_id,
                    queue=rec.queue,
                    qmgr=rec.qmgr,
                    usage_before_pct=usage_before,
                    usage_after_pct=s.usage(),
                    size_kb_before=old,
                    size_kb_after=st["size_kb"],
                    summary=(
                        f"Structure {s.name} reached {usage_before}% (OVFLWMAX {d.ovflwmax}%) and was altered "
                        f"from {old} KB to {st['size_kb']} KB; usage is now {s.usage()}%."
                        + (" It is at its maximum SIZE." if st["size_kb"] >= d.size else "")
                    ),
                    action=(
                        "None now. If alters recur, raise INITSIZE in the CFRM policy; at SIZE the next "
                        "threshold puts the structure into overflow mode."
                    ),
                )
            )
            if not at_or_above(st["used"], s.capacity, d.ovflwmax):
                return out
        if st["mode_alert_id"] is None:
            aid = st["mode_alert_id"] = event_id("overflow", s.name, rec.event_id)
            if d.ovflwstr:
                st["next_scan"] = rec.ts + d.overflow_scan_interval_ms
            out.append(
                s.alert(
                    "OVERFLOW_MODE_ENTERED",
                    "FIRING",
                    aid,
                    "WARNING",
                    rec.ts,
                    rec.event_id,
                    queue=rec.queue,
                    qmgr=rec.qmgr,
                    usage_before_pct=usage_pct(*before),
                    usage_after_pct=s.usage(),
                    size_kb_before=st["size_kb"],
                    size_kb_after=st["size_kb"],
                    summary=(
                        f"Structure {s.name} is {s.usage()}% used at its maximum size of {st['size_kb']} KB "
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
        """Offer candidates to the overflow exit; one OverflowCandidates record."""
        d, st, s = self.definition, self.state, self.structure
        assert d is not None
        usage_before = s.usage()
        # the queues by elements, most first (then by name), taken from a heap as they are offered: a structure
        # may hold a million queues, of which a selection offers a few
        pool = [
            (-q["elements"], name)
            for name, q in st["queues"].items()
            if queue_type(name) not in STAGING_TYPES and not q["in_overflow"] and q["elements"] > 0
        ]
        heapq.heapify(pool)
        remaining = st["used"]
        ovf_free = s.ovf_capacity - st["overflow_used"]
        candidates: list[dict[str, Any]] = []
        approved: list[str] = []
        while pool:
            if remaining * 100 <= d.target * s.capacity or len(approved) >= MAX_APPROVED:
                break
            minus_el, name = heapq.heappop(pool)
            el = -minus_el
            decision = self.settings.overflow_exit.decide(s.name, name, el)
            fits = not d.ovflwstr or el <= ovf_free  # the overflow structure has a size
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
                s.name,
                {
                    "event_id": event_id("candidates", s.name, rec.event_id),
                    "structure": s.name,
                    "ts": rec.ts,
                    "usage_pct": usage_before,
                    "target_pct": float(d.target),
                    "candidates": candidates,
                    "usage_after_pct": usage_pct(remaining, s.capacity),
                },
            )
        ]
        for name in approved:
            q = st["queues"][name]
            q["in_overflow"] = True
            if d.ovflwstr:
                st["used"] -= q["elements"]
                st["overflow_used"] += q["elements"]
        return out

    def end(self, ts: int, source: str, before: tuple[int, int]) -> list[Emit]:
        """Overflow mode ends at ``ts`` (usage ``before``: used, capacity): the queues in it leave it, their
        rejected puts resolved."""
        d, st, s = self.definition, self.state, self.structure
        assert d is not None
        aid, st["mode_alert_id"] = st["mode_alert_id"], None
        st["next_scan"] = None
        st["above"] = False  # out of overflow mode: the next put at or above OVFLWMAX reaches it again
        out: list[Emit] = []
        for name in sorted(st["queues"]):
            q = st["queues"][name]
            if q["put_rejected"]:
                out.append(
                    s.alert(
                        "QUEUE_PUTS_REJECTED",
                        "RESOLVED",
                        event_id("rejected", s.name, name, aid),
                        "INFO",
                        ts,
                        source,
                        queue=name,
                        usage_before_pct=usage_pct(*before),
                        usage_after_pct=s.usage(),
                        summary=f"Puts to queue {name} are accepted again: {s.name} left overflow mode.",
                        action="None.",
                    )
                )
            q["in_overflow"] = q["put_rejected"] = False
        return out + [
            s.alert(
                "OVERFLOW_MODE_ENDED",
                "RESOLVED",
                aid,
                "INFO",
                ts,
                source,
                usage_before_pct=usage_pct(*before),
                usage_after_pct=s.usage(),
                size_kb_before=st["size_kb"],
                size_kb_after=st["size_kb"],
                summary=(
                    f"Structure {s.name} left overflow mode at {s.usage()}% used"
                    + (
                        ": no queue remains in the overflow structure."
                        if d.ovflwstr
                        else f" (at or below {d.target}%); puts to all its queues are accepted again."
                    )
                ),
                action="None.",
            )
        ]

    def _scan(self, at: int) -> list[Emit]:
        """Queues in overflow that are empty leave it; none left ends overflow mode."""
        d, st, s = self.definition, self.state, self.structure
        assert d is not None
        out: list[Emit] = []
        before = (st["used"], s.capacity)  # usage before, rounded only if reported
        for name in sorted(st["queues"]):
            q = st["queues"][name]
            if q["in_overflow"] and q["messages"] == 0:
                q["in_overflow"] = False
                out.append(
                    s.alert(
                        "QUEUE_OVERFLOW_ENDED",
                        "INFO",
                        event_id("ovf-queue", s.name, name, at),
                        "INFO",
                        at,
                        f"scan@{at}",
                        queue=name,
                        summary=f"Queue {name} is empty and has left overflow structure {d.ovflwstr} of {s.name}.",
                        action="None.",
                    )
                )
        if not any(q["in_overflow"] for q in st["queues"].values()):
            out.extend(self.end(at, f"scan@{at}", before))
        else:
            st["next_scan"] = at + d.overflow_scan_interval_ms
        return out

    def catch_up(self, now_ts: int) -> list[Emit]:
        """Run the scans due by event time ``now_ts`` (a scan at t applies before activity at t)."""
        st = self.state
        out: list[Emit] = []
        if st["next_scan"] is not None and st["mode_alert_id"] is not None and now_ts >= st["next_scan"]:
            d = self.definition
            assert d is not None
            at = st["next_scan"]
            out.extend(self._scan(at))
            if st["next_scan"] is not None and st["next_scan"] <= now_ts:
                # nothing changes between scans without activity: the next one that matters is after now
                k = (now_ts - st["next_scan"]) // d.overflow_scan_interval_ms + 1
                st["next_scan"] += k * d.overflow_scan_interval_ms
        return out

    def due(self) -> int | None:
        """The event time of the next scan, in overflow mode with an overflow structure, else None."""
        st = self.state
        return st["next_scan"] if st["next_scan"] is not None and st["mode_alert_id"] is not None else None
