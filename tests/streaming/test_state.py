"""Operator state at rest (qmon.streaming.state): MessagePack of plain data, versioned."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qmon.core.mqsc import parse_command
from qmon.core.queues import STATE_VERSION, MonitorSettings, QueueMonitor
from qmon.core.records import Activity
from qmon.core.state_version import StateVersionError
from qmon.core.structures import StructureMonitor, StructureSettings
from qmon.streaming import state as stored


def shard() -> QueueMonitor:
    mon = QueueMonitor("QM1", MonitorSettings(perfmev="ENABLED"))
    for i in range(3):
        mon.on_activity(Activity(f"p{i}", "QM1", "PAYROLL.IN", "PUT", 1_000 + i, msg_bytes=100))
    mon.pack()
    return mon


def test_a_shard_round_trips_as_plain_data():
    mon = shard()
    blob = stored.dumps(mon.state)
    assert blob[:1] != b"\x80"  # not a pickle
    again = QueueMonitor("QM1", mon.settings, stored.loads(blob))
    assert again.state == mon.state and again.queues["PAYROLL.IN"]["depth"] == 3


@pytest.mark.parametrize("version", [1, 4, 6, STATE_VERSION + 1, None])
def test_state_of_another_version_is_refused_naming_the_version(version):
    state = shard().state
    state["v"] = version
    with pytest.raises(StateVersionError, match=f"queue manager QM1 state of version {version!r}; .*new checkpoint"):
        QueueMonitor("QM1", MonitorSettings(), stored.loads(stored.dumps(state)) if version is not None else state)
    structure = {"v": version, "queues": {}}
    with pytest.raises(StateVersionError, match=f"structure MSGQ1 state of version {version!r}"):
        StructureMonitor("MSGQ1", StructureSettings(), structure)


def test_a_value_that_is_not_a_versioned_state_is_refused():
    with pytest.raises(stored.StoredStateError):
        stored.loads(stored.dumps({"queues": {}}))


# ------------------------------------------------------------ each queue's value: its fields by position


def _queue_of(mon: QueueMonitor, name: str = "PAYROLL.IN") -> dict:
    mon.pack()  # (as plain data)
    return msgpack.unpackb(msgpack.packb(dict(mon.queues[name]), use_bin_type=True), raw=False)


def test_a_queue_is_stored_without_its_field_names():
    """A queue's value holds its fields by position (the names are in its ``TypedDict``, not in every queue): a
    queue takes under 100 bytes."""
    q = _queue_of(shard())
    blob = stored.dump_queue(q)
    assert len(blob) < 100
    assert b"svc_timer_start" not in blob and b"QSVCINT" not in blob
    assert list(stored.load_queue(blob).items()) == list(q.items())  # the same map, in the same order


def test_a_queue_stored_as_an_encoded_map_loads():
    q = _queue_of(shard())
    assert stored.load_queue(msgpack.packb(q, use_bin_type=True)) == q


def test_a_queue_of_other_fields_is_stored_as_a_map():
    """Keys no layout holds keep their names: nothing is lost, only the compaction."""
    q = _queue_of(shard())
    q["attrs"] = {**q["attrs"], "DESCR": "payroll"}
    assert stored.load_queue(stored.dump_queue(q)) == q
    q["extra"] = 1
    assert stored.load_queue(stored.dump_queue(q)) == q


#: The layouts as stored values of this state version use them: a layout read back under other fields would misread
#: every queue stored with it.  A change here (a field of ``QueueState``, ``StructureQueueState`` or
#: ``MQ_DEFAULTS`` added, removed, renamed or moved) is a new ``qmon.core.state_version.STATE_VERSION``.
FROZEN_LAYOUTS = {
    1: (
        "depth",
        "svc_timer_start",
        "svc_timer_clock",
        "attrs",
        "defined",
        "reset_ts",
        "high_depth",
        "enq",
        "deq",
        "last_ts",
        "stall_alert_id",
        "stall_ok",
        "forecast",
        "unseen",
        "puts",
        "last_put",
        "last_get",
        "member",
    ),
    2: ("messages", "elements", "in_overflow", "put_rejected", "fifo"),
}
FROZEN_ATTRS = ("QSVCIEV", "QSVCINT", "MAXDEPTH", "QDEPTHHI", "QDEPTHLO", "QDPHIEV", "QDPLOEV", "QDPMAXEV")


def test_the_layouts_are_the_rules_declarations_frozen_in_this_state_version():
    """Each layout is its ``TypedDict``'s fields, declared there once; and a layout of this state version keeps
    its fields (a change to a declaration must come with a new state version)."""
    from qmon.core.queues import MQ_DEFAULTS, QueueState
    from qmon.core.structures import StructureQueueState

    assert stored.LAYOUTS == {1: tuple(QueueState.__annotations__), 2: tuple(StructureQueueState.__annotations__)}
    assert stored.ATTRS_LAYOUT == tuple(MQ_DEFAULTS)
    assert (STATE_VERSION, stored.LAYOUTS, stored.ATTRS_LAYOUT) == (7, FROZEN_LAYOUTS, FROZEN_ATTRS), (
        "a stored layout changed: declare a new state version (qmon.core.state_version) and freeze its layouts here"
    )


T0 = 1_700_000_010_000
ATTRS = {
    "QSVCIEV": "NONE",
    "QSVCINT": 999_999_999,
    "MAXDEPTH": 5000,
    "QDEPTHHI": 80,
    "QDEPTHLO": 20,
    "QDPHIEV": False,
    "QDPLOEV": False,
    "QDPMAXEV": True,
}


def test_values_stored_by_position_read_back():
    """Bytes as this state version writes them (golden values): every build of it must read them so."""
    # a queue manager's own queue, forecasts every 30 s: qmon's first record of it a get that left 1 message (its
    # put unseen), then puts at 1 s, 1 s, 2.5 s and 60 s
    queue = (
        "dc00130105cf0000018bcfe58f10cf0000018bcfe58f1098a44e4f4e45ce3b9ac9ffcd13885014c2c2c3c2cf0000018bcfe58f10050401"
        "cf0000018bcfe67970c0c084a26174cf0000018bcfe6eea0a473746570cd7530a17391920404a26f6e80019acf0000018bcfe6797002"
        "000001cd05dc0001cde09c00cf0000018bcfe67970cf0000018bcfe58f10c0"
    )
    assert stored.load_queue(bytes.fromhex(queue)) == {
        "depth": 5,
        "svc_timer_start": T0,
        "svc_timer_clock": T0,
        "attrs": ATTRS,
        "defined": False,
        "reset_ts": T0,
        "high_depth": 5,
        "enq": 4,
        "deq": 1,
        "last_ts": T0 + 60_000,
        "stall_alert_id": None,
        "stall_ok": None,
        "forecast": {"at": T0 + 90_000, "step": 30_000, "s": [[4, 4]], "on": {}},
        "unseen": 1,
        "puts": [T0 + 60_000, 2, 0, 0, 1, 1_500, 0, 1, 57_500, 0],  # (2 at 1 s, 1 at 2.5 s, 1 at 60 s)
        "last_put": T0 + 60_000,
        "last_get": T0,
        "member": None,
    }
    # a shared queue in its queue-sharing group's shard: puts on QM1 at 0 s and 1 s, a get on QM2 at 1.5 s
    queue = (
        "dc00130101cf0000018bcfe594eccf0000018bcfe594ec98a44e4f4e45ce3b9ac9ffcd13885014c2c2c3c2cf0000018bcfe58f10020201"
        "cf0000018bcfe594ecc0c084a26174cf0000018bcfe60440a473746570cd7530a1739190a26f6e800094cf0000018bcfe592f8010000"
        "cf0000018bcfe592f8cf0000018bcfe594eca3514d32"
    )
    assert stored.load_queue(bytes.fromhex(queue)) == {
        "depth": 1,
        "svc_timer_start": T0 + 1_500,
        "svc_timer_clock": T0 + 1_500,
        "attrs": ATTRS,
        "defined": False,
        "reset_ts": T0,
        "high_depth": 2,
        "enq": 2,
        "deq": 1,
        "last_ts": T0 + 1_500,
        "stall_alert_id": None,
        "stall_ok": None,
        "forecast": {"at": T0 + 30_000, "step": 30_000, "s": [[]], "on": {}},
        "unseen": 0,
        "puts": [T0 + 1_000, 1, 0, 0],
        "last_put": T0 + 1_000,
        "last_get": T0 + 1_500,
        "member": "QM2",
    }
    # a queue's share of a structure
    share = {"messages": 5, "elements": 7, "in_overflow": False, "put_rejected": True, "fifo": [[1, 5, 2]]}
    assert stored.load_queue(bytes.fromhex("96020507c2c39193010502")) == share


def test_a_shared_queue_and_its_members_perfmev_survive_a_restart():
    """A queue-sharing group's shard as a restarted job loads it: each shared queue by position with the
    member of its latest record, and each member's PERFMEV; the rules go on from them."""
    from qmon.core.sharing import QueueSharingGroup, Sharing

    settings = MonitorSettings(sharing=Sharing((QueueSharingGroup("QSG1", ("QM1", "QM2"), ("PAY.*",)),)))
    mon = QueueMonitor("QSG1", settings, None, stored.load_queue)
    mon.on_command(parse_command("ALTER QMGR PERFMEV(ENABLED)"), 0, "c", False, "QM1")
    mon.on_command(parse_command("ALTER QLOCAL(PAY.IN) QSVCIEV(HIGH) QSVCINT(1000)"), 0, "a", False, "QM2")
    mon.on_activity(Activity("p1", "QM1", "PAY.IN", "PUT", 1_000))
    mon.on_activity(Activity("p2", "QM2", "PAY.IN", "PUT", 1_500))
    mon.pack()
    blob = stored.dumps(mon.state)
    assert stored.loads(blob)["queues"]["PAY.IN"][:4] == bytes.fromhex("dc001301")  # layout 1, by position
    again = QueueMonitor("QSG1", settings, stored.loads(blob), stored.load_queue)
    assert again.state["member_perfmev"] == {"QM1": "ENABLED"} and again.queues["PAY.IN"]["member"] == "QM2"
    assert again.on_activity(Activity("p3", "QM2", "PAY.IN", "PUT", 3_000)) == []  # QM2's PERFMEV: DISABLED
    [high] = again.on_activity(Activity("p4", "QM1", "PAY.IN", "PUT", 3_001))
    assert (high.record["type"], high.record["qmgr"], high.record["qsg"]) == ("QSVCINT_HIGH", "QM1", "QSG1")


def test_a_queue_s_messages_put_times_and_last_put_and_get_survive_a_restart():
    """What a shard stores and a restarted job loads (each queue by position, as the operator keeps it): the
    unseen messages, the put times and the last put and get come back as they were, and the rules go on from
    them."""
    from qmon.core.queues.status import oldest_put

    empty = {"v": STATE_VERSION, "perfmev": None, "queues": {}, "index": {}}
    mon = QueueMonitor("QM1", MonitorSettings(perfmev="ENABLED"), empty, stored.load_queue)
    mon.on_activity(Activity("g", "QM1", "PAYROLL.IN", "GET", 1_000, depth_after=1))
    for i, ts in enumerate((2_000, 3_000)):
        mon.on_activity(Activity(f"p{i}", "QM1", "PAYROLL.IN", "PUT", ts))
    mon.pack()
    blob = stored.dumps(mon.state)
    assert stored.loads(blob)["queues"]["PAYROLL.IN"][:4] == bytes.fromhex("dc001301")  # layout 1, by position
    again = QueueMonitor("QM1", mon.settings, stored.loads(blob), stored.load_queue)
    q = again.queues["PAYROLL.IN"]
    assert (q["unseen"], q["puts"], q["last_put"], q["last_get"]) == (1, [3_000, 1, 0, 0, 1, 1_000, 0], 3_000, 1_000)
    assert oldest_put(q) is None
    again.on_activity(Activity("g2", "QM1", "PAYROLL.IN", "GET", 4_000))  # takes the unseen message
    assert (oldest_put(q), q["last_get"]) == (2_000, 4_000)


def test_a_list_of_no_stored_layout_is_refused():
    with pytest.raises(stored.StoredStateError):
        stored.load_queue(msgpack.packb([[1], 1]))  # (not a layout id)
    with pytest.raises(stored.StoredStateError):
        stored.load_queue(msgpack.packb([1, *range(3), [1, 2], *range(14)]))  # attrs of 2 values


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(
        st.one_of(st.none(), st.integers(-(2**40), 2**40), st.booleans(), st.text(max_size=8), st.binary(max_size=8)),
        min_size=18,
        max_size=18,
    ),
    attrs=st.one_of(
        st.dictionaries(st.sampled_from(["QSVCIEV", "QSVCINT", "DESCR"]), st.integers(0, 9)),
        st.fixed_dictionaries({k: st.integers(0, 9) for k in ("QSVCIEV", "QSVCINT", "MAXDEPTH", "QDEPTHHI")}),
        st.none(),
    ),
    drop=st.sets(st.integers(0, 17), max_size=3),
    order=st.randoms(use_true_random=False),
)
def test_any_queue_map_round_trips_with_its_order(values, attrs, drop, order):
    from qmon.core.queues import MQ_DEFAULTS, QueueState
    from qmon.core.structures import StructureQueueState

    for fields in (tuple(QueueState.__annotations__), tuple(StructureQueueState.__annotations__)):
        q = {f: v for i, (f, v) in enumerate(zip(fields, values, strict=False)) if i not in drop}
        if "attrs" in q:
            q["attrs"] = dict(MQ_DEFAULTS) if order.random() < 0.5 else attrs
        if order.random() < 0.3:
            items = list(q.items())
            order.shuffle(items)
            q = dict(items)
        back = stored.load_queue(stored.dump_queue(q))
        assert list(back.items()) == list(q.items())
        if isinstance(q.get("attrs"), dict):
            assert list(back["attrs"].items()) == list(q["attrs"].items())
