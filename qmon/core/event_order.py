"""Event-time order across input partitions: which records of a micro-batch may be applied now, and which wait.

Each input partition is read in offset order, and producers keep a partition in ``ts`` order (a queue's
records keyed to one partition).  So once a partition has been read up to a record with ``ts`` t, nothing
more from it will come before t.  A micro-batch reads some partitions and not others: a partition with no
record in a batch had nothing more to read when the batch was planned (Spark's Kafka source gives every
partition with records waiting at least one, even under ``job.max_offsets_per_trigger``), so it holds
nothing back.

The **frontier** of a batch is the smallest, over the partitions it read, of the greatest ``ts`` read from
each, less ``job.max_lateness``.  The batch's rows are spread over many hands (Spark's tasks) before anyone
sees them all: each hand marks, for each partition it saw rows of, the greatest ``ts`` it saw (``marks``);
the greatest of a partition's marks is the greatest read from it, whichever hands its rows went to
(``frontier``).  A record whose ``ts`` is below the frontier is applied, in the order
(``ts``, commands first, partition, offset), with the records held from earlier batches; a record at or
above it is held until a later batch's frontier passes it.  A batch that reads nothing at all (every
partition read to its end) releases every record held.

The frontier never goes back (``advance``).  A record below the frontier already reached when it arrives
came later than ``job.max_lateness`` allows (a partition idle for a while, then a record from the past): it
is applied at once, among the records released with it, and counted as late.  Which records a unit holds,
releases and counts late is ``qmon.streaming.event_order.Held``'s, over these marks and frontiers.  Pure.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

#: the ``ts`` of a record that says "the input ends here": its partition holds nothing back
NO_TIME = 2**63 - 1


def marks(read: Iterable[tuple[Hashable, int]]) -> dict[Hashable, int]:
    """What one hand vouches for: for each partition it saw rows of (``(partition, ts)`` for each record
    with a time), the greatest ``ts``."""
    greatest: dict[Hashable, int] = {}
    for partition, ts in read:
        if ts > greatest.get(partition, -(2**63)):
            greatest[partition] = ts
    return greatest


def frontier(marked: Iterable[tuple[Hashable, int]], lateness_ms: int) -> int | None:
    """The batch's frontier from every hand's marks (``(partition, greatest ts)``): the smallest, over the
    partitions, of their greatest mark, less the lateness; None when there is no mark (a batch that read no
    record with a time: nothing holds back)."""
    lowest = min(marks(marked).values(), default=None)
    if lowest is None:
        return None
    return lowest if lowest == NO_TIME else lowest - lateness_ms


def advance(previous: int | None, batch: int | None) -> int | None:
    """The frontier a unit holds after a batch: never lower than before (None: nothing released yet)."""
    if batch is None:
        return previous
    return batch if previous is None or batch > previous else previous
