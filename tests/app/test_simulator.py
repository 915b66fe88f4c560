"""The workload simulator: deterministic for a seed, and it contains what the demo needs."""

from __future__ import annotations

import collections
import itertools

from qmon.app.simulator import SETUP_MQSC, Simulator
from qmon.core import topics
from qmon.core.config import load_config
from qmon.core.reference import run_reference
from tests.conftest import ROOT


def test_the_same_seed_gives_the_same_records_and_another_seed_does_not():
    a = Simulator(seed=7, rate=100).take(3000)
    b = Simulator(seed=7, rate=100).take(3000)
    c = Simulator(seed=8, rate=100).take(3000)
    assert a == b and a != c


def test_the_mix():
    sim = Simulator(seed=1, rate=100)
    items = sim.take(100 * 45)
    recs = [i.value for i in items if isinstance(i.value, dict)]
    queues = {(r["qmgr"], r["queue"]) for r in recs}
    assert len(queues) > 200  # hundreds of queues
    assert any(q.startswith("1") for _, q in queues) and any(q.startswith("5") for _, q in queues)
    assert any(q.startswith("APP.") for _, q in queues)
    assert {r["structure"] for r in recs} == {None, "MSGQ1", "MSGQ2"}
    assert any((r["msg_bytes"] or 0) > 4096 for r in recs if r["structure"])  # long messages
    assert sum(1 for i in items if isinstance(i.value, bytes)) >= 3  # malformed records
    assert sim.stats["bursts"] > 0
    assert all(a.ts <= b.ts for a, b in zip(items, items[1:], strict=False))  # event-time order


def _demo_outputs(rate: int, seconds: int):
    """The demo's workload (its setup MQSC first) through the pure rules with the demo's configuration."""
    config = load_config(ROOT / "config" / "demo.yaml")
    sim = Simulator(seed=1, rate=rate)
    items = sim.take(rate * seconds)
    recs = [{"ts": sim.t0 - 1, "qmgr": qm, "command": c} for qm, cmds in SETUP_MQSC.items() for c in cmds]
    recs += [i.value for i in items if isinstance(i.value, dict)]
    out = run_reference(
        recs, config.monitor_settings(), final_clock=items[-1].ts, structure_settings=config.structure_settings()
    )
    return sim, items, out


#: qmon demo's records per second (its --rate by default)
DEMO_RATE = 100


def _demo_cycles(cycles: int):
    """The demo's workload over its first ``cycles`` cycles of event time, at the demo's rate, through the pure
    rules with the demo's configuration."""
    config = load_config(ROOT / "config" / "demo.yaml")
    sim = Simulator(seed=1, rate=DEMO_RATE)
    end = sim.t0 + int(cycles * sim.cycle_s * 1000)
    items = list(itertools.takewhile(lambda i: i.ts < end, sim.items()))
    recs = [{"ts": sim.t0 - 1, "qmgr": qm, "command": c} for qm, cmds in SETUP_MQSC.items() for c in cmds]
    recs += [i.value for i in items if isinstance(i.value, dict)]
    out = run_reference(
        recs, config.monitor_settings(), final_clock=items[-1].ts, structure_settings=config.structure_settings()
    )
    return config, sim, out


def _reaches_ovflwmax(e) -> bool:
    """What CQS does when MSGQ1 reaches OVFLWMAX: alter it, put it into overflow mode, or (in overflow mode) select
    more queues for the overflow structure."""
    if e.topic == topics.OVERFLOW:
        return e.record["structure"] == "MSGQ1"
    return (
        e.topic == topics.ALERTS
        and e.record["subject"] == "MSGQ1"
        and e.record["type"] in ("STRUCTURE_ALTERED", "OVERFLOW_MODE_ENTERED")
    )


def test_the_demo_forecasts_msgq1_reaching_ovflwmax_seconds_before_it_does():
    """Through the pure rules over the demo's first three cycles with the demo's configuration: in each cycle a
    STRUCTURE_FILL_FORECAST of MSGQ1 reaching OVFLWMAX fires at least 5 s before it does, the first predicting the
    instant within 5 s and the others within the horizon; none fires while the structures drain."""
    cycles = 3
    config, sim, out = _demo_cycles(cycles)
    horizon_s = config.forecast.settings().horizon_ms / 1000

    def seconds(ts: int) -> float:
        return (ts - sim.t0) / 1000

    reached = [seconds(e.record["ts"]) for e in out if _reaches_ovflwmax(e)]
    forecasts = [
        e.record
        for e in out
        if e.topic == topics.ALERTS
        and e.record["type"] == "STRUCTURE_FILL_FORECAST"
        and e.record["subject"] == "MSGQ1"
        and e.record["state"] == "FIRING"
    ]
    for cycle in range(cycles):
        start = cycle * sim.cycle_s
        first = min(t for t in reached if start <= t < start + sim.cycle_s)
        ahead = [f for f in forecasts if "OVFLWMAX" in f["message"] and start <= seconds(f["ts"]) < first]
        assert ahead, (cycle, first, forecasts)
        lead, error = first - seconds(ahead[0]["ts"]), seconds(ahead[0]["eta"]) - first
        assert lead >= 5, (cycle, first, ahead[0])
        assert abs(error) <= (5 if cycle == 0 else horizon_s), (cycle, first, ahead[0])
    assert all(seconds(f["ts"]) % sim.cycle_s < sim.fill_s for f in forecasts), forecasts


def test_the_demo_workload_makes_the_events_the_demo_promises():
    """Through the pure rules: service interval High and OK, alter and overflow, within 45 s of workload."""
    _, _, out = _demo_outputs(rate=100, seconds=45)
    kinds = collections.Counter(e.record.get("type") or e.topic for e in out)
    assert kinds["QSVCINT_HIGH"] and kinds["QSVCINT_OK"]
    assert kinds["STRUCTURE_ALTERED"] and kinds["OVERFLOW_MODE_ENTERED"] and kinds[topics.OVERFLOW]


def test_the_demo_workload_raises_one_alert_per_episode_a_person_would_count():
    """Through the pure rules over 180 s of the demo workload (rate 200): QUEUE_STALLED
    only for the scripted episodes (the payroll consumer's pauses, APP.Q006's hangs), at most one
    STRUCTURE_FULL and one STRUCTURE_NEAR_FULL per fill cycle, and no alert_id FIRING twice."""
    sim, items, out = _demo_outputs(rate=200, seconds=180)
    seconds = (items[-1].ts - sim.t0) / 1000
    firing = [e.record for e in out if e.record.get("state") == "FIRING"]
    ids = collections.Counter(r["alert_id"] for r in firing)
    assert max(ids.values()) == 1
    stalls = collections.Counter(r["queue"] for r in firing if r["type"] == "QUEUE_STALLED")
    payroll_pauses = int(seconds // sim.cycle_s) + 1
    hangs = int(seconds // 60) + 1
    assert set(stalls) <= {"PAYROLL.REQUEST", "APP.Q006"}, stalls
    assert 1 <= stalls["PAYROLL.REQUEST"] <= payroll_pauses and 1 <= stalls["APP.Q006"] <= hangs, stalls
    fills = int(seconds // sim.cycle_s) + 1
    for kind in ("STRUCTURE_FULL", "STRUCTURE_NEAR_FULL", "OVERFLOW_MODE_ENTERED"):
        per_structure = collections.Counter(r["structure"] for r in firing if r["type"] == kind)
        assert all(n <= fills for n in per_structure.values()), (kind, per_structure)


def test_the_workload_as_mq_activity_trace_carries_the_same_mq_calls():
    from qmon.app.simulator import Simulator, as_mq_trace
    from qmon.core import pcf, topics

    items = Simulator(seed=3, rate=400).take(2_000)
    mq = [
        i.value
        for i in items
        if i.topic == topics.ACTIVITY and isinstance(i.value, dict) and i.value["structure"] is None
    ]
    traced = list(as_mq_trace(iter(items), interval_ms=1000))
    messages = [i for i in traced if i.topic == topics.MQ_TRACE]
    decoded = [r for i, m in enumerate(messages) for r in pcf.decode(m.value, offset=i).activity]
    key = lambda r: (r["ts"], r["qmgr"], r["queue"], r["op"], r["msg_bytes"])  # noqa: E731
    # every traced call is one of the MQ records, and every MQ record is traced but those of the last interval
    # of each queue manager, still open
    from collections import Counter

    assert not Counter(map(key, decoded)) - Counter(map(key, mq))
    untraced = Counter(map(key, mq)) - Counter(map(key, decoded))
    assert all(ts > items[-1].ts - 1000 for ts, *_ in untraced.elements())
    assert len(decoded) > 0.8 * len(mq)
    assert any(pcf.decode(m.value).fatal for m in messages)  # the malformed records, as broken trace
    assert all(
        i.value["structure"] is not None for i in traced if i.topic == topics.ACTIVITY and isinstance(i.value, dict)
    )
