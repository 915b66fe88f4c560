"""Durations as the configuration writes them (``15 minutes``, ``500 ms``, ``2s``, or a number of seconds), in
milliseconds."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|seconds?|m|minutes?|h|hours?|d|days?)\s*$")
_UNIT_MS = {
    "ms": 1,
    "millisecond": 1,
    "milliseconds": 1,
    "s": 1000,
    "second": 1000,
    "seconds": 1000,
    "m": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
}


def duration_ms(value: Any) -> int:
    """'15 minutes', '500ms', '2s', 7 (seconds) -> milliseconds."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as '15 minutes' or '500 ms'")
    if isinstance(value, int):
        return value * 1000
    if isinstance(value, float):
        return int(Fraction(str(value)) * 1000)  # exact: 4.007 s is 4007 ms, never 4006
    m = _DURATION.match(str(value))
    if not m:
        raise ValueError(f"{value!r} is not a duration; write e.g. '15 minutes', '30 s' or '500 ms'")
    return int(Fraction(m.group(1)) * _UNIT_MS[m.group(2)])
