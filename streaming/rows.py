"""The operator's rows, declared once: what ``route`` hands the stateful operator and what it returns.

Every column list and DDL string is derived from these StructTypes; the kinds and units are enums whose
values are the one-letter codes that travel in the rows.
"""

from __future__ import annotations

from enum import StrEnum

from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)


class Unit(StrEnum):
    """The operator's key is (unit, unit_name, bucket): which monitors a row is for."""

    QUEUES = "Q"  # a group of queue-manager shards, of any queue managers: (Q, "", the group's placed bucket)
    STRUCTURE = "S"  # one CF structure and its overflow structure: (S, STRNAME, placement bucket)


class Kind(StrEnum):
    """What a routed row carries."""

    ACTIVITY = "A"  # a QueueActivity record, for its queue manager's shard
    STRUCTURE_ACTIVITY = "S"  # the same record, for the structure it names
    COMMAND = "C"  # an MQSC command (``payload``: its text), for one shard or for every shard
    JOURNAL = "J"  # a JournalStatus record (``payload``: its fields as JSON)
    PASS = "P"  # an output already encoded upstream (a dead letter, an invalid command's reply): passed through
    END = "E"  # the end of the input (``streaming.event_order.END_OF_INPUT``): counts for the marks, then dropped
    FRONTIER = "F"  # a mark (``streaming.event_order``): input partition ``src_topic``/``src_partition`` read to ``ts``


def _fields(*spec: tuple[str, DataType]) -> StructType:
    return StructType([StructField(name, typ, nullable=True) for name, typ in spec])


#: What the operator receives (one row per routed record).
ROUTED = _fields(
    ("unit", StringType()),  # Unit
    ("unit_name", StringType()),  # the structure ("" for a group of queue-manager shards)
    ("bucket", IntegerType()),
    ("shard", IntegerType()),  # unit Q: the queue manager's shard (of job.queue_buckets) the row is for
    ("kind", StringType()),  # Kind
    ("qmgr", StringType()),
    ("event_id", StringType()),  # the record's event_id, or the command's command_id
    ("queue", StringType()),  # activity: the queue; a command: the object it names
    ("op", StringType()),  # PUT, GET, START
    ("ts", LongType()),  # event time, epoch ms
    ("depth_after", LongType()),
    ("msg_bytes", LongType()),
    ("structure", StringType()),
    ("reason", LongType()),
    ("payload", StringType()),  # COMMAND: the MQSC text; JOURNAL: the status as JSON
    ("reply", BooleanType()),  # COMMAND: this shard answers it
    ("rank", IntegerType()),  # at equal ts, commands (0) apply before activity (1)
    ("src_topic", IntegerType()),  # the input topic, by its place in the sorted physical names
    ("src_partition", LongType()),
    ("src_offset", LongType()),
    ("clock", LongType()),  # the broker's append time, epoch ms: the arrival clock the watermark runs on
    ("out_topic", StringType()),  # PASS: the output's (logical) topic, key and Avro value
    ("out_key", StringType()),
    ("out_value", BinaryType()),
)
ROUTED_COLUMNS = ROUTED.fieldNames()

#: The operator's output row that counts records applied late (``streaming.event_order``; ``order_seq``: how
#: many): observed by the query and dropped before the sink.
LATE = "qmon.late"

#: What the operator returns: records for the Kafka sink, Avro-encoded, with their order within the batch.
OUTPUT = _fields(
    ("topic", StringType()),  # logical topic name
    ("key", StringType()),
    ("value", BinaryType()),
    ("order_ts", LongType()),
    ("order_seq", LongType()),
    ("order_idx", IntegerType()),
)
OUTPUT_COLUMNS = OUTPUT.fieldNames()

#: A unit's state in Spark (``applyInPandasWithState``): one MessagePack value (``qmon.streaming.state``).
STATE = _fields(("value", BinaryType()))
