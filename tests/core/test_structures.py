"""The pure structure model (qmon.core.structures) rule by rule (IMS, *CQS structure overflow function*)."""

from __future__ import annotations

import itertools

import pytest

from qmon.core import topics
from qmon.core.records import Activity
from qmon.core.structures import (
    ExitRule,
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
    d = StructureDef(**{"strname": "MSGQ1", "size": 10, "initsize": 10, "clear_hold_ms": 0, **kw})
    return StructureMonitor("MSGQ1", StructureSettings((d,), OverflowExit(rules=exit_rules)))


def put(m: StructureMonitor, queue: str, nbytes: int = 512, ts: int = 1000, **kw):
    return m.on_activity(Activity(f"e{next(_ids)}", "IMSA", queue, "PUT", ts, msg_bytes=nbytes, **kw))


def get(m: StructureMonitor, queue: str, nbytes: int | None = 512, ts: int = 2000, **kw):
    return m.on_activity(Activity(f"e{next(_ids)}", "IMSA", queue, "GET", ts, msg_bytes=nbytes, **kw))


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
    assert qs["1TRAN"]["elements"] == 8 and qs["2TRAN"]["elements"] == 3 and m.state["used"] == 11
    get(m, "1TRAN", 4096 + 1500)
    assert qs["1TRAN"]["elements"] == 0 and qs["2TRAN"]["elements"] == 0 and m.state["used"] == 0


def test_a_get_without_msg_bytes_frees_the_oldest_message_exactly():
    m = mon(size=100)
    put(m, "1TRAN", 512)
    put(m, "1TRAN", 2048)
    get(m, "1TRAN", None)
    assert m.state["queues"]["1TRAN"]["elements"] == 4  # FIFO: the 1-element message went first
    get(m, "1TRAN", None)
    assert m.state["used"] == 0


def test_failed_operations_and_start_change_nothing():
    m = mon(size=100)
    put(m, "1TRAN", 512, reason=2053)
    m.on_activity(Activity("s1", "IMSA", "1TRAN", "START", 1000, msg_bytes=None))
    assert m.state["used"] == 0


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
    assert m.state["size_kb"] == 10 and m.state["mode_alert_id"] is None
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
        ("1BIG", "reject"),
        ("1AAA", "approve"),
        ("1BBB", "approve"),
    ]
    assert cand["usage_after_pct"] == 40.0


def test_selection_stops_after_512_approved_queues():
    m = mon(size=1500, initsize=1500)  # 3000 elements; 2100 = 70%; 600 to move to reach 50%
    out = []
    for i in range(2100):
        out.extend(put(m, f"1Q{i:04d}"))
    cand = [e.record for e in out if e.topic == topics.OVERFLOW][0]
    assert len(cand["candidates"]) == 512


def test_a_callable_overflow_exit(monkeypatch):
    import sys
    import types as _types

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
    assert m.state["queues"]["1BIG"]["in_overflow"]
    out = fill(m, "1BIG", 3)
    assert types(out) == [("QUEUE_PUTS_REJECTED", "FIRING")]
    assert m.state["queues"]["1BIG"]["elements"] == 10 and m.state["rejected"] == 3
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
    assert not m.state["queues"]["1BIG"]["in_overflow"]
    assert types(fill(m, "1BIG", 1)) == []  # puts accepted again


# ---------------------------------------------------------------- with an overflow structure


def test_approved_queues_move_to_the_overflow_structure_and_count_there():
    m = mon(size=10, ovflwstr="OVF1", ovflwsize=10)
    fill(m, "1BIG", 10)
    fill(m, "1SML", 4)
    assert m.state["used"] == 4 and m.state["overflow_used"] == 10
    put(m, "1BIG")
    assert m.state["used"] == 4 and m.state["overflow_used"] == 11
    get(m, "1BIG")
    assert m.state["overflow_used"] == 10


def test_more_queues_are_selected_when_the_primary_reaches_the_threshold_again():
    m = mon(size=10, ovflwstr="OVF1", ovflwsize=100)
    fill(m, "1BIG", 10)
    fill(m, "1SML", 4)  # 1BIG moves: primary 4
    out = fill(m, "1SML", 10)  # primary 14 = 70% again
    assert types(out) == [("CANDIDATES", "")]  # no second OVERFLOW_MODE_ENTERED
    assert m.state["queues"]["1SML"]["in_overflow"]


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
    assert m.state["queues"]["1BIG"]["in_overflow"]
    out = put(m, "1OTHER", ts=15 * minute)
    assert types(out) == [("QUEUE_OVERFLOW_ENDED", "INFO"), ("OVERFLOW_MODE_ENDED", "RESOLVED")]
    assert out[0].record["ts"] == 15 * minute and out[0].record["queue"] == "1BIG"


def test_the_overflow_scan_fires_from_the_arrival_clock_when_the_structure_is_quiet():
    minute = 60_000
    m = mon(size=10, ovflwstr="OVF1", ovflwsize=100, overflow_scan_interval_ms=15 * minute)
    for _ in range(10):
        m.on_activity(Activity(f"e{next(_ids)}", "IMSA", "1BIG", "PUT", 0, msg_bytes=512, clock=5_000))
    for _ in range(4):
        m.on_activity(Activity(f"e{next(_ids)}", "IMSA", "1SML", "PUT", 0, msg_bytes=512, clock=5_000))
    for _ in range(10):
        m.on_activity(Activity(f"e{next(_ids)}", "IMSA", "1BIG", "GET", minute, msg_bytes=512, clock=5_000 + minute))
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


def test_a_resource_structure_at_ovflwmax_is_not_altered_but_full_monitoring_still_warns():
    """The alter is the overflow function's first action, and CQS has none for a resource structure; z/OS
    structure full monitoring (FULLTHRESHOLD) still warns."""
    m = mon(size=7, initsize=5, ovflwmax=70, fullthreshold=80, resource=True)
    out = fill(m, "1TRAN", 9)
    kinds = [t for t, _ in types(out)]
    assert "STRUCTURE_ALTERED" not in kinds and "OVERFLOW_MODE_ENTERED" not in kinds
    assert m.state["size_kb"] == 5
    assert "STRUCTURE_NEAR_FULL" in kinds


# ---------------------------------------------------------------- full and near full


def test_structure_full_once_per_episode_and_relieved_by_a_get():
    m = mon(size=10, ovflwmax=100, fullthreshold=100, resource=True)
    fill(m, "1TRAN", 20)
    out = fill(m, "1TRAN", 3)
    assert types(out) == [("STRUCTURE_FULL", "FIRING")]  # once for three rejected puts
    assert out[0].record["message"] == "CQS0205E STRUCTURE MSGQ1 IS FULL"
    assert m.state["rejected"] == 3 and m.state["used"] == 20
    assert types(get(m, "1TRAN")) == []  # 19/20 = 95%: not below 100 - clear_margin yet
    out2 = get(m, "1TRAN")  # 90%
    assert types(out2)[0] == ("STRUCTURE_FULL_RELIEVED", "RESOLVED")  # then near full (at 100%) resolves
    assert out2[0].record["alert_id"] == out[0].record["alert_id"]


def test_near_full_fires_once_on_the_upward_crossing_and_resolves_a_margin_below():
    m = mon(size=10, ovflwmax=100, fullthreshold=80)
    out = fill(m, "1TRAN", 18)
    assert types(out) == [("STRUCTURE_NEAR_FULL", "FIRING")]  # once, at 16/20
    fire = out[0].record
    assert fire["usage_before_pct"] == 75.0 and fire["usage_after_pct"] == 80.0 and "IXC585E" in fire["message"]
    out = get(m, "1TRAN") + get(m, "1TRAN") + get(m, "1TRAN")  # 17, 16, 15: 75% is not below 80 - 5
    assert types(out) == []
    out = get(m, "1TRAN")  # 14/20 = 70%
    assert types(out) == [("STRUCTURE_NEAR_FULL", "RESOLVED")]
    assert out[0].record["alert_id"] == fire["alert_id"]


def test_an_unknown_structure_is_reported_once_and_not_accounted():
    m = StructureMonitor("NOPE", StructureSettings())
    out = m.on_activity(Activity("a", "IMSA", "1TRAN", "PUT", 0, msg_bytes=512)) + m.on_activity(
        Activity("b", "IMSA", "1TRAN", "PUT", 0, msg_bytes=512)
    )
    assert types(out) == [("STRUCTURE_UNKNOWN", "INFO")]


def test_event_ids_are_deterministic():
    def run():
        m = mon(size=10)
        return [
            e.record["event_id"]
            for i in range(15)
            for e in m.on_activity(Activity(f"x{i}", "IMSA", "1TRAN", "PUT", i, msg_bytes=512))
        ]

    assert run() == run() and len(set(run())) == len(run())


@pytest.mark.parametrize("bad", [0, -1])
def test_elements_of_odd_sizes(bad):
    assert elements(bad) == 1


# ---------------------------------------------------------------- exact accounting


def test_a_get_without_msg_bytes_frees_the_long_message_and_its_staging_part():
    """The IMS shared queues presentation: "IMSA deletes MSG2A and MSG2B from the structure" — both parts,
    exactly."""
    m = mon(size=100, lgmsgsz=1024)
    put(m, "5LTERM", 1024 + 3000)  # 2 elements on 5LTERM, 6 on 6LTERM
    put(m, "5LTERM", 100)  # 1 element
    qs = m.state["queues"]
    assert m.state["used"] == 9 and qs["6LTERM"]["elements"] == 6
    get(m, "5LTERM", None)  # FIFO: the long message goes first, with its staging part
    assert qs["5LTERM"]["elements"] == 1 and qs["6LTERM"]["elements"] == 0 and m.state["used"] == 1
    get(m, "5LTERM", None)
    assert m.state["used"] == 0 and qs["5LTERM"]["messages"] == 0 and qs["6LTERM"]["messages"] == 0


def test_gets_free_what_each_put_took_in_fifo_order():
    m = mon(size=100)
    for nbytes in (512, 2048, 100, 5000):  # 1, 4, 1, 10 elements
        put(m, "1TRAN", nbytes)
    freed = []
    for _ in range(4):
        before = m.state["used"]
        get(m, "1TRAN", None)
        freed.append(before - m.state["used"])
    assert freed == [1, 4, 1, 10]


def test_a_get_with_msg_bytes_frees_that_message_even_out_of_order():
    m = mon(size=100)
    put(m, "1TRAN", 512)
    put(m, "1TRAN", 5000)
    get(m, "1TRAN", 5000)  # a get by message id: the second message
    assert m.state["used"] == 1
    get(m, "1TRAN", None)
    assert m.state["used"] == 0


def test_usage_never_drifts_over_many_mixed_puts_and_gets():
    m = mon(size=1000, initsize=1000, lgmsgsz=1024, ovflwmax=100, fullthreshold=100)
    sizes = [100, 1500, 4000, 512, 513, 9000]
    for i in range(300):
        put(m, "1TRAN", sizes[i % len(sizes)])
    for _ in range(300):
        get(m, "1TRAN", None)
    assert m.state["used"] == 0
    assert all(q["elements"] == 0 and q["messages"] == 0 for q in m.state["queues"].values())


def test_the_per_queue_fifo_is_bounded_and_totals_stay_exact():
    from qmon.core.message_runs import MAX_RUNS

    m = mon(size=10_000, initsize=10_000, ovflwmax=100, fullthreshold=100)
    for i in range(10 * MAX_RUNS):
        put(m, "1TRAN", 512 * (1 + i % 7))  # a new size every message: no two runs merge by themselves
    assert len(m.state["queues"]["1TRAN"]["fifo"]) <= MAX_RUNS
    for _ in range(10 * MAX_RUNS):
        get(m, "1TRAN", None)
    assert m.state["used"] == 0


def test_a_get_for_a_message_qmon_never_saw_put_frees_nothing():
    m = mon(size=100)
    put(m, "1TRAN", 512)
    assert get(m, "1OTHER", 5000) == [] and m.state["used"] == 1
    get(m, "1TRAN", None)
    assert get(m, "1TRAN", 512) == [] and m.state["used"] == 0  # more gets than puts: nothing below zero


# ---------------------------------------------------------------- the overflow structure has a size


def test_approved_queues_move_only_while_they_fit_in_the_overflow_structure():
    m = mon(size=10, ovflwstr="OVF1", ovflwsize=4)  # 8 elements of overflow
    fill(m, "1BIG", 9)
    out = fill(m, "1MID", 5)  # 14/20 = 70%: 1BIG (9) does not fit in 8, 1MID (5) does
    cands = [e.record for e in out if e.topic == topics.OVERFLOW][0]["candidates"]
    assert [(c["queue"], c["decision"], c["in_overflow"]) for c in cands] == [
        ("1BIG", "approve", False),
        ("1MID", "approve", True),
    ]
    assert m.state["overflow_used"] == 5 and m.state["used"] == 9
    assert not m.state["queues"]["1BIG"]["in_overflow"] and m.state["queues"]["1MID"]["in_overflow"]
    assert m.ovf_usage() <= 100.0


def test_overflow_usage_is_never_reported_above_100_percent():
    m = mon(size=10, ovflwstr="OVF1", ovflwsize=3)  # 6 elements of overflow
    fill(m, "1BIG", 10)
    out = fill(m, "1SML", 4) + fill(m, "1SML", 20) + fill(m, "1BIG", 5)
    assert m.state["overflow_used"] <= m.ovf_capacity
    for e in out:
        for k in ("usage_before_pct", "usage_after_pct", "usage_pct"):
            assert (e.record.get(k) or 0) <= 100.0


# ---------------------------------------------------------------- selection when the threshold is reached


def test_selection_runs_when_the_threshold_is_reached_not_on_every_put_above_it():
    """With an overflow structure whose exit rejects everything, the puts above
    OVFLWMAX give one selection, not one per put."""
    m = mon((ExitRule("1*", "reject"),), size=10, ovflwstr="OVF1", ovflwsize=100, fullthreshold=100)
    out = fill(m, "1TRAN", 14)  # 70%: one selection, all rejected
    out += fill(m, "1TRAN", 4)  # 90%: still above, no new selection
    assert sum(1 for e in out if e.topic == topics.OVERFLOW) == 1


def test_reached_again_means_from_below_ovflwmax_to_at_or_above_it():
    m = mon((ExitRule("1*", "reject"),), size=10, ovflwstr="OVF1", ovflwsize=100, fullthreshold=100)
    fill(m, "1TRAN", 14)  # reached: selection 1
    get(m, "1TRAN")  # 13/20 = 65%: below again
    out = fill(m, "1TRAN", 1)  # 70%: reached again: selection 2
    assert sum(1 for e in out if e.topic == topics.OVERFLOW) == 1
    out = fill(m, "1TRAN", 1)  # 75%: still above
    assert not [e for e in out if e.topic == topics.OVERFLOW]


# ---------------------------------------------------------------- exact thresholds


def test_thresholds_compare_exact_element_counts_not_rounded_percentages():
    # 13999 of 20000 elements is 69.995%: below OVFLWMAX 70 although it rounds to 70.0
    m = mon(size=10_000, initsize=10_000, ovflwmax=70, fullthreshold=100)
    out = fill(m, "1TRAN", 13_999)
    assert round(m.usage(), 1) == 70.0 and not [e for e in out if e.topic == topics.OVERFLOW]
    assert m.state["mode_alert_id"] is None
    out = fill(m, "1TRAN", 1)  # 14000/20000 = 70% exactly
    assert types(out)[0] == ("OVERFLOW_MODE_ENTERED", "FIRING")


def test_near_full_compares_exact_counts():
    m = mon(size=10_000, initsize=10_000, ovflwmax=100, fullthreshold=80)
    out = fill(m, "1TRAN", 15_999)  # 79.995%
    assert types(out) == []
    assert types(fill(m, "1TRAN", 1)) == [("STRUCTURE_NEAR_FULL", "FIRING")]


# ---------------------------------------------------------------- hysteresis: a wobble is one episode


def test_near_full_wobbling_across_its_threshold_is_one_episode():
    m = mon(size=50, initsize=50, ovflwmax=100, fullthreshold=80)  # 100 elements, default clear margin 5 points
    out = fill(m, "1TRAN", 80)  # 80%: FIRING
    for _ in range(10):  # wobble 79% <-> 80%
        out += get(m, "1TRAN") + put(m, "1TRAN")
    assert types(out) == [("STRUCTURE_NEAR_FULL", "FIRING")]
    for _ in range(5):
        out += get(m, "1TRAN")  # 75%: not yet below 80 - 5
    assert types(out) == [("STRUCTURE_NEAR_FULL", "FIRING")]
    out += get(m, "1TRAN")  # 74%: resolved
    assert types(out) == [("STRUCTURE_NEAR_FULL", "FIRING"), ("STRUCTURE_NEAR_FULL", "RESOLVED")]


def test_structure_full_wobbling_at_capacity_is_one_episode():
    m = mon(size=50, initsize=50, ovflwmax=100, fullthreshold=100, resource=True)  # 100 elements
    out = fill(m, "1TRAN", 101)  # the 101st is rejected: FIRING
    for _ in range(10):  # a consumer and a producer at the same rate, at the brim
        out += get(m, "1TRAN") + put(m, "1TRAN") + put(m, "1TRAN")
    assert [t for t in types(out) if t[0].startswith("STRUCTURE_FULL")] == [("STRUCTURE_FULL", "FIRING")]
    for _ in range(6):
        out += get(m, "1TRAN")  # 94%: below 100 - 5
    assert [t for t in types(out) if t[0].startswith("STRUCTURE_FULL")] == [
        ("STRUCTURE_FULL", "FIRING"),
        ("STRUCTURE_FULL_RELIEVED", "RESOLVED"),
    ]


def test_overflow_mode_without_an_overflow_structure_wobbling_is_one_episode():
    m = mon(size=10, fullthreshold=100)
    fill(m, "1BIG", 10)
    out = fill(m, "1SML", 4)  # 70%: overflow mode; 1BIG's puts rejected
    for _ in range(5):  # wobble around OVFLWMAX and just above the target
        out += get(m, "1SML") + put(m, "1SML") + put(m, "1BIG")
    kinds = [t for t in types(out) if t[0] in ("OVERFLOW_MODE_ENTERED", "OVERFLOW_MODE_ENDED", "QUEUE_PUTS_REJECTED")]
    assert kinds == [("OVERFLOW_MODE_ENTERED", "FIRING"), ("QUEUE_PUTS_REJECTED", "FIRING")]


def test_a_clear_hold_keeps_a_brief_dip_in_one_episode_and_resolves_at_the_end_of_the_hold():
    m = mon(size=50, initsize=50, ovflwmax=100, fullthreshold=80, clear_hold_ms=30_000)
    out = fill(m, "1TRAN", 80, ts=0)  # FIRING
    for k in range(6):
        out += get(m, "1TRAN", ts=1_000 + k)  # 74%: the hold starts at 1,005
    out += fill(m, "1TRAN", 6, ts=10_000)  # back to 80% within the hold: same episode
    for k in range(6):
        out += get(m, "1TRAN", ts=20_000 + k)  # 74% again from 20,005
    assert types(out) == [("STRUCTURE_NEAR_FULL", "FIRING")]
    out = put(m, "1OTHER", 100, ts=49_999, clock=49_999)  # 75%: not below 75 ... the hold starts over
    for _ in range(2):
        out += get(m, "1TRAN", ts=50_000, clock=50_000)  # 73% from 50,000
    assert types(out) == []
    assert m.next_scan_clock() == 80_000  # the timer a quiet structure resolves by (clock == ts here)
    [resolved] = m.on_clock(80_000)
    assert (resolved.record["type"], resolved.record["state"], resolved.record["ts"]) == (
        "STRUCTURE_NEAR_FULL",
        "RESOLVED",
        80_000,
    )


def test_a_rejected_put_restarts_the_full_hold():
    m = mon(size=50, initsize=50, ovflwmax=100, fullthreshold=100, resource=True, clear_hold_ms=10_000)
    out = fill(m, "1TRAN", 101, ts=0)
    for k in range(6):
        out += get(m, "1TRAN", ts=1_000 + k)  # 94%
    out += put(m, "1TRAN", 512 * 20, ts=5_000)  # does not fit: full again
    out += put(m, "1TRAN", ts=12_000)  # 10 s after the dip, but the hold restarted at 5,000 ... (95%)
    assert [t for t in types(out) if t[0].startswith("STRUCTURE_FULL")] == [("STRUCTURE_FULL", "FIRING")]
    out = get(m, "1TRAN", ts=13_000) + get(m, "1TRAN", ts=13_000)  # 93% from 13,000
    out += put(m, "1OTHER", 100, ts=23_000)  # event time passes the hold: relieved at 23,000
    assert [(e.record["type"], e.record["ts"]) for e in out] == [("STRUCTURE_FULL_RELIEVED", 23_000)]


def test_leaving_overflow_mode_rearms_selection():
    """An overflow structure too small for the only candidate: nothing moves, the scan ends overflow mode,
    and the next put at or above OVFLWMAX selects again (a queue that now fits moves)."""
    m = mon(size=10, ovflwstr="OVF1", ovflwsize=3, overflow_scan_interval_ms=60_000, fullthreshold=100)
    fill(m, "1A", 14, ts=0)  # 70%: 1A (14) does not fit in 6 elements
    assert not m.state["queues"]["1A"]["in_overflow"]
    out = put(m, "1C", ts=60_000)  # the scan at 60 s: no queue in overflow, overflow mode ends; 15/20 = 75%
    kinds = types(out)
    assert ("OVERFLOW_MODE_ENDED", "RESOLVED") in kinds and ("OVERFLOW_MODE_ENTERED", "FIRING") in kinds
    assert [e for e in out if e.topic == topics.OVERFLOW]  # selected again


def test_a_full_episode_from_a_message_larger_than_the_free_space_resolves_on_a_quiet_structure():
    m = mon(size=10, ovflwmax=100, fullthreshold=100, resource=True, clear_hold_ms=30_000)
    put(m, "1A", 512, ts=0, clock=0)
    out = put(m, "1A", 20_000, ts=1_000, clock=1_000)  # 40 elements: does not fit in 19
    assert types(out) == [("STRUCTURE_FULL", "FIRING")]
    assert m.next_scan_clock() == 31_000
    assert types(m.on_clock(31_000)) == [("STRUCTURE_FULL_RELIEVED", "RESOLVED")]


def test_a_newer_structure_state_version_is_refused():
    with pytest.raises(ValueError, match="version 99"):
        StructureMonitor("MSGQ1", mon().settings, {"v": 99})
