"""Where a level is heading: its trend over a window of samples, how sure that trend is, and when it reaches a
threshold.  Pure: no state, no clock.

The samples are a level (a structure's data elements in use, a queue's depth) taken every ``step`` of event
time, oldest first (``qmon.core.forecaster`` keeps them).  The estimator is chosen by measurement
(``benchmarks/forecast.py``, docs/benchmarks.md) among least squares, Theil–Sen and Holt over the same
window; why the one below holds up:

* **Bursts.**  The rate is the Theil–Sen slope, the median of the slopes between every two samples.  A burst
  that comes and goes (a batch a consumer drains within a sample or two) moves only the pairs with those
  samples, a few among hundreds, so the median barely moves, where a least-squares line tilts towards it.  A
  batch that stays is a rise, and counts as one.
* **A consumer's sawtooth.**  A consumer that drains in batches makes the level climb and fall back again and
  again; over a window of several teeth the median slope of a sawtooth that never fills is still positive
  (most pairs lie on a climbing edge), so the rate alone would predict a fill.  The confidence is what tells
  it apart: Kendall's rank correlation of level against time, (rising pairs − falling pairs) / all pairs,
  1 when every sample is above every earlier one, near 0 when climbs and falls balance, as a sawtooth's do.
  A fill with bursts keeps its rank order between the bursts, so its confidence stays high.
* **A fill that stops.**  Samples at a constant level are ties: they add no rising pair, so the confidence
  falls as they fill the window, and the median slope goes to 0 once half the pairs are flat.

A threshold is reached by the level's highs, not by its trend line: a fill with bursts crosses it with the
burst that lands above it, a fill under batches that a consumer drains at once with a batch.  So the forecast
starts from the line's value at the newest sample raised by how far the samples stand above the line (the
third largest of their distances above it: a high the window has seen three times, not a stray sample or two),
and moves at the line's rate.  The newest sample alone would make the predicted instant jump with every burst.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import NamedTuple

logger = logging.getLogger(__name__)

#: fewer samples than this give no trend (a level seen for less than half the window)
MIN_SAMPLES = 15


class Trend(NamedTuple):
    """A level's trend at its newest sample."""

    slope: float  # level units a sample (negative: falling)
    step_ms: int  # milliseconds between samples
    level: float  # the level the trend starts from at the newest sample (its line, raised to the level's highs)
    confidence: float  # Kendall's rank correlation of the samples with time, -1 to 1

    @property
    def per_minute(self) -> float:
        return self.slope * 60_000 / self.step_ms


def trend(samples: Sequence[int], step_ms: int) -> Trend | None:
    """The trend of ``samples`` (one every ``step_ms``, oldest first), or None with fewer than MIN_SAMPLES."""
    n = len(samples)
    if n < MIN_SAMPLES or step_ms <= 0:
        return None
    slopes: list[float] = []
    rising = falling = 0
    for i in range(n - 1):
        yi = samples[i]
        for j in range(i + 1, n):
            d = samples[j] - yi
            if d > 0:
                rising += 1
            elif d < 0:
                falling += 1
            slopes.append(d / (j - i))
    slope = _median(slopes)
    intercept = _median([y - slope * i for i, y in enumerate(samples)])
    level = intercept + slope * (n - 1) + highs(samples, intercept, slope)
    return Trend(slope, step_ms, level, (rising - falling) / len(slopes))


def highs(samples: Sequence[int], intercept: float, slope: float) -> float:
    """How far the level's highs stand above the line ``intercept + slope × i``: the third largest of the
    samples' distances above it (0 when they are below)."""
    above = sorted(y - intercept - slope * i for i, y in enumerate(samples))
    return max(0.0, above[-3])


def _median(values: list[float]) -> float:
    values.sort()
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def eta(t: Trend, now: int, threshold: int) -> int | None:
    """The instant the trend's level reaches ``threshold`` (``now`` if it is there already), or None when
    it is not rising."""
    if t.level >= threshold:
        return now
    if t.slope <= 0:
        return None
    return now + math.ceil((threshold - t.level) * t.step_ms / t.slope)  # (never earlier than the line says)


def may_reach(samples: Sequence[int], threshold: int, steps: float) -> bool:
    """Whether any trend of ``samples`` can reach ``threshold`` within ``steps`` sample steps after the newest.

    A bound, cheap to compute, that spares most samples the estimator: the Theil–Sen slope (a median of pair
    slopes) is at most the largest rise between two neighbouring samples, since a pair's slope is the mean of
    the neighbouring rises between them, and the line's level at the newest sample is at most the highest
    sample plus that slope times the window, its highs included.  (A least-squares slope is a weighted mean of
    the same rises, so the bound holds for it too.)  Most windows are settled by a looser bound first: no rise
    exceeds the window's span."""
    n = len(samples)
    if n < MIN_SAMPLES:
        return False
    top = max(samples)
    if top >= threshold:
        return True
    if top + (top - min(samples)) * (n - 1 + steps) < threshold:
        return False
    top, rise = samples[0], 0
    for i in range(1, n):
        y = samples[i]
        if y > top:
            top = y
        d = y - samples[i - 1]
        if d > rise:
            rise = d
    return top >= threshold or (rise > 0 and top + rise * (n - 1 + steps) >= threshold)
