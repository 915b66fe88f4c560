"""What DISPLAY QSTATUS shows of a queue beyond its depth, as qmon keeps it (qmon.core.queues.status): the age of
the oldest message (MQ's MSGAGE) from the puts' times, FIFO with the gets, and the last put and get (LPUTDATE and
LPUTTIME, LGETDATE and LGETTIME); None where qmon has not seen them, never 0."""

from __future__ import annotations

from unittest.mock import patch

from qmon.core import message_runs
from qmon.core.message_runs import time_runs
from qmon.core.mqsc import parse_command
from qmon.core.queues import MonitorSettings, QueueMonitor
from qmon.core.queues.status import msg_age, oldest_put
from qmon.core.reasons import MQRC_Q_FULL
from qmon.core.records import Activity

QM, Q = "QM1", "PAYROLL.IN"
T = 1_700_000_000_000


class Queue:
    """One queue of a shard, fed record by record."""

    def __init__(self) -> None:
        self.mon = QueueMonitor(QM, MonitorSettings(perfmev="ENABLED"))
        self.n = 0

    def __call__(self, op: str, ts: int, **kw) -> None:
        self.n += 1
        self.mon.on_activity(Activity(f"e{self.n}", QM, Q, op, T + ts, **kw))

    @property
    def q(self):
        return self.mon.queues[Q]

    def oldest(self) -> int | None:
        """The oldest message's put time, from T."""
        put = oldest_put(self.q)
        return None if put is None else put - T

    def last(self) -> tuple[int | None, int | None]:
        """(last put, last get), from T."""
        return tuple(None if t is None else t - T for t in (self.q["last_put"], self.q["last_get"]))  # type: ignore[return-value]


def test_a_queue_never_put_to_nor_got_from_has_none_of_them():
    mon = QueueMonitor(QM, MonitorSettings())
    mon.on_command(parse_command(f"ALTER QLOCAL({Q}) QSVCINT(1000)"), T, "c1", reply=False)
    q = mon.queues[Q]
    assert (q["last_put"], q["last_get"], oldest_put(q), msg_age(q, T + 60_000)) == (None, None, None, None)


def test_puts_and_gets_in_fifo_order_give_the_oldest_message_exactly():
    f = Queue()
    for ts in (1_000, 2_000, 3_500):
        f("PUT", ts)
    assert f.oldest() == 1_000 and f.last() == (3_500, None)
    assert msg_age(f.q, T + 10_999) == 9  # whole seconds, as MSGAGE: 9.999 s is 9
    f("GET", 4_000)
    assert f.oldest() == 2_000 and f.last() == (3_500, 4_000)
    f("GET", 5_000)
    assert f.oldest() == 3_500
    f("PUT", 6_000)
    f("GET", 7_000)
    assert f.oldest() == 6_000 and f.last() == (6_000, 7_000)


def test_an_empty_queue_has_no_oldest_message_and_keeps_its_last_put_and_get():
    f = Queue()
    f("PUT", 1_000)
    f("GET", 2_000)
    assert f.q["depth"] == 0
    assert (f.oldest(), msg_age(f.q, T + 5_000)) == (None, None)
    assert f.last() == (1_000, 2_000)


def test_a_get_with_nothing_put_is_a_get_seen_but_takes_no_known_message():
    f = Queue()
    f("GET", 1_000)
    assert f.last() == (None, 1_000) and f.oldest() is None
    f("PUT", 2_000)
    assert f.oldest() == 2_000


def test_messages_whose_puts_were_not_seen_leave_the_age_unknown_until_they_are_gone():
    """qmon starts against a running queue manager: the queue's first record, a GET, says 4 messages remain, so 5
    were there; their puts came before any qmon sees, so they are the oldest, and the age is unknown (None, not
    0) until 5 gets have taken them."""
    f = Queue()
    f("GET", 1_000, depth_after=4)
    assert (f.q["depth"], f.q["unseen"], f.oldest()) == (4, 4, None)
    f("PUT", 2_000)
    f("PUT", 3_000)
    for ts in (4_000, 5_000, 6_000):
        f("GET", ts)
        assert f.oldest() is None and msg_age(f.q, T + 10_000) is None
    f("GET", 7_000)
    assert (f.q["unseen"], f.oldest(), f.q["depth"]) == (0, 2_000, 2)
    assert msg_age(f.q, T + 10_000) == 8


def test_a_put_that_shows_messages_qmon_did_not_see_put_counts_them_as_the_oldest():
    f = Queue()
    f("PUT", 1_000)
    f("PUT", 2_000, depth_after=4)  # 3 before it: two whose puts qmon missed
    assert (f.q["unseen"], f.oldest()) == (2, None)
    f("GET", 3_000)
    f("GET", 4_000)
    assert f.oldest() == 1_000


def test_a_depth_below_qmon_s_count_takes_the_oldest_off():
    """Gets qmon did not see (or messages that expired): the oldest go first."""
    f = Queue()
    for ts in (1_000, 2_000, 3_000):
        f("PUT", ts)
    f("PUT", 4_000, depth_after=2)  # one before it: two of the three are gone
    assert (f.q["depth"], f.oldest()) == (2, 3_000)
    f("GET", 5_000, depth_after=0)
    assert f.oldest() is None and f.q["puts"] == [] and f.q["unseen"] == 0


def test_start_keeps_the_ages_when_the_depth_agrees_and_recounts_them_when_it_does_not():
    f = Queue()
    f("PUT", 1_000)
    f("PUT", 2_000)
    f("START", 3_000, depth_after=2)  # the same messages (persistent messages survive a restart)
    assert f.oldest() == 1_000 and f.last() == (2_000, None)
    f("START", 4_000)  # no depth: qmon keeps its count
    assert f.oldest() == 1_000
    f("START", 5_000, depth_after=1)  # one gone: qmon cannot tell which, and takes the oldest off
    assert f.oldest() == 2_000
    f("START", 6_000, depth_after=3)  # two it did not see put
    assert (f.q["unseen"], f.oldest()) == (2, None)
    f("START", 7_000, depth_after=0)
    assert (f.q["unseen"], f.q["puts"], f.oldest()) == (0, [], None)
    assert f.last() == (2_000, None)  # a restart does not unsee the put


def test_failed_puts_and_gets_change_nothing():
    f = Queue()
    f("PUT", 1_000)
    f("PUT", 2_000, reason=MQRC_Q_FULL)
    f("GET", 3_000, reason=2033)
    assert f.oldest() == 1_000 and f.last() == (1_000, None) and time_runs(f.q["puts"]) == [(1, T + 1_000, T + 1_000)]


def test_a_record_applied_out_of_event_time_order_does_not_move_the_last_put_or_get_back():
    f = Queue()
    f("PUT", 5_000)
    f("PUT", 4_000)
    f("GET", 7_000)
    f("GET", 6_000)
    assert f.last() == (5_000, 7_000)


def test_past_the_runs_bound_the_oldest_put_is_within_its_run():
    """Two runs kept.  Puts at 0, 10 s and 10.1 s: the last two share a run, and each get gives the oldest put
    exactly (a run's first put before any get took from it, then its last).  Puts at 0, 10 s, 11 s and 30 s: the
    first three share a run (11 s long, against 20 s for the newest pair), and once a get has taken the put at 0
    the next is taken as put halfway through it: at 5.5 s for 10 s."""
    with patch.object(message_runs, "MAX_RUNS", 2):
        f = Queue()
        for ts in (0, 10_000, 10_100):
            f("PUT", ts)
        assert time_runs(f.q["puts"]) == [(1, T, T), (2, T + 10_000, T + 10_100)]
        f("GET", 11_000)
        assert f.oldest() == 10_000
        f("GET", 12_000)
        assert f.oldest() == 10_100
        g = Queue()
        for ts in (0, 10_000, 11_000, 30_000):
            g("PUT", ts)
        assert time_runs(g.q["puts"]) == [(3, T, T + 11_000), (1, T + 30_000, T + 30_000)]
        assert g.oldest() == 0
        g("GET", 31_000)
        assert g.oldest() == 5_500
        g("GET", 32_000)
        assert g.oldest() == 11_000


def _stalled(mon: QueueMonitor, clock: int) -> dict:
    (firing,) = [e.record for e in mon.on_clock(clock) if e.record["type"] == "QUEUE_STALLED"]
    return firing


def test_queue_stalled_says_when_its_oldest_message_was_put_its_age_and_its_last_get():
    """The age as MSGAGE gives it (whole seconds) at the alert's ts, the deadline the queue missed."""
    mon = QueueMonitor(QM, MonitorSettings(perfmev="ENABLED"))
    mon.on_command(parse_command(f"ALTER QLOCAL({Q}) QSVCIEV(HIGH) QSVCINT(10000)"), T, "c1", reply=False)
    for i, (op, ts) in enumerate((("PUT", 0), ("PUT", 2_000), ("GET", 3_500), ("PUT", 4_000))):
        mon.on_activity(Activity(f"e{i}", QM, Q, op, T + ts, clock=T + ts))
    firing = _stalled(mon, T + 13_501)
    assert firing["ts"] == T + 13_500 and firing["message"] is None
    assert firing["summary"] == (
        "Queue PAYROLL.IN on QM1 holds 2 messages and has not been served for more than its service interval of "
        "10000 ms (service timer running since 2023-11-14T22:13:23.500Z). Its oldest message, put at "
        "2023-11-14T22:13:22.000Z, is 11 s old (MSGAGE); its last get was at 2023-11-14T22:13:23.500Z. MQ raises no "
        "event until the next put or get."
    )


def test_queue_stalled_says_when_the_age_is_unknown_and_no_get_was_seen():
    mon = QueueMonitor(QM, MonitorSettings(perfmev="ENABLED"))
    mon.on_command(parse_command(f"ALTER QLOCAL({Q}) QSVCIEV(HIGH) QSVCINT(10000)"), T, "c1", reply=False)
    mon.on_activity(Activity("e1", QM, Q, "PUT", T, depth_after=3, clock=T))  # two there before it, unseen
    firing = _stalled(mon, T + 10_001)
    assert firing["summary"] == (
        "Queue PAYROLL.IN on QM1 holds 3 messages and has not been served for more than its service interval of "
        "10000 ms (service timer running since 2023-11-14T22:13:20.000Z). The age of its oldest message is unknown "
        "(qmon did not see the puts of its 2 oldest messages); qmon has seen no get from it. MQ raises no event until "
        "the next put or get."
    )
