"""A unit stored between micro-batches with its queues encoded one by one, and decoded only when used
(``qmon.core.lazy``, ``qmon.streaming.state``), gives exactly the outputs of the same unit kept in memory,
whose every pass walks every queue.  What could differ: the stall timer, the timer's firing and TTL expiry
read untouched queues from the shard's index instead of decoding them."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from qmon.core.config import Config
from qmon.core.mqsc import parse_command, split_script
from qmon.core.queues import MonitorSettings, QueueDefaults, QueueMonitor
from qmon.core.records import Activity
from qmon.core.structures import StructureMonitor
from qmon.streaming import state as stored
from tests.streams import STRUCTURE_CONFIG, activity, random_stream, random_structure_stream

TTL_MS = 10_000
QUEUE_SETTINGS = MonitorSettings(
    perfmev="ENABLED",
    queue_defaults=(QueueDefaults("Q1*", {"QSVCIEV": "HIGH", "QSVCINT": 1000}),),
    stall_clear_hold_ms=3_000,
)


def _batches(records: list[dict[str, Any]], cuts: list[int]) -> list[list[tuple[int, dict[str, Any]]]]:
    out, i, k = [], 0, 0
    while i < len(records):
        n = cuts[k % len(cuts)]
        out.append(list(enumerate(records[i : i + n], start=i)))
        i, k = i + n, k + 1
    return out


def _run_queues(records: list[dict[str, Any]], cuts: list[int], lazy: bool) -> list[Any]:
    """The shard over micro-batches the way the operator drives it; ``lazy``: stored and loaded each batch.
    Its outputs, and the queues it holds after each batch (TTL expiry changes no output by design)."""
    emitted: list[Any] = []
    blob, mon = None, QueueMonitor("QM1", QUEUE_SETTINGS)
    for batch in _batches(records, cuts):
        if lazy:
            mon = QueueMonitor("QM1", QUEUE_SETTINGS, stored.loads(blob) if blob else None, stored.load_queue)
        for seq, r in batch:
            if "command" in r:
                cmd = parse_command(split_script(r["command"])[0])
                out = mon.on_command(cmd, r["ts"], r["command_id"], True)
            else:
                out = mon.on_activity(activity(r, seq))
            emitted.extend(e.record for e in out)
        watermark = batch[-1][1]["ts"]
        due = mon.next_stall_clock()
        if due is not None and due <= watermark:
            emitted.extend(e.record for e in mon.on_clock(watermark))
        mon.expire(watermark, TTL_MS)
        emitted.append(sorted(mon.queues))
        mon.pack()
        if lazy:
            blob = stored.dumps(mon.state)
    # the timer's last firing, long after the input: what is still due
    emitted.extend(e.record for e in mon.on_clock(records[-1]["ts"] + 3_600_000))
    return emitted


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), cuts=st.lists(st.integers(1, 8), min_size=1, max_size=8))
def test_a_shard_stored_queue_by_queue_gives_the_in_memory_outputs(seed: int, cuts: list[int]):
    records = random_stream(random.Random(seed), "QM1", n=250, queues=12)
    in_memory = _run_queues(records, cuts, lazy=False)
    assert _run_queues(records, cuts, lazy=True) == in_memory


def _op(ts: int, queue: str, op: str, i: int) -> dict[str, Any]:
    return {"event_id": f"e{i}", "qmgr": "QM1", "queue": queue, "op": op, "ts": ts}


def test_a_relapse_while_another_queues_deadline_fires_the_timer():
    """A firing stall served in time, then unserved for longer than QSVCINT again (a relapse), then emptied
    before the hold would have ended: the hold counts from the emptying get.  When B's deadline fires the
    timer, A is not decoded (its deadline, the end of the hold, is later); its next record sees the relapse
    as the in-memory pass over every queue does."""
    alter = "ALTER QLOCAL({}) QSVCIEV(HIGH) QSVCINT(1000)"
    records = [
        {"ts": 1, "qmgr": "QM1", "command": alter.format("A"), "command_id": "c1"},
        {"ts": 1, "qmgr": "QM1", "command": alter.format("B"), "command_id": "c2"},
        *[_op(10, "A", "PUT", i) for i in range(3)],
        _op(1_500, "A", "GET", 3),  # late: the stall (fired at 1,011) goes on
        _op(1_600, "A", "GET", 4),  # in time: the hold starts
        _op(1_999, "B", "PUT", 5),  # B's deadline, 3,000, fires the timer after A's relapse (2,601)
        _op(3_000, "C", "PUT", 6),
        _op(3_500, "A", "GET", 7),  # empties A: served, before the hold from 1,600 would have ended (4,600)
        _op(9_000, "C", "GET", 8),
    ]
    lazy = _run_queues(records, [1], lazy=True)
    assert lazy == _run_queues(records, [1], lazy=False)
    resolved = [r for r in lazy if isinstance(r, dict) and r.get("state") == "RESOLVED" and r["queue"] == "A"]
    assert [r["ts"] for r in resolved] == [6_500]  # the hold counted from 3,500, not from 1,600


def test_a_stored_shard_decodes_only_the_queues_a_batch_uses():
    mon = QueueMonitor("QM1", QUEUE_SETTINGS)
    for i in range(200):
        mon.on_activity(Activity(f"e{i}", "QM1", f"Q{i}", "PUT", 1_000 + i, msg_bytes=100, clock=1_000 + i, seq=i))
    mon.pack()
    blob = stored.dumps(mon.state)
    again = QueueMonitor("QM1", QUEUE_SETTINGS, stored.loads(blob), stored.load_queue)
    again.on_activity(Activity("x", "QM1", "Q7", "GET", 5_000, clock=5_000, seq=300))
    again.next_stall_clock()
    again.expire(5_000, TTL_MS)
    assert list(again.queues.live) == ["Q7"]
    assert len(stored.loads(stored.dumps(again.state))["queues"]) == 200


def _run_structures(records: list[dict[str, Any]], cuts: list[int], lazy: bool) -> list[dict[str, Any]]:
    ss = Config.model_validate(STRUCTURE_CONFIG).structure_settings()
    emitted: list[dict[str, Any]] = []
    blobs: dict[str, bytes] = {}
    mons: dict[str, StructureMonitor] = {}
    for batch in _batches(records, cuts):
        if lazy:
            mons = {n: StructureMonitor(n, ss, stored.loads(b), stored.load_queue) for n, b in blobs.items()}
        for seq, r in batch:
            name = r["structure"]
            mon = mons.get(name) or mons.setdefault(
                name, StructureMonitor(name, ss, None, stored.load_queue if lazy else None)
            )
            emitted.extend(e.record for e in mon.on_activity(activity(r, seq)))
        watermark = batch[-1][1]["ts"]
        for name in sorted(mons):
            mon = mons[name]
            due = mon.next_scan_clock()
            if due is not None and due <= watermark:
                emitted.extend(e.record for e in mon.on_clock(watermark))
            if lazy:
                blobs[name] = stored.dumps(mon.state)
    return emitted


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), cuts=st.lists(st.integers(1, 40), min_size=1, max_size=8))
def test_a_structure_stored_queue_by_queue_gives_the_in_memory_outputs(seed: int, cuts: list[int]):
    records = random_structure_stream(random.Random(seed), n=300)
    assert _run_structures(records, cuts, lazy=True) == _run_structures(records, cuts, lazy=False)
