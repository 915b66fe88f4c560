"""Data elements in use: a put takes its message's elements (ready and staging parts, in the primary or the
overflow structure), a get frees what that message's put took; a put that does not fit, or one to a queue
approved for overflow without an overflow structure, is rejected.  Pure."""

from __future__ import annotations

from qmon.core.ids import event_id
from qmon.core.message_runs import push_size, take_size
from qmon.core.records import Activity, Emit
from qmon.core.structures.data_elements import at_or_above, elements, staging_queue, usage_pct
from qmon.core.structures.full import FullMonitoring
from qmon.core.structures.overflow import AlterAndOverflow
from qmon.core.structures.state import StructureQueueState
from qmon.core.structures.structure import Structure


class DataElements:
    """The accounting of a structure's data elements: a put (``put``) and a get (``get``), each followed by the
    checks of the overflow function (``overflow``) and of full monitoring (``full``)."""

    def __init__(self, structure: Structure, overflow: AlterAndOverflow, full: FullMonitoring):
        self.structure = structure
        self.definition = structure.definition
        self.state = structure.state
        self.overflow = overflow
        self.full = full

    def _split(self, queue: str, nbytes: int | None) -> list[tuple[str, int]]:
        """(queue, elements) parts of a message: long messages to 1/5 queues spill to staging."""
        assert self.definition is not None
        lgmsgsz = self.definition.lgmsgsz
        if nbytes is not None and nbytes > lgmsgsz and (staging := staging_queue(queue)):
            return [(queue, elements(lgmsgsz)), (staging, elements(nbytes - lgmsgsz))]
        return [(queue, elements(nbytes))]

    def _in_overflow_structure(self, queue: str) -> bool:
        q = self.state["queues"].get(queue)
        return bool(q and q["in_overflow"] and self.definition and self.definition.ovflwstr)

    def put(self, rec: Activity) -> list[Emit]:
        """A put: its message's elements taken, or the put rejected; then OVFLWMAX, near full and the holds."""
        d, st, s = self.definition, self.state, self.structure
        assert d is not None
        out: list[Emit] = []
        q = s.queue(rec.queue)
        # no overflow structure: puts to approved queues are rejected (IMS, *CQS structure overflow function*)
        if q["in_overflow"] and not d.ovflwstr:
            st["rejected"] += 1
            if not q["put_rejected"]:
                q["put_rejected"] = True
                out.append(
                    s.alert(
                        "QUEUE_PUTS_REJECTED",
                        "FIRING",
                        event_id("rejected", s.name, rec.queue, st["mode_alert_id"]),
                        "CRITICAL",
                        rec.ts,
                        rec.event_id,
                        queue=rec.queue,
                        qmgr=rec.qmgr,
                        usage_before_pct=s.usage(),
                        usage_after_pct=s.usage(),
                        summary=(
                            f"Structure {s.name} is in overflow mode with no overflow structure: puts to "
                            f"queue {rec.queue}, chosen by the overflow exit, are rejected until usage falls "
                            f"to {d.target}%."
                        ),
                        action=(
                            f"Drain {rec.queue} (start or speed up its consumer), or define an overflow "
                            f"structure (OVFLWSTR) for {s.name} in CQSSGxxx and the CFRM policy."
                        ),
                    )
                )
            return out
        parts = self._split(rec.queue, rec.msg_bytes)
        # each part's structure: the overflow structure's for a queue in overflow, else the primary's
        where = [self._in_overflow_structure(name) for name, _ in parts] if d.ovflwstr else [False] * len(parts)
        primary_need = ovf_need = 0
        for (_, n), ovf in zip(parts, where, strict=True):
            if ovf:
                ovf_need += n
            else:
                primary_need += n
        before = (st["used"], s.capacity)  # usage before, rounded only if reported
        if ovf_need and st["overflow_used"] + ovf_need > s.ovf_capacity:
            st["rejected"] += 1
            if st["ovf_full_alert_id"] is None:
                aid = st["ovf_full_alert_id"] = event_id("ovf-full", s.name, rec.event_id)
                out.append(
                    s.alert(
                        "OVERFLOW_STRUCTURE_FULL",
                        "FIRING",
                        aid,
                        "CRITICAL",
                        rec.ts,
                        rec.event_id,
                        queue=rec.queue,
                        qmgr=rec.qmgr,
                        usage_before_pct=s.ovf_usage(),
                        usage_after_pct=s.ovf_usage(),
                        message=f"CQS0205E STRUCTURE {d.ovflwstr} IS FULL",
                        summary=(
                            f"Overflow structure {d.ovflwstr} of {s.name} is full: puts to the queues in "
                            f"overflow ({rec.queue} first) are rejected; the primary structure carries on."
                        ),
                        action=(
                            f"Drain the queues in overflow, or enlarge {d.ovflwstr} in the CFRM policy "
                            "(SETXCF START,ALTER or a policy change and rebuild)."
                        ),
                    )
                )
            self.full.restart_hold("ovf_full", rec.ts)  # after the FIRING: the hold starts over
            return out
        if primary_need and st["used"] + primary_need > s.capacity:
            st["rejected"] += 1
            if st["full_alert_id"] is None:
                aid = st["full_alert_id"] = event_id("full", s.name, rec.event_id)
                out.append(
                    s.alert(
                        "STRUCTURE_FULL",
                        "FIRING",
                        aid,
                        "CRITICAL",
                        rec.ts,
                        rec.event_id,
                        queue=rec.queue,
                        qmgr=rec.qmgr,
                        usage_before_pct=usage_pct(*before),
                        usage_after_pct=usage_pct(*before),
                        size_kb_before=st["size_kb"],
                        size_kb_after=st["size_kb"],
                        message=f"CQS0205E STRUCTURE {s.name} IS FULL",
                        summary=(
                            f"Structure {s.name} is full ({st['used']} of {s.capacity} data elements): "
                            f"puts are rejected (first: {rec.queue} from {rec.qmgr}); gets still work."
                        ),
                        action=(
                            f"Find the queues holding {s.name}'s storage and drain them (start their "
                            "consumers, or /DEQUEUE messages nobody will read); enlarge the structure in the "
                            "CFRM policy or define an overflow structure."
                        ),
                    )
                )
            self.full.restart_hold("full", rec.ts)  # after the FIRING: the hold starts over
            return out
        for (name, n), ovf in zip(parts, where, strict=True):
            pq = q if name == rec.queue else s.queue(name)
            pq["messages"] += 1
            pq["elements"] += n
            if ovf:
                st["overflow_used"] += n
            else:
                st["used"] += n
        push_size(q["fifo"], parts[0][1], parts[1][1] if len(parts) > 1 else 0)
        if at_or_above(st["used"], s.capacity, d.ovflwmax):
            if not st["above"]:  # reached: from below OVFLWMAX to at or above it
                st["above"] = True
                out.extend(self.overflow.threshold(rec, before))
        self.overflow.rearm()
        out.extend(self.full.near_full(rec, before))
        out.extend(self.full.track_clear(rec.ts))
        return out

    def get(self, rec: Activity) -> list[Emit]:
        """A get: what its message's put took freed (a queue with no message qmon saw put frees nothing); then the
        end of overflow mode without an overflow structure, OVFLWMAX, near full and the holds."""
        d, st, s = self.definition, self.state, self.structure
        assert d is not None
        q = st["queues"].get(rec.queue)
        if q is None or not q["fifo"]:
            return []  # no message qmon saw put (activity before qmon started): nothing to free
        before = (st["used"], s.capacity)  # usage before, rounded only if reported
        self._free(rec, q)
        out: list[Emit] = []
        if st["mode_alert_id"] is not None and not d.ovflwstr and st["used"] * 100 <= d.target * s.capacity:
            out.extend(self.overflow.end(rec.ts, rec.event_id, before))
        self.overflow.rearm()
        out.extend(self.full.near_full(rec, before))
        out.extend(self.full.track_clear(rec.ts))
        return out

    def _free(self, rec: Activity, q: StructureQueueState) -> None:
        """What a get frees: the oldest message of ``rec``'s queue ``q`` (its FIFO not empty), or the oldest of
        ``rec``'s size, ready and staging parts, each at most what its queue holds."""
        st = self.state
        want = None
        if rec.msg_bytes is not None:
            split = self._split(rec.queue, rec.msg_bytes)
            want = (split[0][1], split[1][1] if len(split) > 1 else 0)
        taken = take_size(q["fifo"], want)
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
            n = min(n, pq["elements"])
            if pq["messages"] > 0 and (n > 0 or name == rec.queue):
                pq["messages"] -= 1  # (a staging part of a merged run's average may be 0 elements)
            pq["elements"] -= n
            if self._in_overflow_structure(name):
                st["overflow_used"] -= n
            else:
                st["used"] -= n
