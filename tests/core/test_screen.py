"""Duplicates found for a whole batch at once (``screen``, ``Ids.seen_many``) are exactly those found one
record at a time (``on_activity``, ``Ids.seen``): the same answers, the same outputs, the same state after.

``screen`` checks each queue's remembered ids once for all of the batch's records of that queue; the rules
then run on the records that are not duplicates without checking again (``on_activity(rec, screened=True)``).
The operator uses it for a batch of activity only (a command between two records may delete a queue and
its ids), so these tests draw activity-only batches, with ts out of order and redeliveries in and across
batches, small windows and counts so that ids are forgotten by both."""

from __future__ import annotations

import random
from typing import Any

import msgpack
from hypothesis import given, settings
from hypothesis import strategies as st

from qmon.core.config import Config
from qmon.core.dedup import Ids, Recent, digest
from qmon.core.queues import MonitorSettings, QueueDefaults, QueueMonitor
from qmon.core.records import Activity
from qmon.core.structures import StructureMonitor
from qmon.streaming import state as stored
from tests.streams import STRUCTURE_CONFIG, activity, random_stream, random_structure_stream

keys = st.text(alphabet=st.sampled_from(["a", "b", "c", "\x00", "é"]), max_size=3)


def _ids_after(steps: list[tuple[str, int]], window_ms: int, keep: int, round_trip: bool) -> Ids:
    ids = Ids()
    for key, ts in steps:
        ids.seen(key, ts, window_ms, keep)
    if round_trip:  # stored and loaded: the ids are then the loaded byte string, not ``fresh``
        ids = Ids.load(msgpack.unpackb(msgpack.packb(ids.packed()), raw=False))
    return ids


@settings(max_examples=500, deadline=None)
@given(
    before=st.lists(st.tuples(keys, st.integers(0, 60)), max_size=12),
    round_trip=st.booleans(),
    batch=st.lists(st.tuples(keys, st.integers(0, 80)), max_size=30),
    in_order=st.booleans(),
    after=st.lists(st.tuples(keys, st.integers(60, 120)), max_size=6),
    window_ms=st.integers(0, 40),
    keep=st.integers(1, 8),
)
def test_seen_many_answers_and_remembers_as_seen_one_by_one(
    before, round_trip, batch, in_order, after, window_ms, keep
):
    if in_order:
        batch = sorted(batch, key=lambda kt: kt[1])
    one, many = _ids_after(before, window_ms, keep, round_trip), _ids_after(before, window_ms, keep, round_trip)
    expected = [one.seen(k, ts, window_ms, keep) for k, ts in batch]
    assert many.seen_many([k for k, _ in batch], [ts for _, ts in batch], window_ms, keep) == expected
    assert many.packed() == one.packed()
    # and the ids go on answering alike (what ``fresh``, ``start`` and ``first`` hold after the batch)
    assert [many.seen(k, ts, window_ms, keep) for k, ts in after] == [
        one.seen(k, ts, window_ms, keep) for k, ts in after
    ]
    assert many.packed() == one.packed()


def test_seen_many_of_fresh_ids_in_order_takes_the_bulk_path():
    """Distinct new ids in ts order: appended at once, the oldest forgotten once, by count and window."""
    ids = Ids()
    assert ids.seen_many([f"e{i}" for i in range(10)], list(range(10)), 100, 4) == [False] * 10
    assert list(ids.as_dict()) == [digest(f"e{i}") for i in range(6, 10)]
    assert ids.seen_many(["e9", "e5", "x"], [20, 21, 22], 100, 4) == [True, False, False]  # e5 forgotten
    assert ids.seen_many(["y", "z"], [500, 501], 100, 4) == [False, False]  # the rest fall out of the window
    assert list(ids.as_dict()) == [digest("y"), digest("z")]


def test_recent_duplicates_loads_a_holder_once_and_packs_it():
    r = Recent(window_ms=1000, keep=8)
    q: dict[str, Any] = {}
    assert r.duplicates(q, ["a", "b", "a"], [1, 2, 3]) == [False, False, True]
    r.pack()
    assert isinstance(q["recent"], tuple)
    assert Recent(1000, 8).duplicates(q, ["b", "c"], [4, 5]) == [True, False]


# ---------------------------------------------------------------- the monitors

QUEUE_SETTINGS = MonitorSettings(
    perfmev="ENABLED",
    queue_defaults=(QueueDefaults("Q1*", {"QSVCIEV": "HIGH", "QSVCINT": 1000, "QDPHIEV": True}),),
    dedup_window_ms=3_000,
    dedup_max=4,
    stall_clear_hold_ms=2_000,
)


def _batches(recs: list[Activity], rng: random.Random, shuffle: bool) -> list[list[Activity]]:
    out, i = [], 0
    while i < len(recs):
        n = rng.choice([1, 2, 5, 17, 60])
        batch = recs[i : i + n]
        if shuffle and rng.random() < 0.3:  # ts out of order within a batch (the bulk path must notice)
            rng.shuffle(batch)
        out.append(batch)
        i += n
    return out


def _run(monitor: Any, batches: list[list[Activity]], screened: bool, load: Any) -> tuple[list[Any], Any]:
    """The monitor over the batches, stored and loaded between them; its outputs and its last state."""
    emitted: list[Any] = []
    blob = None
    for batch in batches:
        mon = load(stored.loads(blob) if blob else None)
        if screened:
            dups = mon.screen(batch)
            for rec, dup in zip(batch, dups, strict=True):
                if not dup:
                    emitted.extend(e.record for e in mon.on_activity(rec, screened=True))
        else:
            for rec in batch:
                emitted.extend(e.record for e in mon.on_activity(rec))
        mon.pack()
        blob = stored.dumps(mon.state)
    return emitted, stored.loads(blob) if blob else None


def _decoded(state: Any) -> Any:
    """A unit's stored state with its queues decoded (their order aside: a dict compares without it)."""
    if state is None:
        return None
    return {**state, "queues": {n: stored.load_queue(q) for n, q in state["queues"].items()}}


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), shuffle=st.booleans())
def test_a_queue_shard_with_duplicates_found_in_bulk_gives_the_outputs_and_state_of_one_by_one(
    seed: int, shuffle: bool
):
    rng = random.Random(seed)
    records = [r for r in random_stream(rng, "QM1", n=300, queues=6) if "command" not in r]
    for i, r in enumerate(records):
        if i and rng.random() < 0.05:
            r["event_id"] = records[rng.randrange(i)]["event_id"]  # a redelivery, maybe long after
    recs = [activity(r, i) for i, r in enumerate(records)]
    batches = _batches(recs, rng, shuffle)
    load = lambda s: QueueMonitor("QM1", QUEUE_SETTINGS, s, stored.load_queue)  # noqa: E731
    one_out, one_state = _run(None, batches, False, load)
    many_out, many_state = _run(None, batches, True, load)
    assert many_out == one_out
    assert _decoded(many_state) == _decoded(one_state)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), shuffle=st.booleans())
def test_a_structure_with_duplicates_found_in_bulk_gives_the_outputs_and_state_of_one_by_one(seed: int, shuffle: bool):
    rng = random.Random(seed)
    ss = Config.model_validate(STRUCTURE_CONFIG).structure_settings()
    for name in ("MSGQ1", "NOTCONF"):  # a configured structure (long messages, overflow) and an unknown one
        records = [r for r in random_structure_stream(rng, n=300) if r["structure"] == "MSGQ1"]
        for i, r in enumerate(records):
            r["structure"] = name
            if i and rng.random() < 0.05:
                r["event_id"] = records[rng.randrange(i)]["event_id"]  # a redelivery, maybe long after
        recs = [activity(r, i) for i, r in enumerate(records)]
        batches = _batches(recs, rng, shuffle)
        load = lambda s, name=name: StructureMonitor(name, ss, s, stored.load_queue)  # noqa: E731
        one_out, one_state = _run(None, batches, False, load)
        many_out, many_state = _run(None, batches, True, load)
        assert many_out == one_out
        assert _decoded(many_state) == _decoded(one_state)
