"""The per-queue rules, rule by rule: service interval events, depth events and the stall alert (pure module,
milliseconds)."""

from __future__ import annotations

import pytest

from qmon.core import topics
from qmon.core.mqsc import parse_command
from qmon.core.queues import MonitorSettings, QueueMonitor
from qmon.core.records import Activity

QM = "QM1"
Q = "MYQUEUE"


def monitor(perfmev: str = "ENABLED", **attrs) -> QueueMonitor:
    mon = QueueMonitor(QM, MonitorSettings(perfmev=perfmev))
    if attrs:
        text = "ALTER QLOCAL(MYQUEUE) " + " ".join(f"{k.upper()}({v})" for k, v in attrs.items())
        mon.on_command(parse_command(text), 0, "setup", reply=False)
    return mon


class Feed:
    """Feeds operations to a monitor and keeps the events."""

    def __init__(self, mon: QueueMonitor):
        self.mon = mon
        self.n = 0

    def __call__(self, op: str, ts: int, queue: str = Q, **kw):
        self.n += 1
        emits = self.mon.on_activity(Activity(kw.pop("event_id", f"e{self.n}"), QM, queue, op, ts, **kw))
        return [e.record for e in emits]

    def types(self, op: str, ts: int, queue: str = Q, **kw):
        """The performance events only (a stall alert may come with them)."""
        return [r["type"] for r in perf(self(op, ts, queue, **kw))]


def perf(records):
    return [r for r in records if r["type"] in ("QSVCINT_HIGH", "QSVCINT_OK", "QDEPTH_HIGH", "QDEPTH_LOW", "Q_FULL")]


# ---------------------------------------------------------------- service interval events (IBM MQ)


def test_get_within_interval_gives_ok_only_when_ok_enabled():
    f = Feed(monitor(qsvciev="OK", qsvcint=10_000))
    f("PUT", 1_000)
    [ev] = f("GET", 5_000)
    assert ev["type"] == "QSVCINT_OK" and ev["reason_code"] == 2227
    assert ev["service_time_ms"] == 4_000 and ev["service_interval_ms"] == 10_000


def test_elapsed_equal_to_interval_is_ok_never_high():
    f = Feed(monitor(qsvciev="HIGH", qsvcint=10_000))
    f("PUT", 0)
    f("PUT", 5_000)
    assert f.types("GET", 10_000) == []  # equal: not High; OK is not enabled
    f2 = Feed(monitor(qsvciev="OK", qsvcint=10_000))
    f2("PUT", 0)
    assert f2.types("GET", 10_000) == ["QSVCINT_OK"]


def test_high_on_put_when_timer_running_past_interval():
    f = Feed(monitor(qsvciev="HIGH", qsvcint=10_000))
    f("PUT", 0)
    [ev] = perf(f("PUT", 10_001))
    assert ev["type"] == "QSVCINT_HIGH" and ev["reason_code"] == 2226 and ev["service_time_ms"] == 10_001


def test_high_then_ok_flip_flop():
    f = Feed(monitor(qsvciev="HIGH", qsvcint=10_000))
    f("PUT", 0)
    assert f.types("PUT", 11_000) == ["QSVCINT_HIGH"]  # High disables High, enables OK
    assert perf(f("PUT", 30_000)) == []  # High disabled
    assert f.types("GET", 31_000) == []  # 31 s since timer start at 0: not OK, High disabled
    assert [r["type"] for r in perf(f("GET", 32_000))] == ["QSVCINT_OK"]  # timer reset at 31 s by the get
    assert perf(f("GET", 33_000)) == []  # OK disabled again; High enabled; queue now empty


def test_ok_is_only_generated_by_a_get():
    f = Feed(monitor(qsvciev="OK", qsvcint=10_000))
    f("PUT", 0)
    assert perf(f("PUT", 1_000)) == []
    assert perf(f("PUT", 2_000)) == []


def test_put_to_non_empty_queue_does_not_reset_timer():
    f = Feed(monitor(qsvciev="HIGH", qsvcint=10_000))
    f("PUT", 0)
    f("PUT", 9_000)  # not empty before: timer stays at 0
    [ev] = perf(f("GET", 10_500))
    assert ev["type"] == "QSVCINT_HIGH" and ev["service_time_ms"] == 10_500


def test_a_put_whose_depth_after_is_1_restarts_the_timer_and_raises_nothing():
    """A PUT with ``depth_after`` 1 found the queue empty (the gets that emptied it were not seen): the timer
    was OFF and restarts now; it never measured the time the queue stood empty."""
    f = Feed(monitor(qsvciev="HIGH", qsvcint=2_000))
    for ts, depth in ((0, 1), (100, 2), (200, 3)):
        assert perf(f("PUT", ts, depth_after=depth)) == []
    assert perf(f("PUT", 5_000, depth_after=1)) == []  # not a HIGH of 5,000 ms
    assert perf(f("GET", 5_500, depth_after=0)) == []  # and so no OK by the flip: HIGH is still the one enabled
    f("PUT", 6_000, depth_after=1)
    [ev] = perf(f("PUT", 8_001, depth_after=2))  # the restarted timer runs from 6,000
    assert ev["type"] == "QSVCINT_HIGH" and ev["service_time_ms"] == 2_001


def test_get_that_empties_queue_turns_timer_off():
    f = Feed(monitor(qsvciev="HIGH", qsvcint=10_000))
    f("PUT", 0)
    f("GET", 1_000)
    assert f.mon.queues[Q]["svc_timer_start"] is None
    assert perf(f("PUT", 50_000)) == []  # timer was OFF: no High on this put
    assert f.mon.queues[Q]["svc_timer_start"] == 50_000  # put to an empty queue restarts it


def test_get_leaving_queue_non_empty_resets_timer():
    f = Feed(monitor(qsvciev="HIGH", qsvcint=10_000))
    f("PUT", 0)
    f("PUT", 1)
    f("GET", 8_000)
    assert f.mon.queues[Q]["svc_timer_start"] == 8_000
    assert perf(f("GET", 17_000)) == []  # 9 s since the reset by the previous get


def test_perfmev_disabled_suppresses_events_but_keeps_timer():
    mon = monitor(perfmev="DISABLED", qsvciev="HIGH", qsvcint=10_000)
    f = Feed(mon)
    f("PUT", 0)
    assert perf(f("PUT", 20_000)) == []
    assert mon.queues[Q]["svc_timer_start"] == 0
    mon.on_command(parse_command("ALTER QMGR PERFMEV(ENABLED)"), 21_000, "c", reply=False)
    assert f.types("GET", 22_000) == ["QSVCINT_HIGH"]  # enabling takes effect on the next get


def test_statistics_include_generating_operation_then_reset():
    f = Feed(monitor(qsvciev="HIGH", qsvcint=1_000))
    f("START", 0, depth_after=0)
    f("PUT", 1_000)
    f("PUT", 1_500)
    [high] = perf(f("PUT", 2_500))  # 1.5 s since the put to the empty queue
    assert (high["msg_enq_count"], high["msg_deq_count"], high["high_q_depth"]) == (3, 0, 3)
    assert high["time_since_reset"] == 2  # whole seconds since the START at 0
    # The event reset the statistics: reset time 2.5 s, high depth = current depth 3, counts 0.
    assert perf(f("GET", 3_000)) == []  # 2 s since the timer start at 1 s: not OK
    [ok] = perf(f("GET", 3_400))  # 0.4 s since the previous get reset the timer
    assert ok["type"] == "QSVCINT_OK"
    assert (ok["msg_enq_count"], ok["msg_deq_count"], ok["high_q_depth"], ok["time_since_reset"]) == (0, 2, 3, 0)


def test_time_since_reset_is_whole_seconds():
    f = Feed(monitor(qsvciev="OK", qsvcint=100_000))
    f("START", 0, depth_after=0)
    f("PUT", 1_000)
    [ok] = perf(f("GET", 3_999))
    assert ok["time_since_reset"] == 3


def test_start_resets_statistics_and_sets_timer_by_depth():
    mon = monitor(qsvciev="HIGH", qsvcint=10_000)
    f = Feed(mon)
    f("PUT", 0)
    f("START", 100_000, depth_after=5)
    q = mon.queues[Q]
    assert (q["svc_timer_start"], q["depth"], q["enq"], q["reset_ts"], q["high_depth"]) == (100_000, 5, 0, 100_000, 5)
    f("START", 200_000, depth_after=0)
    assert mon.queues[Q]["svc_timer_start"] is None


def test_alter_qsvciev_sets_state_directly():
    mon = monitor(qsvciev="HIGH", qsvcint=10_000)
    mon.on_command(parse_command("ALTER QLOCAL(MYQUEUE) QSVCIEV(NONE)"), 0, "c", reply=False)
    f = Feed(mon)
    f("PUT", 0)
    assert perf(f("PUT", 20_000)) == []


def test_depth_after_is_trusted_and_null_depth_is_counted():
    f = Feed(monitor())
    f("PUT", 0)
    f("PUT", 1)
    assert f.mon.queues[Q]["depth"] == 2
    f("PUT", 2, depth_after=10)
    assert f.mon.queues[Q]["depth"] == 10
    f("GET", 3)
    assert f.mon.queues[Q]["depth"] == 9


def test_get_on_empty_queue_never_goes_negative_and_raises_nothing():
    f = Feed(monitor(qsvciev="OK", qsvcint=10))
    assert perf(f("GET", 0)) == []
    assert f.mon.queues[Q]["depth"] == 0


def test_failed_operation_changes_no_depth():
    f = Feed(monitor(qsvciev="HIGH", qsvcint=10))
    f("PUT", 0)
    # no High from a failed put; Queue Full, since QDPMAXEV is ENABLED by default, as in MQ
    assert [e["type"] for e in perf(f("PUT", 100, reason=2053))] == ["Q_FULL"]
    assert f.mon.queues[Q]["depth"] == 1


def test_event_ids_are_deterministic():
    def run():
        f = Feed(monitor(qsvciev="HIGH", qsvcint=10))
        f("PUT", 0)
        return perf(f("PUT", 100))

    assert run() == run()
    assert len(run()[0]["event_id"]) == 32


# ---------------------------------------------------------------- depth events (IBM MQ)


def test_depth_high_low_full_interplay():
    mon = monitor(maxdepth=10, qdepthhi=80, qdepthlo=20, qdphiev="ENABLED", qdploev="DISABLED", qdpmaxev="DISABLED")
    f = Feed(mon)
    for t in range(7):
        assert perf(f("PUT", t)) == []
    [hi] = perf(f("PUT", 7))  # depth 8 >= 80 % of 10
    assert hi["type"] == "QDEPTH_HIGH" and hi["reason_code"] == 2224
    assert mon.queues[Q]["attrs"]["QDPHIEV"] is False and mon.queues[Q]["attrs"]["QDPLOEV"] is True
    assert perf(f("PUT", 8)) == []  # High disabled
    [full] = perf(f("PUT", 9, reason=2053))
    assert full["type"] == "Q_FULL" and full["reason_code"] == 2053
    assert perf(f("PUT", 10, reason=2053)) == []  # Full disabled until Low/High re-enable it
    for t in range(11, 17):
        assert perf(f("GET", t)) == []  # depth 9 -> 3
    [lo] = perf(f("GET", 17))  # depth 2 <= 20 % of 10
    assert lo["type"] == "QDEPTH_LOW" and lo["reason_code"] == 2225
    a = mon.queues[Q]["attrs"]
    assert (a["QDPLOEV"], a["QDPHIEV"], a["QDPMAXEV"]) == (False, True, True)


def test_depth_events_need_perfmev():
    f = Feed(monitor(perfmev="DISABLED", maxdepth=1, qdphiev="ENABLED"))
    assert perf(f("PUT", 0)) == []


# ---------------------------------------------------------------- stall alert


def test_stall_fires_once_on_clock_and_resolves_on_get():
    mon = monitor(qsvciev="HIGH", qsvcint=10_000)
    f = Feed(mon)
    f("PUT", 0, clock=0)
    assert mon.next_stall_clock() == 10_001
    assert mon.on_clock(10_000) == []
    [fire] = [e.record for e in mon.on_clock(10_001)]
    assert (fire["type"], fire["state"], fire["ts"]) == ("QUEUE_STALLED", "FIRING", 10_000)
    assert mon.on_clock(50_000) == []  # one FIRING per episode
    assert mon.next_stall_clock() is None
    assert [r for r in f("GET", 60_000) if r["type"] == "QUEUE_STALLED"] == []  # emptied: the hold starts
    assert mon.next_stall_clock() == 90_000  # stall_clear_hold (30 s) later
    resolved = [e.record for e in mon.on_clock(90_000)]
    assert [(r["state"], r["ts"]) for r in resolved] == [("RESOLVED", 90_000)]
    assert resolved[0]["alert_id"] == fire["alert_id"]
    assert fire["summary"] and fire["action"]


def test_stall_catch_up_matches_timer_whatever_the_batching():
    a = monitor(qsvciev="HIGH", qsvcint=10_000)
    fa = Feed(a)
    fa("PUT", 0)
    fired_by_timer = [e.record for e in a.on_clock(10_001)]
    fa("GET", 20_000)
    b = monitor(qsvciev="HIGH", qsvcint=10_000)
    fb = Feed(b)
    fb("PUT", 0)
    caught_up = [r for r in fb("GET", 20_000) if r["type"] == "QUEUE_STALLED" and r["state"] == "FIRING"]
    assert caught_up == fired_by_timer


def test_no_stall_without_service_interval_events_or_when_empty():
    mon = monitor(qsvciev="NONE", qsvcint=10)
    Feed(mon)("PUT", 0)
    assert mon.on_clock(1_000_000) == []
    mon2 = monitor(qsvciev="HIGH", qsvcint=10)
    f2 = Feed(mon2)
    f2("PUT", 0)
    f2("GET", 5)
    assert mon2.on_clock(1_000_000) == []


# ---------------------------------------------------------------- commands


def test_define_twice_needs_replace_and_reset_qstats_replies_with_statistics():
    mon = monitor()
    [r1] = mon.on_command(parse_command("DEFINE QLOCAL(A.Q)"), 0, "c1", reply=True)
    [r2] = mon.on_command(parse_command("DEFINE QLOCAL(A.Q)"), 1, "c2", reply=True)
    [r3] = mon.on_command(parse_command("DEFINE QLOCAL(A.Q) REPLACE QSVCINT(5)"), 2, "c3", reply=True)
    assert r1.record["ok"] and not r2.record["ok"] and r3.record["ok"]
    assert "AMQ8150E" in r2.record["message"]
    f = Feed(mon)
    f("PUT", 1_000, queue="A.Q")
    f("PUT", 2_000, queue="A.Q")
    [reply] = mon.on_command(parse_command("RESET QSTATS(A.Q)"), 5_000, "c4", reply=True)
    assert reply.topic == topics.REPLIES
    assert "MSGSIN(2)" in reply.record["message"] and "HIQDEPTH(2)" in reply.record["message"]
    assert mon.queues["A.Q"]["enq"] == 0


def test_pattern_defaults_apply_to_queues_first_seen_later():
    from qmon.core.queues import QueueDefaults

    settings = MonitorSettings(
        perfmev="ENABLED", queue_defaults=(QueueDefaults("PAYROLL.*", {"QSVCIEV": "HIGH", "QSVCINT": 100}),)
    )
    mon = QueueMonitor(QM, settings)
    f = Feed(mon)
    f("PUT", 0, queue="PAYROLL.IN")
    assert [r["type"] for r in perf(f("PUT", 500, queue="PAYROLL.IN"))] == ["QSVCINT_HIGH"]
    f("PUT", 0, queue="OTHER")
    assert perf(f("PUT", 500, queue="OTHER")) == []


def test_expire_drops_idle_queues_only():
    mon = monitor()
    f = Feed(mon)
    f("PUT", 0, queue="OLD")
    f("GET", 1, queue="OLD")
    f("PUT", 100_000, queue="NEW")
    assert mon.expire(100_000, 50_000) == ["OLD"]
    assert set(mon.queues) == {"NEW"}


@pytest.mark.parametrize("bad_state", [{"v": 99, "queues": {}}])
def test_unknown_state_version_is_refused(bad_state):
    with pytest.raises(ValueError, match="version"):
        QueueMonitor(QM, MonitorSettings(), bad_state)


# ---------------------------------------------------------------- start-up, bounded state, calm stalls


def test_a_queue_first_seen_non_empty_has_a_running_service_timer():
    """IBM MQ, *Queue service interval events*: "At queue manager startup the service timer is set to startup
    time if the queue depth is greater than zero" — qmon starting against a running queue manager is that start-up."""
    mon = monitor(qsvciev="HIGH", qsvcint=10_000)
    f = Feed(mon)
    assert f.types("PUT", 0, depth_after=5) == []  # 4 messages were there before: timer from ts 0
    assert mon.queues[Q]["svc_timer_start"] == 0
    assert f.types("PUT", 20_000, depth_after=6) == ["QSVCINT_HIGH"]


def test_a_dead_consumer_on_a_queue_first_seen_non_empty_stalls():
    mon = monitor(qsvciev="HIGH", qsvcint=10_000)
    f = Feed(mon)
    f("PUT", 0, depth_after=3, clock=0)
    assert mon.next_stall_clock() == 10_001
    assert [e.record["type"] for e in mon.on_clock(10_001)] == ["QUEUE_STALLED"]


def test_bounded_state_keeps_queues_with_messages_altered_settings_or_a_firing_alert():
    mon = monitor(qsvciev="HIGH", qsvcint=10_000)  # MYQUEUE is ALTERed
    f = Feed(mon)
    f("PUT", 0, queue="FULL.Q")  # holds a message
    f("PUT", 0)  # MYQUEUE: altered settings, holds a message
    f("GET", 1)  # ... now empty, still altered
    f("PUT", 0, queue="STALLED.Q")
    mon.on_command(parse_command("ALTER QLOCAL(STALLED.Q) QSVCIEV(HIGH) QSVCINT(10)"), 0, "c", reply=False)
    mon.on_clock(1_000)  # STALLED.Q: QUEUE_STALLED FIRING
    f("PUT", 0, queue="IDLE.Q")
    f("GET", 1, queue="IDLE.Q")  # empty, default settings
    assert mon.expire(10**10, 1_000) == ["IDLE.Q"]
    assert set(mon.queues) == {"FULL.Q", Q, "STALLED.Q"}
    # the FIRING stall is not orphaned: it still resolves
    f("GET", 2_000, queue="STALLED.Q")
    out = [e.record for e in mon.on_clock(32_000)]
    assert [(r["type"], r["state"]) for r in out if r["type"] == "QUEUE_STALLED"] == [("QUEUE_STALLED", "RESOLVED")]


def _stall_states(records):
    return [r["state"] for r in records if r["type"] == "QUEUE_STALLED"]


def test_a_slow_consumer_is_one_stall_episode_not_one_per_get():
    """A consumer getting one message every 1.5 x QSVCINT: MQ's High events aside, the stall fires once
    and resolves when the queue has been served in time for stall_clear_hold (here: drained, then held)."""
    mon = monitor(qsvciev="HIGH", qsvcint=1_000)
    f = Feed(mon)
    for _ in range(20):
        f("PUT", 0, clock=0)
    out = [e.record for e in mon.on_clock(1_001)]
    t = 0
    for _ in range(8):  # slow gets, each more than QSVCINT after the last
        t += 1_500
        out += [e.record for e in mon.on_clock(t)]
        out += f("GET", t, clock=t)
    assert _stall_states(out) == ["FIRING"]
    caught_up = t + 200
    for _ in range(12):  # it catches up: a get every 200 ms until the queue is empty
        t += 200
        out += f("GET", t, clock=t)
    assert _stall_states(out) == ["FIRING"] and mon.queues[Q]["depth"] == 0
    assert mon.next_stall_clock() == caught_up + 30_000  # served in time since its first prompt get
    out += [e.record for e in mon.on_clock(caught_up + 30_000)]
    assert _stall_states(out) == ["FIRING", "RESOLVED"]


def test_a_consumer_wobbling_around_qsvcint_is_one_stall_episode():
    """Gets alternately 1.2 s and 0.8 s apart on a 1 s service interval: every late gap would have been a
    new episode without the hold; with it the episode lasts until the queue has been served in time for
    stall_clear_hold."""
    mon = monitor(qsvciev="HIGH", qsvcint=1_000)
    f = Feed(mon)
    for _ in range(40):
        f("PUT", 0, clock=0)
    out: list = []
    t = 0
    for k in range(30):
        t += 1_200 if k % 2 == 0 else 800
        out += [e.record for e in mon.on_clock(t)]
        out += f("GET", t, clock=t)
    assert _stall_states(out) == ["FIRING"]
    for _ in range(10):
        t += 100
        out += f("GET", t, clock=t)  # served in time until empty
    out += [e.record for e in mon.on_clock(t + 30_000)]
    assert _stall_states(out) == ["FIRING", "RESOLVED"]


def test_a_relapse_within_the_hold_keeps_the_episode_and_resolves_later():
    mon = monitor(qsvciev="HIGH", qsvcint=1_000)
    f = Feed(mon)
    for _ in range(5):
        f("PUT", 0, clock=0)
    mon.on_clock(1_001)  # FIRING
    f("GET", 1_500, clock=1_500)  # late
    f("GET", 2_000, clock=2_000)  # in time: the hold starts at 2,000
    assert [e.record for e in mon.on_clock(3_001)] == []  # 1,001 ms without a get: relapse, hold cancelled
    assert mon.queues[Q]["stall_ok"] is None
    f("GET", 3_500, clock=3_500)  # late again
    f("GET", 3_600, clock=3_600)
    f("GET", 3_700, clock=3_700)  # in time and empty: the hold starts at 3,600
    out = [e.record for e in mon.on_clock(33_600)]
    assert [(r["state"], r["ts"]) for r in out] == [("RESOLVED", 33_600)]


# ---------------------------------------------------------------- stored state of another version


def test_a_newer_state_version_is_refused_not_misread():
    with pytest.raises(ValueError, match="version 99"):
        QueueMonitor(QM, MonitorSettings(), {"v": 99, "perfmev": None, "queues": {}})
