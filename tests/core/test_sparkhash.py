"""Spark's Murmur3 hash in Python (``qmon.core.sparkhash``): values Spark's SQL ``hash`` gives (checked against
Spark itself in ``tests/streaming/test_units.py``)."""

from __future__ import annotations

import pytest

from qmon.core.sparkhash import partition, spark_hash


def test_values_spark_gives():
    assert spark_hash([1]) == -559580957  # SELECT hash(1)
    assert spark_hash(["S", "MSGQ1", 3]) == 198347635  # SELECT hash('S', 'MSGQ1', 3)
    assert spark_hash(["Q", "", 0]) == 231200074
    assert spark_hash(["é€", 7]) == -1300407934  # (5 bytes of UTF-8: a word, then a byte above 127, signed)


def test_a_partition_is_never_negative():
    for b in range(200):
        assert 0 <= partition(("S", "MSGQ1", b), 4) < 4


def test_a_null_leaves_the_hash_as_it_is_as_in_spark():
    assert spark_hash(["S", None, 3]) == spark_hash(["S", 3])
    assert spark_hash([None]) == 42  # SELECT hash(NULL)


@pytest.mark.parametrize("value", [2**31, -(2**31) - 1, 1.5, True, b"x"])
def test_other_types_and_ints_beyond_32_bits_are_refused(value):
    with pytest.raises(TypeError):
        spark_hash(["S", value])
