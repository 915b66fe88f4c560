"""Remembered event ids, packed at rest (qmon.core.dedup), and the monitors across store/load cycles."""

import pickle
from array import array

import msgpack
from hypothesis import given, settings
from hypothesis import strategies as st

from qmon.core.dedup import SIZE, Ids, Recent, digest, evict_oldest
from qmon.core.queues import MonitorSettings, QueueMonitor
from qmon.core.records import Activity
from qmon.core.structures import StructureDef, StructureMonitor, StructureSettings

AWKWARD = {"b2": 5, "a\x1f1": 7, "": 9, "é" * 40: 11, "\x00x": 13, "x\x00": 14, "\x01\x02": 15, "\x01": 16}


def digested(recent: dict[str, int]) -> dict[bytes, int]:
    return {digest(k): ts for k, ts in recent.items()}


def test_pack_round_trip_keeps_digests_ts_and_order():
    packed = Ids.of(AWKWARD).packed()
    assert isinstance(packed[0], bytes) and len(packed[0]) == SIZE * len(AWKWARD)  # 8 bytes an id, any length
    again = Ids.load(packed).as_dict()
    assert again == digested(AWKWARD) and list(again) == list(digested(AWKWARD))
    assert Ids.load(Ids().packed()).as_dict() == {} and Ids.load(None).as_dict() == {}
    assert Ids.load([b"", b""]).stamps.typecode == "i"  # no ids: a new queue's ts in 4 bytes


def test_a_digest_found_across_two_stored_digests_is_not_an_id_seen():
    """The digests are stored back to back: a match must start on a digest's first byte."""
    a, b = "first", "second"
    straddling = (digest(a) + digest(b))[3 : 3 + SIZE]
    ids = Ids(digest(a) + digest(b), array("q", [1, 2]))
    assert ids.joined.find(straddling) == 3  # there, but not on a boundary
    assert not ids._stored(straddling) and ids._stored(digest(b)) and ids._stored(digest(a))


def test_ids_stored_separator_joined_are_read():
    """(ids each after a separator, escaped; their ts): the separator-joined layout."""
    escaped = {"\x00x": "\x01\x02x", "x\x00": "x\x01\x02", "\x01\x02": "\x01\x01\x02", "\x01": "\x01\x01"}
    joined = "\x00" + "".join(escaped.get(k, k) + "\x00" for k in AWKWARD)
    ids = Ids.load((joined, array("q", AWKWARD.values()).tobytes()))
    assert ids.as_dict() == digested(AWKWARD)
    assert ids.seen("\x00x", 20, 1000, 64) and not ids.seen("x", 21, 1000, 64)
    assert Ids.load(("\x00", b"")).as_dict() == {}


def test_ids_stored_with_their_lengths_are_read():
    """(ids joined without separators, their lengths, their ts)."""
    old = (
        "".join(AWKWARD),
        array("I", map(len, AWKWARD)).tobytes(),
        array("q", AWKWARD.values()).tobytes(),
    )
    ids = Ids.load(old)
    assert ids.as_dict() == digested(AWKWARD)
    assert ids.seen("\x00x", 20, 1000, 64) and not ids.seen("x", 21, 1000, 64)
    assert Ids.load(dict(AWKWARD)).as_dict() == digested(AWKWARD)


keys = st.text(alphabet=st.sampled_from(["a", "b", "\x00", "\x01", "\x02", "é"]), max_size=3)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(keys, st.integers(0, 50), st.booleans()), max_size=60),
    st.integers(0, 40),
    st.integers(1, 6),
)
def test_duplicates_match_an_ordered_dict_across_any_packing(steps, window_ms, keep):
    """The same answers as the dict model (insertion order, evicted by count and window), whatever ids hold
    and wherever the state is packed and stored between records."""
    against_the_model({}, {}, 0, steps, window_ms, keep, lambda h: pickle.loads(pickle.dumps(h)))


def against_the_model(model, holder, ts, steps, window_ms, keep, round_trip, absolute=False) -> None:
    """Each step's answer and the ids left at the end equal the dict model's (insertion order, evicted by
    count and window); where a step says so, the state is packed and stored (``round_trip``) before the next.
    A step moves ts on, or (``absolute``) is the ts."""
    r = Recent(window_ms, keep)
    for key, step, store in steps:
        ts = step if absolute else ts + step
        expected = key in model
        if not expected:
            model[key] = ts
            evict_oldest(model, ts - window_ms, keep)
        assert r.duplicate(holder, key, ts) == expected
        if store:
            r.pack()
            holder = round_trip(holder)
            r = Recent(window_ms, keep)
    r.pack()
    assert Ids.load(holder.get("recent")).as_dict() == digested(model)


def _stored_by(fmt: str, recent: dict[str, int]) -> object:
    """``recent`` in another stored layout: ``joined`` (ids escaped, each after a separator), ``lengths``
    (ids joined without separators, their lengths), a dict."""
    if fmt == "joined":
        esc = [k.replace("\x01", "\x01\x01").replace("\x00", "\x01\x02") for k in recent]
        return ("\x00" + "".join(k + "\x00" for k in esc), array("q", recent.values()).tobytes())
    if fmt == "lengths":
        lengths = array("I", map(len, recent)).tobytes()
        return ("".join(recent), lengths, array("q", recent.values()).tobytes())
    return dict(recent)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(keys, max_size=6, unique=True),
    st.sampled_from(["joined", "lengths", "dict"]),
    st.lists(st.tuples(keys, st.integers(0, 50), st.booleans()), max_size=40),
    st.integers(0, 40),
    st.integers(1, 6),
)
def test_a_state_in_another_layout_then_messagepack_round_trips_match_the_model(old, fmt, steps, window_ms, keep):
    """A queue whose ids are stored in another layout, then stored as the job stores it (MessagePack, where a tuple
    comes back as a list): the same answers as the dict model."""
    model = {k: i for i, k in enumerate(old)}
    holder: dict = {"recent": _stored_by(fmt, model)} if model else {}
    stored = lambda h: msgpack.unpackb(msgpack.packb(h, use_bin_type=True), raw=False)  # noqa: E731
    against_the_model(model, holder, len(old), steps, window_ms, keep, stored)


def test_a_ts_is_kept_in_4_bytes_from_the_first_ts():
    ids = Ids()
    for i, key in enumerate(("a", "b", "c")):
        assert not ids.seen(key, 1_700_000_000_000 + i, 600_000, 256)
    joined, offsets, base = ids.packed()
    assert len(joined) == 3 * SIZE and len(offsets) == 3 * 4 and base == 1_700_000_000_000
    again = Ids.load(msgpack.unpackb(msgpack.packb(ids.packed()), raw=False))
    assert again.as_dict() == digested({"a": 1_700_000_000_000, "b": 1_700_000_000_001, "c": 1_700_000_000_002})
    assert again.seen("b", 1_700_000_000_003, 600_000, 256) and not again.seen("d", 1_700_000_000_004, 600_000, 256)


def test_ids_stored_with_8_byte_ts_are_read_and_stored_again_in_4():
    """(digests, 8-byte ts): the layout without ts offsets."""
    stored = (digest("a") + digest("b"), array("q", [1_700_000_000_000, 1_700_000_000_500]).tobytes())
    ids = Ids.load(stored)
    assert ids.as_dict() == digested({"a": 1_700_000_000_000, "b": 1_700_000_000_500})
    assert ids.seen("a", 1_700_000_000_600, 600_000, 256) and not ids.seen("c", 1_700_000_000_700, 600_000, 256)
    joined, offsets, base = ids.packed()
    assert len(offsets) == 3 * 4 and base == 1_700_000_000_000
    assert Ids.load(ids.packed()).as_dict() == digested(
        {"a": 1_700_000_000_000, "b": 1_700_000_000_500, "c": 1_700_000_000_700}
    )


def test_ids_spanning_more_than_24_days_keep_8_byte_ts():
    """4 bytes hold offsets up to 2^31 ms (24.8 days): a wider span, or a ts that far from the base, moves
    the base to the oldest id and, if that is not enough, keeps the ts in 8 bytes."""
    day = 86_400_000
    ids = Ids()
    assert not ids.seen("a", 0, 100 * day, 256)
    assert not ids.seen("b", 30 * day, 100 * day, 256)  # 30 days after the first: does not fit in 4 bytes
    assert len(ids.packed()) == 2 and len(ids.packed()[1]) == 2 * 8
    assert ids.seen("a", 31 * day, 100 * day, 256)
    # a short window forgets the old ids: the ts fit again from the oldest remembered
    short = Ids()
    assert not short.seen("a", 0, day, 256)
    assert not short.seen("b", 30 * day, day, 256)  # "a" is forgotten (older than the window)
    joined, offsets, base = short.packed()
    assert joined == digest("b") and len(offsets) == 4 and base == 30 * day
    assert not short.seen("a", 30 * day + 1, day, 256)


wide_ts = st.sampled_from([0, 1, 7, 2**31 - 2, 2**31 - 1, 2**31, 2**31 + 1, 2**32 + 5, 3 * 10**9, 1_700_000_000_000])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(keys, wide_ts, st.booleans()), max_size=40),
    st.sampled_from([0, 40, 2**31 - 1, 2**31, 10**13]),
    st.integers(1, 6),
)
def test_ts_wider_than_4_bytes_in_any_order_match_the_model(steps, window_ms, keep):
    """Ts far apart (around 2^31 ms, the span 4 bytes hold), in any order, stored between records or not:
    the same answers and the same ids left as the dict model."""
    stored = lambda h: msgpack.unpackb(msgpack.packb(h, use_bin_type=True), raw=False)  # noqa: E731
    against_the_model({}, {}, 0, steps, window_ms, keep, stored, absolute=True)


def test_duplicates_are_found_across_pack_and_pickle():
    r = Recent(window_ms=1000, keep=3)
    q = {}
    assert not r.duplicate(q, "e1", 100)
    r.pack()
    assert isinstance(q["recent"], tuple)  # (their digests, their ts' offsets, the base) at rest
    q = pickle.loads(pickle.dumps(q))
    r = Recent(window_ms=1000, keep=3)
    assert r.duplicate(q, "e1", 150)
    assert not r.duplicate(q, "e2", 160)


def test_oldest_forgotten_by_count_and_window_after_unpacking():
    r = Recent(window_ms=1000, keep=2)
    q = {}
    for i, ts in enumerate((0, 10, 20)):
        r.duplicate(q, f"e{i}", ts)
    r.pack()
    r = Recent(window_ms=1000, keep=2)
    assert not r.duplicate(q, "e0", 30)  # e0 was evicted by count
    assert not r.duplicate(q, "e9", 5000)  # everything else falls out of the window
    assert list(q["recent"].as_dict()) == [digest("e9")]


def test_only_touched_holders_are_loaded():
    r = Recent(window_ms=1000, keep=8)
    a, b = {}, {}
    r.duplicate(a, "x", 1)
    r.duplicate(b, "y", 1)
    r.pack()
    r = Recent(window_ms=1000, keep=8)
    r.duplicate(a, "z", 2)
    assert isinstance(a["recent"], Ids) and isinstance(b["recent"], tuple)
    r.pack()
    assert isinstance(a["recent"], tuple)


def store_and_load(state):
    return pickle.loads(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))


def test_queue_monitor_ignores_a_redelivery_in_a_later_batch():
    settings = MonitorSettings(perfmev="ENABLED")
    mon = QueueMonitor("QM1", settings)
    put = Activity("e1", "QM1", "Q1", "PUT", 1000, None, 10, None, None, None, None)
    mon.on_activity(put)
    mon.pack()
    mon = QueueMonitor("QM1", settings, store_and_load(mon.state))
    assert mon.on_activity(put) == []
    assert mon.queues["Q1"]["depth"] == 1


def test_structure_monitor_ignores_a_redelivery_in_a_later_batch():
    settings = StructureSettings((StructureDef("MSGQ1", size=1000),))
    mon = StructureMonitor("MSGQ1", settings)
    put = Activity("e1", "IMSA", "Q1", "PUT", 1000, msg_bytes=512)
    mon.on_activity(put)
    used = mon.state["used"]
    mon.pack()
    mon = StructureMonitor("MSGQ1", settings, store_and_load(mon.state))
    assert mon.on_activity(put) == []
    assert mon.state["used"] == used
