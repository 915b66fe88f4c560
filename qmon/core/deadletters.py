"""Dead-letter analytics: what ``qmon metrics`` and ``qmon dlq-handler --report`` count.  Pure.

A dead letter is counted under three things its header says (qmon's DeadLetter record, modelled on MQ's
MQDLH): the reason (``reason_name``, else the reason code), the topic the record came from
(``dest_topic``, MQ's DestQName) and the application that put it on the DLQ (``put_appl_name``, MQ's
PutApplName).  A record on the DLQ that is not a DeadLetter has none of them and is counted under empty
ones, so a record is never left out of a total.

For the report, each record also has a *status* that says where the DLQ handler is with it, from the
handler's committed offsets and its ledger (``<dlq>.ignored``, see ``connectors/dlqledger.py``):

* ``unread``: after the handler's committed offset (or the handler has never run);
* ``waiting``: read, and in the ledger waiting for its next attempt;
* ``ignored``: read, and in the ledger left on the DLQ for good;
* ``done``: read, and not in the ledger: forwarded, retried or discarded.

Times are epoch milliseconds, given as arguments: nothing here reads the clock.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from qmon.core.config import duration_ms
from qmon.core.timeconv import from_ms, to_ms

STATUSES = ("done", "waiting", "ignored", "unread")


class Labels(NamedTuple):
    """What a dead letter is counted under; an empty string where the header has nothing."""

    reason: str
    origin: str
    appl: str


NO_HEADER = Labels("", "", "")


def labels(header: Mapping[str, Any] | None) -> Labels:
    """The labels of a DeadLetter record or of a ledger entry's header (None: not a DeadLetter)."""
    if not header:
        return NO_HEADER
    reason = header.get("reason_name") or ("" if header.get("reason") is None else str(header["reason"]))
    return Labels(str(reason), str(header.get("dest_topic") or ""), str(header.get("put_appl_name") or ""))


def status(partition: int, offset: int, committed: Mapping[int, int], ledger: Mapping[str, Any]) -> str:
    """Where the DLQ handler is with the record at ``partition``/``offset`` (see the module's text)."""
    entry = ledger.get(f"{partition}/{offset}")
    if entry is not None:
        return "waiting" if entry.get("state") == "waiting" else "ignored"
    if offset >= committed.get(partition, 0):
        return "unread"
    return "done"


# ---------------------------------------------------------------- the time range


_AGO = re.compile(r"^\s*(\d+)\s*([a-z]+)\s*(ago)?\s*$", re.IGNORECASE)
_WEEK_MS = 7 * 86_400_000


def parse_time(text: str, now_ms: int) -> int:
    """A time given to ``--since`` / ``--until``, as epoch milliseconds.

    ``now``; a duration back from ``now_ms`` (``7d``, ``12h``, ``30 minutes``, ``2w``, ``90 s ago``); or an
    ISO-8601 date or date and time (``2025-01-10``, ``2025-01-10T08:00``, ``2025-01-10 08:00:00+02:00``),
    UTC unless it carries an offset.
    """
    value = text.strip()
    if value.lower() == "now":
        return now_ms
    m = _AGO.match(value)
    if m:
        n, unit = int(m.group(1)), m.group(2).lower()
        if unit in ("w", "week", "weeks"):
            return now_ms - n * _WEEK_MS
        try:
            return now_ms - duration_ms(f"{n} {unit}")
        except ValueError:
            pass
    try:
        when = _dt.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        msg = (
            f"{text!r} is not a time: write a duration back from now (7d, 12h, 30m, 2w), "
            "an ISO date or date and time (2025-01-10, 2025-01-10T08:00, UTC unless an offset is given), or now"
        )
        raise ValueError(msg) from None
    return to_ms(when if when.tzinfo is not None else when.replace(tzinfo=_dt.UTC))


def utc(ms: int) -> str:
    """Epoch milliseconds as a UTC time to the second, for tables."""
    return from_ms(ms).strftime("%Y-%m-%d %H:%M:%SZ")


# ---------------------------------------------------------------- the tally


@dataclass
class Row:
    """The dead letters of one (reason, origin, appl): how many, by status, and when the first and last arrived."""

    labels: Labels
    statuses: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATUSES, 0))
    first_ms: int | None = None
    last_ms: int | None = None

    @property
    def total(self) -> int:
        return sum(self.statuses.values())

    def add(self, status_: str, ts_ms: int) -> None:
        self.statuses[status_] += 1
        self.first_ms = ts_ms if self.first_ms is None else min(self.first_ms, ts_ms)
        self.last_ms = ts_ms if self.last_ms is None else max(self.last_ms, ts_ms)


@dataclass
class Tally:
    """Dead letters counted by (reason, origin, appl), with their status."""

    rows: dict[Labels, Row] = field(default_factory=dict)

    def add(self, label: Labels, status_: str, ts_ms: int) -> None:
        if status_ not in STATUSES:
            msg = f"unknown dead-letter status {status_!r}; expected one of {', '.join(STATUSES)}"
            raise ValueError(msg)
        self.rows.setdefault(label, Row(label)).add(status_, ts_ms)

    def sorted_rows(self) -> list[Row]:
        """The largest first; ties by reason, origin, application."""
        return sorted(self.rows.values(), key=lambda r: (-r.total, r.labels))

    def totals(self) -> Row:
        out = Row(Labels("total", "", ""))
        for row in self.rows.values():
            for s, n in row.statuses.items():
                out.statuses[s] += n
            for ts in (row.first_ms, row.last_ms):
                if ts is not None:
                    out.first_ms = ts if out.first_ms is None else min(out.first_ms, ts)
                    out.last_ms = ts if out.last_ms is None else max(out.last_ms, ts)
        return out


def tally(records: Iterable[tuple[Labels, str, int]]) -> Tally:
    """A tally of (labels, status, timestamp ms) triples."""
    t = Tally()
    for label, status_, ts in records:
        t.add(label, status_, ts)
    return t


# ---------------------------------------------------------------- the table


HEADINGS = (
    "REASON",
    "ORIGINAL TOPIC",
    "APPLICATION",
    "RECORDS",
    "DONE",
    "WAITING",
    "IGNORED",
    "UNREAD",
    "FIRST",
    "LAST",
)
_NUMERIC = {"RECORDS", "DONE", "WAITING", "IGNORED", "UNREAD"}


def _cells(row: Row) -> list[str]:
    return [
        row.labels.reason or "(not a DeadLetter)",
        row.labels.origin or "-",
        row.labels.appl or "-",
        str(row.total),
        *(str(row.statuses[s]) for s in STATUSES),
        utc(row.first_ms) if row.first_ms is not None else "-",
        utc(row.last_ms) if row.last_ms is not None else "-",
    ]


def table(rows: list[list[str]], headings: tuple[str, ...], numeric: set[str] | None = None) -> str:
    """Aligned columns, numbers to the right, two blanks between columns."""
    numeric = numeric or set()
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headings)]

    def line(cells: list[str] | tuple[str, ...]) -> str:
        parts = [c.rjust(w) if h in numeric else c.ljust(w) for c, w, h in zip(cells, widths, headings, strict=True)]
        return "  ".join(parts).rstrip()

    return "\n".join([line(headings), *(line(r) for r in rows)])


def report(tally_: Tally, topic: str, since_ms: int | None, until_ms: int) -> str:
    """``qmon dlq-handler --report``: a heading line, then one line per (reason, origin, appl) and a total."""
    since = utc(since_ms) if since_ms is not None else "the beginning"
    total = tally_.totals()
    head = f"{topic}: {total.total} dead letter(s) put on the DLQ from {since} to {utc(until_ms)}"
    if not tally_.rows:
        return head + "\n"
    rows = [_cells(r) for r in tally_.sorted_rows()]
    total_cells = _cells(total)
    total_cells[0:3] = ["total", "", ""]
    return head + "\n\n" + table([*rows, total_cells], HEADINGS, _NUMERIC) + "\n"
