"""Structure monitors are spread over the shuffle partitions, and stay where they were placed."""

from __future__ import annotations

import json

import pytest

from qmon.streaming.units import FILE, structure_buckets

pytestmark = pytest.mark.spark


def partition(spark, name, bucket, partitions):
    # the partition Spark's shuffle gives key (S, name, bucket): pmod(murmur3(key, 42), partitions)
    return spark.sql(f"SELECT pmod(hash('S', '{name}', CAST({bucket} AS INT)), {partitions}) AS p").first().p


@pytest.fixture
def shuffle_restored(spark):
    before = spark.conf.get("spark.sql.shuffle.partitions")
    yield
    spark.conf.set("spark.sql.shuffle.partitions", before)


def test_structures_get_partitions_of_their_own_and_keep_them(spark, tmp_path, shuffle_restored):
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    ckpt = str(tmp_path / "ckpt")
    names = ["MSGQ1", "MSGQ2", "EMHQ1", "RSRC1"]
    first = structure_buckets(spark, ckpt, names)
    assert sorted(partition(spark, n, b, 4) for n, b in first.items()) == [0, 1, 2, 3]
    saved = json.loads((tmp_path / "ckpt" / FILE).read_text())
    assert saved == {"partitions": 4, "structures": first}
    # a restart with another shuffle setting and one more structure: the checkpoint's placement
    # (and partition count, which Spark keeps for the checkpoint) win; the newcomer is added
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    again = structure_buckets(spark, ckpt, [*names, "MSGQ3"])
    assert {n: again[n] for n in names} == first
    assert json.loads((tmp_path / "ckpt" / FILE).read_text())["partitions"] == 4
