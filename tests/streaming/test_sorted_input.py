"""``sorted_input``: a key's Arrow batches joined and sorted, column by column (no Spark)."""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from qmon.streaming.unit_step import sorted_input

COLUMNS = ["src_offset", "src_partition", "rank", "ts", "shard", "qmgr", "depth_after"]
ROW = st.tuples(
    st.integers(0, 50),  # src_offset
    st.integers(0, 3),  # src_partition
    st.integers(0, 2),  # rank
    st.integers(0, 20),  # ts
    st.one_of(st.none(), st.integers(0, 3)),  # shard (null for rows passed through)
    st.sampled_from(["QM1", "QM2", "QM10"]),  # qmgr
    st.one_of(st.none(), st.integers(-5, 5)),  # a column null in some rows
)


def _batch(rows: list[tuple]) -> pd.DataFrame:
    """As PySpark hands an Arrow batch over: an integer column with a null in this batch is float64, one
    without is int64 (so batches of one key differ), and the Series are put side by side (same-typed columns
    share a block)."""
    series = []
    for i, name in enumerate(COLUMNS):
        values = [r[i] for r in rows]
        dtype = "object" if name == "qmgr" else "float64" if any(v is None for v in values) else "int64"
        series.append(pd.Series(values, name=name, dtype=dtype))
    return pd.concat(series, axis=1)


@settings(max_examples=200, deadline=None)
@given(st.lists(ROW, min_size=1, max_size=40), st.lists(st.integers(0, 40), max_size=6), st.booleans())
def test_any_split_into_batches_sorts_as_one_stable_sort(rows: list[tuple], cuts: list[int], shards: bool) -> None:
    bounds = [0, *sorted(min(c, len(rows)) for c in cuts), len(rows)]  # repeated cuts: batches of no rows
    batches = [_batch(rows[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    whole = pd.concat(batches, ignore_index=True)  # pandas' own joining: its dtypes are the reference
    got = sorted_input(iter(batches), shards=shards)
    keys = ["ts", "rank", "src_partition", "src_offset"]
    ref = whole.assign(_shard=whole["shard"].fillna(-1), _qmgr=pd.factorize(whole["qmgr"], sort=True)[0])
    ref = ref.sort_values((["_qmgr", "_shard"] if shards else []) + keys, kind="stable")
    ref = ref.drop(columns=["_shard", "_qmgr"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), ref)


def test_a_single_batch_in_order_is_used_as_it_is() -> None:
    batch = _batch([(1, 0, 1, 5, 0, "QM1", 1), (2, 0, 1, 6, 0, "QM1", None)])
    assert sorted_input(iter([batch])) is batch
