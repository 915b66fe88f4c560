"""``qmon replay`` with journal status lines through the real Spark query."""

from __future__ import annotations

import pytest

from qmon.core import topics
from qmon.core.config import Config

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000


def journal(ts, attached, size, receivers, threshold=100_000, qmgr="PAYQM", library="QMPAYLIB"):
    return {
        "ts": T0 + ts,
        "qmgr": qmgr,
        "journal": {
            "library": library,
            "attached": attached,
            "size_kb": size,
            "threshold_kb": threshold,
            "receivers": receivers,
        },
    }


def test_each_journal_alert_through_replay(replay_factory):
    every = [f"AMQA0{i:05d}" for i in range(100_000)]
    out = replay_factory(
        [
            journal(0, "AMQA000123", 50_000, ["AMQA000122", "AMQA000123"]),
            journal(1_000, "AMQA000123", 91_000, ["AMQA000122", "AMQA000123"]),  # near threshold
            journal(2_000, "AMQA000124", 10, ["AMQA000123", "AMQA000124"]),  # switched, resolved
            journal(3_000, "AMQA000124", 20, ["AMQA000123", "AMQA000124", "AMQA000125"]),  # switch blocked
            journal(4_000, "AMQA000124", 30, ["AMQA000123", "AMQA000124"]),  # resolved
            journal(5_000, "AMQA000124", 30, every, library="QMOTHER"),  # exhausted
            {
                "ts": T0 + 6_000,
                "qmgr": "PAYQM",
                "journal": {
                    "library": "QMPAYLIB",
                    "attached": "JUNK",
                    "size_kb": 1,
                    "threshold_kb": 2,
                    "receivers": [],
                },
            },
            {"ts": T0 + 7_000, "qmgr": "PAYQM", "journal": {"library": "QMPAYLIB"}},
        ],
        Config.model_validate({"monitor": {"journal_near_pct": 90}}),
    )
    alerts = [(a["type"], a["state"], a["ts"] - T0) for a in out if a["topic"] == topics.ALERTS]
    assert alerts == [
        ("RECEIVER_NEAR_THRESHOLD", "FIRING", 1_000),
        ("RECEIVER_SWITCHED", "INFO", 2_000),
        ("RECEIVER_NEAR_THRESHOLD", "RESOLVED", 2_000),
        ("SWITCH_BLOCKED", "FIRING", 3_000),
        ("SWITCH_BLOCKED", "RESOLVED", 4_000),
        ("SWITCH_BLOCKED", "FIRING", 5_000),
        ("NAME_SPACE_EXHAUSTED", "FIRING", 5_000),
    ]
    dead = {d["reason_name"]: d for d in out if d["topic"] == topics.DLQ}
    assert set(dead) == {"QMON_INVALID_FIELD", "QMON_MISSING_FIELD"}
    assert (
        "AMQArnnnnn" in dead["QMON_INVALID_FIELD"]["error"] and dead["QMON_INVALID_FIELD"]["format"] == "JournalStatus"
    )
    assert "journal.attached" in dead["QMON_MISSING_FIELD"]["error"]


def test_two_instances_of_one_library_are_two_journals_through_replay(replay_factory):
    """Multi-instance queue manager: AMQA… and AMQB… receivers in one library are journals AMQAJRN and AMQBJRN."""
    out = replay_factory(
        [
            journal(0, "AMQA000123", 91_000, ["AMQA000122", "AMQA000123"]),  # A near threshold
            journal(1_000, "AMQB000001", 10, ["AMQB000001"]),  # B: not a switch, A's episode stays
            journal(2_000, "AMQA000123", 92_000, ["AMQA000122", "AMQA000123"]),  # A: no repeat
            journal(3_000, "AMQB000001", 20, ["AMQB000001", "AMQB000002"]),  # B switch blocked
            journal(4_000, "AMQA000124", 10, ["AMQA000123", "AMQA000124"]),  # A switched, near resolved
            journal(5_000, "AMQB000003", 5, ["AMQB000001", "AMQB000002"]),  # B switched (by hand), resolved
        ],
        Config.model_validate({"monitor": {"journal_near_pct": 90}}),
    )
    alerts = [a for a in out if a["topic"] == topics.ALERTS]
    assert [(a["type"], a["state"], a["ts"] - T0, a["subject"]) for a in alerts] == [
        ("RECEIVER_NEAR_THRESHOLD", "FIRING", 0, "QMPAYLIB/AMQAJRN"),
        ("SWITCH_BLOCKED", "FIRING", 3_000, "QMPAYLIB/AMQBJRN"),
        ("RECEIVER_SWITCHED", "INFO", 4_000, "QMPAYLIB/AMQAJRN"),
        ("RECEIVER_NEAR_THRESHOLD", "RESOLVED", 4_000, "QMPAYLIB/AMQAJRN"),
        ("RECEIVER_SWITCHED", "INFO", 5_000, "QMPAYLIB/AMQBJRN"),
        ("SWITCH_BLOCKED", "RESOLVED", 5_000, "QMPAYLIB/AMQBJRN"),
    ]
    assert "from receiver AMQA000123 to AMQA000124" in alerts[2]["summary"]
    assert "from receiver AMQB000001 to AMQB000003" in alerts[4]["summary"]
    assert "CHGJRN JRN(QMPAYLIB/AMQBJRN) JRNRCV(QMPAYLIB/AMQB000003)" in alerts[1]["action"]
    assert alerts[3]["alert_id"] == alerts[0]["alert_id"] and alerts[5]["alert_id"] == alerts[1]["alert_id"]
