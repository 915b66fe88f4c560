"""``sorted_input``: a key's Arrow batches joined and sorted, column by column (no Spark)."""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from qmon.streaming.operators import sorted_input

ROW = st.tuples(
    st.integers(0, 50),  # src_offset
    st.integers(0, 3),  # src_partition
    st.integers(0, 2),  # rank
    st.integers(0, 20),  # ts
    st.one_of(st.none(), st.integers(0, 3)),  # shard (null for rows passed through)
    st.sampled_from(["QM1", "QM2", "QM10"]),  # qmgr
    st.one_of(st.none(), st.integers(-5, 5)),  # a column null in some rows (float64 in pandas)
)


def _frame(rows: list[tuple]) -> pd.DataFrame:
    cols = ["src_offset", "src_partition", "rank", "ts", "shard", "qmgr", "depth_after"]
    dtypes = ["int64"] * 4 + ["float64", "object", "float64"]  # as from Arrow: nullable integers as float64
    series = [
        pd.Series([r[i] for r in rows], name=c, dtype=t) for i, (c, t) in enumerate(zip(cols, dtypes, strict=True))
    ]
    # as PySpark hands a batch over: Series concatenated side by side (same-typed columns share a block)
    return pd.concat(series, axis=1)


@settings(max_examples=150, deadline=None)
@given(st.lists(ROW, min_size=1, max_size=40), st.lists(st.integers(1, 40), max_size=6), st.booleans())
def test_any_split_into_batches_sorts_as_one_stable_sort(rows: list[tuple], cuts: list[int], shards: bool) -> None:
    bounds = sorted({0, len(rows), *(c for c in cuts if c < len(rows))})
    batches = [_frame(rows[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=False)]
    whole = _frame(rows)
    got = sorted_input(iter(batches), shards=shards)
    keys = ["ts", "rank", "src_partition", "src_offset"]
    ref = whole.assign(_shard=whole["shard"].fillna(-1), _qmgr=pd.factorize(whole["qmgr"], sort=True)[0])
    ref = ref.sort_values((["_qmgr", "_shard"] if shards else []) + keys, kind="stable")
    ref = ref.drop(columns=["_shard", "_qmgr"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), ref, check_dtype=False)
    assert list(got.columns) == list(whole.columns)
