"""Event-time order across partitions (``qmon.core.event_order``): however the partitions are split into
micro-batches and their rows over tasks, the records are applied in the order of one sort over all of them."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from qmon.core.event_order import NO_TIME, advance, frontier, marks


def test_a_hand_marks_the_greatest_ts_it_saw_of_each_partition():
    assert marks([("a", 5), ("a", 9), ("b", 7), ("b", 3)]) == {"a": 9, "b": 7}
    assert marks([]) == {}


def test_the_frontier_is_the_slowest_partitions_greatest_mark_less_the_lateness():
    # partition a's rows went to two hands (3 and 10,000): it has been read to 10,000; b to 7,000
    assert frontier([("a", 3), ("b", 7_000), ("a", 10_000)], 500) == 6_500
    assert frontier([("end", NO_TIME)], 500) == NO_TIME  # the end of the input holds nothing back
    assert frontier([], 500) is None  # no record with a time: nothing to wait for


def test_the_frontier_never_goes_back():
    assert advance(None, 5) == 5 and advance(5, 3) == 5 and advance(5, 8) == 8 and advance(5, None) == 5


def released(ts: int, frontier_now: int | None, read_nothing: bool) -> bool:
    """The model's release (``Held.admit``'s): below the frontier, or everything when a batch read nothing."""
    return read_nothing or (frontier_now is not None and ts < frontier_now)


def late(ts: int, frontier_before: int | None) -> bool:
    """The model's late record: below the frontier already reached when it arrives."""
    return frontier_before is not None and ts < frontier_before


def run(partitions: list[list[tuple[int, int]]], rng: random.Random, lateness: int = 0) -> tuple[list, int]:
    """Reads the partitions (each a list of (ts, rank), in ts order) batch by batch as Spark's Kafka source
    does: every partition with records left gives at least one to a batch, in offset order; the batch's
    partitions are split over input tasks at random.  Returns the records in the order applied, and how many
    were late.  Each row goes to one of three hands at random (Spark's tasks, before and after a shuffle), and
    each hand marks what it saw."""
    pos = [0] * len(partitions)
    held: list[tuple[int, int, int, int]] = []  # (ts, rank, partition, offset)
    applied: list[tuple[int, int, int, int]] = []
    current: int | None = None
    lates = 0
    while True:
        reading = [p for p in range(len(partitions)) if pos[p] < len(partitions[p])]
        taken: dict[int, list[tuple[int, int, int, int]]] = {}
        for p in reading:
            n = rng.randint(1, len(partitions[p]) - pos[p])
            taken[p] = [(*partitions[p][o], p, o) for o in range(pos[p], pos[p] + n)]
            pos[p] += n
        hands: dict[int, list[tuple[int, int]]] = {}
        for p, rows in taken.items():
            for r in rows:
                hands.setdefault(rng.randrange(3), []).append((p, r[0]))
        marked = [m for seen in hands.values() for m in marks(seen).items()]
        before = current
        current = advance(current, frontier(marked, lateness))
        new = [r for rows in taken.values() for r in rows]
        lates += sum(late(r[0], before) for r in new)
        rows = sorted(held + new)
        applied += [r for r in rows if released(r[0], current, not taken)]
        held = [r for r in rows if not released(r[0], current, not taken)]
        if not taken:
            return applied, lates


partition_stream = st.lists(st.tuples(st.integers(0, 40), st.sampled_from([0, 1])), max_size=25).map(sorted)


@settings(max_examples=300, deadline=None)
@given(st.lists(partition_stream, min_size=1, max_size=5), st.integers(0, 2**32 - 1))
def test_any_split_into_batches_and_tasks_applies_records_in_one_sorts_order(partitions, seed):
    applied, lates = run(partitions, random.Random(seed))
    everything = sorted((ts, rank, p, o) for p, rows in enumerate(partitions) for o, (ts, rank) in enumerate(rows))
    assert applied == everything  # each once, in (ts, rank, partition, offset) order
    assert lates == 0


def test_a_partition_that_was_idle_and_then_sends_the_past_is_applied_at_once_and_counted():
    """Partition 1 has nothing for the first batch (idle), then a record older than the frontier reached:
    late.  It is still applied (never dropped), and the rest keep their order."""
    busy = list(range(0, 100, 10))
    applied: list[tuple[int, int]] = []
    current = None
    held: list[tuple[int, int]] = []
    lates = 0
    for batch in ([(0, t) for t in busy[:5]], [(0, t) for t in busy[5:]] + [(1, 15)], []):
        before = current
        current = advance(current, frontier(marks(batch).items(), 0))
        lates += sum(late(ts, before) for _, ts in batch)
        rows = sorted(held + [(ts, p) for p, ts in batch])
        applied += [r for r in rows if released(r[0], current, not batch)]
        held = [r for r in rows if not released(r[0], current, not batch)]
    assert lates == 1 and (15, 1) in applied and len(applied) == 11 and not held
    assert [t for t, p in applied if p == 0] == busy


def test_the_lateness_orders_a_record_that_far_behind_the_others():
    """With ``job.max_lateness`` 10, partition 1's record 5 behind partition 0's is still in order."""
    current = advance(None, frontier([(0, 20)], 10))  # partition 0 read to 20; frontier 10
    assert not late(15, current) and late(9, current)
