"""qmon's stall alert, beyond MQ: QUEUE_STALLED once a watched queue goes longer than QSVCINT without a get,
resolved once it has been served in time for ``stall_clear_hold`` of event time; the FIRING says the oldest
message's age and the last get (``status``).  Pure."""

from __future__ import annotations

from qmon.core import topics
from qmon.core.ids import event_id
from qmon.core.queues.shard import Shard
from qmon.core.queues.state import QueueState
from qmon.core.queues.status import msg_age, oldest_put
from qmon.core.records import Emit, SubjectKind
from qmon.core.records import alert as _alert
from qmon.core.records import iso as _iso
from qmon.core.records import plural as _plural


class StallAlert:
    """The stall alert of a shard's queues, and the timer that raises it on a quiet queue: what event time has
    made due before a record (``catch_up``), a get's news for a firing stall (``served``), the end of a stall on
    START (``resolve``), and the arrival-clock deadline (``due``, ``on_clock``)."""

    def __init__(self, shard: Shard):
        self.shard = shard
        self.settings = shard.settings

    def _watched(self, q: QueueState) -> bool:
        return (
            q["svc_timer_start"] is not None
            and q["depth"] > 0
            and self.shard.perfmev_of(q) == "ENABLED"
            and q["attrs"]["QSVCIEV"] != "NONE"
            and q["stall_alert_id"] is None
        )

    def catch_up(self, queue: str, q: QueueState, now_ts: int) -> list[Emit]:
        """Before a record at event time ``now_ts``: resolve or relapse ``q``'s firing stall, or raise one now
        overdue (strictly past QSVCINT)."""
        out = self._resolve_or_relapse(queue, q, now_ts)
        if self._watched(q) and now_ts - q["svc_timer_start"] > q["attrs"]["QSVCINT"]:  # type: ignore[operator]
            out.append(self._fire(queue, q))
        return out

    def served(self, queue: str, q: QueueState, ts: int, clock: int, served: bool) -> list[Emit]:
        """A get at event time ``ts`` (arrival clock ``clock``) of ``q`` while its stall fires: ``served`` in time
        (within QSVCINT of the service timer's start, or emptied) starts the hold, a late get ends it."""
        if not served:
            q["stall_ok"] = None  # a late get: still not served in time
        elif q.get("stall_ok") is None:
            q["stall_ok"] = [ts, clock]  # served in time from now: resolved if it lasts the hold
        return self._resolve_or_relapse(queue, q, ts)

    def _resolve_or_relapse(self, queue: str, q: QueueState, now_ts: int, clock: int | None = None) -> list[Emit]:
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
        return self.resolve(
            queue,
            q,
            ok[0] + hold,
            f"it has been served within its service interval for {hold // 1000} s since {_iso(ok[0])}"
            if hold
            else "a get served it within its service interval or emptied it",
        )

    def _fire(self, queue: str, q: QueueState) -> Emit:
        start = q["svc_timer_start"]
        assert start is not None
        interval = q["attrs"]["QSVCINT"]
        deadline = start + interval
        shard = self.shard
        alert_id = event_id("stall", shard.qmgr, queue, start)
        q["stall_alert_id"] = alert_id
        qmgr, qsg = shard.named(q)
        every = "" if qsg is None else " CMDSCOPE(*)"  # (a shared queue: its handles on every member)
        record = _alert(
            event_id("stall-firing", alert_id),
            "QUEUE_STALLED",
            "FIRING",
            alert_id,
            "WARNING",
            subject_kind=SubjectKind.QUEUE,
            subject=queue,
            queue=queue,
            qmgr=qmgr,
            qsg=qsg,
            ts=deadline,
            summary=(
                f"{shard.about(queue)} holds {_plural(q['depth'], 'message')} and has not been served for more "
                f"than its service interval of {interval} ms (service timer running since {_iso(start)}). "
                f"{_status(q, deadline)} MQ raises no event until the next put or get."
            ),
            action=(
                f"Check that the consumer of {queue} is running and not blocked (DISPLAY QSTATUS({queue}) "
                f"TYPE(HANDLE){every} shows who has it open for input); restart it or add consumers."
            ),
        )
        return Emit(topics.ALERTS, f"{shard.qmgr}/{queue}", record)

    def resolve(self, queue: str, q: QueueState, ts: int, why: str) -> list[Emit]:
        """``q``'s stall, if it fires, RESOLVED at ``ts`` because ``why``; the hold forgotten either way."""
        alert_id = q["stall_alert_id"]
        q["stall_ok"] = None
        if alert_id is None:
            return []
        q["stall_alert_id"] = None
        shard = self.shard
        qmgr, qsg = shard.named(q)
        record = _alert(
            event_id("stall-resolved", alert_id),
            "QUEUE_STALLED",
            "RESOLVED",
            alert_id,
            "INFO",
            subject_kind=SubjectKind.QUEUE,
            subject=queue,
            queue=queue,
            qmgr=qmgr,
            qsg=qsg,
            ts=ts,
            summary=f"{shard.about(queue)} is being served again: {why} (at {_iso(ts)}).",
            action="None.",
        )
        return [Emit(topics.ALERTS, f"{shard.qmgr}/{queue}", record)]

    def due(self, q: QueueState) -> int | None:
        """The arrival-clock time at which ``on_clock`` has something to do for ``q``'s stall, or None: its stall
        (strictly past QSVCINT), or while a stall fires and the queue is served in time, the end of the hold.
        (A relapse before the hold ends needs no deadline: the queue's next record, or the end of the hold,
        sees it first.)"""
        if self._watched(q) and q["svc_timer_clock"] is not None:
            return q["svc_timer_clock"] + q["attrs"]["QSVCINT"] + 1
        if q["stall_alert_id"] is not None and (ok := q.get("stall_ok")) is not None:
            return ok[1] + self.settings.stall_clear_hold_ms
        return None

    def on_clock(self, name: str, q: QueueState, clock: int) -> list[Emit]:
        """The arrival clock reached ``clock``: raise ``q``'s stall if now overdue (strictly past QSVCINT), and
        resolve or relapse a firing one whose hold or interval has passed."""
        out = self._resolve_or_relapse(name, q, 0, clock)
        if self._watched(q) and q["svc_timer_clock"] is not None:
            if clock - q["svc_timer_clock"] > q["attrs"]["QSVCINT"]:
                out.append(self._fire(name, q))
        return out


def _status(q: QueueState, ts: int) -> str:
    """What DISPLAY QSTATUS would show of ``q`` (holding messages) at ``ts`` beyond its depth: the oldest message's
    put and MSGAGE, and the last get, as a sentence."""
    put = oldest_put(q)
    if put is None:  # (a queue holding messages whose oldest put qmon did not see)
        n = q["unseen"]
        which = "the put of its oldest message" if n == 1 else f"the puts of its {n} oldest messages"
        oldest = f"The age of its oldest message is unknown (qmon did not see {which})"
    else:
        oldest = f"Its oldest message, put at {_iso(put)}, is {msg_age(q, ts)} s old (MSGAGE)"
    last = f"its last get was at {_iso(q['last_get'])}" if q["last_get"] is not None else "qmon has seen no get from it"
    return f"{oldest}; {last}."
