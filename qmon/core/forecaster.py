"""A fill forecast's state and episodes: a level's samples, kept bounded, and when a forecast FIRES and when
it RESOLVES.  The structure and queue monitors share it: they say what their levels and thresholds are and
write the records.  Pure: time is passed in.

Sampling.  The levels are sampled at every multiple of ``step`` of event time (``horizon`` / SAMPLES: the
window the trend is read from is as long as the horizon it forecasts).  The sample at instant b is the level
just before the first record at or after b, which is the level at b, since nothing changes between records;
instants without records get the level of the last one.  Each level keeps its last SAMPLES samples.

Episodes, one per target (a threshold of one of the levels), judged at every sample:

* **FIRING** when the trend (``qmon.core.forecast``) reaches the threshold within ``horizon`` with a
  confidence of at least ``min_confidence``.  The record carries the predicted instant.
* **RESOLVED** when the threshold is reached (the monitor says so: the real alert or event takes over), when
  the target no longer applies (its threshold is gone, or forecasts are turned off), or once HOLD samples in
  a row have not shown the threshold within CLEAR_HORIZON × ``horizon`` with a confidence of at least
  ``min_confidence`` − CLEAR_CONFIDENCE.  The margins and the hold make a trend hovering at the horizon one
  episode, not one per sample.

A sample is judged at its own instant whenever it is taken (at the next record, or by the clock while an
episode fires), so the records do not depend on where micro-batches split.  Samples nothing can come of are
not judged: ``forecast.may_reach`` bounds every trend the samples could give.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple, NotRequired, TypedDict

from qmon.core import forecast
from qmon.core.forecast import Trend
from qmon.core.ids import event_id

logger = logging.getLogger(__name__)

#: samples kept per level: the window is SAMPLES × step = the horizon
SAMPLES = 30
#: samples in a row whose trend no longer shows the threshold before a FIRING forecast resolves
HOLD = 3
#: a FIRING forecast holds while its threshold is within this many horizons ...
CLEAR_HORIZON = 4 / 3
#: ... with a confidence of at least min_confidence less this
CLEAR_CONFIDENCE = 0.1


@dataclass(frozen=True)
class ForecastSettings:
    horizon_ms: int = 15 * 60 * 1000  # forecast this far ahead (and read the trend over as long); 0: off
    min_confidence: float = 0.5  # the least confidence (Kendall's rank correlation, 0 to 1) that FIRES

    @cached_property
    def step_ms(self) -> int:
        return max(1, self.horizon_ms // SAMPLES) if self.horizon_ms > 0 else 0


class Episode(TypedDict):
    """A FIRING forecast."""

    id: str  # its alert_id
    eta: int  # the instant it predicted when it fired
    clear: int  # samples in a row that have not shown the threshold (the hold)


class ForecastState(TypedDict):
    """What a structure or a queue keeps for its forecasts: plain data, bounded."""

    at: int  # event time of the next sample (a multiple of ``step``)
    step: int  # ms between samples
    s: list[list[int]]  # per level, its last samples, oldest first (at most SAMPLES)
    on: dict[str, Episode]  # target -> its FIRING episode
    # a queue's newest [event time, arrival clock] while an episode fires (its timer's clock); structures
    # keep theirs in the structure's state
    clk: NotRequired[list[int]]


class Target(NamedTuple):
    """A threshold a level may reach."""

    key: str  # what it is, for the monitor (OVFLWMAX, FULL, MAXDEPTH, ...)
    series: int  # the level's index in ``ForecastState.s``
    threshold: int  # the level at which it is reached


class Decision(NamedTuple):
    """A forecast that fires or resolves, for the monitor to write as a record."""

    state: str  # FIRING or RESOLVED
    key: str  # the target's key
    alert_id: str
    at: int  # event time: the sample's instant, or the record that reached the threshold
    eta: int | None  # the predicted instant (FIRING), or the one its FIRING predicted (reached, gone)
    trend: Trend | None  # the trend it was judged by (None: reached, or the target is gone)
    why: str  # "trend": judged by the trend; "reached": the threshold was reached; "gone": no longer applies


def start(settings: ForecastSettings, ts: int, series: int) -> ForecastState:
    """A new forecast state, its first sample at the first multiple of the step after ``ts``."""
    step = settings.step_ms
    return {"at": (ts // step + 1) * step, "step": step, "s": [[] for _ in range(series)], "on": {}}


class Forecaster:
    """The forecasts of one structure or queue over its state (``ident`` names it in the alert ids)."""

    def __init__(self, settings: ForecastSettings, state: ForecastState, ident: tuple[str, ...]):
        self.settings, self.state, self.ident = settings, state, ident

    def firing(self) -> bool:
        return bool(self.state["on"])

    def quiet_sample(self, ts: int, levels: list[int], targets: list[Target]) -> bool:
        """Take the one sample due by ``ts`` if nothing can come of it (no episode fires, no target is within
        reach) and say so; otherwise change nothing and say so (``advance`` has work to do)."""
        st = self.state
        if st["on"] or ts >= st["at"] + st["step"]:
            return False
        steps = self.settings.horizon_ms / st["step"]
        windows: dict[int, list[int]] = {}
        for t in targets:
            window = windows.get(t.series)
            if window is None:
                window = windows[t.series] = st["s"][t.series][1 - SAMPLES :] + [levels[t.series]]
            if forecast.may_reach(window, t.threshold, steps):
                return False
        self._push(levels)
        st["at"] += st["step"]
        return True

    def advance(self, ts: int, levels: list[int], targets: list[Target]) -> list[Decision]:
        """Take the samples due by event time ``ts`` (the levels have been ``levels`` since the last record) and
        judge each at its instant.  After SAMPLES + HOLD samples of one level its window is flat, nothing
        fires and every episode has resolved, so longer gaps take no more samples than that."""
        st = self.state
        if ts < st["at"]:
            return []
        if self.quiet_sample(ts, levels, targets):
            return []  # (one sample, nothing to judge)
        step = st["step"]
        due = (ts - st["at"]) // step + 1
        out: list[Decision] = []
        for k in range(min(due, SAMPLES + HOLD)):
            self._push(levels)
            out.extend(self._judge(st["at"] + k * step, targets))
        st["at"] += due * step
        return out

    def reached(self, key: str, ts: int, why: str = "reached") -> Decision | None:
        """The monitor saw target ``key`` reached (or, ``why`` "gone", no longer applying) at ``ts``: its
        episode, if one fires, resolves."""
        ep = self.state["on"].pop(key, None)
        if ep is None:
            return None
        return Decision("RESOLVED", key, ep["id"], ts, ep["eta"], None, why)

    def restart(self) -> None:
        """Forget the samples (not the episodes): the levels jumped for a reason that is no fill."""
        for samples in self.state["s"]:
            samples.clear()

    def close(self, ts: int) -> list[Decision]:
        """Every episode resolves: the forecasts stop (turned off, or started again with another step)."""
        return [d for key in sorted(self.state["on"]) if (d := self.reached(key, ts, "gone")) is not None]

    def outlook(self, targets: list[Target]) -> dict[str, int | None]:
        """Target -> the instant the newest samples' trend reaches it, read as a forecast reads it (rising, with a
        confidence of at least ``min_confidence``), within the horizon or not; None when it is not heading
        there."""
        st, out = self.state, {}
        trends: dict[int, Trend | None] = {}
        for t in targets:
            if t.series not in trends:
                trends[t.series] = forecast.trend(st["s"][t.series], st["step"])
            tr = trends[t.series]
            ok = tr is not None and tr.confidence >= self.settings.min_confidence
            out[t.key] = forecast.eta(tr, st["at"] - st["step"], t.threshold) if ok and tr is not None else None
        return out

    def _push(self, levels: list[int]) -> None:
        for samples, level in zip(self.state["s"], levels, strict=True):
            samples.append(level)
            if len(samples) > SAMPLES:
                del samples[0]

    def _judge(self, at: int, targets: list[Target]) -> list[Decision]:
        st, settings = self.state, self.settings
        horizon, step = settings.horizon_ms, st["step"]
        out: list[Decision] = []
        trends: dict[int, Trend | None] = {}
        for t in targets:
            ep = st["on"].get(t.key)
            samples = st["s"][t.series]
            if ep is None and not forecast.may_reach(samples, t.threshold, horizon / step):
                continue
            if t.series not in trends:
                trends[t.series] = forecast.trend(samples, step)
            tr = trends[t.series]
            when = forecast.eta(tr, at, t.threshold) if tr is not None else None
            confidence = tr.confidence if tr is not None else 0.0
            if ep is None:
                if when is not None and when - at <= horizon and confidence >= settings.min_confidence:
                    aid = event_id("forecast", *self.ident, t.key, at)
                    st["on"][t.key] = {"id": aid, "eta": when, "clear": 0}
                    out.append(Decision("FIRING", t.key, aid, at, when, tr, "trend"))
            elif (
                when is not None
                and when - at <= horizon * CLEAR_HORIZON
                and confidence >= settings.min_confidence - CLEAR_CONFIDENCE
            ):
                ep["clear"] = 0
            else:
                ep["clear"] += 1
                if ep["clear"] >= HOLD:
                    del st["on"][t.key]
                    out.append(Decision("RESOLVED", t.key, ep["id"], at, None, tr, "trend"))
        if st["on"]:
            keys = {t.key for t in targets}
            for key in sorted(k for k in st["on"] if k not in keys):
                ep = st["on"].pop(key)
                out.append(Decision("RESOLVED", key, ep["id"], at, None, None, "gone"))
        return out
