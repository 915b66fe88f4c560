"""SPEC §5 rule by rule: the pure structure model (qmon.structures)."""

from __future__ import annotations

import itertools

import pytest

from qmon import topics
from qmon.structures import (
    ExitRule,
    Op,
    OverflowExit,
    StructureDef,
    StructureMonitor,
    StructureSettings,
    elements,
    queue_type,
    staging_queue,
)

_ids = itertools.count(1)


def mon(exit_rules: tuple[ExitRule, ...] = (), **kw) -> StructureMonitor:
    d = StructureDef(**{"strname": "MSGQ1", "size": 10, "initsize": 10, **kw})
    return StructureMonitor("MSGQ1", StructureSettings((d,), OverflowExit(rules=exit_rules)))


def put(m: StructureMonitor, queue: str, nbytes: int = 512, ts: int = 1000, **kw):
    return m.on_activity(Op(f"e{next(_ids)}", "IMSA", queue, "PUT", ts, nbytes, **kw))


def get(m: StructureMonitor, queue: str, nbytes: int | None = 512, ts: int = 2000):
    return m.on_activity(Op(f"e{next(_ids)}", "IMSA", queue, "GET", ts, nbytes))


def types(emits) -> list[tuple[str, str]]:
    return [(e.record.get("type", "CANDIDATES"), e.record.get("state", "")) for e in emits]


def fill(m: StructureMonitor, queue: str, n: int, ts: int = 1000) -> list:
    out = []
    for _ in range(n):
        out.extend(put(m, queue, ts=ts))
    return out


# ---------------------------------------------------------------- data elements and queue types

def test_a_message_takes_ceil_bytes_over_512_elements_at_least_one():
    assert [elements(b) for b in (0, 1, 512, 513, 1024, 1025, None)] == [1, 1, 1, 2, 2, 3, 1]


def test_queue_types_come_from_the_first_character():
    assert queue_type("1PAYROLL") == "1" and queue_type("PAYROLL.IN") is None
    assert staging_queue("1PAYROLL") == "2PAYROLL" and staging_queue("5LTERM01") == "6LTERM01"
    assert staging_queue("4SERIAL") is None


def test_capacity_is_two_elements_per_kb_and_usage_is_used_over_capacity():
    m = mon(size=10)
    put(m, "1TRAN", 1024)
    assert m.capacity == 20 and m.state["used"] == 2 and m.usage() == 10.0


def test_a_long_message_splits_between_ready_and_staging_queue():
    m = mon(size=100, lgmsgsz=4096)
    put(m, "1TRAN", 4096 + 1500)
    qs = m.state["queues"]
    assert qs["1TRAN"]["el"] == 8 and qs["2TRAN"]["el"] == 3 and m.state["used"] == 11
    get(m, "1TRAN", 4096 + 1500)
    assert qs["1TRAN"]["el"] == 0 and qs["2TRAN"]["el"] == 0 and m.state["used"] == 0


def test_a_get_without_msg_bytes_frees_the_average_and_the_last_get_frees_the_rest():
    m = mon(size=100)
    put(m, "1TRAN", 512)
    put(m, "1TRAN", 2048)
    get(m, "1TRAN", None)
    assert m.state["queues"]["1TRAN"]["el"] == 2  # average of 5 elements over 2 messages: 3 freed
    get(m, "1TRAN", None)
    assert m.state["used"] == 0


def test_failed_operations_and_start_change_nothing():
    m = mon(size=100)
    put(m, "1TRAN", 512, reason=2053)
    m.on_activity(Op("s1", "IMSA", "1TRAN", "START", 1000, None))
    assert m.state["used"] == 0


def test_duplicate_event_ids_are_ignored():
    m = mon(size=100)
    m.on_activity(Op("dup", "IMSA", "1TRAN", "PUT", 1000, 512))
    m.on_activity(Op("dup", "IMSA", "1TRAN", "PUT", 1000, 512))
    assert m.state["used"] == 1


# ---------------------------------------------------------------- alter

def test_alter_grows_to_the_smallest_kb_size_that_brings_usage_to_ovflwmax_minus_20():
    m = mon(size=10, initsize=5)  # 10 elements now, 20 at most
    out = fill(m, "1TRAN", 7)  # 7/10 = 70% = OVFLWMAX
    alters = [e.record for e in out if e.record["type"] == "STRUCTURE_ALTERED"]
    assert len(alters) == 1
    a = alters[0]
    # ceil(7 * 100 / (2 * 50)) = 7 KB: 14 elements, 50 %
    assert (a["size_kb_before"], a["size_kb_after"], a["usage_before_pct"], a["usage_after_pct"]) == (5, 7, 70.0, 50.0)
    assert a["state"] == "INFO" and "5 KB to 7 KB" in a["summary"]


def test_alter_stops_at_size_and_overflow_follows_when_usage_stays_at_or_above_ovflwmax():
    m = mon(size=10, initsize=9)  # 18 elements; alter can add only 2
    out = fill(m, "1TRAN", 13)  # 13/18 = 72.2%: alter to SIZE 10 KB (20 el) -> 65%: below 70, stop
    assert types(out) == [("STRUCTURE_ALTERED", "INFO")]
    assert m.state["size_kb"] == 10 and m.state["mode"] is None
    out = fill(m, "1TRAN", 1)  # 14/20 = 70%: at SIZE -> overflow mode
    assert types(out)[:2] == [("OVERFLOW_MODE_ENTERED", "FIRING"), ("CANDIDATES", "")]


# ---------------------------------------------------------------- candidate selection

def test_candidates_are_offered_largest_first_ties_by_name_staging_and_empty_never():
    m = mon(size=10, lgmsgsz=512)
    fill(m, "1ZZZ", 3)
    fill(m, "1BBB", 2)
    fill(m, "1AAA", 2)
    fill(m, "1EEE", 2)
    put(m, "1EMPTY")
    get(m, "1EMPTY")
    out = put(m, "1CCC", 2560)  # 1 element on 1CCC, 4 on its staging queue 2CCC: 14/20 = 70%
    cand = [e.record for e in out if e.topic == topics.OVERFLOW][0]
    offered = [c["queue"] for c in cand["candidates"]]
    # 1ZZZ (3) first, then the 2-element queues by name; 2CCC (4, staging) and 1EMPTY never;
    # selection stops once usage without the approved queues is <= 50%: 14 - 3 - 2 = 9 -> 45%
    assert offered == ["1ZZZ", "1AAA"]
    assert cand["usage_pct"] == 70.0 and cand["target_pct"] == 50.0 and cand["usage_after_pct"] == 45.0


def test_rejected_queues_do_not_count_toward_the_target():
    m = mon(size=10, exit_rules=(ExitRule("1BIG", "reject"),))
    fill(m, "1BIG", 8)
    fill(m, "1AAA", 3)
    out = fill(m, "1BBB", 3)  # 14/20
    cand = [e.record for e in out if e.topic == topics.OVERFLOW][0]
    assert [(c["queue"], c["decision"]) for c in cand["candidates"]] == [
        ("1BIG", "reject"), ("1AAA", "approve"), ("1BBB", "approve")]
    assert cand["usage_after_pct"] == 40.0


def test_selection_stops_after_512_approved_queues():
    m = mon(size=1500, initsize=1500)  # 3000 elements; 2100 = 70%; 600 to move to reach 50%
    out = []
    for i in range(2100):
        out.extend(put(m, f"1Q{i:04d}"))
    cand = [e.record for e in out if e.topic == topics.OVERFLOW][0]
    assert len(cand["candidates"]) == 512


def test_a_callable_overflow_exit(monkeypatch):
    import types as _types
    import sys

    mod = _types.ModuleType("site_exits")
    mod.decide = lambda structure, queue, elems: queue != "1KEEP"  # bool is fine
    monkeypatch.setitem(sys.modules, "site_exits", mod)
    d = StructureDef("MSGQ1", 10, 10)
    m = StructureMonitor("MSGQ1", StructureSettings((d,), OverflowExit(callable_path="site_exits:decide")))
    fill(m, "1KEEP", 10)
    out = fill(m, "1MOVE", 4)
    cand = [e.record for e in out if e.topic == topics.OVERFLOW][0]
    assert [(c["queue"], c["decision"]) for c in cand["candidates"]] == [("1KEEP", "reject"), ("1MOVE", "approve")]


# ---------------------------------------------------------------- without an overflow structure

def test_without_an_overflow_structure_puts_to_approved_queues_are_rejected_once_per_queue_per_episode():
    m = mon(size=10, fullthreshold=100)
    fill(m, "1BIG", 10)
    fill(m, "1SML", 4)  # 70%: 1BIG approved (10 el -> 20%)
    assert m.state["queues"]["1BIG"]["ovf"]
    out = fill(m, "1BIG", 3)
    assert types(out) == [("QUEUE_PUTS_REJECTED", "FIRING")]
    assert m.state["queues"]["1BIG"]["el"] == 10 and m.state["rejected"] == 3
    # the threshold is not checked again while in overflow mode
    assert types(fill(m, "1SML", 2)) == []


def test_without_an_overflow_structure_overflow_ends_when_usage_drops_to_target():
    m = mon(size=10, fullthreshold=100)
    fill(m, "1BIG", 10)
    fill(m, "1SML", 4)  # 14/20 = 70%
    rejected = put(m, "1BIG")
    out = []
    for _ in range(4):
        out.extend(get(m, "1BIG"))  # 13, 12, 11, 10 -> 50%
    assert types(out) == [("QUEUE_PUTS_REJECTED", "RESOLVED"), ("OVERFLOW_MODE_ENDED", "RESOLVED")]
    assert out[0].record["alert_id"] == rejected[0].record["alert_id"]
    assert not m.state["queues"]["1BIG"]["ovf"]
    assert types(fill(m, "1BIG", 1)) == []  # puts accepted again


# ---------------------------------------------------------------- with an overflow structure

def test_approved_queues_move_to_the_overflow_structure_and_count_there():
    m = mon(size=10, ovflwstr="OVF1", ovflwsize=10)
    fill(m, "1BIG", 10)
    fill(m, "1SML", 4)
    assert m.state["used"] == 4 and m.state["ovf_used"] == 10
    put(m, "1BIG")
    assert m.state["used"] == 4 and m.state["ovf_used"] == 11
    get(m, "1BIG")
    assert m.state["ovf_used"] == 10


def test_more_queues_are_selected_when_the_primary_reaches_the_threshold_again():
    m = mon(size=10, ovflwstr="OVF1", ovflwsize=100)
    fill(m, "1BIG", 10)
    fill(m, "1SML", 4)  # 1BIG moves: primary 4
    out = fill(m, "1SML", 10)  # primary 14 = 70% again
    assert types(out) == [("CANDIDATES", "")]  # no second OVERFLOW_MODE_ENTERED
    assert m.state["queues"]["1SML"]["ovf"]


def test_overflow_structure_full_rejects_puts_to_overflow_queues_while_the_primary_carries_on():
    m = mon(size=10, ovflwstr="OVF1", ovflwsize=6)  # 12 elements of overflow
    fill(m, "1BIG", 10)
    fill(m, "1SML", 4)
    out = fill(m, "1BIG", 3)  # 10 + 2 fit, the third does not
    assert types(out) == [("OVERFLOW_STRUCTURE_FULL", "FIRING")]
    assert out[0].record["message"] == "CQS0205E STRUCTURE OVF1 IS FULL"
    assert types(fill(m, "1SML", 1)) == []  # primary carries on
    assert types(get(m, "1BIG")) == [("OVERFLOW_STRUCTURE_FULL", "RESOLVED")]


def test_the_overflow_scan_returns_empty_queues_and_ends_overflow_mode_in_event_time():
    minute = 60_000
    m = mon(size=10, ovflwstr="OVF1", ovflwsize=100, overflow_scan_interval_ms=15 * minute)
    fill(m, "1BIG", 10, ts=0)
    fill(m, "1SML", 4, ts=0)  # overflow entered at ts 0: scans at 15, 30, ... minutes
    for _ in range(10):
        get(m, "1BIG", ts=minute)
    # between scans an empty queue stays in overflow
    assert types(put(m, "1OTHER", ts=14 * minute)) == []
    assert m.state["queues"]["1BIG"]["ovf"]
    out = put(m, "1OTHER", ts=15 * minute)
    assert types(out) == [("QUEUE_OVERFLOW_ENDED", "INFO"), ("OVERFLOW_MODE_ENDED", "RESOLVED")]
    assert out[0].record["ts"] == 15 * minute and out[0].record["queue"] == "1BIG"


def test_the_overflow_scan_fires_from_the_arrival_clock_when_the_structure_is_quiet():
    minute = 60_000
    m = mon(size=10, ovflwstr="OVF1", ovflwsize=100, overflow_scan_interval_ms=15 * minute)
    for _ in range(10):
        m.on_activity(Op(f"e{next(_ids)}", "IMSA", "1BIG", "PUT", 0, 512, clock=5_000))
    for _ in range(4):
        m.on_activity(Op(f"e{next(_ids)}", "IMSA", "1SML", "PUT", 0, 512, clock=5_000))
    for _ in range(10):
        m.on_activity(Op(f"e{next(_ids)}", "IMSA", "1BIG", "GET", minute, 512, clock=5_000 + minute))
    due = m.next_scan_clock()
    assert due == 5_000 + 15 * minute
    assert m.on_clock(due - 1) == []
    assert types(m.on_clock(due)) == [("QUEUE_OVERFLOW_ENDED", "INFO"), ("OVERFLOW_MODE_ENDED", "RESOLVED")]
    assert m.next_scan_clock() is None


def test_a_nonempty_queue_in_overflow_keeps_the_scan_going():
    minute = 60_000
    m = mon(size=10, ovflwstr="OVF1", ovflwsize=100, overflow_scan_interval_ms=15 * minute)
    fill(m, "1BIG", 10, ts=0)
    fill(m, "1SML", 4, ts=0)
    out = put(m, "1OTHER", ts=46 * minute)  # scans at 15, 30, 45 found 1BIG not empty
    assert types(out) == []
    assert m.state["next_scan"] == 60 * minute


def test_resource_structures_never_overflow():
    m = mon(size=10, resource=True)
    out = fill(m, "1TRAN", 16)
    assert "OVERFLOW_MODE_ENTERED" not in [t for t, _ in types(out)]


# ---------------------------------------------------------------- full and near full

def test_structure_full_once_per_episode_and_relieved_by_a_get():
    m = mon(size=10, ovflwmax=100, fullthreshold=100, resource=True)
    fill(m, "1TRAN", 20)
    out = fill(m, "1TRAN", 3)
    assert types(out) == [("STRUCTURE_FULL", "FIRING")]  # once for three rejected puts
    assert out[0].record["message"] == "CQS0205E STRUCTURE MSGQ1 IS FULL"
    assert m.state["rejected"] == 3 and m.state["used"] == 20
    out2 = get(m, "1TRAN")
    assert types(out2)[0] == ("STRUCTURE_FULL_RELIEVED", "RESOLVED")  # then near full (at 100%) resolves
    assert out2[0].record["alert_id"] == out[0].record["alert_id"]


def test_near_full_fires_once_on_the_upward_crossing_and_resolves_below():
    m = mon(size=10, ovflwmax=100, fullthreshold=80)
    out = fill(m, "1TRAN", 18)
    assert types(out) == [("STRUCTURE_NEAR_FULL", "FIRING")]  # once, at 16/20
    fire = out[0].record
    assert fire["usage_before_pct"] == 75.0 and fire["usage_after_pct"] == 80.0 and "IXC585E" in fire["message"]
    out = get(m, "1TRAN") + get(m, "1TRAN") + get(m, "1TRAN")  # 17, 16, 15
    assert types(out) == [("STRUCTURE_NEAR_FULL", "RESOLVED")]
    assert out[0].record["alert_id"] == fire["alert_id"]


def test_an_unknown_structure_is_reported_once_and_not_accounted():
    m = StructureMonitor("NOPE", StructureSettings())
    out = m.on_activity(Op("a", "IMSA", "1TRAN", "PUT", 0, 512)) + m.on_activity(Op("b", "IMSA", "1TRAN", "PUT", 0, 512))
    assert types(out) == [("STRUCTURE_UNKNOWN", "INFO")]


def test_event_ids_are_deterministic():
    def run():
        m = mon(size=10)
        return [e.record["event_id"] for i in range(15)
                for e in m.on_activity(Op(f"x{i}", "IMSA", "1TRAN", "PUT", i, 512))]

    assert run() == run() and len(set(run())) == len(run())


@pytest.mark.parametrize("bad", [0, -1])
def test_elements_of_odd_sizes(bad):
    assert elements(bad) == 1
