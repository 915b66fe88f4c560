"""DISPLAY QLOCAL, DISPLAY QSTATUS and DISPLAY QMGR answered from what qmon holds, in runmqsc's format (IBM MQ,
*DISPLAY QUEUE*, *DISPLAY QSTATUS*, *DISPLAY QMGR*): a header line, then ``KEYWORD(value)`` two to a line.
Pure.

What qmon holds is what its records and commands made: the attributes it models (set by ``queues[]`` and MQSC),
the depth it counts, the times of the last put and get it saw (event time, shown in UTC, as ``yyyy-mm-dd`` and
``hh.mm.ss``) and the age of the oldest message (``status``).  MSGAGE is 0 for an empty queue and blank while
the oldest messages' puts were not seen; LPUTDATE and LPUTTIME are blank until qmon sees a put, as MQ's are
after a restart.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from qmon.core.mqsc import DISPLAYED, SHOW, Command
from qmon.core.queues.state import QueueState
from qmon.core.queues.status import msg_age

#: the first column's width (runmqsc's): a value longer than it goes on a line of its own
_COLUMN = 40


def lines(items: list[str]) -> list[str]:
    """``KEYWORD(value)`` items two to a line, as runmqsc lays them out."""
    out: list[str] = []
    row: list[str] = []
    for item in items:
        if len(item) >= _COLUMN:
            if row:
                out.append("   " + row[0])
                row = []
            out.append("   " + item)
            continue
        row.append(item)
        if len(row) == 2:
            out.append("   " + row[0].ljust(_COLUMN) + row[1])
            row = []
    if row:
        out.append("   " + row[0])
    return out


def shown(cmd: Command) -> tuple[str, ...]:
    """The attributes ``cmd`` asks for, in runmqsc's order (all of them for ALL)."""
    asked = cmd.attrs[SHOW]
    every = DISPLAYED[cmd.obj]
    return every if "ALL" in asked else tuple(a for a in every if a in asked)


def _flag(value: bool) -> str:
    return "ENABLED" if value else "DISABLED"


def queue_details(cmd: Command, name: str, q: QueueState, shared: bool) -> str:
    """DISPLAY QLOCAL's block for ``q`` (``shared``: a queue-sharing group's shared queue)."""
    a = q["attrs"]
    values: dict[str, Any] = {
        "CURDEPTH": q["depth"],
        "MAXDEPTH": a["MAXDEPTH"],
        "QDEPTHHI": a["QDEPTHHI"],
        "QDEPTHLO": a["QDEPTHLO"],
        "QDPHIEV": _flag(a["QDPHIEV"]),
        "QDPLOEV": _flag(a["QDPLOEV"]),
        "QDPMAXEV": _flag(a["QDPMAXEV"]),
        "QSGDISP": "SHARED" if shared else "QMGR",
        "QSVCIEV": a["QSVCIEV"],
        "QSVCINT": a["QSVCINT"],
    }
    items = [f"QUEUE({name})", "TYPE(QLOCAL)", *(f"{k}({values[k]})" for k in shown(cmd))]
    return "\n".join(["AMQ8409I: Display Queue details.", *lines(items)])


def _date_time(ms: int | None) -> tuple[str, str]:
    if ms is None:
        return " ", " "
    at = datetime.fromtimestamp(ms / 1000, UTC)
    return at.strftime("%Y-%m-%d"), at.strftime("%H.%M.%S")


def queue_status(cmd: Command, name: str, q: QueueState, ts: int) -> str:
    """DISPLAY QSTATUS's block for ``q`` at event time ``ts``."""
    lget_date, lget_time = _date_time(q["last_get"])
    lput_date, lput_time = _date_time(q["last_put"])
    age = 0 if q["depth"] == 0 else msg_age(q, ts)
    values: dict[str, Any] = {
        "CURDEPTH": q["depth"],
        "LGETDATE": lget_date,
        "LGETTIME": lget_time,
        "LPUTDATE": lput_date,
        "LPUTTIME": lput_time,
        "MSGAGE": " " if age is None else age,
    }
    items = [f"QUEUE({name})", "TYPE(QUEUE)", *(f"{k}({values[k]})" for k in shown(cmd))]
    return "\n".join(["AMQ8450I: Display queue status details.", *lines(items)])


def qmgr_details(cmd: Command, qmgr: str, perfmev: str) -> str:
    """DISPLAY QMGR's block."""
    items = [f"QMNAME({qmgr})", *(f"{k}({perfmev})" for k in shown(cmd))]
    return "\n".join(["AMQ8408I: Display Queue Manager details.", *lines(items)])


def not_found(name: str) -> str:
    return f"AMQ8147E: IBM MQ object {name} not found."
