"""``monitor.dedup_state: slice`` through the real Spark query (``qmon replay``): the duplicate check ahead
of the monitor (``streaming.dedup``) keeps the first copy of each record, and the monitor's outputs are then
exactly the pure module's over the records kept."""

from __future__ import annotations

import json
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
    config = Config.model_validate({"job": {"queue_buckets": 3}, "monitor": {"dedup_state": "slice"}})
    out = replay_factory(records, config)
    got = sorted(
        json.dumps(dict(r), sort_keys=True)
        for r in out
        if r["topic"] in (topics.PERFORMANCE, topics.ALERTS, topics.REPLIES, topics.NOTIFY)
    )
    final_clock = max(r["ts"] for r in records)
    want = sorted(
        _normalise(e.topic, e.record)
        for e in run_reference(kept, MonitorSettings(dedup_max=0), final_clock=final_clock)
    )
    assert len(got) == len(want) and got == want
    assert sum(1 for r in out if r["topic"] == topics.PERFORMANCE) > 20  # the streams do exercise the rules
    # without the step's check (the rules' own off too), the copies would count: the outputs would differ
    unchecked = sorted(
        _normalise(e.topic, e.record)
        for e in run_reference(records, MonitorSettings(dedup_max=0), final_clock=final_clock)
    )
    assert unchecked != want
