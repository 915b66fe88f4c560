"""``monitor.dedup_state: slice``: the ids kept by slice of ts (``qmon.core.dedup``), and the step's bulk form
(``qmon.streaming.dedup.fresh_rows``) against the per-record rule over random batches."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from qmon.core.config import Config
from qmon.core.dedup import SLICE_MS, Recent, SliceIds, record_digest, record_key, slice_expiry, slice_of
from qmon.streaming.dedup import fresh_rows


def test_a_slice_is_ten_seconds_of_ts():
    assert SLICE_MS == 10_000
    assert [slice_of(t) for t in (0, 9_999, 10_000, 1_700_000_012_345)] == [0, 0, 1, 170_000_001]


def test_a_slice_is_forgotten_a_window_after_its_end_or_after_it_was_first_seen():
    window = 600_000
    assert slice_expiry(5, clock_ms=40_000, window_ms=window) == 60_000 + window  # its end is later
    # a backlog's old slice, first seen long after its end: kept a whole window from then
    assert slice_expiry(5, clock_ms=3_600_000, window_ms=window) == 3_600_000 + window


def test_a_record_is_remembered_by_its_queue_manager_queue_and_event_id():
    keys = {
        record_key(*t) for t in (("QM1", "Q1", "E1"), ("QM1", "Q1E", "1"), ("QM1Q", "1", "E1"), ("QM2", "Q1", "E1"))
    }
    assert len(keys) == 4  # no two triples share a key
    d = record_digest("QM1", "Q1", "E1")
    assert isinstance(d, int) and -(2**63) <= d < 2**63 and d == record_digest("QM1", "Q1", "E1")


def test_each_side_keeps_the_first_copy():
    ids = SliceIds()
    assert [ids.seen(7, False), ids.seen(7, True), ids.seen(7, False), ids.seen(7, True)] == [False, False, True, True]
    again = SliceIds(*ids.sides)
    assert again.seen(7, False) and again.seen(7, True) and not again.seen(8, False)


def test_the_monitors_own_check_is_off_with_a_slice_step():
    recent = Recent(600_000, 0)
    holder: dict = {"recent": {}}
    assert recent.duplicate(holder, "E1", 1) is False and recent.duplicate(holder, "E1", 1) is False
    assert recent.duplicates(holder, ["E1", "E1"], [1, 1]) == [False, False]
    assert holder == {"recent": {}}  # nothing remembered, nothing written
    config = Config.model_validate({"monitor": {"dedup_state": "slice"}})
    assert config.monitor_settings().dedup_max == 0 and config.structure_settings().dedup_max == 0
    assert Config().monitor_settings().dedup_max == 256
    assert config.monitor_settings("queue").dedup_max == 256  # as a checkpoint started with queue keeps it


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, 12), st.booleans()), max_size=40),  # (record id, structure side)
        min_size=1,
        max_size=4,
    )
)
def test_a_batch_at_once_is_the_rule_row_by_row(batches):
    """Property: ``fresh_rows`` over batches of rows (copies of a few ids, both sides) keeps exactly the rows
    ``SliceIds.seen`` keeps row by row, and holds what it holds after every batch."""
    rule = SliceIds()
    held_q = held_s = np.empty(0, dtype=np.int64)
    for rows in batches:
        digests = np.array([record_digest("QM1", "Q", str(r)) for r, _ in rows], dtype=np.int64)
        side = np.array([s for _, s in rows], dtype=bool)
        keep, held_q, held_s = fresh_rows(held_q, held_s, digests, side)
        want = [not rule.seen(int(d), bool(s)) for d, s in zip(digests, side, strict=True)]
        assert keep.tolist() == want
        assert set(held_q.tolist()) == rule.sides[0] and len(held_q) == len(rule.sides[0])
        assert set(held_s.tolist()) == rule.sides[1] and len(held_s) == len(rule.sides[1])
