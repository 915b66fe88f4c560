"""SPEC §8: journal receiver names and the alerts (pure logic)."""

from __future__ import annotations

import itertools

import pytest

from qmon.journals import (
    JournalMonitor,
    JournalStatus,
    Receiver,
    ReceiverNameError,
    first_free,
    next_name,
    parse,
)

_n = itertools.count(1)


def test_parse_names_the_instance_restore_digit_and_sequence():
    assert parse("AMQA012345") == Receiver("A", 0, 12345)
    assert parse("AMQB900001") == Receiver("B", 9, 1)


@pytest.mark.parametrize("name,expected", [
    ("AMQA000123", "AMQA000124"),
    ("AMQA099999", "AMQA000000"),   # the seed's examples: wrap within the same r
    ("AMQA999999", "AMQA900000"),
    ("AMQC512345", "AMQC512346"),
])
def test_next_name_adds_one_and_wraps_keeping_r(name, expected):
    assert next_name(name) == expected


@pytest.mark.parametrize("bad,why", [
    ("QMQA000001", "does not start with AMQ"),
    ("AMQA00001", "9 characters"),
    ("AMQ1000001", "instance letter"),
    ("AMQAX00001", "six digits"),
    ("amqa000001", "does not start with AMQ"),
])
def test_names_that_are_not_receiver_names_get_a_clear_error(bad, why):
    with pytest.raises(ReceiverNameError) as err:
        parse(bad)
    assert why in str(err.value) and bad in str(err.value)


def test_first_free_skips_taken_names_and_wraps():
    assert first_free("AMQA099998", ["AMQA099999"]) == "AMQA000000"
    assert first_free("AMQA000001", []) == "AMQA000002"


def test_first_free_is_none_when_every_name_is_taken():
    every = [f"AMQA0{i:05d}" for i in range(100_000)]
    assert first_free("AMQA000005", every) is None


def status(attached="AMQA000123", size=100, threshold=1000, receivers=("AMQA000122", "AMQA000123"), ts=1000,
           library="QMPAYLIB"):
    return JournalStatus(f"j{next(_n)}", "PAYQM", ts, library, attached, size, threshold, tuple(receivers))


def kinds(out):
    return [(r["type"], r["state"]) for _, _, r in out]


def test_near_threshold_fires_once_at_the_percentage_and_resolves_after_a_switch():
    m = JournalMonitor("PAYQM", {}, near_pct=90)
    assert kinds(m.on_status(status(size=899))) == []
    fire = m.on_status(status(size=900))
    assert kinds(fire) == [("RECEIVER_NEAR_THRESHOLD", "FIRING")]
    assert kinds(m.on_status(status(size=950))) == []  # no repeats
    out = m.on_status(status(attached="AMQA000124", size=5, receivers=("AMQA000123", "AMQA000124"), ts=2000))
    assert kinds(out) == [("RECEIVER_SWITCHED", "INFO"), ("RECEIVER_NEAR_THRESHOLD", "RESOLVED")]
    assert out[1][2]["alert_id"] == fire[0][2]["alert_id"]
    assert "AMQA000123" in out[0][2]["summary"] and "AMQA000124" in out[0][2]["summary"]


def test_switch_blocked_when_the_next_name_exists_with_cpi70e3_and_the_manual_commands():
    m = JournalMonitor("PAYQM", {})
    out = m.on_status(status(receivers=("AMQA000123", "AMQA000124")))
    assert kinds(out) == [("SWITCH_BLOCKED", "FIRING")]
    rec = out[0][2]
    assert rec["message"].startswith("CPI70E3") and rec["severity"] == "CRITICAL"
    assert "CRTJRNRCV JRNRCV(QMPAYLIB/AMQA000125)" in rec["action"] and "CHGJRN JRN(QMPAYLIB/AMQAJRN)" in rec["action"]
    assert kinds(m.on_status(status(receivers=("AMQA000123", "AMQA000124"), ts=1500))) == []
    resolved = m.on_status(status(receivers=("AMQA000123",), ts=2000))
    assert kinds(resolved) == [("SWITCH_BLOCKED", "RESOLVED")]


def test_name_space_exhausted_when_no_name_is_free_with_both_actions():
    every = tuple(f"AMQA0{i:05d}" for i in range(100_000))
    m = JournalMonitor("PAYQM", {})
    out = m.on_status(status(attached="AMQA000123", receivers=every))
    assert kinds(out) == [("SWITCH_BLOCKED", "FIRING"), ("NAME_SPACE_EXHAUSTED", "FIRING")]
    action = out[1][2]["action"]
    assert "delete journal receivers" in action and "RCDMQMIMG" in action


def test_a_stale_status_is_ignored():
    m = JournalMonitor("PAYQM", {})
    m.on_status(status(attached="AMQA000124", ts=2000))
    assert m.on_status(status(attached="AMQA000123", ts=1000)) == []


def test_journals_of_different_libraries_are_separate():
    m = JournalMonitor("PAYQM", {})
    m.on_status(status(library="LIB1", size=950))
    assert kinds(m.on_status(status(library="LIB2", size=950))) == [("RECEIVER_NEAR_THRESHOLD", "FIRING")]
