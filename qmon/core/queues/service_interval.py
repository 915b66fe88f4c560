"""Queue service interval events and queue depth events: the service timer, QSVCINT_HIGH and QSVCINT_OK with
their flip-flop, QDEPTH_HIGH, QDEPTH_LOW and Q_FULL, and the statistics each event carries (IBM MQ, *Queue
service interval events*; *Queue depth events*).  Pure."""

from __future__ import annotations

from qmon.core.queues.base import ShardBase
from qmon.core.queues.state import QueueState
from qmon.core.queues.status import on_get, on_put, recount
from qmon.core.reasons import (
    MQRC_Q_FULL,
)
from qmon.core.records import Activity, Emit


class ServiceInterval(ShardBase):
    """How a shard applies puts, gets and STARTs."""

    def on_activities(self, recs: list[Activity]) -> list[tuple[Activity, list[Emit]]]:
        """``on_activity(rec)`` for each of ``recs`` in turn: exactly its outputs and state.  Returns (record,
        its outputs) for the records that had any.

        The common case without the rules' checks: a put or get to a queue qmon knows, with no stall alert
        firing, that starts no stall, raises no service interval or depth event and (with interest
        registered) does not fill an empty queue, and whose forecast sample, if one is due, is one nothing can
        come of (``_forecast_quiet``), only moves the queue's depth, counts, service timer, messages' put times
        and last put or get (``status``); such a record is applied here, every condition decided before anything
        changes (but the sample, which ``on_activity`` would take first all the same), and any other goes to
        ``on_activity`` (property test: ``tests/core/test_run_raising_nothing.py``).  Nothing here changes
        PERFMEV, the interest registered or the forecast's settings, so they are read once (a shared queue's
        PERFMEV, its members', for each record: ``_perfmev``)."""
        out: list[tuple[Activity, list[Emit]]] = []
        queues, on_activity = self.queues, self.on_activity
        enabled = was_enabled = self.perfmev == "ENABLED"
        shared = self.qsg is not None
        interest = bool(self.state.get("interest"))
        step = self.settings.forecast.step_ms
        for rec in recs:
            q = queues.get(rec.queue)
            if q is not None and q["stall_alert_id"] is None:
                if shared:  # a shared queue's PERFMEV: the previous operation's member's, then this one's
                    was_enabled = self.member_perfmev(q.get("by")) == "ENABLED"
                    enabled = self.member_perfmev(rec.qmgr) == "ENABLED"
                ts, a, start, depth, op = rec.ts, q["attrs"], q["svc_timer_start"], q["depth"], rec.op
                interval, iev = a["QSVCINT"], a["QSVCIEV"]
                quiet, fc = False, q["fc"]
                if (fc is None) != (step == 0) or (
                    fc is not None
                    and (fc["on"] or fc["step"] != step or (ts >= fc["at"] and not self._forecast_quiet(q, ts)))
                ):
                    pass  # a forecast fires, has a sample to judge, or starts or stops (``_forecast``)
                elif start is not None and depth > 0 and was_enabled and iev != "NONE" and ts - start > interval:
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
                        on_put(q, before, after, ts)
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
                        on_get(q, before, after, ts)
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
                    if shared:
                        q["by"] = rec.qmgr
                    continue
            if emits := on_activity(rec):
                out.append((rec, emits))
        return out

    def _service_interval(self, rec: Activity, q: QueueState, clock: int) -> list[Emit]:
        """The service timer, statistics and performance events of ``rec`` on its queue ``q`` (``clock``: its
        arrival clock, or its ts)."""
        out: list[Emit] = []
        enabled = self._perfmev(q) == "ENABLED"
        a = q["attrs"]
        if rec.op == "START":
            was_empty = q["depth"] == 0
            if rec.depth_after is not None:
                if q["depth"] != max(0, rec.depth_after):
                    recount(q, q["depth"], max(0, rec.depth_after))
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
        on_get(q, before, after, rec.ts)
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
            out.extend(self._resolve_or_relapse_stall(rec.queue, q, rec.ts))
        return out
