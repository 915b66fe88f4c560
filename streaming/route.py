"""Route: every decoded record to the rows of ``rows.ROUTED`` the stateful operator receives, keyed ``(unit,
unit_name, bucket)`` (``route``: one row a record, dead letters and error replies among them), and, after the
duplicate check, each activity's copy for the structure it names and each frontier mark for every unit
(``copies``).

Activity goes to its queue manager's shard ``pmod(xxhash64(queue), shards)`` (column ``shard``), in the queue unit
that holds it, key ``(Q, "", placed bucket)`` (a queue-sharing group member's to its group's shard, split
and placed under the group's name: ``qmon.core.queues.queue_sharing_group``), and, when it names a structure,
also to ``(S, structure, b)``, b chosen so that structures do not share a partition (``qmon.core.placement``).
A command that names one queue goes to that queue's shard; one that concerns the whole queue manager (ALTER QMGR,
generic names, interest) to every shard of it, and only shard 0 replies (``RESET QSTATS`` with a generic name:
every shard replies with its part); journal status to the shard of its library.  Dead letters and error replies
ride along (kind P) and are passed through by the operator, so the input is read once for them all."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import to_avro
from pyspark.sql.types import BinaryType, BooleanType, IntegerType, LongType, StringType

from qmon.connectors.schema import schema_text
from qmon.core import topics
from qmon.core.mqsc import PART_MARK
from qmon.core.reasons import CODE
from qmon.core.sharing import Sharing
from qmon.streaming.rows import ACTIVITY, HORIZON, ROUTED, ROUTED_COLUMNS, Kind, Unit


class _Router:
    """Builds routed rows as structs with every field of ``rows.ROUTED``, in order and typed.  The fields a row
    does not set (nulls) and those every row shares are built once, not once for each routed row: each
    ``Column`` operation is several py4j round trips to the JVM, and the routing expression would otherwise
    make most of those that building the query makes."""

    #: Types whose name (``simpleString``) Spark's parser reads back as the same type (a timestamp's name
    #: would follow ``spark.sql.timestampType``; a struct's does not quote its field names).
    _BY_NAME = (IntegerType, LongType, StringType, BooleanType, BinaryType)

    def __init__(self, topic_index: Column) -> None:
        for field in ROUTED.fields:
            if type(field.dataType) not in self._BY_NAME:
                raise TypeError(f"rows.ROUTED.{field.name}: {field.dataType} is not cast by name here (_Router)")
        self._types = {field.name: field.dataType.simpleString() for field in ROUTED.fields}
        common = {
            "src_topic": topic_index,
            "src_partition": F.col("partition"),
            "src_offset": F.col("offset"),
            "clock": F.unix_millis("timestamp"),  # ms: cheaper to hand to Python than a timestamp
        }
        self._shared = {name: self._field(name, value) for name, value in common.items()}
        self._nulls: dict[str, Column] = {}

    def _field(self, name: str, value: Column) -> Column:
        # (a type's name, not a DataType: a DataType makes PySpark look the session up and parse its JSON)
        return value.cast(self._types[name]).alias(name)

    def __call__(self, **cols: Column) -> Column:
        fields = []
        for name in self._types:
            if name in cols:
                fields.append(self._field(name, cols[name]))
            elif name in self._shared:
                fields.append(self._shared[name])
            else:
                if name not in self._nulls:
                    self._nulls[name] = self._field(name, F.lit(None))
                fields.append(self._nulls[name])
        return F.struct(*fields)


def _dead_letter_value(reason_code: Column) -> Column:
    dl = F.struct(
        F.sha2(
            F.concat_ws(
                "\x1f", F.lit("dlq"), F.col("topic"), F.col("partition").cast("string"), F.col("offset").cast("string")
            ),
            256,
        )
        .substr(1, 32)
        .alias("event_id"),
        reason_code.alias("reason"),
        F.col("dlq_reason").alias("reason_name"),
        F.col("topic").alias("dest_topic"),
        F.col("format").alias("format"),
        F.lit("qmon").alias("put_appl_name"),
        F.col("timestamp").alias("put_time"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("long").alias("offset"),
        F.col("dlq_error").alias("error"),
        F.col("key").alias("key"),
        F.col("value").alias("value"),
    )
    return to_avro(dl, schema_text("DeadLetter"))


def _structure_bucket(structure: Column, structure_buckets: dict[str, int] | None) -> Column:
    """The bucket of a structure's key: the one placed for it (``qmon.core.placement``), else 0."""
    if not structure_buckets:
        return F.lit(0)
    chosen = F.create_map(*[F.lit(x) for kv in sorted(structure_buckets.items()) for x in kv])
    return F.coalesce(chosen[structure], F.lit(0))


def _qsg_of(qmgr: Column, sharing: Sharing) -> Column | None:
    """The queue-sharing group ``qmgr`` is a member of (``Sharing.group_of``), else null; None without groups."""
    members = sorted((m, g.name) for g in sharing.groups for m in g.members)
    if not members:
        return None
    return F.create_map(*[F.lit(x) for kv in members for x in kv])[qmgr]


def topic_numbers(names: dict[str, str]) -> dict[str, int]:
    """Each topic's number in a routed row's ``src_topic``: its place among the sorted physical names."""
    return {name: i for i, name in enumerate(sorted(set(names.values())))}


def route(
    dec: DataFrame,
    names: dict[str, str],
    shards: int,
    structure_buckets: dict[str, int] | None = None,
    queue_units: list[int] | None = None,
    sharing: Sharing | None = None,
) -> DataFrame:
    """Every decoded record -> the rows the per-queue operator receives (kind A, C, J), and the dead letters
    and invalid-command replies it passes through (kind P): one row a record, one pass over the input.  An
    activity's copy for its structure (kind S) is made by ``copies``, after the duplicate check
    (``streaming.dedup``), so that a record and its copy have one verdict.

    A queue manager's queues are split into ``shards`` shards (``xxhash64(queue) mod shards``); the shards
    of every queue manager are kept in ``len(queue_units)`` queue units, keyed ``(Q, "", queue_units[u])``:
    a queue manager's shards go round the units from a place its name's hash chooses, so that the number
    of keys (each a fixed cost in every micro-batch) does not grow with the queue managers.

    ``sharing``: the queue-sharing groups (``qmon.core.sharing``), as literals of the query.  A group member's
    records and commands of its queues, shared or its own, go to its group's shard of the queue's name, split
    and placed as a queue manager's are under the group's name (column ``qsg``; ``qmgr`` stays the member), and
    its commands for the whole queue manager to every shard of the group's: which queue a record is about is
    decided there, from the group's state (``qmon.core.queues.queue_sharing_group``), so that a DEFINE ...
    QSGDISP(SHARED) alone makes a queue shared."""
    _routed = _Router(F.create_map(*[F.lit(x) for kv in topic_numbers(names).items() for x in kv])[F.col("topic")])
    units = queue_units or [0]
    unit_keys = F.array(*[F.lit(int(b)) for b in units])

    def unit_of(qmgr: Column, shard: Column) -> Column:
        first = F.pmod(F.xxhash64(qmgr), F.lit(len(units)))  # (pmod first: xxhash64 + shard could overflow)
        return F.element_at(unit_keys, (F.pmod(first + shard, F.lit(len(units))) + 1).cast("int"))

    reason_code = F.create_map(*[x for name, code in CODE.items() for x in (F.lit(name), F.lit(code))])
    spread = F.element_at(unit_keys, (F.pmod(F.col("offset"), F.lit(len(units))) + 1).cast("int"))
    dead = _routed(
        unit=F.lit(Unit.QUEUES.value),
        unit_name=F.lit(""),
        bucket=spread,
        kind=F.lit(Kind.PASS.value),
        ts=F.unix_millis("timestamp"),
        rank=F.lit(0),
        out_topic=F.lit(topics.DLQ),
        out_key=F.concat_ws("/", F.col("topic"), F.col("partition").cast("string"), F.col("offset").cast("string")),
        out_value=_dead_letter_value(reason_code[F.col("dlq_reason")]),
    )
    reply = F.struct(
        F.sha2(F.concat_ws("\x1f", F.lit("reply"), F.col("rc.command_id")), 256).substr(1, 32).alias("event_id"),
        F.col("rc.command_id").alias("command_id"),
        F.col("rc.qmgr").alias("qmgr"),
        F.col("rc.ts").alias("ts"),
        F.lit(False).alias("ok"),
        F.col("p.error").alias("message"),
    )
    error_reply = _routed(
        unit=F.lit(Unit.QUEUES.value),
        unit_name=F.lit(""),
        bucket=spread,
        kind=F.lit(Kind.PASS.value),
        ts=F.unix_millis("rc.ts"),
        rank=F.lit(1),
        out_topic=F.lit(topics.REPLIES),
        out_key=F.col("rc.command_id"),
        out_value=to_avro(reply, schema_text("CommandReply")),
    )
    # each field of the decoded record to its routed column (ts as epoch ms)
    fields = {name: F.col(f"ra.{name}") for name, _ in ACTIVITY}
    fields.update(ts=F.unix_millis("ra.ts"), reply=F.lit(False), rank=F.lit(1))
    shard = F.pmod(F.xxhash64(F.col("ra.queue")), F.lit(shards))
    sharing = sharing or Sharing()

    def owner(qmgr: Column, qsg: Column | None) -> Column:
        """The name a row's shard is kept under: its group's (``qsg``, when not null), else its queue manager's."""
        return qmgr if qsg is None else F.coalesce(qsg, qmgr)

    qsg = _qsg_of(F.col("ra.qmgr"), sharing)
    activity = _routed(
        unit=F.lit(Unit.QUEUES.value),
        unit_name=F.lit(""),
        bucket=unit_of(owner(F.col("ra.qmgr"), qsg), shard),
        shard=shard,
        **({} if qsg is None else {"qsg": qsg}),
        kind=F.lit(Kind.ACTIVITY.value),
        **fields,
    )

    def command(
        shard: Column, reply_here: Column, command_id: Column | None = None, qsg: Column | None = None
    ) -> Column:
        return _routed(
            unit=F.lit(Unit.QUEUES.value),
            unit_name=F.lit(""),
            qmgr=F.col("rc.qmgr"),
            bucket=unit_of(owner(F.col("rc.qmgr"), qsg), shard),
            shard=shard,
            **({} if qsg is None else {"qsg": qsg}),
            kind=F.lit(Kind.COMMAND.value),
            event_id=F.col("rc.command_id") if command_id is None else command_id,
            queue=F.col("p.name"),
            ts=F.unix_millis("rc.ts"),
            payload=F.col("rc.text"),
            reply=reply_here,
            rank=F.lit(0),
        )

    # a queue-sharing group member's commands go to its group's shards, which hold all its queues
    member_of = _qsg_of(F.col("rc.qmgr"), sharing)
    fan_out = F.transform(F.sequence(F.lit(0), F.lit(shards - 1)), lambda b: command(b, b == 0, qsg=member_of))
    name_shard = F.pmod(F.xxhash64(F.col("p.name")), F.lit(shards))
    one = F.array(command(name_shard, F.lit(True), qsg=member_of))
    # DEFINE and ALTER QLOCAL: a copy for every shard (each keeps every queue's definition), the queue's replying
    definition = F.transform(
        F.sequence(F.lit(0), F.lit(shards - 1)), lambda b: command(b, b == name_shard, qsg=member_of)
    )
    # every shard replies with its part, told which one in the command id (qmon.core.mqsc_parts.split_part)
    parts = F.transform(
        F.sequence(F.lit(0), F.lit(shards - 1)),
        lambda b: command(
            b,
            F.lit(True),
            F.concat(F.col("rc.command_id"), F.lit(PART_MARK), (b + 1).cast("string"), F.lit(f"/{shards}")),
            qsg=member_of,
        ),
    )
    payload = F.to_json(
        F.struct(
            F.col("rj.library").alias("library"),
            F.col("rj.attached").alias("attached"),
            F.col("rj.size_kb").alias("size_kb"),
            F.col("rj.threshold_kb").alias("threshold_kb"),
            F.col("rj.receivers").alias("receivers"),
        )
    )
    journal_shard = F.pmod(F.xxhash64(F.col("rj.library")), F.lit(shards))
    journal = _routed(
        unit=F.lit(Unit.QUEUES.value),
        unit_name=F.lit(""),
        qmgr=F.col("rj.qmgr"),
        bucket=unit_of(F.col("rj.qmgr"), journal_shard),
        shard=journal_shard,
        kind=F.lit(Kind.JOURNAL.value),
        event_id=F.col("rj.event_id"),
        ts=F.unix_millis("rj.ts"),
        payload=payload,
        reply=F.lit(False),
        rank=F.lit(1),
    )
    topic = F.col("topic")
    # activity: QueueActivity records, and the calls decoded from MQ activity trace (streaming.trace)
    is_activity = topic.isin(names[topics.ACTIVITY], names.get(topics.MQ_TRACE, names[topics.ACTIVITY]))
    rows = (
        F.when(F.col("cmd_invalid"), F.array(dead, error_reply))
        .when(F.col("dlq_reason").isNotNull(), F.array(dead))
        .when(is_activity, F.array(activity))
        .when(
            topic == names[topics.CONTROL],
            F.when(F.col("p.scope") == "qmgr", fan_out)
            .when(F.col("p.scope") == "parts", parts)
            .when(F.col("p.scope") == "definition", definition)
            .otherwise(one),
        )
        .otherwise(F.array(journal))
    )
    # the watermarked column rides along: Spark's event-time timeout needs it in the operator's input
    return dec.select(F.explode(rows).alias("x"), HORIZON).select("x.*", HORIZON)


def copies(
    routed: DataFrame, structure_buckets: dict[str, int] | None, unit_keys: list[tuple[str, str, int]]
) -> DataFrame:
    """Each activity row that names a structure, and its copy for the structure's monitor (kind S, key
    ``(S, structure, placed bucket)``: the bucket places the structure's key on a partition of its own,
    ``qmon.core.placement``); each mark (``streaming.event_order``) once for every unit of ``unit_keys``
    ((unit, unit_name, bucket))."""
    types = {f.name: f.dataType.simpleString() for f in ROUTED.fields}

    def row(changed: dict[str, Column]) -> Column:
        return F.struct(*[changed.get(c, F.col(c)).cast(types[c]).alias(c) for c in ROUTED_COLUMNS])

    copy = {
        "unit": F.lit(Unit.STRUCTURE.value),
        "unit_name": F.col("structure"),
        "bucket": _structure_bucket(F.col("structure"), structure_buckets),
        "shard": F.lit(None),
        "qsg": F.lit(None),
        "kind": F.lit(Kind.STRUCTURE_COPY.value),
    }
    marks = [row({"unit": F.lit(u), "unit_name": F.lit(n), "bucket": F.lit(b)}) for u, n, b in unit_keys]
    copied = (F.col("kind") == Kind.ACTIVITY.value) & F.col("structure").isNotNull()
    rows = (
        F.when(copied, F.array(row({}), row(copy)))
        .when(F.col("kind") == Kind.FRONTIER.value, F.array(*marks))
        .otherwise(F.array(row({})))
    )
    return routed.select(F.explode(rows).alias("x"), HORIZON).select("x.*", HORIZON)
