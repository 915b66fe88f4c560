"""Routed rows as ``streaming.route.route`` makes them, for the operator's tests (both APIs)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from qmon.connectors import avro
from qmon.core import topics
from qmon.streaming.rows import ROUTED_COLUMNS


def row(kind: str, ts: int, *, seq: int, **fields: Any) -> dict[str, Any]:
    """A routed row as ``streaming.route.route`` makes it (clock = ts: rows at or below the watermark,
    which starts at 0, are late and filtered, as in the job)."""
    base: dict[str, Any] = dict.fromkeys(ROUTED_COLUMNS)
    base.update(
        unit="Q",
        unit_name="",
        bucket=0,
        shard=0,
        kind=kind,
        qmgr="QM1",
        ts=ts,
        clock=ts,
        rank=1,
        src_partition=0,
        src_offset=seq,
        reply=False,
    )
    base.update(fields)
    return base


def command(ts: int, text: str, seq: int) -> dict[str, Any]:
    return row("C", ts, seq=seq, event_id=f"c{seq}", payload=text, reply=True, rank=0)


def put(ts: int, queue: str, seq: int) -> dict[str, Any]:
    return row("A", ts, seq=seq, event_id=f"a{seq}", queue=queue, op="PUT", msg_bytes=100)


def frame(*rows: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=ROUTED_COLUMNS)


def decoded(out: pd.DataFrame) -> list[tuple[str, dict[str, Any]]]:
    if out.empty:  # (no output: TwsTester gives a frame without columns)
        return []
    return [(t, avro.decode(topics.RECORD_OF[t], bytes(v))) for t, v in zip(out["topic"], out["value"], strict=True)]
