"""Properties of the pure structure model over generated streams (hypothesis): accounting never
drifts, usage is never reported above 100 %, every alert episode is one FIRING then at most one
RESOLVED, and candidate selection runs once per reaching of OVFLWMAX."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings

from qmon.core import topics
from qmon.core.config import Config
from qmon.core.records import Activity
from qmon.core.structures import StructureMonitor, at_or_above
from tests.strategies import structure_streams
from tests.streams import STRUCTURE_CONFIG

SETTINGS = Config.model_validate(STRUCTURE_CONFIG).structure_settings()


def _run(records: list[dict[str, Any]]) -> tuple[dict[str, StructureMonitor], list[tuple[str, Any, bool]]]:
    monitors: dict[str, StructureMonitor] = {}
    out: list[tuple[str, Any, bool]] = []  # (structure, emit or None, primary at or above OVFLWMAX before)
    for r in records:
        m = monitors.get(r["structure"])
        if m is None:
            m = monitors[r["structure"]] = StructureMonitor(r["structure"], SETTINGS)
        above = m.definition is not None and at_or_above(m.state["used"], m.capacity, m.definition.ovflwmax)
        emits = m.on_activity(
            Activity(
                r["event_id"],
                r["qmgr"],
                r["queue"],
                r["op"],
                r["ts"],
                msg_bytes=r["msg_bytes"],
                reason=r.get("reason"),
                clock=r["ts"],
            )
        )
        out.extend((r["structure"], e, above) for e in emits)
        if not emits:
            out.append((r["structure"], None, above))  # a record that raised nothing still moves usage
        if m.definition is not None:
            st = m.state
            primary = sum(
                q["elements"] for n, q in st["queues"].items() if not (q["in_overflow"] and m.definition.ovflwstr)
            )
            overflow = sum(q["elements"] for q in st["queues"].values() if q["in_overflow"] and m.definition.ovflwstr)
            assert st["used"] == primary and st["overflow_used"] == overflow
            assert 0 <= st["used"] <= m.capacity and 0 <= st["overflow_used"] <= max(m.ovf_capacity, 0)
            assert all(q["elements"] >= 0 and q["messages"] >= 0 for q in st["queues"].values())
    return monitors, out


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(structure_streams())
def test_accounting_is_exact_and_usage_never_above_100_percent(records):
    _, out = _run(records)
    for _, e, _ in out:
        if e is None:
            continue
        for k in ("usage_before_pct", "usage_after_pct", "usage_pct"):
            assert (e.record.get(k) or 0.0) <= 100.0


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(structure_streams())
def test_every_episode_is_one_firing_then_at_most_one_resolved(records):
    _, out = _run(records)
    state: dict[str, str] = {}
    for _, e, _ in out:
        if e is None:
            continue
        r = e.record
        if e.topic != topics.ALERTS or r["state"] == "INFO":
            continue
        seen = state.get(r["alert_id"])
        if r["state"] == "FIRING":
            assert seen is None, f"a second FIRING for {r['type']} {r['alert_id']}"
        else:
            assert seen == "FIRING", f"RESOLVED without FIRING for {r['type']} {r['alert_id']}"
        state[r["alert_id"]] = r["state"]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(structure_streams())
def test_selection_runs_only_when_ovflwmax_is_reached(records):
    """No selection while usage stays at or above OVFLWMAX: between two selections of a structure, usage
    was below OVFLWMAX or overflow mode ended (which re-arms it)."""
    _, out = _run(records)
    armed: dict[str, bool] = {}
    for structure, e, above_before in out:
        if not above_before or (
            e is not None and e.topic == topics.ALERTS and e.record["type"] == "OVERFLOW_MODE_ENDED"
        ):
            armed[structure] = True
        if e is not None and e.topic == topics.OVERFLOW:
            assert armed.get(structure, True), "candidates selected again while usage stayed above OVFLWMAX"
            armed[structure] = False


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(structure_streams(structures=("MSGQ1",), max_size=200))
def test_getting_everything_that_was_put_frees_everything(records):
    monitors, _ = _run(records)
    m = monitors["MSGQ1"]
    t = max(r["ts"] for r in records) + 1
    for name in sorted(m.state["queues"]):
        while m.state["queues"][name]["fifo"]:
            m.on_activity(Activity(f"drain-{t}", "IMSA", name, "GET", t, msg_bytes=None, reason=None, clock=t))
            t += 1
    assert m.state["used"] == 0 and m.state["overflow_used"] == 0
