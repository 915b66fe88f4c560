"""Exact conversions between epoch milliseconds and ``datetime``.  Pure.

qmon's timestamps are whole epoch milliseconds (Avro ``timestamp-millis``).  Going through
float seconds (``int(dt.timestamp() * 1000)``, ``datetime.fromtimestamp(ms / 1000)``) can move
one by a millisecond (4.007 s * 1000 is 4006.999…), so every conversion goes through these two
functions, which use integer ``timedelta`` arithmetic only and are exact over the whole range
``datetime`` can hold (year 1 to 9999; qmon accepts 1970–9999).
"""

from __future__ import annotations

import datetime as _dt

#: 1970-01-01T00:00:00Z, timezone-aware.
EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_MS = _dt.timedelta(milliseconds=1)


def to_ms(value: _dt.datetime | int) -> int:
    """Epoch milliseconds of a datetime, exactly; an int is already epoch ms and is returned as is.

    A naive datetime is taken as UTC (qmon's Spark sessions run in UTC; fastavro returns aware
    UTC datetimes).  Microseconds below a millisecond are dropped (floor).
    """
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.UTC)
        return (value - EPOCH) // _MS
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(f"expected epoch milliseconds (int) or a datetime, got {type(value).__name__}: {value!r}")


def from_ms(ms: int) -> _dt.datetime:
    """The aware UTC datetime of epoch milliseconds, exactly."""
    return EPOCH + _dt.timedelta(milliseconds=ms)
