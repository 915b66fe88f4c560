"""Structure monitors and the groups of queue-manager shards are spread over the shuffle partitions, and stay
where they were placed; a checkpoint keyed by shard rather than by group is refused."""

from __future__ import annotations

import json

import pytest

from qmon.streaming.units import FILE, CheckpointError, placement

pytestmark = pytest.mark.spark


def partition(spark, name, bucket, partitions, unit="S"):
    # the partition Spark's shuffle gives key (unit, name, bucket): pmod(murmur3(key, 42), partitions)
    return spark.sql(f"SELECT pmod(hash('{unit}', '{name}', CAST({bucket} AS INT)), {partitions}) AS p").first().p


@pytest.fixture
def shuffle_restored(spark):
    before = spark.conf.get("spark.sql.shuffle.partitions")
    yield
    spark.conf.set("spark.sql.shuffle.partitions", before)


def test_structures_get_partitions_of_their_own_and_keep_them(spark, tmp_path, shuffle_restored):
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    ckpt = str(tmp_path / "ckpt")
    names = ["MSGQ1", "MSGQ2", "EMHQ1", "RSRC1"]
    first = placement(spark, ckpt, names, 6, 8)
    assert sorted(partition(spark, n, b, 4) for n, b in first.structures.items()) == [0, 1, 2, 3]
    assert [partition(spark, "", b, 4, unit="Q") for b in first.queue_units] == [0, 1, 2, 3, 0, 1]
    assert len(set(first.queue_units)) == 6 and first.queue_buckets == 8
    saved = json.loads((tmp_path / "ckpt" / FILE).read_text())
    assert saved == {
        "partitions": 4,
        "structures": first.structures,
        "queue_units": first.queue_units,
        "queue_buckets": 8,
        "dedup_state": "queue",
    }
    # a restart with another shuffle setting, other unit and shard counts and one more structure: the
    # checkpoint's placement (and partition count, which Spark keeps for the checkpoint) win; the newcomer
    # is added
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    again = placement(spark, ckpt, [*names, "MSGQ3"], 2, 3)
    assert {n: again.structures[n] for n in names} == first.structures
    assert (again.queue_units, again.queue_buckets) == (first.queue_units, 8)
    assert json.loads((tmp_path / "ckpt" / FILE).read_text())["partitions"] == 4
    # job.queue_units unset: one group per shuffle partition
    assert len(placement(spark, str(tmp_path / "other"), [], None, 8).queue_units) == 2


def test_a_checkpoint_keyed_by_shard_is_refused_with_what_to_do(spark, tmp_path, shuffle_restored):
    """A checkpoint that keeps each queue manager's shard under a key of its own: its state cannot be found
    under the groups' keys, so carrying on would start every queue from nothing, silently.  A placement file
    without the groups and a query that has run (an offsets log) is such a checkpoint; one that never ran is
    not."""
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / FILE).write_text(json.dumps({"partitions": 4, "structures": {"MSGQ1": 0}}))
    assert placement(spark, str(ckpt), ["MSGQ1"], 4, 8).structures == {"MSGQ1": 0}  # never ran: carried on
    (ckpt / FILE).write_text(json.dumps({"partitions": 4, "structures": {"MSGQ1": 0}}))
    (ckpt / f".{FILE}.crc").unlink()  # (Hadoop's checksum of the file the call above wrote)
    (ckpt / "offsets").mkdir()
    (ckpt / "offsets" / "0").write_text("v1\n{}\n")
    with pytest.raises(
        CheckpointError, match=r"ckpt: this checkpoint was written by a qmon before 0\.4\.0.*new checkpoint"
    ):
        placement(spark, str(ckpt), ["MSGQ1"], 4, 8)


def test_the_python_hash_is_spark_s_for_strings_and_ints_of_every_length(spark):
    """``qmon.core.sparkhash`` against Spark's own ``hash``: the placement computes Spark's shuffle partitions
    with it, so a difference would put keys on partitions other than those chosen."""
    import random

    from qmon.core.sparkhash import partition as py_partition
    from qmon.core.sparkhash import spark_hash

    rnd = random.Random(17)
    alphabet = "AZaz09._-/ 'é€\U0001f600"
    keys = [("S", "", 0), ("Q", "", -1), ("S", "MSGQ1", 2**31 - 1), ("S", "MSGQ1", -(2**31)), ("S", None, 5)]
    for _ in range(300):
        name = "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(0, 13)))
        keys.append((rnd.choice("SQ"), name, rnd.randrange(-(2**31), 2**31)))
    rows = spark.createDataFrame(keys, "u string, n string, b int")
    got = rows.selectExpr("u", "n", "b", "hash(u, n, b) AS h", "pmod(hash(u, n, b), 7) AS p").collect()
    assert len(got) == len(keys)
    for r in got:
        assert (spark_hash((r.u, r.n, r.b)), py_partition((r.u, r.n, r.b), 7)) == (r.h, r.p), (r.u, r.n, r.b)


def test_a_checkpoint_keeps_where_its_remembered_ids_live(spark, tmp_path, shuffle_restored, caplog):
    """``monitor.dedup_state`` decides the query's stateful operators (``slice`` adds one ahead of the
    monitor), which Spark fixes for a checkpoint: a new checkpoint takes the configured one and keeps it; a
    checkpoint that has run without the setting recorded ran with ``queue``."""
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    ckpt = str(tmp_path / "ckpt")
    assert placement(spark, ckpt, [], 2, 8, "slice").dedup_state == "slice"
    with caplog.at_level("WARNING", logger="qmon.streaming.units"):
        assert placement(spark, ckpt, [], 2, 8, "queue").dedup_state == "slice"
    assert "monitor.dedup_state is queue but checkpoint" in caplog.text and "was started with slice" in caplog.text
    old = tmp_path / "old"
    old.mkdir()
    doc = {"partitions": 2, "structures": {}, "queue_units": [0, 1], "queue_buckets": 8}
    (old / FILE).write_text(json.dumps(doc))
    (old / "offsets").mkdir()
    (old / "offsets" / "0").write_text("v1\n{}\n")
    assert placement(spark, str(old), [], 2, 8, "slice").dedup_state == "queue"
    assert json.loads((old / FILE).read_text())["dedup_state"] == "queue"
