"""Spreading structures over shuffle partitions (qmon.core.placement)."""

import zlib

from qmon.core.placement import place


def fake_hash(partitions):
    return lambda name, bucket: zlib.crc32(f"{name}/{bucket}".encode()) % partitions


def test_structures_land_on_distinct_partitions():
    part = fake_hash(4)
    got = place({}, ["MSGQ1", "MSGQ2", "EMHQ1", "RSRC1"], 4, part)
    assert sorted(part(n, b) for n, b in got.items()) == [0, 1, 2, 3]


def test_more_structures_than_partitions_spread_evenly():
    part = fake_hash(2)
    got = place({}, [f"S{i}" for i in range(5)], 2, part)
    load = [sum(1 for n, b in got.items() if part(n, b) == p) for p in (0, 1)]
    assert sorted(load) == [2, 3]


def test_existing_assignments_never_change():
    part = fake_hash(2)
    first = place({}, ["MSGQ1"], 2, part)
    later = place(first, ["MSGQ2", "MSGQ1"], 2, part)
    assert later["MSGQ1"] == first["MSGQ1"]
    assert part("MSGQ2", later["MSGQ2"]) != part("MSGQ1", later["MSGQ1"])


def test_a_structure_that_left_the_configuration_keeps_its_bucket():
    part = fake_hash(2)
    first = place({}, ["MSGQ1", "MSGQ2"], 2, part)
    assert place(first, ["MSGQ2"], 2, part) == first


def test_deterministic():
    part = fake_hash(3)
    names = ["B", "A", "C"]
    assert place({}, names, 3, part) == place({}, list(reversed(names)), 3, part)


def test_queue_groups_one_per_partition_in_turn_on_distinct_buckets():
    from qmon.core.placement import spread

    def partition_of(b: int) -> int:
        return zlib.crc32(f"Q/{b}".encode()) % 4

    buckets = spread(10, 4, partition_of)
    assert len(set(buckets)) == 10
    assert [partition_of(b) for b in buckets] == [i % 4 for i in range(10)]
    assert spread(10, 4, partition_of) == buckets  # deterministic


def test_queue_groups_without_a_bucket_for_their_partition_still_get_distinct_ones():
    from qmon.core.placement import spread

    assert spread(3, 2, lambda b: 0, tries=4) == [0, 1, 2]  # no bucket reaches partition 1: the smallest free
