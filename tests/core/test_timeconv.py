"""Timestamps never move: exact ms <-> datetime conversions."""

from __future__ import annotations

import datetime as dt

import pytest

from qmon.app import render
from qmon.core import topics
from qmon.core.records import iso
from qmon.core.timeconv import EPOCH, from_ms, to_ms

UTC = dt.UTC
MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z, the latest timestamp qmon accepts


def via_float(ms: int) -> int:
    """What going through float seconds does: ``int(dt.timestamp() * 1000)``."""
    return int((EPOCH + dt.timedelta(milliseconds=ms)).timestamp() * 1000)


def float_unsafe(lo: int, hi: int) -> list[int]:
    return [ms for ms in range(lo, hi) if via_float(ms) != ms]


# Values a float round trip moves by a millisecond: found by the loop below, kept literal so the
# test documents them.  Near 2026 (1.77e12 ms) the product happens to round back, so the unsafe values
# are the small ones replay files use (4,007 among them) and, in the other direction, the year 9999.
UNSAFE = [1_001, 1_003, 4_004, 4_007, 4_012, 65_514, 65_526]


def test_the_unsafe_values_are_really_unsafe_through_a_float():
    assert float_unsafe(4_000, 4_010) == [4_004, 4_007]
    for ms in UNSAFE:
        assert via_float(ms) == ms - 1


@pytest.mark.parametrize("ms", UNSAFE + [0, 1, 999, 1_000, 1_767_225_600_123, 1_767_225_604_007, MAX_MS - 1, MAX_MS])
def test_round_trip_is_exact(ms):
    d = from_ms(ms)
    assert d.tzinfo is not None and d.utcoffset() == dt.timedelta(0)
    assert d == dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=ms)
    assert to_ms(d) == ms


def test_every_value_of_a_range_round_trips():
    assert all(to_ms(from_ms(ms)) == ms for ms in range(0, 100_000))
    assert all(to_ms(from_ms(ms)) == ms for ms in range(MAX_MS - 100_000, MAX_MS + 1))


def test_the_extremes_qmon_accepts():
    assert from_ms(0) == dt.datetime(1970, 1, 1, tzinfo=UTC)
    assert from_ms(MAX_MS) == dt.datetime(9999, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC)
    assert to_ms(dt.datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)) == MAX_MS  # sub-ms dropped


def test_to_ms_takes_ints_naive_utc_and_other_zones():
    assert to_ms(4_007) == 4_007
    assert to_ms(dt.datetime(1970, 1, 1, 0, 0, 4, 7_000)) == 4_007  # naive: UTC
    cet = dt.timezone(dt.timedelta(hours=1))
    assert to_ms(dt.datetime(1970, 1, 1, 1, 0, 4, 7_000, tzinfo=cet)) == 4_007
    with pytest.raises(TypeError):
        to_ms(4.007)  # type: ignore[arg-type, unused-ignore]
    with pytest.raises(TypeError):
        to_ms(True)


def test_iso_keeps_the_millisecond_at_the_far_end():
    assert iso(4_007) == "1970-01-01T00:00:04.007Z"
    assert iso(MAX_MS) == "9999-12-31T23:59:59.999Z"  # through a float: .998
    assert iso(MAX_MS - 9) == "9999-12-31T23:59:59.990Z"  # through a float: .989


def test_render_time_keeps_the_millisecond():
    rec = {"type": "X", "state": "FIRING", "subject_kind": "STRUCTURE", "subject": "S", "summary": "s", "ts": MAX_MS}
    assert render.line(topics.ALERTS, rec).startswith("23:59:59.999 ")
    rec["ts"] = 4_007
    assert render.line(topics.ALERTS, rec).startswith("00:00:04.007 ")
