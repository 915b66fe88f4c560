"""Event-time order at every batching, without Spark: the operator called as ``applyInPandasWithState`` calls it
(``Groups``), over random streams whose records share timestamps across the commands' and the activity's
partitions and across partitions of one topic, read in random micro-batches the way Spark's Kafka source
shares them out (every partition with records waiting gives at least one; a batch's marks split over several
hands), gives the pure rules' outputs, event ids included, and counts no record late."""

from __future__ import annotations

import random
import zlib
from typing import Any

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from qmon.connectors import avro
from qmon.core import topics
from qmon.core.dedup import slice_of
from qmon.core.event_order import NO_TIME
from qmon.core.mqsc import PART_MARK, parse_command, split_script
from qmon.core.queues import MonitorSettings
from qmon.core.reference import run_reference
from qmon.streaming.rows import LATE, ROUTED_COLUMNS
from tests.streaming.routed import row
from tests.streaming.test_operator_units import Groups
from tests.streams import streams

#: the shards of each queue manager (the job's ``queue_shards``)
BUCKETS = 2
#: the input topics' numbers in a routed row's ``src_topic``
ACTIVITY, CONTROL = 0, 1
#: what event time alone decides
COMPARED = (topics.PERFORMANCE, topics.REPLIES, topics.NOTIFY)


def _hash(text: str, n: int) -> int:
    return zlib.crc32(text.encode()) % n


def _routed(rec: dict[str, Any], partition: int, offset: int) -> list[dict[str, Any]]:
    """One input record's routed rows, as ``streaming.route.route`` makes them (one unit holds every shard)."""
    source = {"src_partition": partition, "src_offset": offset, "qmgr": rec["qmgr"], "clock": rec["ts"]}
    if "command" not in rec:
        fields = {k: rec.get(k) for k in ("event_id", "queue", "op", "depth_after", "msg_bytes", "reason")}
        shard = _hash(rec["queue"], BUCKETS)
        return [{**row("A", rec["ts"], seq=offset, src_topic=ACTIVITY, shard=shard, **fields), **source}]
    cmd = parse_command(split_script(rec["command"])[0])
    base = {"src_topic": CONTROL, "payload": rec["command"], "rank": 0, "queue": cmd.name, **source}
    if cmd.scope == "queue":
        shard = _hash(cmd.name or "", BUCKETS)
        return [{**row("C", rec["ts"], seq=offset, shard=shard, event_id=rec["command_id"], reply=True, **base)}]
    if cmd.scope in ("qmgr", "definition"):  # every shard: shard 0 replies, or the named queue's
        replying = _hash(cmd.name or "", BUCKETS) if cmd.scope == "definition" else 0
        return [
            {**row("C", rec["ts"], seq=offset, shard=b, event_id=rec["command_id"], reply=b == replying, **base)}
            for b in range(BUCKETS)
        ]
    part = [f"{rec['command_id']}{PART_MARK}{b + 1}/{BUCKETS}" for b in range(BUCKETS)]
    return [{**row("C", rec["ts"], seq=offset, shard=b, event_id=part[b], reply=True, **base)} for b in range(BUCKETS)]


def partitions(records: list[dict[str, Any]], n: int) -> dict[tuple[int, int], list[dict[str, Any]]]:
    """Each input partition's records in offset order: activity keyed by queue manager and queue, commands by
    queue manager, each partition in ``ts`` order (as producers keep it); the copies of a record the duplicate
    check drops ahead of the operator (``streaming.dedup``) left out."""
    out: dict[tuple[int, int], list[dict[str, Any]]] = {}
    seen: set[tuple[int, str, str, str]] = set()
    for rec in records:
        if "command" not in rec:
            copy = (slice_of(rec["ts"]), rec["qmgr"], rec["queue"], rec["event_id"])
            if copy in seen:
                continue
            seen.add(copy)
        if "command" in rec:
            where = (CONTROL, _hash(rec["qmgr"], n))
        else:
            where = (ACTIVITY, _hash(f"{rec['qmgr']}/{rec['queue']}", n))
        out.setdefault(where, []).append(rec)
    return out


def run_in_batches(
    records: list[dict[str, Any]], settings: MonitorSettings, n_partitions: int, rng: random.Random
) -> tuple[list[tuple[str, dict[str, Any]]], int]:
    """The operator over ``records`` read in random micro-batches to the end of the input: (its outputs, the
    records it counted late)."""
    parts = partitions(records, n_partitions)
    read = dict.fromkeys(parts, 0)
    groups = Groups(settings=settings)
    key = ("Q", "", 0)
    out: list[tuple[str, dict[str, Any]]] = []
    late = 0
    while any(read[p] < len(recs) for p, recs in parts.items()):
        rows: list[dict[str, Any]] = []
        marks: list[dict[str, Any]] = []
        for (topic, partition), recs in sorted(parts.items()):
            left = len(recs) - read[(topic, partition)]
            if not left:
                continue  # read to its end: nothing to read, no mark
            take = min(left, rng.choice([1, 1, 2, 3, 5, 8, 40]))
            start = read[(topic, partition)]
            batch = recs[start : start + take]
            read[(topic, partition)] += take
            for offset, rec in enumerate(batch, start=start):
                rows.extend(_routed(rec, partition, offset))
            # the hands that saw this partition's rows: the greatest ts (the end of the run's, NO_TIME) is one's
            greatest = NO_TIME if read[(topic, partition)] == len(recs) else batch[-1]["ts"]
            seen = [rng.choice(batch)["ts"] for _ in range(rng.randint(0, 2))]
            for ts in [*seen, greatest]:
                marks.append(row("F", ts, seq=0, rank=0, shard=None, qmgr=None, src_topic=topic,
                                 src_partition=partition))  # fmt: skip
        rng.shuffle(rows)  # (Spark hands a group's rows over in any order: the operator sorts them)
        frame = pd.DataFrame(rows + marks, columns=ROUTED_COLUMNS)
        got = groups.rows(key, frame)
        if not got.empty:
            late += int(got.loc[got["topic"] == LATE, "order_seq"].sum())
            for t, v in zip(got["topic"], got["value"], strict=True):
                if t != LATE:
                    out.append((t, avro.decode(topics.RECORD_OF[t], bytes(v))))
    return out, late


def _normalised(topic: str, record: dict[str, Any]) -> str:
    return repr((topic, avro.decode(topics.RECORD_OF[topic], avro.encode(topics.RECORD_OF[topic], record))))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 2**32 - 1),
    qmgrs=st.integers(1, 4),
    n_partitions=st.integers(1, 3),
    grain_ms=st.sampled_from([1, 1_000, 5_000]),
)
def test_every_batching_of_every_partition_gives_the_pure_rules_outputs(seed, qmgrs, n_partitions, grain_ms):
    rng = random.Random(seed)
    records = streams(rng, qmgrs, grain_ms)
    settings_ = MonitorSettings()
    got, late = run_in_batches(records, settings_, n_partitions, rng)
    want = sorted(_normalised(e.topic, e.record) for e in run_reference(records, settings_) if e.topic in COMPARED)
    assert sorted(_normalised(t, r) for t, r in got if t in COMPARED) == want
    assert late == 0


def test_the_batchings_explored_share_timestamps_across_topics_and_partitions():
    """The streams above do what the property is about: at one ts, commands and activity of one queue manager
    on different topics, and records of one topic on different partitions."""
    rng = random.Random(7)
    records = streams(rng, 6)
    by_ts: dict[int, set[tuple[int, int]]] = {}
    for where, recs in partitions(records, 3).items():
        for r in recs:
            by_ts.setdefault(r["ts"], set()).add(where)
    assert any({t for t, _ in ps} == {ACTIVITY, CONTROL} for ps in by_ts.values())
    assert any(len({p for t, p in ps if t == ACTIVITY}) > 1 for ps in by_ts.values())
