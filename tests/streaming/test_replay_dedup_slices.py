"""The duplicate check through the real Spark query (``qmon replay``): the step ahead of the monitor
(``streaming.dedup``) keeps the first copy of each record, and the monitor's outputs are then exactly the pure
module's over the records kept."""

from __future__ import annotations

import json
import os
import random

import pytest

from qmon.connectors import avro
from qmon.core import topics
from qmon.core.config import Config
from qmon.core.dedup import SliceIds, slice_of
from qmon.core.queues import MonitorSettings
from qmon.core.reference import run_reference
from tests.streams import random_stream

pytestmark = pytest.mark.spark


def first_copies(records: list[dict]) -> list[dict]:
    """The step's rule over a file, one record at a time: activity in (ts, file position) order, a
    ``SliceIds`` per slice of ts."""
    slices: dict[int, SliceIds] = {}
    dropped = set()
    for i in sorted(range(len(records)), key=lambda i: (records[i]["ts"], i)):
        r = records[i]
        if "op" not in r:
            continue
        ids = slices.setdefault(slice_of(r["ts"]), SliceIds())
        if ids.seen((r["qmgr"], r["queue"], r["event_id"])):
            dropped.add(i)
    return [r for i, r in enumerate(records) if i not in dropped]


def _normalise(topic, record):
    data = avro.encode(topics.RECORD_OF[topic], record)
    return json.dumps({"topic": topic, **avro.to_jsonable(avro.decode(topics.RECORD_OF[topic], data))}, sort_keys=True)


def test_slice_step_keeps_first_copies_and_the_monitor_equals_the_pure_module(replay_factory):
    rng = random.Random(20261126)
    records: list[dict] = []
    for i in range(30):
        stream = random_stream(rng, f"QM{i:02d}", n=rng.randint(10, 60))
        for j in rng.sample(range(len(stream)), k=len(stream) // 8):  # redeliveries: exact copies, later
            if "op" in stream[j]:
                stream.insert(rng.randint(j + 1, len(stream)), dict(stream[j]))
        records.extend(stream)
    kept = first_copies(records)
    assert len(records) - len(kept) > 30  # the copies are there to be dropped
    config = Config.model_validate({"job": {"queue_shards": 3}})
    out = replay_factory(records, config)
    got = sorted(
        json.dumps(dict(r), sort_keys=True)
        for r in out
        if r["topic"] in (topics.PERFORMANCE, topics.ALERTS, topics.REPLIES, topics.NOTIFY)
    )
    final_clock = max(r["ts"] for r in records)
    want = sorted(
        _normalise(e.topic, e.record) for e in run_reference(kept, MonitorSettings(), final_clock=final_clock)
    )
    assert len(got) == len(want) and got == want
    assert sum(1 for r in out if r["topic"] == topics.PERFORMANCE) > 20  # the streams do exercise the rules


def test_the_step_keeps_the_monitors_first_copy_whatever_the_input_order_and_chunks(spark, tmp_path):
    """The step keeps the monitor's first copy of each record (ts, rank, partition, offset), one verdict for its
    queue and its structure: even when the input does not come in that order (shuffled here), when other
    records of the same ts come between a record's copies, when a later copy names another structure, and
    when a key's rows span many chunks (chunks of 7 rows).  A copy with a ts in another slice is a record
    of that slice."""
    from pyspark.sql import functions as F

    from qmon.streaming.dedup import dedup_step
    from qmon.streaming.rows import ROUTED, ROUTED_COLUMNS, Kind

    rng = random.Random(7)
    base = dict.fromkeys(ROUTED_COLUMNS)
    rows, offsets = [], {0: 0, 1: 0}
    for i in range(120):
        ts = 1_000 + i // 30  # 30 records a ts: a record's two copies have others between them
        queue = f"Q{rng.randrange(4)}"
        copies = [1, 0] if i % 3 else [1]  # every record from partition 1 first; two in three again from 0
        for part in copies:
            offsets[part] += 1
            rows.append(
                base
                | dict(
                    kind=Kind.ACTIVITY.value,
                    qmgr="QM1",
                    queue=queue,
                    event_id=f"e{i}",
                    op="PUT",
                    ts=ts,
                    rank=1,
                    src_partition=part,
                    src_offset=offsets[part] + rng.randrange(3) * 1000,
                    structure="S2" if part == 1 and i % 5 == 0 else "S1",  # (a later copy naming another)
                )
            )
    rows.append(base | dict(kind=Kind.JOURNAL.value, qmgr="QM1", ts=1_000, rank=0, src_partition=0, src_offset=1))
    for ts, offset in ((9_999, 900), (10_000, 901), (10_000, 902)):  # slice 0 once, slice 1 twice
        rows.append(
            base
            | dict(kind=Kind.ACTIVITY.value, qmgr="QM1", queue="Q9", event_id="x", op="PUT", ts=ts, rank=1)
            | dict(src_partition=0, src_offset=offset, structure="S1")
        )
    rng.shuffle(rows)  # the input's order is not the monitor's
    # (the copies sharing (ts, rank) are ordered by partition, then offset: the monitor's first is the lowest)
    want = {}
    for r in sorted(rows, key=lambda r: (r["ts"], r["rank"], r["src_partition"], r["src_offset"])):
        if r["kind"] == Kind.ACTIVITY.value:
            want.setdefault((r["event_id"], r["ts"] // 10_000), (r["src_partition"], r["src_offset"], r["structure"]))
    data = tmp_path / "routed"
    spark.createDataFrame(rows, ROUTED).coalesce(1).write.parquet(str(data))
    stream = spark.readStream.schema(ROUTED).parquet(str(data))
    stream = stream.withColumn("HORIZON", F.timestamp_millis(F.col("ts") + F.lit(10**12)))
    stream = stream.withWatermark("HORIZON", "0 seconds")
    got: list = []
    previous = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "7")
    try:
        query = (
            dedup_step(stream, 600_000, "HORIZON", 10**12)
            .writeStream.foreachBatch(lambda b, _i: got.extend(b.collect()))
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
    finally:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", previous)
    assert query.exception() is None
    activity = [r for r in got if r["kind"] == Kind.ACTIVITY.value]
    assert len(activity) == len(want) == 122
    kept = {(r["event_id"], r["ts"] // 10_000): (r["src_partition"], r["src_offset"], r["structure"]) for r in activity}
    assert kept == want
    assert {k: v for k, v in kept.items() if k[0] == "x"} == {("x", 0): (0, 900, "S1"), ("x", 1): (0, 901, "S1")}
    assert [r["kind"] for r in got if r["kind"] != Kind.ACTIVITY.value] == [Kind.JOURNAL.value]


def test_the_check_and_the_monitor_share_one_pool_of_python_workers(replay_factory):
    """Spark keeps a daemon and its workers per set of worker environment variables: with the session's
    settings, the check's ``transformWithStateInPandas`` and the monitor's ``applyInPandasWithState`` run in
    one pool (a second pool would be more workers, their memory, and a second daemon to start)."""
    records = [
        {"event_id": f"e{i % 5}", "qmgr": "QM1", "queue": "Q1", "op": "PUT", "ts": 1_000 + i, "depth_after": i}
        for i in range(10)
    ]
    replay_factory(records, Config())
    daemons = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:  # (a process may end while it is read)
            if b"pyspark.daemon" in _cmdline(int(pid)) and b"pyspark.daemon" not in _cmdline(_parent(int(pid))):
                daemons.append(int(pid))  # (a daemon's workers are forks of it: the same command line)
        except OSError:
            continue
    mine = [d for d in daemons if _descends_from(d, os.getpid())]
    assert len(mine) == 1, mine


def _cmdline(pid: int) -> bytes:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read()


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def _descends_from(pid: int, root: int) -> bool:
    try:
        while pid > 1:
            if pid == root:
                return True
            pid = _parent(pid)
    except OSError:
        pass
    return False
