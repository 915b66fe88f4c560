"""Queue service interval events and queue depth events: the service timer, QSVCINT_HIGH and QSVCINT_OK with
their flip-flop, QDEPTH_HIGH, QDEPTH_LOW and Q_FULL, and the statistics each event carries (IBM MQ, *Queue
service interval events*; *Queue depth events*).  Pure."""

from __future__ import annotations

from qmon.core.queues.shard import Shard
from qmon.core.queues.stall import StallAlert
from qmon.core.queues.state import QueueState
from qmon.core.queues.status import on_get, on_put, recount
from qmon.core.reasons import (
    MQRC_Q_FULL,
)
from qmon.core.records import Activity, Emit


class ServiceInterval:
    """How a shard applies puts, gets and STARTs to its queues' depth, service timer and statistics, with the
    events they raise; a START, and a get while a stall fires, tell the stall alert (``stall``)."""

    def __init__(self, shard: Shard, stall: StallAlert):
        self.shard = shard
        self.stall = stall

    def on_activity(self, rec: Activity, q: QueueState, clock: int) -> list[Emit]:
        """The service timer, statistics and performance events of ``rec`` on its queue ``q`` (``clock``: its
        arrival clock, or its ts)."""
        out: list[Emit] = []
        shard = self.shard
        enabled = shard.perfmev_of(q) == "ENABLED"
        a = q["attrs"]
        if rec.op == "START":
            was_empty = q["depth"] == 0
            if rec.depth_after is not None:
                if q["depth"] != max(0, rec.depth_after):
                    recount(q, q["depth"], max(0, rec.depth_after))
                q["depth"] = max(0, rec.depth_after)
            if was_empty and q["depth"] > 0:
                out.extend(shard.notify(rec.queue, q["depth"], rec.ts, rec.event_id))
            q["svc_timer_start"] = rec.ts if q["depth"] > 0 else None
            q["svc_timer_clock"] = clock if q["depth"] > 0 else None
            shard.reset_stats(q, rec.ts)
            out.extend(self.stall.resolve(rec.queue, q, rec.ts, "the queue manager restarted"))
            return out
        if rec.reason is not None:
            # A failed operation changes no depth and drives no service timer.
            if rec.op == "PUT" and rec.reason == MQRC_Q_FULL and enabled and a["QDPMAXEV"]:
                out.append(shard.event(q, rec.queue, "Q_FULL", rec.ts, rec.event_id))
                a["QDPMAXEV"] = False
                a["QDPLOEV"] = True
            return out
        if rec.op == "PUT":
            before = q["depth"] if rec.depth_after is None else max(0, rec.depth_after - 1)
            after = before + 1 if rec.depth_after is None else max(0, rec.depth_after)
            on_put(q, before, after, rec.ts)
            q["depth"] = after
            if before > 0 and q["svc_timer_start"] is None:
                # Seen non-empty with the timer OFF: qmon started against a running queue manager (or
                # missed the put that filled it).  As at queue-manager start-up (IBM MQ, *Queue service
                # interval events*) the timer runs from now.
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
                    out.append(shard.event(q, rec.queue, "QSVCINT_HIGH", rec.ts, rec.event_id, elapsed))
                    a["QSVCIEV"] = "OK"
            if before == 0:
                q["svc_timer_start"] = rec.ts
                q["svc_timer_clock"] = clock
                out.extend(shard.notify(rec.queue, after, rec.ts, rec.event_id))
            if enabled and a["QDPHIEV"] and after * 100 >= a["QDEPTHHI"] * a["MAXDEPTH"]:
                out.append(shard.event(q, rec.queue, "QDEPTH_HIGH", rec.ts, rec.event_id))
                a["QDPHIEV"] = False
                a["QDPLOEV"] = True
                a["QDPMAXEV"] = True
            return out
        # GET
        before = q["depth"] if rec.depth_after is None else rec.depth_after + 1
        after = max(0, before - 1) if rec.depth_after is None else max(0, rec.depth_after)
        on_get(q, before, after, rec.ts)
        q["deq"] += 1
        q["depth"] = after
        # served within its interval (what MQ would call OK), or emptied: the end of a stall episode
        served = after == 0 or (q["svc_timer_start"] is not None and rec.ts - q["svc_timer_start"] <= a["QSVCINT"])
        if before > 0 and q["svc_timer_start"] is not None and enabled:
            elapsed = rec.ts - q["svc_timer_start"]
            if elapsed > a["QSVCINT"] and a["QSVCIEV"] == "HIGH":
                out.append(shard.event(q, rec.queue, "QSVCINT_HIGH", rec.ts, rec.event_id, elapsed))
                a["QSVCIEV"] = "OK"
            elif elapsed <= a["QSVCINT"] and a["QSVCIEV"] == "OK":
                out.append(shard.event(q, rec.queue, "QSVCINT_OK", rec.ts, rec.event_id, elapsed))
                a["QSVCIEV"] = "HIGH"
        if after > 0:
            q["svc_timer_start"] = rec.ts
            q["svc_timer_clock"] = clock
        else:
            q["svc_timer_start"] = None
            q["svc_timer_clock"] = None
        if enabled and a["QDPLOEV"] and after * 100 <= a["QDEPTHLO"] * a["MAXDEPTH"]:
            out.append(shard.event(q, rec.queue, "QDEPTH_LOW", rec.ts, rec.event_id))
            a["QDPLOEV"] = False
            a["QDPHIEV"] = True
            a["QDPMAXEV"] = True
        if q["stall_alert_id"] is not None:
            out.extend(self.stall.served(rec.queue, q, rec.ts, clock, served))
        return out
