"""The duplicate check: the ids kept by slice of ts (``qmon.core.dedup``), and the order in which the step gives
a key's records to it (``qmon.streaming.slice_check.first_copies_order``)."""

import numpy as np
import pytest

from qmon.core import topics
from qmon.core.config import ConfigError, load_config
from qmon.core.dedup import SLICE_MS, SliceIds, slice_expiry, slice_of
from qmon.core.queues import MonitorSettings
from qmon.core.reference import run_reference


def test_a_slice_is_ten_seconds_of_ts():
    assert SLICE_MS == 10_000
    assert [slice_of(t) for t in (0, 9_999, 10_000, 1_700_000_012_345)] == [0, 0, 1, 170_000_001]


def test_a_slice_is_forgotten_a_window_after_its_end_or_after_it_was_first_seen():
    window = 600_000
    assert slice_expiry(5, clock_ms=40_000, window_ms=window) == 60_000 + window  # its end is later
    # a backlog's old slice, first seen long after its end: kept a whole window from then
    assert slice_expiry(5, clock_ms=3_600_000, window_ms=window) == 3_600_000 + window


def test_a_slice_keeps_the_first_copy_of_a_record():
    ids = SliceIds()
    first = ("QM1", "Q1", "E1")
    assert [ids.seen(first), ids.seen(("QM1", "Q2", "E1")), ids.seen(first)] == [False, False, True]
    assert SliceIds(ids.held).seen(first)  # as restored from the state


def test_the_rules_see_each_record_once_the_first_copy_in_its_slice():
    """The pure reference applies the job's check ahead of the rules: a copy in the same slice of ts (a
    producer's resend carries its original's ts) is dropped for its queue and its structure; the same id on
    another queue, or in another slice, is another record."""
    from qmon.core.queues import QueueDefaults

    def act(eid: str, op: str, ts: int, queue: str = "Q1") -> dict:
        return {"event_id": eid, "qmgr": "QM1", "queue": queue, "op": op, "ts": ts, "depth_after": None}

    settings = MonitorSettings(
        perfmev="ENABLED", queue_defaults=(QueueDefaults("Q*", {"QSVCIEV": "HIGH", "QSVCINT": 1000}),)
    )

    def kinds(records: list[dict]) -> list[str]:
        return [e.record["type"] for e in run_reference(records, settings) if e.topic == topics.PERFORMANCE]

    # two puts would leave a message behind the first get, whose next get is then served in time (OK)
    assert kinds([act("p", "PUT", 0), act("p2", "PUT", 0), act("g", "GET", 5_000), act("g2", "GET", 5_100)]) == [
        "QSVCINT_HIGH",
        "QSVCINT_OK",
    ]
    # the resent put is one put: the first get empties the queue
    assert kinds([act("p", "PUT", 0), act("p", "PUT", 0), act("g", "GET", 5_000), act("g2", "GET", 5_100)]) == [
        "QSVCINT_HIGH"
    ]
    # the same id on another queue, or in another slice of ts, is another record
    assert kinds([act("p", "PUT", 0), act("p", "PUT", 0, "Q2"), act("g", "GET", 5_000), act("g2", "GET", 5_100)]) == [
        "QSVCINT_HIGH"
    ]
    assert kinds([act("p", "PUT", 0), act("p", "PUT", 10_000), act("g", "GET", 15_000), act("g2", "GET", 15_100)]) == [
        "QSVCINT_HIGH",
        "QSVCINT_OK",
    ]


@pytest.mark.parametrize("key", ["dedup_state", "dedup_max"])
def test_a_removed_setting_is_refused_saying_what_to_do(tmp_path, key):
    path = tmp_path / "qmon.yaml"
    path.write_text(f"monitor:\n  perfmev: ENABLED\n  {key}: 1\n")
    with pytest.raises(ConfigError, match=rf"qmon.yaml: line 3: monitor.{key}: no longer a setting: .*delete the key"):
        load_config(path)


def test_copies_in_a_batch_are_put_in_the_monitors_order_and_nothing_else_is_read():
    """The step reads a row's packed columns only when its record comes twice in the batch; the copies are
    then ordered (ts, rank, partition, offset), so the first copy kept is the monitor's first."""
    import io

    import fastavro

    from qmon.streaming.slice_check import REST_SCHEMA_DICT, first_copies_order

    def packed(ts, partition, offset):
        row = {f["name"]: None for f in REST_SCHEMA_DICT["fields"]}
        row.update(ts=ts, rank=1, src_partition=partition, src_offset=offset)
        out = io.BytesIO()
        fastavro.schemaless_writer(out, fastavro.parse_schema(REST_SCHEMA_DICT), row)
        return out.getvalue()

    assert first_copies_order(np.array([5, 6, 7]), np.array([b"not read"] * 3, dtype=object)).tolist() == [0, 1, 2]
    # 9 comes three times: at offsets 30 (p0), 10 (p1) and 20 (p0) of one ts; the monitor's order is p0/20,
    # p0/30, p1/10
    rest = np.array([packed(1, 0, 30), b"not read", packed(1, 1, 10), packed(1, 0, 20)], dtype=object)
    order = first_copies_order(np.array([9, 4, 9, 9]), rest)
    assert order.tolist() == [3, 1, 0, 2]
    ids = SliceIds()
    keep = [not ids.seen(d) for d in np.array([9, 4, 9, 9])[order].tolist()]
    assert order[keep].tolist() == [3, 1]  # the copy at p0/20, and the other record


def test_the_processor_s_module_imports_neither_numpy_pandas_nor_fastavro():
    """Spark starts a new Python process on the driver at a query's first micro-batch to ask the check's
    processor for its state, and that process imports the processor's module: without numpy, pandas, pyarrow
    and fastavro (PySpark's part of it imports none of them) it starts without their import time."""
    import subprocess
    import sys

    code = (
        "import sys, pyspark.sql.streaming.transform_with_state_driver_worker, qmon.streaming.slice_check; "
        "print(sorted({'numpy', 'pandas', 'pyarrow', 'fastavro'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_key_without_rows_gives_nothing_and_touches_no_state():
    from qmon.streaming.slice_check import SliceCheck

    check = SliceCheck(600_000, "HORIZON", 0)  # (no handle: a key without rows must not need one)
    assert list(check.handleInputRows((1, 0), iter([]), None)) == []
