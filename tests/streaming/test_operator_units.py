"""The operator as ``applyInPandasWithState`` calls it, without a query: PySpark's own ``GroupState`` carried from
call to call the way Spark carries it (value, timeout, watermark).  What the adapter adds: loading and storing
state, one event-time timeout per group at the unit's next deadline, deadlines already reached run in the same
call, TTL expiry, and rows it must not touch.  The rules themselves are tested on the pure modules."""

from __future__ import annotations

from typing import Any

import msgpack
import pandas as pd
import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

from qmon.connectors import avro
from qmon.core import topics
from qmon.core.event_order import NO_TIME
from qmon.core.queues import MonitorSettings
from qmon.core.structures import StructureSettings
from qmon.core.timeconv import to_ms
from qmon.streaming import state as stored
from qmon.streaming.operators import UnitOperator
from qmon.streaming.rows import LATE, ROUTED, STATE
from qmon.streaming.unit_slot import UnitSlot
from qmon.streaming.unit_step import _joined, sorted_input
from tests.streaming.routed import command, decoded, frame, put, row

KEY = ("Q", "", 0)  # a group of queue-manager shards: (unit, unit_name, bucket)


class Groups:
    """What Spark keeps for each group between calls: its value and its timeout; the watermark is the batch's."""

    def __init__(self, ttl_ms: int = 0, settings: MonitorSettings | None = None) -> None:
        self.monitor = UnitOperator(settings or MonitorSettings(), StructureSettings(), ttl_ms)
        self.values: dict[Any, tuple[Any, ...]] = {}
        self.timeouts: dict[Any, int] = {}
        self.watermark = 0

    def _call(self, key: Any, frames: list[pd.DataFrame], timed_out: bool) -> pd.DataFrame:
        value = self.values.get(key)
        state = GroupState(
            optionalValue=value,  # type: ignore[arg-type]  # (a Row; a tuple reads the same)
            batchProcessingTimeMs=0,
            eventTimeWatermarkMs=self.watermark,
            timeoutConf=GroupStateTimeout.EventTimeTimeout,
            hasTimedOut=timed_out,
            watermarkPresent=True,
            defined=value is not None,
            updated=False,
            removed=False,
            timeoutTimestamp=GroupState.NO_TIMESTAMP,  # Spark clears it for every call: set again or gone
            keyAsUnsafe=b"",
            valueSchema=STATE,
        )
        out = list(self.monitor(key, iter(frames), state))
        if state.exists:
            self.values[key] = state.get
        if state._timeout_timestamp != GroupState.NO_TIMESTAMP:  # what Spark stores after the call
            self.timeouts[key] = state._timeout_timestamp
        else:
            self.timeouts.pop(key, None)
        return pd.concat(out, ignore_index=True) if out else pd.DataFrame()

    def rows(self, key: Any, pdf: pd.DataFrame) -> pd.DataFrame:
        return self._call(key, [pdf], False)

    def advance(self, watermark: int) -> pd.DataFrame:
        """A batch without rows that moves the watermark: groups whose timeout it passed are called."""
        self.watermark = watermark
        due = [k for k, at in self.timeouts.items() if at < watermark]
        outs = [self._call(k, [], True) for k in due]
        outs = [o for o in outs if not o.empty]
        return pd.concat(outs, ignore_index=True) if outs else pd.DataFrame()

    def group(self, key: Any = KEY) -> stored.QueueUnitState:
        return stored.load_queue_unit(UnitSlot.unit_value(self.values[key][0]))

    def shard(self, key: Any = KEY, qmgr: str = "QM1", shard: int = 0) -> dict[str, Any]:
        return stored.loads(self.group(key)["shards"][qmgr][str(shard)])


def test_one_timeout_at_the_stall_deadline_fires_and_is_cleared():
    g = Groups()
    out = g.rows(
        KEY,
        frame(
            command(1, "ALTER QMGR PERFMEV(ENABLED)", 1),
            command(1, "ALTER QLOCAL(PAY.IN) QSVCIEV(HIGH) QSVCINT(1000)", 2),
            put(5_000, "PAY.IN", 3),
        ),
    )
    assert [r["ok"] for topic, r in decoded(out) if topic == topics.REPLIES] == [True, True]
    # the put's clock + QSVCINT + 1 is due when the watermark reaches it: Spark times out strictly after
    assert g.timeouts[KEY] == 6_000
    assert decoded(g.advance(6_000)) == []  # not yet
    fired = decoded(g.advance(6_001))
    assert [(r["type"], r["state"], to_ms(r["ts"])) for _, r in fired] == [("QUEUE_STALLED", "FIRING", 6_000)]
    assert KEY not in g.timeouts  # the stall fired: nothing else is due


def test_the_timeout_moves_to_the_earliest_deadline_and_goes_when_nothing_is_watched():
    g = Groups()
    g.rows(
        KEY,
        frame(
            command(1, "ALTER QMGR PERFMEV(ENABLED)", 1),
            command(1, "ALTER QLOCAL(A) QSVCIEV(HIGH) QSVCINT(5000)", 2),
            command(1, "ALTER QLOCAL(B) QSVCIEV(HIGH) QSVCINT(1000)", 3),
            put(1_000, "A", 4),
        ),
    )
    assert g.timeouts[KEY] == 6_000
    g.rows(KEY, frame(put(2_000, "B", 5)))
    assert g.timeouts[KEY] == 3_000  # B's deadline comes first
    get_a = row("A", 2_500, seq=6, event_id="g6", queue="A", op="GET")
    get_b = row("A", 2_600, seq=7, event_id="g7", queue="B", op="GET")
    g.rows(KEY, frame(get_a, get_b))  # both emptied: nothing left to watch
    assert KEY not in g.timeouts


def test_a_deadline_the_watermark_already_passed_fires_in_the_same_call():
    """A group with rows is not timed out in that batch, and Spark refuses a timeout behind the watermark:
    the stall the watermark has already reached is raised with the rows' own outputs."""
    g = Groups()
    g.rows(
        KEY,
        frame(
            command(1, "ALTER QMGR PERFMEV(ENABLED)", 1),
            command(1, "ALTER QLOCAL(A) QSVCIEV(HIGH) QSVCINT(1000)", 2),
            put(1_000, "A", 3),
        ),
    )
    g.watermark = 9_000  # the batch's watermark is long past A's deadline (2,001)
    out = decoded(g.rows(KEY, frame(put(9_500, "B", 4))))
    assert [(r["type"], r["state"], r["queue"]) for t, r in out if t == topics.ALERTS] == [
        ("QUEUE_STALLED", "FIRING", "A")
    ]
    assert KEY not in g.timeouts


def test_idle_empty_queues_expire_after_the_ttl_and_queues_with_messages_stay():
    g = Groups(ttl_ms=10_000)
    g.rows(
        KEY,
        frame(put(1, "FULL.Q", 1), put(1, "EMPTY.Q", 2), row("A", 2, seq=3, event_id="g3", queue="EMPTY.Q", op="GET")),
    )
    g.rows(KEY, frame(put(20_000, "NEW.Q", 4)))
    assert set(g.shard()["queues"]) == {"FULL.Q", "NEW.Q"}


def test_dead_letters_and_error_replies_pass_through_untouched():
    g = Groups()
    value = b"\x00\x01 not Avro, and not to be decoded by the operator"
    passing = row("P", 7_000, seq=42, out_topic=topics.DLQ, out_key="k", out_value=value, rank=3)
    out = g.rows(KEY, frame(passing))
    assert list(out["topic"]) == [topics.DLQ] and bytes(out["value"][0]) == value
    assert (out["key"][0], out["order_ts"][0], out["order_seq"][0], out["order_idx"][0]) == ("k", 7_000, 42, 3)
    assert KEY not in g.values  # a batch of pass-through rows loads and stores no state


def test_a_snapshot_now_then_the_unit_timer_brings_the_next_one():
    """monitor.snapshot_interval: the first change is published with the batch; a change within the interval
    sets the group's timeout at the next snapshot, which the timed-out call publishes."""
    g = Groups(settings=MonitorSettings(snapshot_interval_ms=10_000))
    first = [r for t, r in decoded(g.rows(KEY, frame(put(1_000, "A", 1)))) if t == topics.SNAPSHOT]
    assert [(q["queue"], q["depth"]) for q in first[0]["queues"]] == [("A", 1)]
    assert KEY not in g.timeouts  # nothing waits
    assert decoded(g.rows(KEY, frame(put(2_000, "B", 2)))) == []
    assert g.timeouts[KEY] == 10_999  # the next snapshot is due at 11,000
    late = [r for t, r in decoded(g.advance(11_000)) if t == topics.SNAPSHOT]
    assert [(q["queue"], q["depth"]) for q in late[0]["queues"]] == [("B", 1)]
    assert KEY not in g.timeouts


def _through_arrow(pdf: pd.DataFrame) -> pd.DataFrame:
    """A frame as PySpark hands it to the operator: through Arrow with the routed schema (a long column with
    nulls becomes float64, one without stays int64; strings and bytes become objects)."""
    return pa.RecordBatch.from_pandas(pdf, schema=to_arrow_schema(ROUTED), preserve_index=False).to_pandas()


def test_a_key_in_several_arrow_batches_is_read_as_one_frame_in_order():
    """Spark hands a big group as several Arrow batches (``maxRecordsPerBatch`` rows each): joined column by
    column, a column null in one batch and not in another (depth_after, reply, payload) comes out as one
    frame would have it, in (ts, rank, arrival) order; the outputs are those of one frame."""
    rows = [
        command(1, "ALTER QMGR PERFMEV(ENABLED)", 1),
        command(1, "ALTER QLOCAL(A) QDEPTHHI(2) QDEPTHHEV(ENABLED) MAXDEPTH(10)", 2),
        put(3_000, "A", 5),
        row("A", 2_000, seq=4, event_id="d4", queue="A", op="PUT", depth_after=1, msg_bytes=10),
        put(3_000, "A", 3),  # same ts as seq 5, earlier offset: first
        row("A", 4_000, seq=6, event_id="g6", queue="A", op="GET", reason=2033),
    ]
    batches = [_through_arrow(frame(*part)) for part in (rows[:2], rows[2:3], rows[3:4], rows[4:])]
    assert {str(b["depth_after"].dtype) for b in batches} == {"float64", "int64"}  # (they do differ)
    whole = _through_arrow(frame(*rows))
    joined = sorted_input(iter(batches))
    assert list(joined["src_offset"]) == [1, 2, 4, 3, 5, 6]
    pd.testing.assert_frame_equal(joined.reset_index(drop=True), sorted_input(iter([whole])).reset_index(drop=True))
    assert decoded(Groups()._call(KEY, batches, False)) == decoded(Groups().rows(KEY, whole))


def test_batches_with_nullable_integer_columns_join_as_pandas_would():
    """With PySpark's nullable integer dtypes (``Int64``, an extension array) a column is joined by pandas."""
    a = _through_arrow(frame(put(1, "A", 1), row("A", 2, seq=2, event_id="d2", queue="A", op="PUT", depth_after=4)))
    b = _through_arrow(frame(put(3, "A", 3)))
    for f in (a, b):
        f["depth_after"] = f["depth_after"].astype("Int64")
    joined = _joined(iter([a, b]))
    assert str(joined["depth_after"].dtype) == "Int64"
    pd.testing.assert_frame_equal(joined, pd.concat([a, b], ignore_index=True))
    # sorted too, the extension column by pandas: batches out of order come back in (ts, ...) order
    ordered = sorted_input(iter([b, a]))
    assert str(ordered["depth_after"].dtype) == "Int64" and list(ordered["ts"]) == sorted(ordered["ts"])
    pd.testing.assert_frame_equal(ordered, pd.concat([a, b], ignore_index=True))


def _on(rec: dict[str, Any], qmgr: str, shard: int) -> dict[str, Any]:
    return {**rec, "qmgr": qmgr, "shard": shard}


def _watched(qmgr: str, shard: int, queue: str, qsvcint: int, seq: int) -> list[dict[str, Any]]:
    return [
        _on(command(1, "ALTER QMGR PERFMEV(ENABLED)", seq), qmgr, shard),
        _on(command(1, f"ALTER QLOCAL({queue}) QSVCIEV(HIGH) QSVCINT({qsvcint})", seq + 1), qmgr, shard),
    ]


def test_a_group_holds_several_queue_managers_shards_each_under_its_own_rules():
    """The shards of several queue managers in one key give the outputs and the states each shard gives alone:
    a queue of the same name on two queue managers, or in two shards, is two queues."""
    shards = [("QM1", 0), ("QM2", 0), ("QM1", 1)]
    rows = []
    for n, (qmgr, shard) in enumerate(shards):
        rows += _watched(qmgr, shard, "PAY.IN", 1000 * (n + 1), 10 * n + 1)
    for i in range(6):  # interleaved: each shard's puts and a get, in ts order across the group
        qmgr, shard = shards[i % 3]
        rows.append(_on(put(1_000 + 1_500 * i, "PAY.IN", 100 + i), qmgr, shard))
    rows.append(_on(row("A", 10_000, seq=200, event_id="g", queue="PAY.IN", op="GET"), "QM2", 0))
    together = Groups()
    mixed = decoded(together.rows(KEY, frame(*rows)))
    alone: list[Any] = []
    for qmgr, shard in shards:
        g = Groups()
        alone += decoded(g.rows(KEY, frame(*[r for r in rows if (r["qmgr"], r["shard"]) == (qmgr, shard)])))
        assert together.shard(qmgr=qmgr, shard=shard) == g.shard(qmgr=qmgr, shard=shard)
    assert sorted(map(repr, mixed)) == sorted(map(repr, alone))
    assert len({r["qmgr"] for t, r in mixed if t == topics.PERFORMANCE and r["type"] == "QSVCINT_HIGH"}) == 2
    assert set(together.group()["shards"]) == {"QM1", "QM2"} and set(together.group()["shards"]["QM1"]) == {"0", "1"}


def test_the_group_times_out_at_its_earliest_shard_and_only_due_shards_run_or_change():
    g = Groups()
    rows = _watched("QM1", 0, "A", 1000, 1) + _watched("QM2", 3, "B", 5000, 3)
    g.rows(KEY, frame(*rows, _on(put(1_000, "A", 5), "QM1", 0), _on(put(1_000, "B", 6), "QM2", 3)))
    assert g.timeouts[KEY] == 2_000  # QM1's A first (due 2,001)
    assert g.group()["due"] == {"QM1": {"0": 2_001}, "QM2": {"3": 6_001}}
    qm2_before = g.group()["shards"]["QM2"]["3"]
    fired = decoded(g.advance(2_001))
    assert [(r["type"], r["qmgr"], r["queue"]) for _, r in fired] == [("QUEUE_STALLED", "QM1", "A")]
    assert g.group()["shards"]["QM2"]["3"] == qm2_before  # not due: its stored value untouched, byte for byte
    assert g.timeouts[KEY] == 6_000
    assert [r["qmgr"] for _, r in decoded(g.advance(6_001))] == ["QM2"]
    assert KEY not in g.timeouts and g.group()["due"] == {}


def test_a_shard_without_rows_whose_deadline_passed_fires_with_the_groups_rows():
    """A key with rows is not timed out in that batch: a deadline of another of its shards that the watermark
    has reached runs in the same call, as Spark's timeout of that shard alone would have."""
    g = Groups()
    g.rows(KEY, frame(*_watched("QM1", 0, "A", 1000, 1), _on(put(1_000, "A", 3), "QM1", 0)))
    g.watermark = 9_000
    out = decoded(g.rows(KEY, frame(_on(put(9_500, "Z", 4), "QM2", 1))))
    assert [(r["type"], r["qmgr"], r["queue"]) for t, r in out if t == topics.ALERTS] == [("QUEUE_STALLED", "QM1", "A")]
    assert KEY not in g.timeouts


def test_a_groups_rows_are_cut_by_shard_in_order_whether_sorted_by_shard_or_not():
    from qmon.streaming.unit_step import by_shard

    rows = [_on(put(100 * i, f"Q{i % 3}", i), f"QM{i % 2}", i % 3) for i in range(12)]
    interleaved = _through_arrow(frame(*rows))
    by_ts = [(k, list(p["src_offset"])) for k, p in by_shard(sorted_input(iter([interleaved])))]
    cut = [(k, list(p["src_offset"])) for k, p in by_shard(sorted_input(iter([interleaved]), shards=True))]
    assert cut == by_ts  # (the first: each shard's rows copied out; the second: slices of the sorted frame)
    assert [k for k, _ in cut] == sorted(k for k, _ in cut) and len(cut) == 6
    assert all(offsets == sorted(offsets) for _, offsets in cut)


def test_a_group_whose_batch_brings_only_dead_letters_keeps_its_timeout_and_fires_on_time():
    """Spark clears a key's timeout at every call: a batch whose only rows for a group are passed through (a dead
    letter, an invalid command's reply) must set it again, or the group's stalls wait for its next activity."""
    g = Groups()
    g.rows(KEY, frame(*_watched("QM1", 0, "A", 1000, 1), _on(put(1_000, "A", 3), "QM1", 0)))
    assert g.timeouts[KEY] == 2_000
    g.watermark = 1_500
    passing = row("P", 1_500, seq=42, out_topic=topics.DLQ, out_key="k", out_value=b"x", rank=0)
    out = g.rows(KEY, frame(passing))
    assert list(out["topic"]) == [topics.DLQ]
    assert g.timeouts[KEY] == 2_000  # set again
    fired = decoded(g.advance(2_001))
    assert [(r["type"], r["qmgr"], r["queue"]) for _, r in fired] == [("QUEUE_STALLED", "QM1", "A")]


def test_a_queue_sharing_groups_shard_takes_every_members_rows_and_names_each_member():
    """Rows routed to a queue-sharing group's shard (``qsg``): its members' puts, gets and commands, of shared queues
    and of their own: the outputs are the pure reference's, each record naming its member, the shared queues
    kept under the group's name and each member's own beside them under the member's."""
    from qmon.core.reference import run_reference
    from qmon.core.sharing import QueueSharingGroup, Sharing

    sharing = Sharing((QueueSharingGroup("QSG1", ("QM1", "QM2"), ("PAY.*",)),))
    settings = MonitorSettings(sharing=sharing)
    records = [
        {"ts": 1, "qmgr": "QM1", "command": "ALTER QMGR PERFMEV(ENABLED)", "command_id": "c1"},
        {"ts": 1, "qmgr": "QM2", "command": "ALTER QMGR PERFMEV(ENABLED)", "command_id": "c2"},
        {"ts": 1, "qmgr": "QM2", "command": "ALTER QLOCAL(PAY.IN) QSVCIEV(HIGH) QSVCINT(1000)", "command_id": "c3"},
        {"ts": 1, "qmgr": "QM1", "command": "ALTER QLOCAL(ORDERS) QSVCIEV(HIGH) QSVCINT(1000)", "command_id": "c4"},
    ]
    for i, (qmgr, queue, op, ts) in enumerate(
        [
            ("QM1", "PAY.IN", "PUT", 1_000),
            ("QM1", "ORDERS", "PUT", 1_000),
            ("QM1", "PAY.IN", "PUT", 1_500),
            ("QM2", "PAY.IN", "GET", 2_600),  # 1.6 s: High, raised by QM2
            ("QM1", "ORDERS", "PUT", 2_700),  # QM1's own: High
            ("QM2", "PAY.IN", "GET", 2_800),
        ]
    ):
        records.append({"ts": ts, "qmgr": qmgr, "queue": queue, "op": op, "event_id": f"e{i}"})
    rows = []
    for seq, r in enumerate(records, start=1):  # (every member's row to the group's shard)
        if "command" in r:
            rows.append(
                {**command(r["ts"], r["command"], seq), "qmgr": r["qmgr"], "event_id": r["command_id"], "qsg": "QSG1"}
            )
        else:
            fields = {k: r[k] for k in ("qmgr", "queue", "op", "event_id")}
            rows.append({**row("A", r["ts"], seq=seq), **fields, "qsg": "QSG1"})
    g = Groups(settings=settings)
    got = decoded(g.rows(KEY, frame(*rows)))
    want = [
        (e.topic, avro.decode(topics.RECORD_OF[e.topic], avro.encode(topics.RECORD_OF[e.topic], e.record)))
        for e in run_reference(records, settings)
    ]
    assert sorted(map(repr, got)) == sorted(map(repr, want))
    perf = [(r["type"], r["qmgr"], r["qsg"], r["queue"]) for t, r in got if t == topics.PERFORMANCE]
    assert sorted(perf) == [
        ("QSVCINT_HIGH", "QM1", None, "ORDERS"),
        ("QSVCINT_HIGH", "QM2", "QSG1", "PAY.IN"),
        ("QSVCINT_OK", "QM2", "QSG1", "PAY.IN"),  # 0.2 s after the High's get
    ]
    assert set(g.group()["shards"]) == {"QM1", "QM2", "QSG1"}  # (QM1's own ORDERS; QM2's own: its ALTER QMGR)
    assert list(g.shard(qmgr="QM1")["queues"]) == ["ORDERS"]
    shared = g.shard(qmgr="QSG1")
    assert shared["member_perfmev"] == {"QM1": "ENABLED", "QM2": "ENABLED"}
    assert stored.load_queue(shared["queues"]["PAY.IN"])["member"] == "QM2"


# ---------------------------------------------------------------- event-time order across partitions


def depth(g: Groups, queue: str) -> int:
    return stored.load_queue(g.shard()["queues"][queue])["depth"]


def mark(ts: int, partition: int = 0) -> dict[str, Any]:
    """A mark for the group (``streaming.event_order``): a hand saw ``partition`` read up to ``ts``."""
    return row("F", ts, seq=0, rank=0, shard=None, qmgr=None, src_topic=0, src_partition=partition)


def test_records_past_the_frontier_wait_and_a_batch_without_data_releases_them():
    """Partition 0 read up to 3,000 and partition 1 up to 2,000: the frontier is 2,000, and the records at or
    past it wait (one at the frontier may still have a record of the same ts before it on the slowest
    partition).  The next batch's frontier (partition 1 read past them) releases them, in ts order with that
    batch's records; a batch without data releases whatever waits."""
    settings = MonitorSettings(perfmev="ENABLED")
    g = Groups(settings=settings)
    first = [put(1_000, "A", 1), put(3_000, "A", 2), row("A", 2_000, seq=1, event_id="b1", queue="B", op="PUT",
             msg_bytes=1, src_partition=1)]  # fmt: skip
    g.rows(KEY, frame(*first, mark(3_000, 0), mark(1_500, 1), mark(2_000, 1)))  # (two hands saw partition 1)
    held = msgpack.unpackb(g.values[KEY][0], raw=False)["order"]
    assert held["frontier"] == 2_000 and held["held"]["ts"] == [2_000, 3_000]
    assert g.timeouts[KEY] == max(g.watermark, 1)  # (timed out at the next batch whose watermark moves)
    assert depth(g, "A") == 1  # the put at 3,000 not applied yet
    g.rows(KEY, frame(row("A", 2_500, seq=2, event_id="b2", queue="B", op="PUT", msg_bytes=1, src_partition=1),
                      row("A", 4_000, seq=3, event_id="b3", queue="B", op="PUT", msg_bytes=1, src_partition=1),
                      mark(4_000)))  # fmt: skip
    assert depth(g, "A") == 2 and depth(g, "B") == 2
    assert msgpack.unpackb(g.values[KEY][0], raw=False)["order"]["held"]["ts"] == [4_000]
    g.advance(10)  # a batch without data: every partition at its end
    assert depth(g, "B") == 3
    assert "held" not in msgpack.unpackb(g.values[KEY][0], raw=False)["order"]


def test_a_record_behind_the_frontier_reached_is_applied_at_once_and_counted():
    g = Groups()
    g.rows(KEY, frame(put(5_000, "A", 1), mark(6_000)))
    out = g.rows(KEY, frame(put(1_000, "B", 2), mark(7_000)))
    assert list(out.loc[out["topic"] == LATE, "order_seq"]) == [1]
    assert depth(g, "B") == 1


def test_held_records_join_a_later_batchs_rows_as_spark_hands_them_over():
    """Spark's frames also carry the watermarked column (a timestamp) and pass-through rows: held records
    (kept without them) join such a frame, and the pass-through rows go out at once."""
    from qmon.streaming.rows import HORIZON

    def spark_frame(*rows: dict[str, Any]) -> pd.DataFrame:
        pdf = frame(*rows)
        pdf[HORIZON] = pd.to_datetime(pdf["ts"], unit="ms", utc=True)
        return pdf

    g = Groups(settings=MonitorSettings(perfmev="ENABLED"))
    g.rows(KEY, spark_frame(put(3_000, "A", 1), mark(2_000)))
    dead = row("P", 2_500, seq=9, out_topic=topics.DLQ, out_key="k", out_value=b"v", rank=0)
    out = g.rows(KEY, spark_frame(put(4_000, "A", 2), dead, mark(5_000)))
    assert list(out["topic"]) == [topics.DLQ]
    assert depth(g, "A") == 2


def test_the_end_of_the_input_applies_what_waits_publishes_its_snapshot_and_order_goes_on_after_it():
    """A batch whose only mark is the end of the input's (``NO_TIME``) applies every record held and takes the
    snapshot that was waiting for its interval (no later batch moves the arrival clock to it); the frontier
    stays where the records got, so a later run's records are ordered again, none counted late."""
    g = Groups(settings=MonitorSettings(snapshot_interval_ms=10_000))
    g.rows(KEY, frame(put(1_000, "A", 1), put(2_000, "A", 2), mark(2_000)))  # the put at 2,000 waits
    assert depth(g, "A") == 1
    out = decoded(g.rows(KEY, frame(mark(NO_TIME, 1))))
    assert depth(g, "A") == 2
    assert [[(q["queue"], q["depth"]) for q in r["queues"]] for t, r in out if t == topics.SNAPSHOT] == [[("A", 2)]]
    assert "held" not in msgpack.unpackb(g.values[KEY][0], raw=False)["order"]
    later = g.rows(KEY, frame(put(3_000, "A", 3), put(4_000, "A", 4), mark(4_000)))
    assert LATE not in set(later.get("topic", []))
    assert depth(g, "A") == 3  # the put at 4,000 waits again
