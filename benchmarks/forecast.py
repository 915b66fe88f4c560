"""How early and how well the fill forecasts see a threshold coming, on generated workloads.  Pure: no Kafka, no
Spark; the pure monitors (``StructureMonitor``, ``QueueMonitor``) over generated activity, as the job applies it.

    python benchmarks/forecast.py [--seeds N] [--method theil-sen|least-squares|holt|all]
                                  [--min-confidence X] [--horizon MINUTES]

Prints figures; asserts nothing.  Each workload is a level path (a percentage of the capacity over time) that
puts and gets follow, with background traffic both ways: one structure of 2,000 data elements (OVFLWMAX 70 %,
at its SIZE, an overflow exit that approves no queue, so it goes on to full) and one queue of MAXDEPTH 2,000
(QDEPTHHI 70 %, depth events enabled), each message one data element.  Workloads:

* ``linear``: flat at 10 %, then a steady fill of 0.7 to 2 % a minute (by seed) until full.
* ``bursty``: flat at 10 %, then a producer's batches of 4 to 6 % every 100 to 140 seconds, landing at once,
  and a consumer draining 1.2 % a minute between them.
* ``spiky``: a slow fill of 0.5 % a minute from 10 %, under batches of 15 to 25 % that a consumer drains within
  40 seconds, every 4 to 8 minutes: a batch crosses the threshold before the fill does.
* ``sawtooth``: a consumer that drains in batches: 20 % up to 50-62 % over 2 to 6 minutes, back to 20 %, again
  and again; never fills.
* ``daily 60 %`` and ``daily 85 %``: a business day, quiet at night, rising from 08:00 to a peak at 12:00 and
  draining by 18:00; the first peaks below OVFLWMAX, the second above it.
* ``stops``: flat at 10 %, a fill of 1.5 % a minute that stops at 62 %, then flat for an hour.

For each workload and threshold (structure OVFLWMAX and full, queue QDEPTHHI and MAXDEPTH), over the seeds:
the real alert's instant T (OVERFLOW_MODE_ENTERED, STRUCTURE_FULL, QDEPTH_HIGH, Q_FULL); the lead of the first
FIRING forecast before T; the median absolute error of the instant the forecast predicts 15, 10 and 5 minutes
before T (from the trend at that moment, firing or not); false forecasts (FIRING in a run where the threshold
was never reached); for ``stops``, how long after the fill stopped each forecast resolved.

``--method`` swaps the estimator of ``qmon.core.forecast`` (the product's is Theil–Sen with Kendall's rank
correlation as its confidence) for least squares with R² as its confidence, or Holt's linear trend over the
same window with the rank correlation; ``all`` runs the three.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest.mock import patch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qmon.core import forecast  # noqa: E402
from qmon.core.forecast import Trend  # noqa: E402
from qmon.core.forecaster import ForecastSettings, ForecastState  # noqa: E402
from qmon.core.queues import MonitorSettings, QueueDefaults, QueueMonitor  # noqa: E402
from qmon.core.records import Activity  # noqa: E402
from qmon.core.structures import ExitRule, OverflowExit, StructureDef, StructureMonitor, StructureSettings  # noqa: E402

T0 = 1_700_000_400_000 - 1_700_000_400_000 % 86_400_000  # a midnight (UTC)
CAP = 2000  # data elements of the structure, MAXDEPTH of the queue
PCT = CAP / 100
MINUTE = 60_000
#: background puts and gets a second, each way
BACKGROUND = 3.0


# ---------------------------------------------------------------- workloads: level paths (% of CAP at second s)


def linear(rng: random.Random) -> tuple[Callable[[int], float], int, int | None]:
    rate = rng.uniform(0.7, 2.0) / 60  # % a second
    start = 20 * 60
    return (lambda s: min(100.0, 10 + max(0, s - start) * rate)), start + int(90 / rate) + 5 * 60, None


def bursty(rng: random.Random) -> tuple[Callable[[int], float], int, int | None]:
    start, level, t, path = 20 * 60, 10.0, 0, list[float]()
    next_burst = start + rng.uniform(0, 120)
    while level < 100 or len(path) < start:
        if t >= start:
            level = max(0.0, level - 1.2 / 60)
        if t >= next_burst:
            level += rng.uniform(4, 6)
            next_burst += rng.uniform(100, 140)
        path.append(min(level, 100.0))
        t += 1
    return (lambda s: path[min(s, len(path) - 1)]), len(path) + 5 * 60, None


def spiky(rng: random.Random) -> tuple[Callable[[int], float], int, int | None]:
    size, every = rng.uniform(15, 25), rng.uniform(240, 480)
    offset = rng.uniform(0, every)

    def level(s: int) -> float:
        return min(100.0, 10 + s / 60 * 0.5 + (size if (s + offset) % every < 40 else 0))

    return level, 3 * 3600, None


def sawtooth(rng: random.Random) -> tuple[Callable[[int], float], int, int | None]:
    period = rng.uniform(120, 360)
    peak = rng.uniform(50, 62)
    offset = rng.uniform(0, period)

    def level(s: int) -> float:
        within = (s + offset) % period
        return 20 + (peak - 20) * within / (period - 15) if within < period - 15 else 20

    return level, 4 * 3600, None


def daily(peak: float) -> Callable[[random.Random], tuple[Callable[[int], float], int, int | None]]:
    def make(rng: random.Random) -> tuple[Callable[[int], float], int, int | None]:
        top = peak + rng.uniform(-3, 3)
        rise, fall = rng.uniform(3.5, 4.5) * 3600, rng.uniform(5.5, 6.5) * 3600
        morning = 8 * 3600 + rng.uniform(-1800, 1800)

        def level(s: int) -> float:
            t = s - morning
            if t <= 0 or t >= rise + fall:
                return 5.0
            x = t / rise if t < rise else 1 - (t - rise) / fall
            return 5 + (top - 5) * (1 - math.cos(math.pi * x)) / 2

        return level, 20 * 3600, None

    return make


def stops(rng: random.Random) -> tuple[Callable[[int], float], int, int | None]:
    start, rate, at = 20 * 60, 1.5 / 60, 62.0
    stop = start + int((at - 10) / rate)
    return (lambda s: min(at, 10 + max(0, s - start) * rate)), stop + 60 * 60, stop


WORKLOADS: dict[str, Callable[[random.Random], tuple[Callable[[int], float], int, int | None]]] = {
    "linear": linear,
    "bursty": bursty,
    "spiky": spiky,
    "sawtooth": sawtooth,
    "daily 60 %": daily(60),
    "daily 85 %": daily(85),
    "stops": stops,
}


def _poisson(rng: random.Random, lam: float) -> int:
    if lam <= 0:
        return 0
    if lam > 30:
        return max(0, round(rng.gauss(lam, math.sqrt(lam))))
    k, p, limit = 0, 1.0, math.exp(-lam)
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def activity(
    path: Callable[[int], float], seconds: int, rng: random.Random
) -> list[tuple[list[Activity], list[Activity]]]:
    """Per second, (the structure's records, the queue's): puts and gets that follow ``path`` with background
    traffic.  A put to a full queue fails with MQRC_Q_FULL (the queue manager says so); the same put reaches
    the structure, where CQS rejects it."""
    level, seq, out = 0, 0, []
    for s in range(seconds):
        err = path(s + 1) * PCT - level
        ops = ["PUT"] * _poisson(rng, BACKGROUND + max(err, 0)) + ["GET"] * _poisson(rng, BACKGROUND + max(-err, 0))
        rng.shuffle(ops)
        offsets = sorted(rng.randrange(1000) for _ in ops)
        structure, queue = [], []
        for op, off in zip(ops, offsets, strict=True):
            ts, reason = T0 + s * 1000 + off, None
            if op == "PUT":
                if level >= CAP:
                    reason = 2053
                else:
                    level += 1
            elif level > 0:
                level -= 1
            else:
                continue
            seq += 1
            rec = Activity(
                event_id=f"e{seq}",
                qmgr="IMSA",
                queue="1PAYROLL",
                op=op,
                ts=ts,
                msg_bytes=500,
                structure="MSGQ1",
                clock=ts,
                seq=seq,
            )
            structure.append(rec)
            queue.append(rec._replace(reason=reason) if reason is not None else rec)
        out.append((structure, queue))
    return out


# ---------------------------------------------------------------- the estimators compared


def _rank_correlation(samples: Sequence[int]) -> float:
    n, score = len(samples), 0
    for i in range(n - 1):
        for j in range(i + 1, n):
            d = samples[j] - samples[i]
            score += (d > 0) - (d < 0)
    return score / (n * (n - 1) / 2)


def least_squares(samples: Sequence[int], step_ms: int) -> Trend | None:
    """Least squares over the window, from the line raised to the level's highs as the product's; confidence R²
    (the share of the window's variance the line explains)."""
    n = len(samples)
    if n < forecast.MIN_SAMPLES:
        return None
    mx, my = (n - 1) / 2, sum(samples) / n
    sxx = sum((i - mx) ** 2 for i in range(n))
    slope = sum((i - mx) * (y - my) for i, y in enumerate(samples)) / sxx
    ss = sum((y - my) ** 2 for y in samples)
    residual = sum((y - (my + slope * (i - mx))) ** 2 for i, y in enumerate(samples))
    r2 = 1 - residual / ss if ss else 0.0
    intercept = my - slope * mx
    return Trend(slope, step_ms, intercept + slope * (n - 1) + forecast.highs(samples, intercept, slope), r2)


def holt(samples: Sequence[int], step_ms: int, alpha: float = 0.3, beta: float = 0.1) -> Trend | None:
    """Holt's linear trend run over the window; confidence Kendall's rank correlation, as the product's."""
    if len(samples) < forecast.MIN_SAMPLES:
        return None
    level, slope = float(samples[0]), float(samples[1] - samples[0])
    for y in samples[1:]:
        last = level
        level = alpha * y + (1 - alpha) * (level + slope)
        slope = beta * (level - last) + (1 - beta) * slope
    return Trend(slope, step_ms, level, _rank_correlation(samples))


METHODS: dict[str, Callable[[Sequence[int], int], Trend | None]] = {
    "theil-sen": forecast.trend,
    "least-squares": least_squares,
    "holt": holt,
}


# ---------------------------------------------------------------- one run


#: target -> (which monitor, the real alert's type, its threshold in messages or elements)
TARGETS = {
    "structure OVFLWMAX": ("S", "OVERFLOW_MODE_ENTERED", 1400),
    "structure full": ("S", "STRUCTURE_FULL", CAP),
    "queue QDEPTHHI": ("Q", "QDEPTH_HIGH", 1400),
    "queue MAXDEPTH": ("Q", "Q_FULL", CAP),
}
FORECAST_KEY = {
    "structure OVFLWMAX": "OVFLWMAX",
    "structure full": "FULL",
    "queue QDEPTHHI": "QDEPTHHI",
    "queue MAXDEPTH": "MAXDEPTH",
}


@dataclass
class Run:
    real: dict[str, int] = field(default_factory=dict)  # target -> instant of the real alert
    fired: dict[str, list[int]] = field(default_factory=dict)  # target -> instants of FIRING forecasts
    resolved: dict[str, list[int]] = field(default_factory=dict)  # target -> instants of RESOLVED
    targets: dict[str, str] = field(default_factory=dict)  # alert_id of a forecast -> its target
    outlook: dict[str, list[tuple[int, int | None]]] = field(default_factory=dict)  # (sample instant, eta)
    stop: int | None = None


def settings(horizon_ms: int, min_confidence: float) -> tuple[StructureSettings, MonitorSettings]:
    fs = ForecastSettings(horizon_ms, min_confidence)
    structure = StructureDef("MSGQ1", size=CAP // 2, ovflwmax=70, fullthreshold=90, lgmsgsz=4096)
    ss = StructureSettings((structure,), OverflowExit(rules=(ExitRule("*", "reject"),)), forecast=fs)
    attrs = {"MAXDEPTH": CAP, "QDEPTHHI": 70, "QDPHIEV": True, "QDPMAXEV": True}
    ms = MonitorSettings(perfmev="ENABLED", queue_defaults=(QueueDefaults("*", attrs),), forecast=fs)
    return ss, ms


def run(workload: str, seed: int, ss: StructureSettings, ms: MonitorSettings) -> Run:
    rng = random.Random(f"{workload}/{seed}")
    path, seconds, stop = WORKLOADS[workload](rng)
    smon, qmon = StructureMonitor("MSGQ1", ss), QueueMonitor("IMSA", ms)
    result = Run(stop=T0 + stop * 1000 if stop is not None else None)
    seen = {"S": 0, "Q": 0}  # the next sample's instant when last looked at
    for structure, queue in activity(path, seconds, rng):
        out = [("S", e) for rec in structure for e in smon.on_activity(rec)]
        out.extend(("Q", e) for rec in queue for e in qmon.on_activity(rec))
        for kind, e in out:
            _note(result, kind, e.record)
        q = qmon.queues.get("1PAYROLL")
        for kind, fc in (("S", smon.state["forecast"]), ("Q", q["forecast"] if q is not None else None)):
            if fc is not None and fc["at"] != seen[kind]:
                seen[kind] = fc["at"]
                _outlook(result, kind, fc)
    return result


def _note(result: Run, kind: str, r: dict[str, Any]) -> None:
    for target, (k, real, _) in TARGETS.items():
        if k != kind:
            continue
        if r.get("type") == real and target not in result.real and r.get("state", "FIRING") == "FIRING":
            result.real[target] = r["ts"]
        if r.get("type") in ("STRUCTURE_FILL_FORECAST", "QUEUE_FILL_FORECAST"):
            if r["state"] == "FIRING" and _key_of(r) == FORECAST_KEY[target]:
                result.fired.setdefault(target, []).append(r["ts"])
                result.targets[r["alert_id"]] = target
            elif r["state"] == "RESOLVED" and result.targets.get(r["alert_id"]) == target:
                result.resolved.setdefault(target, []).append(r["ts"])


def _key_of(r: dict[str, Any]) -> str:
    text = r.get("message") or ""
    for key in ("OVFLWMAX", "QDEPTHHI", "MAXDEPTH"):
        if f" {key} " in text:
            return key
    return "FULL"


def _outlook(result: Run, kind: str, fc: ForecastState) -> None:
    at = fc["at"] - fc["step"]  # the newest sample's instant
    tr = forecast.trend(fc["s"][0], fc["step"])
    for target, (k, _, threshold) in TARGETS.items():
        if k == kind:
            eta = forecast.eta(tr, at, threshold) if tr is not None else None
            result.outlook.setdefault(target, []).append((at, eta))


# ---------------------------------------------------------------- figures


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def figures(workload: str, runs: list[Run]) -> list[dict[str, Any]]:
    rows = []
    for target in TARGETS:
        reached = [r for r in runs if target in r.real]
        leads, missed = [], 0
        errors: dict[int, list[float]] = {15: [], 10: [], 5: []}
        for r in reached:
            t = r.real[target]
            before = [f for f in r.fired.get(target, []) if f <= t]
            if before:
                leads.append((t - before[0]) / MINUTE)
            else:
                missed += 1
            for ahead in errors:
                past = [(at, eta) for at, eta in r.outlook.get(target, []) if at <= t - ahead * MINUTE]
                if past and past[-1][1] is not None:
                    errors[ahead].append(abs(past[-1][1] - t) / MINUTE)
                else:
                    errors[ahead].append(math.inf)  # no forecast at all: as wrong as it gets
        false = sum(len(r.fired.get(target, [])) for r in runs if target not in r.real)
        after_stop = [
            (res - r.stop) / MINUTE
            for r in runs
            if r.stop is not None
            for res in r.resolved.get(target, [])
            if res >= r.stop
        ]
        rows.append(
            {
                "workload": workload,
                "target": target,
                "runs": len(runs),
                "reached": len(reached),
                "lead_median": _median(leads),
                "lead_min": min(leads) if leads else None,
                "lead_10": sum(1 for x in leads if x >= 10),
                "missed": missed,
                "error": {k: _median(v) for k, v in errors.items()},
                "false": false,
                "resolved_after_stop": _median(after_stop),
                "fired_runs": sum(1 for r in runs if r.fired.get(target)),
            }
        )
    return rows


def _m(x: float | None) -> str:
    if x is None:
        return "—"
    if math.isinf(x):
        return "none"
    return f"{x:.1f}"


def table(rows: list[dict[str, Any]]) -> str:
    out = [
        "| workload | threshold | reached | first FIRING ahead: median (min), ≥ 10 min | "
        "predicted instant off by, 15 / 10 / 5 min before (median, min) | false forecasts | "
        "resolved after the fill stopped (median, min) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["reached"]:
            lead = f"{_m(r['lead_median'])} ({_m(r['lead_min'])}), {r['lead_10']}/{r['reached']}"
            if r["missed"]:
                lead += f", {r['missed']} without"
            err = " / ".join(_m(r["error"][k]) for k in (15, 10, 5))
        else:
            lead = err = "—"
        false = f"{r['false']} in {r['runs'] - r['reached']} runs" if r["runs"] > r["reached"] else "—"
        stopped = _m(r["resolved_after_stop"]) if r["resolved_after_stop"] is not None else "—"
        out.append(
            f"| {r['workload']} | {r['target']} | {r['reached']}/{r['runs']} | {lead} | {err} | {false} | {stopped} |"
        )
    return "\n".join(out)


def goals(rows: list[dict[str, Any]]) -> list[str]:
    """The goals, judged: linear and bursty fills fire at least 10 minutes ahead with the predicted instant
    within 20 % at 15, 10 and 5 minutes before; no FIRING on the sawtooth."""
    out = []
    for r in rows:
        if r["workload"] in ("linear", "bursty") and r["reached"]:
            ahead = r["lead_10"] == r["reached"]
            off = [r["error"][k] / k if r["error"][k] is not None else math.inf for k in (15, 10, 5)]
            within = all(x <= 0.2 for x in off)
            said = " / ".join(f"{100 * x:.0f} %" for x in off)
            out.append(
                f"{r['workload']}, {r['target']}: ≥ 10 min ahead in every run: {ahead}; "
                f"within 20 % ({said} at 15 / 10 / 5 min): {within}"
            )
        if r["workload"] == "sawtooth":
            out.append(f"sawtooth, {r['target']}: no FIRING: {r['fired_runs'] == 0}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--seeds", type=int, default=20, help="runs of each workload (default 20)")
    p.add_argument("--method", choices=[*METHODS, "all"], default="theil-sen")
    p.add_argument("--min-confidence", type=float, default=ForecastSettings().min_confidence)
    p.add_argument("--horizon", type=float, default=15, help="forecast.horizon in minutes (default 15)")
    p.add_argument("--workloads", nargs="*", choices=list(WORKLOADS), default=list(WORKLOADS))
    args = p.parse_args(argv)
    ss, ms = settings(int(args.horizon * MINUTE), args.min_confidence)
    for method in METHODS if args.method == "all" else [args.method]:
        started, rows = time.perf_counter(), []
        # (Holt's trend is not bounded by the neighbouring rises: every sample is judged)
        bound = (lambda *_: True) if method == "holt" else forecast.may_reach
        with patch.object(forecast, "trend", METHODS[method]), patch.object(forecast, "may_reach", bound):
            for workload in args.workloads:
                rows.extend(figures(workload, [run(workload, seed, ss, ms) for seed in range(args.seeds)]))
        print(
            f"\n## {method} (min_confidence {args.min_confidence}, horizon {args.horizon:g} min, {args.seeds} seeds)\n"
        )
        print(table(rows))
        print()
        print("\n".join(goals(rows)))
        print(f"\n({time.perf_counter() - started:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
