"""Structure monitors and the groups of queue-manager shards are spread over the shuffle partitions, and stay
where they were placed; a checkpoint of another state version is refused."""

from __future__ import annotations

import json

import pytest

from qmon.core.state_version import STATE_VERSION
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
    assert len(set(first.queue_units)) == 6 and first.queue_shards == 8
    saved = json.loads((tmp_path / "ckpt" / FILE).read_text())
    assert saved == {
        "partitions": 4,
        "structures": first.structures,
        "queue_units": first.queue_units,
        "queue_shards": 8,
        "state_version": STATE_VERSION,
    }
    # a restart with another shuffle setting, other unit and shard counts and one more structure: the
    # checkpoint's placement (and partition count, which Spark keeps for the checkpoint) win; the newcomer
    # is added
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    again = placement(spark, ckpt, [*names, "MSGQ3"], 2, 3)
    assert {n: again.structures[n] for n in names} == first.structures
    assert (again.queue_units, again.queue_shards) == (first.queue_units, 8)
    assert json.loads((tmp_path / "ckpt" / FILE).read_text())["partitions"] == 4
    # job.queue_units unset: one group per shuffle partition
    assert len(placement(spark, str(tmp_path / "other"), [], None, 8).queue_units) == 2


def test_a_checkpoint_of_another_state_version_is_refused_with_what_to_do(spark, tmp_path, shuffle_restored):
    """A checkpoint whose query has run (an offsets log) under another state version (none recorded: qmon
    0.4's) holds state this qmon does not read: carrying on would misread it or start every queue from
    nothing, silently.  One that never ran is carried on."""
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / FILE).write_text(json.dumps({"partitions": 4, "structures": {"MSGQ1": 0}}))
    assert placement(spark, str(ckpt), ["MSGQ1"], 4, 8).structures == {"MSGQ1": 0}  # never ran: carried on
    (ckpt / FILE).write_text(json.dumps({"partitions": 4, "structures": {"MSGQ1": 0}}))
    (ckpt / f".{FILE}.crc").unlink()  # (Hadoop's checksum of the file the call above wrote)
    (ckpt / "offsets").mkdir()
    (ckpt / "offsets" / "0").write_text("v1\n{}\n")
    with pytest.raises(
        CheckpointError,
        match=r"ckpt: this checkpoint holds qmon state of qmon 0.4 \(none recorded\); this qmon carries on a qmon 0.4 "
        r"checkpoint written with monitor.dedup_state: slice .* Start the job with a new checkpoint directory.*"
        r"`qmon state export FILE --checkpoint DIR` of this qmon",
    ):
        placement(spark, str(ckpt), ["MSGQ1"], 4, 8)
    (ckpt / FILE).write_text(json.dumps({"partitions": 4, "structures": {"MSGQ1": 0}, "state_version": 99}))
    with pytest.raises(
        CheckpointError,
        match=rf"holds qmon state of version 99; this qmon reads state version {STATE_VERSION} and qmon 0.4's. "
        r".*`qmon state import FILE`",
    ):
        placement(spark, str(ckpt), ["MSGQ1"], 4, 8)


def test_a_checkpoint_qmon_0_4_wrote_is_carried_on_unless_queue_sharing_groups_are_configured(
    spark, tmp_path, shuffle_restored
):
    """qmon 0.4 recorded no state version, and its duplicate check (``dedup_state: slice``, its default) is this
    qmon's: its checkpoint is carried on, its values migrated as they are loaded, and the file records this
    version from then on.  With a queue-sharing group configured it is refused: 0.4 kept a member's own queues
    under the member, this qmon in its group's shards."""
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "offsets").mkdir()
    (ckpt / "offsets" / "0").write_text("v1\n{}\n")
    doc = {"dedup_state": "slice", "partitions": 4, "queue_buckets": 8, "queue_units": [0, 1], "structures": {}}
    (ckpt / FILE).write_text(json.dumps(doc))
    with pytest.raises(CheckpointError, match="while no queue-sharing group is configured"):
        placement(spark, str(ckpt), [], 4, 8, queue_sharing_groups=True)
    placed = placement(spark, str(ckpt), [], 2, 16)
    assert (placed.queue_units, placed.queue_shards) == ([0, 1], 8)  # (qmon 0.4 named the shards queue_buckets)
    assert json.loads((ckpt / FILE).read_text())["state_version"] == STATE_VERSION


def test_the_partitions_computed_are_those_of_the_operators_shuffle(spark):
    """``spark_partitions`` against where Spark's shuffle really puts the keys, typed as the operator's rows
    (``rows.ROUTED``): grouped by the key over 7 partitions, each group's partition is the one computed."""
    from pyspark.sql import functions as F

    from qmon.streaming.rows import ROUTED
    from qmon.streaming.units import spark_partitions

    keys = [("S", f"MSGQ{i}", b) for i in range(5) for b in range(20)] + [("Q", "", b) for b in range(40)]
    typed = ", ".join(f"{c} {ROUTED[c].dataType.simpleString()}" for c in ("unit", "unit_name", "bucket"))
    frame = spark.createDataFrame(keys, typed).repartition(7, "unit", "unit_name", "bucket")
    seen = frame.select("unit", "unit_name", "bucket", F.spark_partition_id().alias("p")).collect()
    assert {(r.unit, r.unit_name, r.bucket): r.p for r in seen} == spark_partitions(spark, keys, 7)
