"""The operator's rows, declared once: what ``route`` hands the stateful operator and what it returns.

Every column list and DDL string is derived from these StructTypes; the activity's columns are derived from
its Avro schema (``avro/QueueActivity.avsc``); the kinds and units are enums whose values are the one-letter
codes that travel in the rows.
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

from qmon.connectors.schema import fields


class Unit(StrEnum):
    """The operator's key is (unit, unit_name, bucket): which monitors a row is for."""

    QUEUES = "Q"  # queue-manager shards, of any queue managers, under one key: (Q, "", the unit's placed bucket)
    STRUCTURE = "S"  # one CF structure and its overflow structure: (S, STRNAME, placement bucket)


class Kind(StrEnum):
    """What a routed row carries."""

    ACTIVITY = "A"  # a QueueActivity record, for its queue manager's shard
    STRUCTURE_COPY = "T"  # an ACTIVITY row's copy for the structure it names (``route.copies``)
    COMMAND = "C"  # an MQSC command (``payload``: its text), for one shard or for every shard
    JOURNAL = "J"  # a JournalStatus record (``payload``: its fields as JSON)
    PASS = "P"  # an output already encoded upstream (a dead letter, an invalid command's reply): passed through
    FRONTIER = "F"  # a mark (``streaming.event_order``): input partition ``src_topic``/``src_partition`` read to ``ts``


def _fields(*spec: tuple[str, DataType]) -> StructType:
    return StructType([StructField(name, typ, nullable=True) for name, typ in spec])


#: A QueueActivity field's routed type, by its Avro type: every number travels as a long (``ts``, a
#: timestamp, as epoch ms), an enum as its symbol.
_ROUTED_TYPE: dict[str, DataType] = {
    "string": StringType(),
    "enum": StringType(),
    "int": LongType(),
    "long": LongType(),
    "timestamp-millis": LongType(),
}

#: QueueActivity's fields as routed columns (name, type), in the schema's order.
ACTIVITY = [(f.name, _ROUTED_TYPE[f.type]) for f in fields("QueueActivity")]


#: What the operator receives (one row per routed record).
ROUTED = _fields(
    ("unit", StringType()),  # Unit
    ("unit_name", StringType()),  # the structure ("" for a queue unit)
    ("bucket", IntegerType()),
    ("shard", IntegerType()),  # unit Q: the queue manager's shard (of job.queue_shards) the row is for
    # unit Q: the queue-sharing group whose shard (of its shared queues) the row is for, its qmgr a member; null
    # for the queue manager's own shard (``qmon.core.sharing``)
    ("qsg", StringType()),
    ("kind", StringType()),  # Kind
    # the activity's columns (ACTIVITY), qmgr first; rows of other kinds use some of them: a command's and a
    # journal's qmgr, event_id (a command's: its command_id) and ts (event time, epoch ms), a command's queue
    # (the object it names)
    ("qmgr", StringType()),
    *[column for column in ACTIVITY if column[0] != "qmgr"],
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

#: The column the watermark is defined on: the arrival clock (the broker's timestamp) a century ahead, with
#: the watermark's delay a century longer.  The watermark's value is the arrival clock's, minus the delay;
#: but Spark's event-time timeout drops every input row whose watermarked column is behind the watermark,
#: and across Kafka partitions the arrival clock is not monotone (a batch can read one partition further
#: than another).  A century ahead, no row is ever behind it: qmon orders records itself, by event time.
HORIZON = "horizon"
CENTURY_DAYS = 36_500

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
