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


@pytest.mark.parametrize("version", [1, 4, 5, STATE_VERSION + 1, None])
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
    """A queue's value holds its fields by position (the names are in ``state.QUEUE_SHAPES``, not in every
    queue): a queue takes under 100 bytes."""
    q = _queue_of(shard())
    blob = stored.dump_queue(q)
    assert len(blob) < 100
    assert b"svc_timer_start" not in blob and b"QSVCINT" not in blob
    assert list(stored.load_queue(blob).items()) == list(q.items())  # the same map, in the same order


def test_a_queue_stored_as_an_encoded_map_loads():
    q = _queue_of(shard())
    assert stored.load_queue(msgpack.packb(q, use_bin_type=True)) == q


def test_a_queue_of_another_shape_is_stored_as_a_map():
    """Keys the shapes do not know keep their names: nothing is lost, only the
    compaction."""
    q = _queue_of(shard())
    q["attrs"] = {**q["attrs"], "DESCR": "payroll"}
    assert stored.load_queue(stored.dump_queue(q)) == q
    q["extra"] = 1
    assert stored.load_queue(stored.dump_queue(q)) == q


def test_the_rules_fields_are_one_of_the_stored_shapes():
    """A field added to a queue (or a structure's queue) must come with a new shape id in ``state``, or
    every queue would quietly go back to being stored with its names."""
    from qmon.core.queues import MQ_DEFAULTS, QueueState
    from qmon.core.structures import StructureQueueState

    shapes = set(stored.QUEUE_SHAPES.values())
    assert tuple(QueueState.__annotations__) in shapes
    assert tuple(StructureQueueState.__annotations__) in shapes
    assert tuple(MQ_DEFAULTS) == stored.ATTRS_SHAPE


#: The shapes as stored values use them: an id read back under other names would misread every queue stored
#: with it, and a longer shape would refuse them.  Never edit these; add a shape (and a line here) instead.
FROZEN_SHAPES = {
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
    ),
    2: ("msgs", "el", "ovf", "rej", "fifo"),
    3: (
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
        "fc",
    ),
    4: (
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
        "fc",
        "unseen",
        "puts",
        "lput",
        "lget",
    ),
    5: (
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
        "fc",
        "unseen",
        "puts",
        "lput",
        "lget",
        "by",
    ),
}
FROZEN_ATTRS = ("QSVCIEV", "QSVCINT", "MAXDEPTH", "QDEPTHHI", "QDEPTHLO", "QDPHIEV", "QDPLOEV", "QDPMAXEV")


def test_a_shape_id_once_stored_keeps_its_fields():
    for sid, fields in FROZEN_SHAPES.items():
        assert stored.QUEUE_SHAPES[sid] == fields, f"shape {sid} was changed: add a new shape id instead"
    assert stored.ATTRS_SHAPE == FROZEN_ATTRS


def test_values_stored_by_position_read_back():
    """Bytes as this version writes them (golden values): every later version must read them so."""
    queue = "9d0103c0c098a44849474850cd13885014c2c2c2c2cd03e8030300cd03eac0c0"
    assert stored.load_queue(bytes.fromhex(queue)) == {
        "depth": 3,
        "svc_timer_start": None,
        "svc_timer_clock": None,
        "attrs": {
            "QSVCIEV": "HIGH",
            "QSVCINT": 80,
            "MAXDEPTH": 5000,
            "QDEPTHHI": 80,
            "QDEPTHLO": 20,
            "QDPHIEV": False,
            "QDPLOEV": False,
            "QDPMAXEV": False,
        },
        "defined": False,
        "reset_ts": 1000,
        "high_depth": 3,
        "enq": 3,
        "deq": 0,
        "last_ts": 1002,
        "stall_alert_id": None,
        "stall_ok": None,
    }
    share = {"msgs": 5, "el": 7, "ovf": False, "rej": True, "fifo": [[1, 5, 2]]}
    assert stored.load_queue(bytes.fromhex("96020507c2c39193010502")) == share
    # a queue with its forecast's samples (shape 3): three puts 30 s apart, two samples taken
    queue = (
        "9e0303cf0000018bcfe58f10cf0000018bcfe58f1098a44e4f4e45ce3b9ac9ffcd13885014c2c2c2c2cf0000018bcfe58f10030300cf"
        "0000018bcfe67970c0c084a26174cf0000018bcfe6eea0a473746570cd7530a17391920102a26f6e80"
    )
    t0 = 1_700_000_010_000
    assert stored.load_queue(bytes.fromhex(queue)) == {
        "depth": 3,
        "svc_timer_start": t0,
        "svc_timer_clock": t0,
        "attrs": {
            "QSVCIEV": "NONE",
            "QSVCINT": 999_999_999,
            "MAXDEPTH": 5000,
            "QDEPTHHI": 80,
            "QDEPTHLO": 20,
            "QDPHIEV": False,
            "QDPLOEV": False,
            "QDPMAXEV": False,
        },
        "defined": False,
        "reset_ts": t0,
        "high_depth": 3,
        "enq": 3,
        "deq": 0,
        "last_ts": t0 + 60_000,
        "stall_alert_id": None,
        "stall_ok": None,
        "fc": {"at": t0 + 90_000, "step": 30_000, "s": [[1, 2]], "on": {}},
    }
    # a queue with its messages' put times and its last put and get (shape 4): qmon's first record of it a get
    # that left 1 message (its put unseen), then puts at 1 s, 1 s and 2.5 s
    queue = (
        "dc00120404cf0000018bcfe58f10cf0000018bcfe58f1098a44e4f4e45ce3b9ac9ffcd13885014c2c2c2c2cf0000018bcfe58f10040301"
        "cf0000018bcfe598d4c0c084a26174cf0000018bcfe60440a473746570cd7530a1739190a26f6e800197cf0000018bcfe598d402000001"
        "cd05dc00cf0000018bcfe598d4cf0000018bcfe58f10"
    )
    assert stored.load_queue(bytes.fromhex(queue)) == {
        "depth": 4,
        "svc_timer_start": t0,
        "svc_timer_clock": t0,
        "attrs": {
            "QSVCIEV": "NONE",
            "QSVCINT": 999_999_999,
            "MAXDEPTH": 5000,
            "QDEPTHHI": 80,
            "QDEPTHLO": 20,
            "QDPHIEV": False,
            "QDPLOEV": False,
            "QDPMAXEV": False,
        },
        "defined": False,
        "reset_ts": t0,
        "high_depth": 4,
        "enq": 3,
        "deq": 1,
        "last_ts": t0 + 2_500,
        "stall_alert_id": None,
        "stall_ok": None,
        "fc": {"at": t0 + 30_000, "step": 30_000, "s": [[]], "on": {}},
        "unseen": 1,
        "puts": [t0 + 2_500, 2, 0, 0, 1, 1_500, 0],  # (2 at 1 s, 1 at 2.5 s)
        "lput": t0 + 2_500,
        "lget": t0,
    }
    # a shared queue in its queue-sharing group's shard (shape 5): puts on QM1 at 0 s and 1 s, a get on QM2 at
    # 1.5 s, forecasts off
    queue = (
        "dc00130501cf0000018bcfe594eccf0000018bcfe594ec98a44e4f4e45ce3b9ac9ffcd13885014c2c2c2c2cf0000018bcfe58f10020201"
        "cf0000018bcfe594ecc0c0c00094cf0000018bcfe592f8010000cf0000018bcfe592f8cf0000018bcfe594eca3514d32"
    )
    assert stored.load_queue(bytes.fromhex(queue)) == {
        "depth": 1,
        "svc_timer_start": t0 + 1_500,
        "svc_timer_clock": t0 + 1_500,
        "attrs": {
            "QSVCIEV": "NONE",
            "QSVCINT": 999_999_999,
            "MAXDEPTH": 5000,
            "QDEPTHHI": 80,
            "QDEPTHLO": 20,
            "QDPHIEV": False,
            "QDPLOEV": False,
            "QDPMAXEV": False,
        },
        "defined": False,
        "reset_ts": t0,
        "high_depth": 2,
        "enq": 2,
        "deq": 1,
        "last_ts": t0 + 1_500,
        "stall_alert_id": None,
        "stall_ok": None,
        "fc": None,
        "unseen": 0,
        "puts": [t0 + 1_000, 1, 0, 0],
        "lput": t0 + 1_000,
        "lget": t0 + 1_500,
        "by": "QM2",
    }


def test_a_shared_queue_and_its_members_perfmev_survive_a_restart():
    """A queue-sharing group's shard as a restarted job loads it: each shared queue by position (shape 5) with the
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
    assert stored.loads(blob)["queues"]["PAY.IN"][:4] == bytes.fromhex("dc001305")  # shape 5, by position
    again = QueueMonitor("QSG1", settings, stored.loads(blob), stored.load_queue)
    assert again.state["member_perfmev"] == {"QM1": "ENABLED"} and again.queues["PAY.IN"]["by"] == "QM2"
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
    assert stored.loads(blob)["queues"]["PAYROLL.IN"][:4] == bytes.fromhex("dc001204")  # shape 4, by position
    again = QueueMonitor("QM1", mon.settings, stored.loads(blob), stored.load_queue)
    q = again.queues["PAYROLL.IN"]
    assert (q["unseen"], q["puts"], q["lput"], q["lget"]) == (1, [3_000, 1, 0, 0, 1, 1_000, 0], 3_000, 1_000)
    assert oldest_put(q) is None
    again.on_activity(Activity("g2", "QM1", "PAYROLL.IN", "GET", 4_000))  # takes the unseen message
    assert (oldest_put(q), q["lget"]) == (2_000, 4_000)


def test_a_list_that_is_no_stored_shape_is_refused():
    with pytest.raises(stored.StoredStateError):
        stored.load_queue(msgpack.packb([[1], 1]))  # (not a shape id)
    with pytest.raises(stored.StoredStateError):
        stored.load_queue(msgpack.packb([1, *range(3), [1, 2], *range(9)]))  # attrs of 2 values


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
