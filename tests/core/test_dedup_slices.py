"""``monitor.dedup_state: slice``: the ids kept by slice of ts (``qmon.core.dedup``), and the step's bulk form
(``qmon.streaming.slice_check.checked`` by chunks, then the monitor's ``first_copies``) against the per-record rule
over random batches."""

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from qmon.core.config import Config
from qmon.core.dedup import SLICE_MS, Recent, SliceIds, slice_expiry, slice_of
from qmon.streaming.operators import first_copies
from qmon.streaming.slice_check import checked


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


def test_the_monitors_own_check_is_off_with_a_slice_step():
    recent = Recent(600_000, 0)
    holder: dict = {"recent": {}}
    assert recent.duplicate(holder, "E1", 1) is False and recent.duplicate(holder, "E1", 1) is False
    assert recent.duplicates(holder, ["E1", "E1"], [1, 1]) == [False, False]
    assert holder == {"recent": {}}  # nothing remembered, nothing written
    config = Config()  # slice by default
    assert config.monitor.dedup_state == "slice"
    assert config.monitor_settings().dedup_max == 0 and config.structure_settings().dedup_max == 0
    assert Config.model_validate({"monitor": {"dedup_state": "queue"}}).monitor_settings().dedup_max == 256
    assert config.monitor_settings("queue").dedup_max == 256  # as a checkpoint started with queue keeps it


DIGEST = st.integers(-(2**63), -(2**63) + 12) | st.integers(0, 12)  # copies of a few records, extreme values too
ROW = st.tuples(DIGEST, st.integers(0, 5))  # a record's digest and its ts (copies of a record may differ here)
BATCH = st.tuples(st.lists(ROW, max_size=40), st.lists(st.integers(0, 40), max_size=4))  # rows, chunk cuts


def _frame(rows: list[tuple[int, int, int]], marks: list[bool]) -> pd.DataFrame:
    """The monitor's rows for ``(digest, ts, offset)``s: activity of one queue, the digest as event_id."""
    return pd.DataFrame(
        {
            "kind": ["A"] * len(rows),
            "qmgr": ["QM1"] * len(rows),
            "queue": ["Q1"] * len(rows),
            "event_id": [f"E{d}" for d, _, _ in rows],
            "ts": [t for _, t, _ in rows],
            "src_offset": [o for _, _, o in rows],
            "dcopy": marks,
        }
    )


@settings(max_examples=400, deadline=None)
@given(st.lists(BATCH, min_size=1, max_size=4), st.randoms(use_true_random=False))
def test_the_check_by_chunks_and_the_monitors_first_copy_are_the_rule_record_by_record(batches, rnd):
    """Property: batches of rows in any order, cut into chunks anywhere: ``checked`` over the chunks, then
    ``first_copies`` over what passed, sorted in the monitor's order, keeps exactly the records
    ``SliceIds.seen`` keeps one by one in the monitor's order, and the key holds what the rule holds."""
    rule = SliceIds()
    held = np.empty(0, dtype=np.int64)
    offset = 0
    for rows, cuts in batches:
        rows = [(d, ts, offset + i) for i, (d, ts) in enumerate(rows)]  # (the offset: a row's place in the log)
        offset += len(rows)
        arrival = rows[:]
        rnd.shuffle(arrival)  # the check meets them in any order
        bounds = [0, *sorted(min(c, len(arrival)) for c in cuts), len(arrival)]
        met = np.empty(0, dtype=np.int64)
        passed_rows, marks = [], []
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            chunk = arrival[a:b]
            passed, again, met = checked(held, met, np.array([r[0] for r in chunk], dtype=np.int64))
            passed_rows += [r for r, p in zip(chunk, passed, strict=True) if p]
            marks += [bool(m) for m, p in zip(again, passed, strict=True) if p]
        held = np.concatenate([held, met])
        order = sorted(range(len(passed_rows)), key=lambda i: (passed_rows[i][1], passed_rows[i][2]))
        monitor = first_copies(_frame([passed_rows[i] for i in order], [marks[i] for i in order]))
        want = [r for r in sorted(rows, key=lambda r: (r[1], r[2])) if not rule.seen(r[0])]
        assert list(zip(monitor["event_id"], monitor["src_offset"], strict=True)) == [(f"E{d}", o) for d, _, o in want]
        assert sorted(held.tolist()) == sorted(rule.held)


def test_only_a_marked_record_s_later_copies_are_dropped_and_commands_never():
    pdf = _frame([(1, 0, 0), (2, 0, 1), (1, 0, 2), (2, 0, 3)], [False, False, True, False])
    pdf.loc[3, "kind"] = "C"  # a command whose command_id is an activity's event_id: not a copy
    assert first_copies(pdf)["src_offset"].tolist() == [0, 1, 3]
    unmarked = _frame([(1, 0, 0), (1, 0, 1)], [False, False])  # (never so from the check: read as given)
    assert first_copies(unmarked) is unmarked


def test_the_processor_s_module_imports_neither_numpy_nor_pandas():
    """Spark starts a new Python process on the driver at a query's first micro-batch to ask the check's
    processor for its state, and that process imports the processor's module: without numpy, pandas and
    pyarrow (which PySpark's part of it does not import either) it starts ~0.3 s sooner."""
    import subprocess
    import sys

    code = (
        "import sys, pyspark.sql.streaming.transform_with_state_driver_worker, qmon.streaming.slice_check; "
        "print(sorted({'numpy', 'pandas', 'pyarrow'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
