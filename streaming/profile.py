"""``QMON_PROFILE=1``: time spent in the Python side of the operator, printed by each worker.

Subclasses of the operator (``applyInPandasWithState``'s ``Monitor``, and ``MonitorProcessor`` for
``QMON_OPERATOR=tws``) that measure around their entry points, so the operator itself carries no
profiling code.  ``Monitor`` has no close hook: its totals are printed at most every 5 s.  ``pipeline.build`` uses it when the variable is set (benchmarks and investigations).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import pandas as pd

from qmon.streaming.operators import GroupSlot, Monitor, MonitorProcessor, sorted_input

logger = logging.getLogger(__name__)

ENABLED = os.environ.get("QMON_PROFILE") == "1"


class ProfiledMonitorProcessor(MonitorProcessor):
    """The operator, with wall and CPU seconds per unit kind and phase (read, rules + state, timers)."""

    totals: dict[str, tuple[float, float]]

    def _add(self, name: str, t0: float, c0: float) -> None:
        wall, cpu = self.totals.get(name, (0.0, 0.0))
        self.totals[name] = (wall + time.perf_counter() - t0, cpu + time.process_time() - c0)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        self.totals = getattr(self, "totals", {})
        t0, c0 = time.perf_counter(), time.process_time()
        pdf = sorted_input(rows, shards=key[0] == "Q")
        self._add(f"{key[0]}_read", t0, c0)
        t0, c0 = time.perf_counter(), time.process_time()
        out = list(self.unit(key).rows(key[1], pdf, self.slot(key)))
        self._add(key[0], t0, c0)
        yield from out

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:
        self.totals = getattr(self, "totals", {})
        t0, c0 = time.perf_counter(), time.process_time()
        out = list(super().handleExpiredTimer(key, timerValues, expiredTimerInfo))
        self._add(f"{key[0]}_timer", t0, c0)
        yield from out

    def close(self) -> None:
        totals = getattr(self, "totals", {})
        logger.warning("qmon profile (seconds in this Python worker): %s", totals)
        print(f"qmon profile: {totals}", file=sys.stderr, flush=True)


class ProfiledMonitor(Monitor):
    """``Monitor`` with wall and CPU seconds per unit kind and phase (read, rules + state, timeouts)."""

    def __call__(self, key: Any, pdfs: Iterator[pd.DataFrame], state: Any) -> Iterator[pd.DataFrame]:
        totals: dict[str, tuple[float, float]] = self.__dict__.setdefault("totals", {})

        def add(name: str, t0: float, c0: float) -> None:
            wall, cpu = totals.get(name, (0.0, 0.0))
            totals[name] = (wall + time.perf_counter() - t0, cpu + time.process_time() - c0)

        t0, c0 = time.perf_counter(), time.process_time()
        slot = GroupSlot(state)
        if state.hasTimedOut:
            out = list(self.unit(key).expired(key[1], slot, state.getCurrentWatermarkMs()))
            add(f"{key[0]}_timer", t0, c0)
        else:
            pdf = sorted_input(pdfs, shards=key[0] == "Q")
            add(f"{key[0]}_read", t0, c0)
            t0, c0 = time.perf_counter(), time.process_time()
            out = list(self.unit(key).rows(key[1], pdf, slot, state.getCurrentWatermarkMs()))
            add(key[0], t0, c0)
        now = time.monotonic()
        if now - self.__dict__.get("printed", 0.0) > 5:
            self.__dict__["printed"] = now
            print(f"qmon profile: {totals}", file=sys.stderr, flush=True)
        yield from out
