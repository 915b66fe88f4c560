"""The fast path that applies records without the rules' checks (``on_activities``,
``_apply_run_raising_nothing``) of a structure and of a queue shard gives exactly the outputs and state of
``on_activity`` applied record by record.

``_apply_run_raising_nothing`` moves counts and FIFO runs for puts and gets while nothing is firing, no hold
or overflow mode runs and each put leaves usage below OVFLWMAX and FULLTHRESHOLD; any other record goes to
the rules.  The streams below fill small structures (alters, overflow with and without an overflow
structure, a resource structure, full, near full, holds), long messages to ready queues with staging parts,
gets by size, failed operations, STARTs and records without an arrival clock, cut into micro-batches with
the state stored and loaded between them; and structures filling under a firing fill forecast, one restarted
with settings under which the forecast no longer applies."""

from __future__ import annotations

import random
from typing import Any
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from qmon.core import message_runs
from qmon.core.config import Config
from qmon.core.mqsc import parse_command, split_script
from qmon.core.queues import MonitorSettings, QueueDefaults, QueueMonitor
from qmon.core.reasons import MQRC_Q_FULL
from qmon.core.sharing import QueueSharingGroup, Sharing
from qmon.core.structures import StructureMonitor
from qmon.streaming import state as stored
from tests.streams import STRUCTURE_CONFIG, activity, random_stream, random_structure_stream

#: the test structures, and one whose full threshold comes before OVFLWMAX
SETTINGS = Config.model_validate(
    {
        **STRUCTURE_CONFIG,
        "structures": [
            *STRUCTURE_CONFIG["structures"],  # type: ignore[misc]
            {"strname": "NEARQ", "size": 30, "ovflwmax": 90, "fullthreshold": 60, "lgmsgsz": 2048},
        ],
    }
).structure_settings()


#: ready queues of the streams -> their staging queues
STAGED = {"1ORDERS": "2ORDERS", "5LTERM01": "6LTERM01"}


def _records(rng: random.Random, name: str, n: int) -> list[Any]:
    records = []
    for r in random_structure_stream(rng, n=n):
        r["structure"] = name
        if rng.random() < 0.03:
            r["op"] = "START"
        if rng.random() < 0.1 and r["queue"] in STAGED:  # activity on a staging queue itself
            r["queue"] = STAGED[r["queue"]]
        records.append(r)
    recs = [activity(r, i) for i, r in enumerate(records)]
    return [r._replace(clock=None) if rng.random() < 0.05 else r for r in recs]


class _Rules:
    """Counts the records a monitor's ``on_activities`` gives to the rules (``on_activity``)."""

    def __init__(self, mon: Any) -> None:
        self.calls, self.one = 0, mon.on_activity
        mon.on_activity = self

    def __call__(self, rec: Any) -> Any:
        self.calls += 1
        return self.one(rec)


def _decoded(blob: bytes | None) -> Any:
    """A stored unit's state with its queues decoded (their order aside: a dict compares without it)."""
    state = stored.loads(blob) if blob else None
    if state is not None:
        state["queues"] = {n: stored.load_queue(q) for n, q in state["queues"].items()}
    return state


#: the same structures after a restart with other thresholds: usage may be above the new OVFLWMAX with
#: ``above`` unset, or below it with ``above`` still set
RAISED = Config.model_validate(
    {
        **STRUCTURE_CONFIG,
        "structures": [
            {**d, "ovflwmax": 90, "fullthreshold": 95}
            for d in (*STRUCTURE_CONFIG["structures"], {"strname": "NEARQ", "size": 30})  # type: ignore[misc]
        ],
    }
).structure_settings()


def _run(
    name: str,
    recs: list[Any],
    cuts: list[int],
    batched: bool,
    restarts: list[bool] | None = None,
    structures: Any = SETTINGS,
) -> tuple[list[Any], Any, int]:
    """Outputs, the last stored state (queues decoded) and how many records went to ``on_activity``.
    ``restarts``: for each batch, whether it runs with the other thresholds (``RAISED``) rather than
    ``structures``."""
    out: list[Any] = []
    blob, calls = None, 0
    for b, (lo, hi) in enumerate(zip([0, *cuts], [*cuts, len(recs)], strict=True)):
        settings = RAISED if restarts and restarts[b % len(restarts)] else structures
        mon = StructureMonitor(name, settings, stored.loads(blob) if blob else None, stored.load_queue)
        batch = recs[lo:hi]
        if batched:
            rules = _Rules(mon)
            for _, emits in mon.on_activities(batch):
                out.extend(e.record for e in emits)
            calls += rules.calls
        else:
            for rec in batch:
                out.extend(e.record for e in mon.on_activity(rec))
                calls += 1
        out.extend(e.record for e in mon.snapshot(batch[-1].ts if batch else 0))
        blob = stored.dumps(mon.state)
    state = _decoded(blob)
    return out, state, calls


@settings(max_examples=120, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    name=st.sampled_from(["MSGQ1", "MSGQ2", "RSRC1", "NEARQ", "NOTCONF"]),
    n=st.integers(1, 400),
    cuts=st.lists(st.integers(0, 400), max_size=6),
    runs=st.sampled_from([2, 3, message_runs.MAX_RUNS]),
    restarts=st.lists(st.booleans(), max_size=4),
)
def test_on_activities_gives_the_outputs_and_state_of_the_rules_record_by_record(seed, name, n, cuts, runs, restarts):
    """``runs``: FIFO runs kept per queue (few: runs merge, and their gets free averages); ``restarts``:
    batches run with other thresholds than the state was built with."""
    recs = _records(random.Random(seed), name, n)
    cuts = sorted({c for c in cuts if c < n})
    with patch.object(message_runs, "MAX_RUNS", runs):
        rules_out, rules_state, _ = _run(name, recs, cuts, batched=False, restarts=restarts)
        out, state, _ = _run(name, recs, cuts, batched=True, restarts=restarts)
    assert out == rules_out
    assert state == rules_state


def test_the_fast_path_takes_many_records_and_the_rules_the_ones_that_raise():
    """Not vacuous: over these small, often full structures a sixth of the records skip the rules (a forecast
    sample near a threshold goes to them too), and every output still comes."""
    rng = random.Random(7)
    taken = total = outputs = 0
    for name in ("MSGQ1", "MSGQ2"):
        recs = _records(rng, name, 400)
        rules_out, rules_state, _ = _run(name, recs, [100, 250], batched=False)
        out, state, calls = _run(name, recs, [100, 250], batched=True)
        assert (out, state) == (rules_out, rules_state)
        taken, total, outputs = taken + len(recs) - calls, total + len(recs), outputs + len(out)
    assert outputs > 10  # thresholds were reached: alters, overflow, full, near full
    assert taken > total // 6


#: a structure of 400 elements filling at about an element a second, forecast a minute ahead: its
#: forecast fires long before OVFLWMAX (280 elements)
FILLING = Config.model_validate(
    {
        "forecast": {"horizon": "60 seconds"},
        "structures": [
            {"strname": "FILLQ", "size": 200, "ovflwmax": 70, "ovflwstr": "FILLO", "ovflwsize": 50},
            {"strname": "FULLQ", "size": 200, "ovflwmax": 70},
        ],
    }
).structure_settings()


def _filling(rng: random.Random, name: str, n: int) -> list[Any]:
    """Puts (two in three) and gets of one-element messages every 300 ms, a few gets of a larger one."""
    records, t = [], 1_700_000_000_000
    for i in range(n):
        t += rng.choice([100, 300, 500])
        op = "PUT" if rng.random() < 0.66 else "GET"
        queue = rng.choice(["1PAYROLL", "1ORDERS", "5LTERM01"])
        nbytes = rng.choice([512, 512, 512, 1500]) if op == "PUT" else None
        records.append(
            {
                "event_id": f"f{i}",
                "qmgr": "IMSA",
                "queue": queue,
                "op": op,
                "ts": t,
                "msg_bytes": nbytes,
                "structure": name,
                "reason": None,
            }  # fmt: skip
        )
    return [activity(r, i) for i, r in enumerate(records)]


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    name=st.sampled_from(["FILLQ", "FULLQ"]),
    cuts=st.lists(st.integers(0, 1200), max_size=5),
)
def test_while_a_fill_forecast_fires_on_activities_gives_the_outputs_and_state_of_the_rules(seed, name, cuts):
    recs = _filling(random.Random(seed), name, 1200)
    cuts = sorted(set(cuts))
    rules_out, rules_state, _ = _run(name, recs, cuts, batched=False, structures=FILLING)
    out, state, _ = _run(name, recs, cuts, batched=True, structures=FILLING)
    assert out == rules_out
    assert state == rules_state


def test_a_firing_forecast_that_no_longer_applies_after_a_restart_resolves_at_the_next_record_as_the_rules_do():
    """A restart that makes the structure a resource structure: its OVFLWMAX forecast, firing, has no
    target any more (no overflow function), and the next record resolves it, on either path."""
    recs = _filling(random.Random(3), "FULLQ", 1200)
    mon = StructureMonitor("FULLQ", FILLING, None, stored.load_queue)
    i = 0
    while not (mon.state["fc"] and mon.state["fc"]["on"]):
        mon.on_activity(recs[i])
        i += 1
    assert "OVFLWMAX" in mon.state["fc"]["on"]
    blob = stored.dumps(mon.state)
    resource = Config.model_validate(
        {"forecast": {"horizon": "60 seconds"}, "structures": [{"strname": "FULLQ", "size": 200, "type": "resource"}]}
    ).structure_settings()
    outs = []
    for batched in (False, True):
        again = StructureMonitor("FULLQ", resource, stored.loads(blob), stored.load_queue)
        if batched:
            out = [e.record for _, emits in again.on_activities(recs[i : i + 20]) for e in emits]
        else:
            out = [e.record for rec in recs[i : i + 20] for e in again.on_activity(rec)]
        outs.append((out, _decoded(stored.dumps(again.state))))
    assert outs[0] == outs[1]
    gone = [r for r in outs[0][0] if r.get("type") == "STRUCTURE_FILL_FORECAST" and r["state"] == "RESOLVED"]
    assert gone and "no longer applies" in gone[0]["summary"], outs[0][0]


def test_a_put_that_would_reach_ovflwmax_goes_to_the_rules():
    """MSGQ1 starts at 20 KB (40 elements), OVFLWMAX 70%: the put of the 28th element alters it."""
    recs = [activity({"event_id": f"p{i}", "qmgr": "IMSA", "queue": "1PAYROLL", "op": "PUT", "ts": i,
                      "msg_bytes": 512}, i) for i in range(30)]  # fmt: skip
    mon = StructureMonitor("MSGQ1", SETTINGS)
    assert mon._apply_run_raising_nothing(recs, 0) == 27  # 27 puts leave usage at 27/40 = 67.5 %
    assert mon.state["used"] == 27 and mon.state["queues"]["1PAYROLL"]["fifo"] == [[27, 27, 0]]
    [(rec, emits)] = mon.on_activities(recs[27:])
    assert rec.event_id == "p27" and [e.record["type"] for e in emits] == ["STRUCTURE_ALTERED"]
    assert mon.state["size_kb"] > 20 and mon.state["used"] == 30


def test_a_get_freeing_more_than_a_queue_holds_is_clamped_as_the_rules_do():
    """Counts that disagree with the FIFO (a state from before FIFO runs, or edited by hand): a get frees at
    most what the queue holds, and a staging part that frees nothing takes no message off it."""
    queues = {
        "1ORDERS": {"msgs": 2, "el": 9, "ovf": False, "rej": False, "fifo": [[2, 4, 6]]},
        "2ORDERS": {"msgs": 3, "el": 0, "ovf": False, "rej": False, "fifo": []},
        "5LTERM01": {"msgs": 1, "el": 1, "ovf": False, "rej": False, "fifo": [[1, 3, 5]]},
        "6LTERM01": {"msgs": 1, "el": 2, "ovf": False, "rej": False, "fifo": []},
    }
    gets = [
        activity({"event_id": f"g{i}", "qmgr": "IMSA", "queue": q, "op": "GET", "ts": 10 + i}, i)
        for i, q in enumerate(["1ORDERS", "5LTERM01", "1ORDERS", "2ORDERS"])
    ]

    def state() -> Any:
        mon = StructureMonitor("MSGQ1", SETTINGS)
        mon.state["used"] = 12
        mon.state["queues"] = {n: {**q, "fifo": [list(r) for r in q["fifo"]]} for n, q in queues.items()}
        return mon

    rules, quiet = state(), state()
    for rec in gets:
        assert rules.on_activity(rec) == []
    assert quiet._apply_run_raising_nothing(gets, 0) == len(gets)
    assert quiet.state == rules.state
    assert rules.state["queues"]["2ORDERS"]["msgs"] == 3  # its parts freed nothing


# ---------------------------------------------------------------- a queue shard

QUEUE_SETTINGS = MonitorSettings(
    perfmev="ENABLED",
    queue_defaults=(
        QueueDefaults("Q1*", {"QSVCIEV": "HIGH", "QSVCINT": 1000, "QDPHIEV": True, "MAXDEPTH": 12, "QDEPTHHI": 50}),
        QueueDefaults("Q2*", {"QSVCIEV": "OK", "QSVCINT": 400, "QDPLOEV": True, "QDEPTHLO": 30, "MAXDEPTH": 10}),
    ),
    stall_clear_hold_ms=2_000,
    sharing=Sharing((QueueSharingGroup("QSG1", ("QM1", "QM2"), ("*",)),)),
)


def _queue_records(rng: random.Random, n: int, members: tuple[str, ...] = ("QM1",)) -> list[dict[str, Any]]:
    """Puts, gets, STARTs, failed puts (MQRC_Q_FULL among them) and gets, depths given or not, commands (queue and
    depth attributes, PERFMEV, RESET QSTATS, interest) between them; no arrival clock on some.  ``members``:
    the queue managers the records and commands name, at random (a queue-sharing group's members)."""
    records = random_stream(rng, "QM1", n=n, queues=7)
    for r in records:
        r["qmgr"] = rng.choice(members)
        if "command" in r:
            continue
        r["queue"] = rng.choice(["Q10", "Q11", "Q20", "Q21", "Q3", r["queue"]])
        if r.get("reason") is not None and rng.random() < 0.5:
            r["reason"] = MQRC_Q_FULL
        if r["op"] in ("GET", "START") and rng.random() < 0.05:
            r["reason"] = 2033  # a failed get (MQRC_NO_MSG_AVAILABLE), and a START that carries one all the same
        if r["op"] in ("PUT", "GET") and rng.random() < 0.1:
            r["depth_after"] = rng.choice([0, 1, 3, 9])
        r["clock"] = None if rng.random() < 0.05 else r["ts"] + rng.randrange(50)  # the broker's append time
    return records


def _apply_queue_batches(
    batches: list[list[dict[str, Any]]], batched: bool, shard: str = "QM1"
) -> tuple[list[Any], Any, int]:
    """A shard of ``shard`` (a queue manager, or a queue-sharing group) over the batches, stored and loaded between
    them.  A batch of activity only goes, when ``batched``, to ``on_activities`` (as the operator does); any other
    batch record by record."""
    out: list[Any] = []
    blob, calls = None, 0
    for batch in batches:
        mon = QueueMonitor(shard, QUEUE_SETTINGS, stored.loads(blob) if blob else None, stored.load_queue)
        recs: list[Any] = [
            r if "command" in r else activity(r, i)._replace(clock=r["clock"]) for i, r in enumerate(batch)
        ]
        if batched and not any("command" in r for r in batch):
            rules = _Rules(mon)
            for _, emits in mon.on_activities(recs):
                out.extend(e.record for e in emits)
            calls += rules.calls
        else:
            for r in recs:
                if isinstance(r, dict):
                    cmd = parse_command(split_script(r["command"])[0])
                    out.extend(e.record for e in mon.on_command(cmd, r["ts"], r["command_id"], True, r["qmgr"]))
                else:
                    out.extend(e.record for e in mon.on_activity(r))
                    calls += 1
        if batch:
            out.extend(e.record for e in mon.on_clock(batch[-1]["ts"]))
        out.extend(e.record for e in mon.snapshot(batch[-1]["ts"] if batch else 0))
        mon.pack()
        blob = stored.dumps(mon.state)
    state = _decoded(blob)
    return out, state, calls


def _cut(records: list[dict[str, Any]], rng: random.Random) -> list[list[dict[str, Any]]]:
    """Micro-batches: commands mostly alone (a batch of activity only is the operator's bulk case)."""
    batches: list[list[dict[str, Any]]] = [[]]
    for r in records:
        if "command" in r and rng.random() < 0.8:
            batches.extend([[r], []])
        else:
            batches[-1].append(r)
            if rng.random() < 0.1:
                batches.append([])
    return [b for b in batches if b]


@settings(max_examples=120, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), runs=st.sampled_from([2, 3, message_runs.MAX_RUNS]))
def test_a_queue_shards_on_activities_gives_the_outputs_and_state_of_the_rules_record_by_record(seed, n, runs):
    """``runs``: put-time runs kept per queue (few: runs merge, and their gets take interpolated put times)."""
    rng = random.Random(seed)
    batches = _cut(_queue_records(rng, n), rng)
    with patch.object(message_runs, "MAX_RUNS", runs):
        rules_out, rules_state, _ = _apply_queue_batches(batches, batched=False)
        out, state, _ = _apply_queue_batches(batches, batched=True)
    assert out == rules_out
    assert state == rules_state


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300))
def test_a_shared_queues_shard_on_activities_gives_the_outputs_and_state_of_the_rules_record_by_record(seed, n):
    """A queue-sharing group's shard: its members' puts, gets and commands mixed, each member's PERFMEV its own."""
    rng = random.Random(seed)
    batches = _cut(_queue_records(rng, n, ("QM1", "QM2")), rng)
    rules_out, rules_state, _ = _apply_queue_batches(batches, batched=False, shard="QSG1")
    out, state, _ = _apply_queue_batches(batches, batched=True, shard="QSG1")
    assert out == rules_out
    assert state == rules_state


def test_a_queue_shards_fast_path_takes_many_records_and_the_rules_the_ones_that_raise():
    rng = random.Random(11)
    batches = _cut(_queue_records(rng, 600), rng)
    rules_out, rules_state, total = _apply_queue_batches(batches, batched=False)
    out, state, calls = _apply_queue_batches(batches, batched=True)
    assert (out, state) == (rules_out, rules_state)
    kinds = {r.get("type") for r in out}
    assert {"QSVCINT_HIGH", "QSVCINT_OK", "QDEPTH_HIGH", "QDEPTH_LOW", "QUEUE_STALLED"} <= kinds
    assert total - calls > total // 4  # records that skipped the rules


def test_a_state_without_clear_goes_to_the_rules_which_add_it():
    """A state of version 2 may lack ``clear``: the rules add it at the first put or get,
    so the fast path leaves that record to them, then goes on."""
    put = [
        activity({"event_id": f"p{i}", "qmgr": "IMSA", "queue": "1PAYROLL", "op": "PUT", "ts": i}, i) for i in range(3)
    ]
    rules, quiet = StructureMonitor("MSGQ1", SETTINGS), StructureMonitor("MSGQ1", SETTINGS)
    del rules.state["clear"], quiet.state["clear"]
    for rec in put:
        rules.on_activity(rec)
    assert quiet._apply_run_raising_nothing(put, 0) == 0
    assert _Rules(quiet) and quiet.on_activities(put) == []
    assert quiet.state == rules.state and quiet.state["clear"] == {}


def test_above_still_set_after_a_restart_with_a_higher_ovflwmax_goes_to_the_rules():
    """A resource structure (never in overflow mode) at 75 % has reached OVFLWMAX 70 (``above``); restarted
    with OVFLWMAX 90 it is below it: the rules' next put or get clears ``above`` (so reaching 90 % counts),
    and the fast path leaves that record to them."""
    puts = [
        activity({"event_id": f"p{i}", "qmgr": "IMSA", "queue": "1PAYROLL", "op": "PUT", "ts": i, "msg_bytes": 512}, i)
        for i in range(12)  # RSRC1: 8 KB, 16 data elements
    ]
    mon = StructureMonitor("RSRC1", SETTINGS)
    for rec in puts:
        mon.on_activity(rec)
    assert mon.state["above"] and mon.state["mode_alert_id"] is None and mon.state["near_alert_id"] is None
    blob = stored.dumps(mon.state)
    get = [activity({"event_id": "g", "qmgr": "IMSA", "queue": "1PAYROLL", "op": "GET", "ts": 100}, 100)]
    rules = StructureMonitor("RSRC1", RAISED, stored.loads(blob), stored.load_queue)
    quiet = StructureMonitor("RSRC1", RAISED, stored.loads(blob), stored.load_queue)
    rules.on_activity(get[0])
    assert quiet._apply_run_raising_nothing(get, 0) == 0
    quiet.on_activities(get)
    assert not rules.state["above"]
    assert _decoded(stored.dumps(quiet.state)) == _decoded(stored.dumps(rules.state))
