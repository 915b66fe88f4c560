"""Put-time runs (qmon.core.message_runs): a queue's messages' put times, oldest first, in at most MAX_RUNS
runs; exact while the queue holds no more put instants than that, within its run's span beyond."""

from __future__ import annotations

import collections
import random
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from qmon.core import message_runs
from qmon.core.message_runs import oldest_time, push_time, take_times, time_runs


def pushed(*times: int) -> list[int]:
    runs: list[int] = []
    for ts in times:
        push_time(runs, ts)
    return runs


def test_puts_and_gets_in_fifo_order_give_each_oldest_put_exactly():
    runs: list[int] = []
    assert oldest_time(runs) is None
    for ts in (1_000, 2_500, 7_000):
        push_time(runs, ts)
    assert oldest_time(runs) == 1_000
    take_times(runs)
    assert oldest_time(runs) == 2_500
    take_times(runs)
    assert oldest_time(runs) == 7_000
    take_times(runs)
    assert runs == [] and oldest_time(runs) is None
    take_times(runs)  # a get with nothing known on the queue takes nothing
    assert runs == []


def test_runs_are_one_flat_list_of_the_newest_put_then_count_gap_and_span():
    """Small numbers: only the newest put is a timestamp."""
    runs = pushed(1_700_000_000_000, 1_700_000_000_000, 1_700_000_000_250)
    assert runs == [1_700_000_000_250, 2, 0, 0, 1, 250, 0]
    assert time_runs(runs) == [(2, 1_700_000_000_000, 1_700_000_000_000), (1, 1_700_000_000_250, 1_700_000_000_250)]


def test_messages_put_at_one_instant_share_a_run():
    runs = pushed(5, 5, 5, 9)
    assert time_runs(runs) == [(3, 5, 5), (1, 9, 9)]
    take_times(runs, 2)
    assert time_runs(runs) == [(1, 5, 5), (1, 9, 9)] and oldest_time(runs) == 5


def test_taking_several_crosses_runs():
    runs = pushed(10, 10, 20, 30, 30, 30)
    take_times(runs, 4)
    assert time_runs(runs) == [(2, 30, 30)] and runs == [30, 2, 0, 0]
    take_times(runs, 9)
    assert runs == []


def test_past_the_bound_the_neighbours_spanning_the_shortest_time_merge():
    with patch.object(message_runs, "MAX_RUNS", 4):
        runs = pushed(0, 60_000, 60_010, 120_000)
        assert len(time_runs(runs)) == 4
        push_time(runs, 180_000)
        assert time_runs(runs) == [(1, 0, 0), (2, 60_000, 60_010), (1, 120_000, 120_000), (1, 180_000, 180_000)]
        push_time(runs, 240_000)  # three pairs span 60 s, the oldest 60.01 s: the oldest of the three merges
        assert time_runs(runs) == [(1, 0, 0), (3, 60_000, 120_000), (1, 180_000, 180_000), (1, 240_000, 240_000)]


def test_a_burst_then_a_trickle_keeps_the_trickle_exact():
    """Bursts merge among themselves: the messages put one a minute after them keep their own runs."""
    with patch.object(message_runs, "MAX_RUNS", 4):
        runs = pushed(*range(100), 60_000, 120_000, 180_000)  # 100 messages in 100 ms, then one a minute
        assert time_runs(runs) == [(100, 0, 99), (1, 60_000, 60_000), (1, 120_000, 120_000), (1, 180_000, 180_000)]
        take_times(runs, 100)
        assert oldest_time(runs) == 60_000
        take_times(runs)
        assert oldest_time(runs) == 120_000


def test_a_merged_run_is_taken_as_put_evenly_between_its_first_and_last_put():
    with patch.object(message_runs, "MAX_RUNS", 1):
        runs = pushed(1_000, 1_100, 1_200, 1_900, 2_000)
    assert time_runs(runs) == [(5, 1_000, 2_000)]
    take_times(runs)
    assert time_runs(runs) == [(4, 1_250, 2_000)]
    take_times(runs, 2)
    assert time_runs(runs) == [(2, 1_750, 2_000)]
    take_times(runs)
    assert time_runs(runs) == [(1, 2_000, 2_000)]  # a run's last put is exact
    with patch.object(message_runs, "MAX_RUNS", 1):
        runs = pushed(0, 1, 2, 1_000)
    take_times(runs)
    assert time_runs(runs) == [(3, 333, 1_000)]  # rounded down to the millisecond


def test_a_put_before_the_newest_put_joins_the_newest_run():
    """A record applied out of event-time order counts as put with the newest."""
    runs = pushed(1_000, 5_000, 3_000)
    assert time_runs(runs) == [(1, 1_000, 1_000), (2, 5_000, 5_000)]


@settings(max_examples=300, deadline=None)
@given(
    ops=st.lists(st.tuples(st.booleans(), st.integers(0, 3), st.integers(1, 3)), max_size=200),
    bound=st.integers(1, 6),
)
def test_runs_stay_bounded_counts_exact_and_each_last_put_exact(ops, bound):
    """Puts (``True``, at most 3 ms apart) and gets of 1 to 3 messages against the exact FIFO of put times."""
    with patch.object(message_runs, "MAX_RUNS", bound):
        runs: list[int] = []
        fifo: list[int] = []
        t = 0
        merged = False
        for is_put, step, n in ops:
            if is_put:
                t += step
                push_time(runs, t)
                fifo.append(t)
                merged = merged or len(set(fifo)) > bound
            else:
                take_times(runs, n)
                del fifo[:n]
            view = time_runs(runs)
            assert len(view) <= bound
            assert sum(c for c, _, _ in view) == len(fifo)
            end = 0
            for c, first, last in view:
                end += c
                assert first <= last == fifo[end - 1]  # a run's last put is exact
            if not merged:  # never more put instants than runs: every run exact
                assert oldest_time(runs) == (fifo[0] if fifo else None)
            if not fifo:
                assert runs == []


def test_a_deep_queue_served_at_the_rate_it_is_fed_has_its_oldest_put_within_a_percent_of_its_age():
    """5,000 messages on the queue, far past the bound, then 10,000 puts each followed by a get: put at a steady
    rate the age is exact; at random (Poisson) or in bursts a minute apart it stays within 1 % of the true age,
    and no run spans more than a fortieth of the time the queue's messages were put over."""
    rng = random.Random(7)
    workloads = {
        "steady": lambda: 1_000,
        "random": lambda: int(rng.expovariate(1 / 1_000)),
        "bursts": lambda: rng.choice([0] * 9 + [60_000]),
    }
    for name, gap in workloads.items():
        runs: list[int] = []
        fifo: collections.deque[int] = collections.deque()
        t = 0
        worst = 0.0
        for i in range(15_000):
            t += gap()
            push_time(runs, t)
            fifo.append(t)
            if i >= 5_000:
                take_times(runs)
                fifo.popleft()
                oldest = oldest_time(runs)
                assert oldest is not None
                worst = max(worst, abs(oldest - fifo[0]) / (t - fifo[0]))
                assert max(last - first for _, first, last in time_runs(runs)) <= (t - fifo[0]) / 40, name
        assert worst == 0 if name == "steady" else worst < 0.01, (name, worst)
