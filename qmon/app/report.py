"""``qmon report``'s outputs from a ``ServiceReport``: an aligned table for the terminal, CSV and JSON for
spreadsheets and scripts, and a self-contained HTML page with plots (matplotlib, drawn to inline SVG; the
``report`` extra installs it).  What the figures are is decided by ``qmon.core.service_report``."""

from __future__ import annotations

import csv
import dataclasses
import datetime as _dt
import html as _html
import io
import json
import math
import textwrap
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from qmon.core.deadletters import table, utc
from qmon.core.records import iso
from qmon.core.service_report import QueueReport, ServiceReport, StructureReport
from qmon.core.timeconv import from_ms

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: How to install what ``--html`` needs.
HTML_NEEDS = "pip install 'qmon[report]'"

EDGES = (
    "Episodes already open at --since count from --since, and episodes still open at --until up to --until; "
    "time to resolve is over the episodes raised and resolved within the range."
)
EMPTY = "No alert episode, Queue Service Interval event or structure usage in the range."

QUEUE_SECTION = "Queues: Queue Service Interval High and OK events"
QUEUE_HEADINGS = ("QUEUE", "HIGH EVENTS", "OK EVENTS", "NOT SERVED WITHIN QSVCINT", "SERVED WITHIN QSVCINT")
STRUCTURE_SECTION = "Structures"
STRUCTURE_HEADINGS = (
    "STRUCTURE",
    "OVERFLOW MODE",
    "PEAK USAGE",
    "PEAK AT",
    "OVERFLOW STRUCTURE",
    "PEAK OVERFLOW USAGE",
)
EPISODE_SECTION = "Alert episodes"
EPISODE_HEADINGS = (
    "SUBJECT",
    "ALERT",
    "EPISODES",
    "OPEN AT SINCE",
    "OPEN AT UNTIL",
    "IN BREACH",
    "LONGEST",
    "RESOLVE MEDIAN",
    "RESOLVE MAX",
)
NUMERIC = {
    "HIGH EVENTS",
    "OK EVENTS",
    "NOT SERVED WITHIN QSVCINT",
    "SERVED WITHIN QSVCINT",
    "OVERFLOW MODE",
    "PEAK USAGE",
    "PEAK OVERFLOW USAGE",
    "EPISODES",
    "OPEN AT SINCE",
    "OPEN AT UNTIL",
    "IN BREACH",
    "LONGEST",
    "RESOLVE MEDIAN",
    "RESOLVE MAX",
}


# ---------------------------------------------------------------- figures as text


def duration(ms: int) -> str:
    """A duration at a glance: ``250ms``, ``59s``, ``3m 05s``, ``1h 02m``, ``7d 01h`` (rounded down)."""
    if ms <= 0:
        return "0s"
    if ms < 1_000:
        return f"{ms}ms"
    s = ms // 1_000
    if s < 60:
        return f"{s}s"
    if s < 3_600:
        return f"{s // 60}m {s % 60:02d}s"
    if s < 86_400:
        return f"{s // 3_600}h {s % 3_600 // 60:02d}m"
    return f"{s // 86_400}d {s % 86_400 // 3_600:02d}h"


def percent(value: float | None, *, down: bool = False) -> str:
    """``87.50%``; ``down``: rounded down, so that a range not served in full never reads 100.00%."""
    if value is None:
        return "-"
    if down:
        value = math.floor(value * 100 + 1e-9) / 100
    return f"{value:.2f}%"


def _or_dash(ms: int | None, fmt: Callable[[int], str] = duration) -> str:
    return "-" if ms is None else fmt(ms)


def queue_rows(r: ServiceReport) -> list[list[str]]:
    rows = []
    for q in r.queues:
        si = q.service_interval
        if si is not None:
            rows.append(
                [
                    q.subject,
                    str(si.high_events),
                    str(si.ok_events),
                    duration(si.not_served_ms),
                    percent(si.served_pct, down=True),
                ]
            )
    return rows


def structure_rows(r: ServiceReport) -> list[list[str]]:
    return [
        [
            s.structure,
            duration(s.overflow_mode_ms),
            percent(s.peak_usage_pct),
            _or_dash(s.peak_usage_ms, utc),
            s.overflow_structure or "-",
            percent(s.peak_overflow_usage_pct),
        ]
        for s in r.structures
    ]


def episode_rows(r: ServiceReport) -> list[list[str]]:
    subjects: list[QueueReport | StructureReport] = [*r.queues, *r.structures]
    return [
        [
            x.subject,
            a.type,
            str(a.episodes),
            str(a.open_at_since),
            str(a.open_at_until),
            duration(a.in_breach_ms),
            duration(a.longest_ms),
            _or_dash(a.resolve_median_ms),
            _or_dash(a.resolve_max_ms),
        ]
        for x in subjects
        for a in x.alerts
    ]


def _sections(r: ServiceReport) -> list[tuple[str, tuple[str, ...], list[list[str]]]]:
    found = [
        (QUEUE_SECTION, QUEUE_HEADINGS, queue_rows(r)),
        (STRUCTURE_SECTION, STRUCTURE_HEADINGS, structure_rows(r)),
        (EPISODE_SECTION, EPISODE_HEADINGS, episode_rows(r)),
    ]
    return [s for s in found if s[2]]


def heading(r: ServiceReport) -> str:
    return f"Service report from {utc(r.since_ms)} to {utc(r.until_ms)} ({duration(r.range_ms)})"


def text(r: ServiceReport) -> str:
    """The report as aligned tables: queues, structures, then the alert episodes."""
    parts = [f"{heading(r)}\n{textwrap.fill(EDGES, 110)}"]
    sections = _sections(r)
    parts += [f"{title}\n{table(rows, headings, NUMERIC)}" for title, headings, rows in sections]
    if not sections:
        parts.append(EMPTY)
    return "\n\n".join(parts) + "\n"


# ---------------------------------------------------------------- CSV and JSON


CSV_HEADER = (
    "kind",
    "qmgr",
    "queue",
    "structure",
    "alert_type",
    "episodes",
    "open_at_since",
    "open_at_until",
    "in_breach_s",
    "longest_s",
    "resolved",
    "resolve_median_s",
    "resolve_max_s",
    "qsvcint_high_events",
    "qsvcint_ok_events",
    "not_served_within_qsvcint_s",
    "served_within_qsvcint_pct",
    "overflow_mode_s",
    "peak_usage_pct",
    "peak_usage_at",
    "overflow_structure",
    "peak_overflow_usage_pct",
    "peak_overflow_usage_at",
    "since",
    "until",
)


def seconds(ms: int | None) -> str:
    """Milliseconds as seconds, exactly: ``60``, ``1.5``, ``1.001``; empty for None."""
    if ms is None:
        return ""
    whole, rest = divmod(ms, 1_000)
    return str(whole) if rest == 0 else f"{whole}.{rest:03d}".rstrip("0")


def _number(value: float | None) -> str:
    return "" if value is None else str(round(value, 6))


def _time(ms: int | None) -> str:
    return "" if ms is None else iso(ms)


def csv_text(r: ServiceReport) -> str:
    """One row per queue or structure and alert type (one with no alert type when it has no episode), the queue's
    or structure's own figures repeated on each of its rows; times in seconds, instants in ISO-8601 UTC."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_HEADER)
    edges = [iso(r.since_ms), iso(r.until_ms)]
    no_alert = [""] * 9
    for q in r.queues:
        si = q.service_interval
        own = (
            [str(si.high_events), str(si.ok_events), seconds(si.not_served_ms), _number(si.served_pct)]
            if si is not None
            else [""] * 4
        )
        for alert in _alert_cells(q) or [no_alert]:
            w.writerow(["queue", q.qmgr, q.queue, "", *alert, *own, *[""] * 6, *edges])
    for s in r.structures:
        own = [
            seconds(s.overflow_mode_ms),
            _number(s.peak_usage_pct),
            _time(s.peak_usage_ms),
            s.overflow_structure or "",
            _number(s.peak_overflow_usage_pct),
            _time(s.peak_overflow_usage_ms),
        ]
        for alert in _alert_cells(s) or [no_alert]:
            w.writerow(["structure", "", "", s.structure, *alert, *[""] * 4, *own, *edges])
    return buf.getvalue()


def _alert_cells(x: QueueReport | StructureReport) -> list[list[str]]:
    """``alert_type`` to ``resolve_max_s``, for each of ``x``'s alert types."""
    return [
        [
            a.type,
            str(a.episodes),
            str(a.open_at_since),
            str(a.open_at_until),
            seconds(a.in_breach_ms),
            seconds(a.longest_ms),
            str(a.resolved),
            seconds(a.resolve_median_ms),
            seconds(a.resolve_max_ms),
        ]
        for a in x.alerts
    ]


def as_json(r: ServiceReport) -> dict[str, Any]:
    """The report as JSON values: the range (ISO-8601 UTC and epoch ms), then every field of every queue and
    structure; times in epoch milliseconds, periods as [start, end]."""
    body = dataclasses.asdict(r)
    return {
        "since": iso(r.since_ms),
        "until": iso(r.until_ms),
        "since_ms": r.since_ms,
        "until_ms": r.until_ms,
        "range_ms": r.range_ms,
        "queues": body["queues"],
        "structures": body["structures"],
    }


def json_text(r: ServiceReport) -> str:
    return json.dumps(as_json(r), indent=2) + "\n"


# ---------------------------------------------------------------- HTML with plots

Plot = tuple[str, Callable[["Figure"], None]]

#: At most this many rows in a plot of queues or of episodes: those furthest from being served in time, or
#: longest in breach.
PLOT_ROWS = 40


def plots(r: ServiceReport) -> list[Plot]:
    """The page's plots, each a title and what draws it: service within QSVCINT per queue, each structure's
    usage over time with its overflow mode, and the alert episodes over time."""
    out: list[Plot] = []
    served = sorted((q for q in r.queues if q.service_interval is not None), key=_served_key)[:PLOT_ROWS]
    if served:
        out.append(("Served within QSVCINT, per queue", partial(_draw_served, served)))
    for s in r.structures:
        if s.usage or s.overflow_mode_periods:
            out.append((f"{s.structure}: usage", partial(_draw_usage, r, s)))
    rows = _episode_lanes(r)
    if rows:
        out.append(("Alert episodes", partial(_draw_episodes, r, rows)))
    return out


def _served_key(q: QueueReport) -> tuple[float, str]:
    assert q.service_interval is not None
    return (q.service_interval.served_pct, q.subject)


def _episode_lanes(r: ServiceReport) -> list[tuple[str, list[tuple[int, int]]]]:
    """One lane per subject and alert type, the longest in breach first (at most ``PLOT_ROWS``), then in order."""
    lanes: list[tuple[int, int, str, list[tuple[int, int]]]] = []
    subjects: list[QueueReport | StructureReport] = [*r.queues, *r.structures]
    for n, x in enumerate(subjects):
        for a in x.alerts:
            periods = [(e.start_ms, e.end_ms) for e in x.episodes if e.type == a.type]
            lanes.append((a.in_breach_ms, n, f"{x.subject} {a.type}", periods))
    kept = sorted(lanes, key=lambda lane: -lane[0])[:PLOT_ROWS]
    return [(label, periods) for _ms, _n, label, periods in sorted(kept, key=lambda lane: (lane[1], lane[2]))]


def _x(ms: int) -> float:
    """An instant (epoch ms) on a time axis (matplotlib's date numbers, days)."""
    from matplotlib import dates

    return float(dates.date2num(from_ms(ms)))


def _time_axis(ax: Any, r: ServiceReport) -> None:
    from matplotlib import dates

    ax.set_xlim(_x(r.since_ms), _x(r.until_ms))
    locator = dates.AutoDateLocator(tz=_dt.UTC)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(dates.ConciseDateFormatter(locator, tz=_dt.UTC))
    ax.set_xlabel("UTC")


def _draw_served(queues: list[QueueReport], fig: Figure) -> None:
    fig.set_size_inches(9, 1.0 + 0.3 * len(queues))
    ax = fig.add_subplot()
    names = [q.subject for q in queues]
    values = [q.service_interval.served_pct if q.service_interval else 0.0 for q in queues]
    bars = ax.barh(names, values, color="tab:green")
    ax.bar_label(bars, labels=[percent(v, down=True) for v in values], padding=3)
    ax.set_xlim(0, 110)
    ax.invert_yaxis()
    ax.set_xlabel("% of the range served within QSVCINT")


def _draw_usage(r: ServiceReport, s: StructureReport, fig: Figure) -> None:
    fig.set_size_inches(9, 3)
    ax = fig.add_subplot()
    for n, (start, end) in enumerate(s.overflow_mode_periods):
        ax.axvspan(_x(start), _x(end), color="tab:orange", alpha=0.25, label="overflow mode" if n == 0 else None)
    if s.usage:
        ax.plot([_x(ts) for ts, _p in s.usage], [p for _ts, p in s.usage], marker=".", linewidth=1, label="usage")
    if s.peak_usage_pct is not None and s.peak_usage_ms is not None:
        ax.plot(
            [_x(s.peak_usage_ms)],
            [s.peak_usage_pct],
            "v",
            color="tab:red",
            label=f"peak {percent(s.peak_usage_pct)}",
        )
    ax.set_ylim(0, 105)
    ax.set_ylabel("% of data elements used")
    _time_axis(ax, r)
    ax.legend(loc="upper left", fontsize="small")


def _draw_episodes(r: ServiceReport, lanes: list[tuple[str, list[tuple[int, int]]]], fig: Figure) -> None:
    fig.set_size_inches(9, 1.2 + 0.3 * len(lanes))
    ax = fig.add_subplot()
    for y, (_label, periods) in enumerate(lanes):
        spans = [(_x(a), (b - a) / 86_400_000) for a, b in periods]
        ax.broken_barh(spans, (y - 0.35, 0.7), color=f"C{y % 10}")
    ax.set_yticks(range(len(lanes)), [label for label, _p in lanes])
    ax.set_ylim(len(lanes) - 0.5, -0.5)
    _time_axis(ax, r)


def svg(draw: Callable[[Figure], None], salt: str) -> str:
    """What ``draw`` draws on a new figure, as an ``<svg>`` element (text kept as text; ids from ``salt``, so
    the same report gives the same page)."""
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    buf = io.StringIO()
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": salt, "font.size": 9}):
        fig = Figure(layout="constrained")
        draw(fig)
        fig.savefig(buf, format="svg", metadata={"Date": None})
    out = buf.getvalue()
    return out[out.index("<svg") :]


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { padding: 0.2em 0.8em; border-bottom: 1px solid #ddd; text-align: left; }
td.num, th.num { text-align: right; }
figure { margin: 1em 0 2em; }
figcaption { font-weight: bold; margin-bottom: 0.3em; }
svg { max-width: 100%; height: auto; }
"""


def _html_table(headings: tuple[str, ...], rows: list[list[str]]) -> str:
    def cell(tag: str, h: str, value: str) -> str:
        cls = ' class="num"' if h in NUMERIC else ""
        return f"<{tag}{cls}>{_html.escape(value)}</{tag}>"

    head = "".join(cell("th", h, h) for h in headings)
    body = "".join(
        "<tr>" + "".join(cell("td", h, v) for h, v in zip(headings, row, strict=True)) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def html(r: ServiceReport) -> str:
    """A self-contained page: the tables, and each plot as inline SVG with its title as caption.  Needs
    matplotlib (``HTML_NEEDS``)."""
    figures = [
        f"<figure><figcaption>{_html.escape(title)}</figcaption>{svg(draw, f'qmon-report-{n}')}</figure>"
        for n, (title, draw) in enumerate(plots(r))
    ]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_html.escape(heading(r))}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{_html.escape(heading(r))}</h1><p>{_html.escape(EDGES)}</p>",
    ]
    for title, headings, rows in _sections(r):
        parts.append(f"<h2>{_html.escape(title)}</h2>{_html_table(headings, rows)}")
    if not _sections(r):
        parts.append(f"<p>{_html.escape(EMPTY)}</p>")
    if figures:
        parts.append("<h2>Plots</h2>")
        parts.extend(figures)
    parts.append("</body></html>\n")
    return "\n".join(parts)
