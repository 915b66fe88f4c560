"""Encode: the records the rules raise, Avro-encoded into the operator's output rows (``rows.OUTPUT``), each
with its place in the batch's output order."""

from __future__ import annotations

import pandas as pd

from qmon.connectors import avro
from qmon.core import topics
from qmon.core.records import Emit
from qmon.streaming.rows import OUTPUT_COLUMNS


def encode_emits(monitors: list[list[tuple[int, int, Emit]]]) -> pd.DataFrame:
    """Each monitor's (order_seq, order_ts, Emit) -> the operator's output rows, Avro-encoded (``order_idx``:
    the output's place among its monitor's)."""
    rows = []
    for emits in monitors:
        for idx, (seq, ts, e) in enumerate(emits):
            value = avro.encode(topics.RECORD_OF[e.topic], e.record)
            rows.append((e.topic, e.key, value, int(e.record.get("ts") or ts), seq, idx))
    return pd.DataFrame(rows, columns=OUTPUT_COLUMNS)
