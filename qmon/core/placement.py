"""Where each structure's monitor runs: spreading the heavy keys over the shuffle partitions.

The stateful operator is keyed by ``(unit, unit_name, bucket)`` and Spark places a key on
shuffle partition ``pmod(hash(key), partitions)``.  A queue-manager shard carries a fraction of
its queue manager's activity, but a structure's monitor sees *every* record that names the
structure: a handful of very heavy keys.  Left to the hash, two structures can land on the same
partition: one task then holds most of the rows while the others idle.

So a structure's ``bucket`` is chosen, not hashed: the smallest bucket that puts it on the
partition with the fewest structures so far.  A structure's state lives under its key, so an
assignment must never change once made (the caller keeps them, in the checkpoint): new
structures are placed around the existing ones, and an assignment is kept even when the
structure leaves the configuration (it may come back).

Pure: ``partition_of(name, bucket)`` is given by the caller (Spark's hash, in the job).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import count as count_from

#: how many buckets to try for a wanted partition before settling for the best one seen
MAX_TRIES = 4096


def place(
    existing: dict[str, int],
    names: Iterable[str],
    partitions: int,
    partition_of: Callable[[str, int], int],
    tries: int = MAX_TRIES,
) -> dict[str, int]:
    """``existing`` plus a bucket for every name of ``names`` it lacks; ``existing`` is kept as is.
    Buckets ``0 .. tries-1`` are tried; a partition that none reaches gets the name at bucket 0."""
    out = dict(existing)
    load = [0] * max(1, partitions)
    for name, bucket in out.items():
        if 0 <= partition_of(name, bucket) < len(load):
            load[partition_of(name, bucket)] += 1
    for name in sorted(set(names) - set(out)):
        wanted = min(range(len(load)), key=lambda p: (load[p], p))
        bucket = next((b for b in range(tries) if partition_of(name, b) == wanted), 0)
        out[name] = bucket
        if 0 <= partition_of(name, bucket) < len(load):
            load[partition_of(name, bucket)] += 1
    return out


def spread(count: int, partitions: int, partition_of: Callable[[int], int], tries: int = MAX_TRIES) -> list[int]:
    """Buckets for ``count`` queue units, unit ``i`` on partition ``i mod partitions``: the
    smallest bucket not yet taken that Spark's hash puts there (``partition_of(bucket)``), or the smallest
    free one when none of ``0 .. tries-1`` does.  Distinct, so no two groups share a key."""
    taken: set[int] = set()
    out = []
    for i in range(count):
        wanted = i % max(1, partitions)
        bucket = next((b for b in range(tries) if b not in taken and partition_of(b) == wanted), None)
        if bucket is None:
            bucket = next(b for b in count_from(0) if b not in taken)
        taken.add(bucket)
        out.append(bucket)
    return out
