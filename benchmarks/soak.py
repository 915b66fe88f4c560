"""``throughput.py --soak``: the job at a steady rate for a long time, over an estate of queues built first; a
row a minute (its micro-batches' progress reports, the state's rows, the checkpoint's size on disk, the
processes' memory), the rows as CSV, their plot (matplotlib, when it can be imported) and a verdict per series.

Imported by throughput.py, which gives ``run`` the workload (this module imports nothing of it: run as a
script, throughput.py is ``__main__``, and an ``import throughput`` here would load a second copy of it, with
the default queues).
"""

from __future__ import annotations

import csv
import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from qmon.core.config import Config

MIB = 2**20


def send(producer: Any, topic: str, key: bytes, value: bytes) -> None:
    """Produce one record, waiting for room in the producer's queue when it is full."""
    while True:
        try:
            producer.produce(topic, key=key, value=value)
            return
        except BufferError:
            producer.poll(0.05)


def checkpoint_bytes(path: str | Path) -> int:
    """The sizes of the files under ``path`` summed (0 when it does not exist).  The query writes and deletes
    files while this walks: a file gone by the time it is looked at is not counted."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name), follow_symlinks=False).st_size
            except OSError:
                continue
    return total


def percentile(values: Sequence[float], f: float) -> float:
    """``values`` sorted: the value at fraction ``f`` (as throughput.py's ``_pct``); NaN when empty."""
    return values[min(len(values) - 1, int(f * len(values)))] if values else float("nan")


class Minute(NamedTuple):
    """One minute of the soak."""

    minute: int
    batches: int  # micro-batches that ended in the minute
    p50: float | None  # their durations (durationMs.triggerExecution), s
    p99: float | None
    rows_per_s: float  # their input rows over the minute's seconds
    state_rows: int | None  # the stateful operators' numRowsTotal, summed, at the minute's last batch
    checkpoint_mib: float  # the checkpoint's files at the minute's end
    jvm_mib: float  # Spark's JVM resident size at the minute's end
    workers_mib: float  # the Python workers' resident size at the minute's end
    lag: int | None  # input records the query had not read at its last batch


def state_rows(report: dict[str, Any] | None) -> int | None:
    """A progress report's stateful operators' rows (``numRowsTotal``) summed, as ``qmon.core.progress`` does;
    None without a report or a stateful operator in it."""
    ops = (report or {}).get("stateOperators") or []
    return sum(int(op.get("numRowsTotal", 0)) for op in ops) if ops else None


def minute_row(
    minute: int,
    reports: Sequence[dict[str, Any]],
    latest: dict[str, Any] | None,
    seconds: float,
    checkpoint: int,
    jvm: int,
    workers: int,
    lag: int | None,
) -> Minute:
    """The row of ``minute``: ``reports``, the progress reports of the batches that ended in it (``seconds``
    long); ``latest``, the newest report so far (the state's rows: a minute without a batch shows the last
    known); ``checkpoint``, ``jvm``, ``workers``: bytes."""
    durations = sorted(float((r.get("durationMs") or {}).get("triggerExecution", 0)) / 1000 for r in reports)
    rows = sum(int(r.get("numInputRows", 0)) for r in reports)
    return Minute(
        minute=minute,
        batches=len(reports),
        p50=percentile(durations, 0.5) if durations else None,
        p99=percentile(durations, 0.99) if durations else None,
        rows_per_s=rows / seconds if seconds > 0 else 0.0,
        state_rows=state_rows(latest),
        checkpoint_mib=checkpoint / MIB,
        jvm_mib=jvm / MIB,
        workers_mib=workers / MIB,
        lag=lag,
    )


#: the printed columns: heading, width, how a value reads
_COLUMNS: tuple[tuple[str, int, str], ...] = (
    ("minute", 6, "{:d}"),
    ("batches", 7, "{:,d}"),
    ("p50 s", 6, "{:.2f}"),
    ("p99 s", 6, "{:.2f}"),
    ("rows/s", 7, "{:,.0f}"),
    ("state rows", 10, "{:,d}"),
    ("checkpoint MiB", 14, "{:,.1f}"),
    ("JVM MiB", 7, "{:,.0f}"),
    ("workers MiB", 11, "{:,.0f}"),
    ("input lag", 9, "{:,d}"),
)


def heading() -> str:
    return "  ".join(f"{name:>{width}}" for name, width, _ in _COLUMNS)


def line(row: Minute) -> str:
    """``row`` under ``heading()`` (a figure it has none of: -)."""
    cells = zip(row, _COLUMNS, strict=True)
    return "  ".join(f"{'-' if value is None else form.format(value):>{width}}" for value, (_, width, form) in cells)


#: the CSV's header, one column a field of ``Minute``
CSV_HEADER = (
    "minute",
    "batches",
    "batch_p50_s",
    "batch_p99_s",
    "input_rows_per_s",
    "state_rows",
    "checkpoint_mib",
    "jvm_rss_mib",
    "workers_rss_mib",
    "input_lag",
)


def write_csv(path: str | Path, rows: Sequence[Minute]) -> None:
    """The rows so far, the whole file rewritten (after every minute: a soak cut short keeps its minutes)."""
    with open(path, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(CSV_HEADER)
        for row in rows:
            out.writerow(
                "" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value) for value in row
            )


def plot(rows: Sequence[Minute], path: str | Path, title: str) -> bool:
    """Four panels over the minutes: batch p50 and p99 (s), state rows, checkpoint (MiB), resident memory
    (MiB: Spark's JVM, the Python workers), written to ``path`` (its format from its suffix: .png, .svg, ...).
    False, and nothing written, when matplotlib cannot be imported."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return False

    def series(field: str) -> list[float]:
        return [math.nan if getattr(r, field) is None else float(getattr(r, field)) for r in rows]

    minutes = [r.minute for r in rows]
    fig = Figure(figsize=(10, 6.5), layout="constrained")
    fig.suptitle(title)
    (times, state), (ckpt, memory) = fig.subplots(2, 2, sharex=True)
    panels = (
        (times, "micro-batch duration (s)", (("p50", "p50"), ("p99", "p99"))),
        (state, "state rows", (("state_rows", None),)),
        (ckpt, "checkpoint (MiB)", (("checkpoint_mib", None),)),
        (memory, "resident memory (MiB)", (("jvm_mib", "Spark JVM"), ("workers_mib", "Python workers"))),
    )
    for ax, name, lines in panels:
        for field, label in lines:
            ax.plot(minutes, series(field), marker=".", label=label)
        ax.set_title(name)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.08)  # from 0: a flat series reads flat
        ax.grid(alpha=0.3)
        if any(label for _, label in lines):
            ax.legend()
    for ax in (ckpt, memory):
        ax.set_xlabel("minute")
    fig.savefig(path, dpi=100)
    return True


#: the series judged: label, field of ``Minute``
SERIES = (
    ("micro-batch p50 (s)", "p50"),
    ("micro-batch p99 (s)", "p99"),
    ("state rows", "state_rows"),
    ("checkpoint (MiB)", "checkpoint_mib"),
    ("Spark JVM RSS (MiB)", "jvm_mib"),
    ("Python workers RSS (MiB)", "workers_mib"),
)

#: "flat": the last third's mean within this fraction of the middle third's
FLAT = 0.10


def thirds(n: int) -> tuple[range, range] | None:
    """The middle and the last third of ``n`` minutes (indices; the first third, and a remainder, lie before
    the middle one), None under 3 minutes."""
    third = n // 3
    if third == 0:
        return None
    return range(n - 2 * third, n - third), range(n - third, n)


def verdicts(rows: Sequence[Minute]) -> list[str]:
    """Per series, whether it grew: the mean of the last third of the minutes against the middle third's,
    "flat" within ``FLAT``, else "GREW" (or "fell").  The first third is left out: the estate's first minutes
    fill the duplicate check's window and warm the JVM up."""
    parts = thirds(len(rows))
    if parts is None:
        return [f"no verdict: {len(rows)} minute(s) (the last third of the minutes is compared with the middle one)"]
    middle, last = parts

    def minutes(r: range) -> str:
        return f"minute {r[0] + 1}" if len(r) == 1 else f"minutes {r[0] + 1}-{r[-1] + 1}"

    out = [f"growth: the mean of {minutes(last)} against {minutes(middle)}; flat within {FLAT:.0%}"]
    width = max(len(label) for label, _ in SERIES)
    for label, field in SERIES:
        before = [float(getattr(rows[i], field)) for i in middle if getattr(rows[i], field) is not None]
        after = [float(getattr(rows[i], field)) for i in last if getattr(rows[i], field) is not None]
        if not before or not after:
            out.append(f"  {label:<{width}}  no figures")
            continue
        m, n = sum(before) / len(before), sum(after) / len(after)
        if m == 0:
            verdict, change = ("flat", "") if n == 0 else ("GREW", " (from 0)")
        else:
            ratio = (n - m) / m
            verdict = "flat" if abs(ratio) <= FLAT else "GREW" if ratio > 0 else "fell"
            change = f" ({ratio:+.0%})"
        out.append(f"  {label:<{width}}  {verdict:<4}  {m:,.2f} -> {n:,.2f}{change}")
    return out


def caught_up(
    lag: Callable[[], int | None], timeout: float, running: Callable[[], bool]
) -> tuple[float | None, int | None]:
    """Wait until ``lag()`` (the input records the query had not read at its last batch) is 0: the seconds that
    took (None: not within ``timeout``, or the query stopped: ``running()`` false) and the lag when this stopped
    waiting (None: no batch reported)."""
    t, behind = time.monotonic(), None
    while time.monotonic() - t < timeout and running():
        behind = lag()
        if behind == 0:
            return time.monotonic() - t, 0
        time.sleep(1)
    return None, behind


def run(
    spark: Any,
    bootstrap: str,
    config: Config,
    src: str,
    checkpoint: Path,
    *,
    minutes: int,
    rate: int,
    queues: int,
    estate: Callable[[], float],
    records: Iterator[tuple[bytes, bytes]],
    lag: Callable[[dict[str, Any] | None], int | None],
    memory: Callable[[], tuple[int, int]],
    csv_path: str,
    plot_path: str,
) -> int:
    """The soak: the job started on ``config`` (its checkpoint ``checkpoint``, its input topic ``src``); the
    estate first (``estate()`` produces a record on each of the ``queues`` queues at once and returns its
    seconds), read by the job as fast as it takes it, and waited for; then ``records`` (key, value) at ``rate``
    a second for ``minutes``, paced as ``throughput.latency`` does.  At the end of each minute a row
    (``minute_row``), printed and written to ``csv_path``: ``lag(report)`` gives the input records the query had
    not read at the batch of ``report``, ``memory()`` Spark's JVM's and the Python workers' resident bytes.
    Then the plot (``plot_path``) and a verdict per series, of the minutes that ran: 0 when all did, 1 when the
    query stopped (its error printed), 130 when interrupted (Ctrl-C)."""
    from confluent_kafka import Producer

    from qmon.connectors.kafka import client_config
    from qmon.streaming.job import ProgressListener, start_query

    reports: list[dict[str, Any]] = []  # every progress report, each batch once, in order (ProgressListener)
    query = start_query(spark, config, bootstrap, str(checkpoint))
    listener = ProgressListener(spark, reports.append).attach(query)
    deadline = time.monotonic() + 120
    while not query.recentProgress and time.monotonic() < deadline:  # started: its first (empty) batch ran
        time.sleep(0.5)
    trigger = config.job.trigger
    print(
        f"soak: {rate:,} records/s over {queues:,} queues for {minutes} minute{'s' if minutes != 1 else ''} "
        f"(trigger {trigger}), after the estate: one PUT on each queue"
    )
    secs = estate()
    timeout = 600 + queues / 500

    def lag_at(report: dict[str, Any] | None) -> int | None:
        try:
            return lag(report)
        except Exception as exc:  # the broker slow to answer: one figure missing, not the soak
            print(f"  (input lag unknown: {exc})")
            return None

    waited, behind = caught_up(lambda: lag_at(reports[-1] if reports else None), timeout, lambda: query.isActive)
    if not query.isActive:
        print(f"  estate: the query stopped: {query.exception()}")
        listener.detach()
        return 1
    if waited is None:
        left = f"{behind:,} records behind" if behind is not None else "without a batch reported"
        print(f"  estate: the job had not read it {timeout:,.0f} s after it was produced; the soak starts {left}")
    else:
        print(f"  estate: {queues:,} records produced in {secs:.1f} s, read by the job {waited:.1f} s later")
    p = Producer(client_config(bootstrap, **{"linger.ms": 5}))
    rows: list[Minute] = []
    i = 0
    print(heading(), flush=True)
    t0 = last = time.monotonic()
    seen = len(reports)  # the estate's batches are in no minute
    code = 0
    try:
        for minute in range(1, minutes + 1):
            while i < rate * 60 * minute:  # the minute's records, record i due at t0 + i / rate
                due = t0 + i / rate
                while time.monotonic() < due:
                    time.sleep(0.001)
                k, v = next(records)
                send(p, src, k, v)
                i += 1
                if i % 1000 == 0:
                    p.poll(0)
            while (wait := t0 + 60 * minute - time.monotonic()) > 0:
                time.sleep(min(wait, 0.2))
            p.poll(0)
            now, upto = time.monotonic(), len(reports)
            batches, seen = reports[seen:upto], upto
            latest = reports[upto - 1] if upto else None
            jvm, workers = memory()
            row = minute_row(
                minute, batches, latest, now - last, checkpoint_bytes(checkpoint), jvm, workers, lag_at(latest)
            )
            last = now
            rows.append(row)
            print(line(row), flush=True)
            write_csv(csv_path, rows)
            if not query.isActive:
                print(f"the query stopped in minute {minute}: {query.exception()}")
                code = 1
                break
    except KeyboardInterrupt:
        print(f"interrupted in minute {len(rows) + 1}: the figures of the {len(rows)} minutes before it")
        code = 130
    finally:
        p.flush(60)
        query.stop()
        listener.detach()
    write_csv(csv_path, rows)
    print(f"the minutes' rows: {csv_path}")
    if not rows:
        print("no plot: not a minute ran")
    elif plot(rows, plot_path, f"qmon soak: {rate:,} records/s over {queues:,} queues (trigger {trigger})"):
        print(f"their plot: {plot_path}")
    else:
        print("no plot: matplotlib cannot be imported (pip install matplotlib; the CSV has every figure)")
    for text in verdicts(rows):
        print(text)
    return code
