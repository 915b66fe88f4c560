"""The job with a schema registry, through the real path (Kafka, Spark, Apicurio Registry): activity framed
with the ids of qmon's schema, of an evolved one (a field added with a default, an optional field removed), of
one registered under another subject only, of one that does not resolve (qmgr removed) and of one the registry
does not know.  The two ids that are not in the topic's subject when the query starts are in no plan: the query
starts again with each looked up.  The events equal those of the same records sent unframed to a job without a
registry; the two that cannot be read are dead letters with their reasons; every output is framed with the id of
its record under its topic's subject."""

from __future__ import annotations

import io
import json
import logging
import random
import re
import uuid
from typing import Any

import fastavro
import pytest

from qmon.connectors import avro
from qmon.connectors.clients import consume, produce_rows, send_commands
from qmon.connectors.kafka import ensure_topics
from qmon.connectors.registry import Framing, SchemaRegistry, value_subject
from qmon.connectors.schema import schema_text
from qmon.core import topics
from qmon.core.config import Config
from qmon.core.reasons import CODE
from qmon.streaming.job import run
from tests.e2e.test_job_kafka import T0, activity, ms

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.registry]

COMMANDS = ["ALTER QMGR PERFMEV(ENABLED)", "ALTER QLOCAL(PAYROLL.IN) QSVCINT(1000) QSVCIEV(HIGH)"]


def schema(drop: str | None = None, **added: Any) -> dict[str, Any]:
    """QueueActivity with a field removed and fields (type, default) added."""
    s = json.loads(schema_text("QueueActivity"))
    s["fields"] = [f for f in s["fields"] if f["name"] != drop]
    s["fields"] += [{"name": name, "type": t, "default": d} for name, (t, d) in added.items()]
    return s


EVOLVED = schema("reason", channel=("string", "SYSTEM.DEF.SVRCONN"))  # added with a default; optional removed
ELSEWHERE = schema(team=("string", "OPS"))  # registered under another subject only
NO_QMGR = schema("qmgr")  # a field qmon requires, without a default: does not resolve


def written(writer: dict[str, Any], record: dict[str, Any], schema_id: int) -> bytes:
    """``record`` as a producer on ``writer`` writes it, in Confluent's wire format."""
    buf = io.BytesIO(avro.header(schema_id))
    buf.seek(0, io.SEEK_END)
    fastavro.schemaless_writer(buf, fastavro.parse_schema(writer), record)
    return buf.getvalue()


def config(prefix: str, registry: str | None) -> Config:
    kafka: dict[str, Any] = {"topic_prefix": prefix, "partitions": 2}
    if registry is not None:
        kafka["schema_registry_url"] = registry
    job = {"queue_shards": 2, "shuffle_partitions": 2, "trigger": "500 ms", "watermark_delay": "0 seconds"}
    return Config.model_validate({"kafka": kafka, "job": job})


def produce(bootstrap: str, prefix: str, values: list[bytes]) -> None:
    topic = topics.physical(topics.ACTIVITY, prefix)
    produce_rows(bootstrap, [(topic, b"QM1/PAYROLL.IN", v) for v in values])


def outputs(bootstrap: str, prefix: str) -> list[tuple[str, dict[str, Any], bytes]]:
    """(logical topic, record, value as written) of every output the topics hold now."""
    found = consume(bootstrap, topics.OUTPUTS, prefix=prefix, to_end=True, timeout=90)
    return [(t, r, m.value()) for t, r, m in found]


def events(out: list[tuple[str, dict[str, Any], bytes]]) -> dict[str, list[dict[str, Any]]]:
    """The events by topic: neither replies (they carry their commands' random ids) nor dead letters, nor stall
    alerts (they follow the arrival clock, the broker's timestamps, which differ between two runs)."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for t, r, _ in out:
        if t not in (topics.REPLIES, topics.DLQ) and r.get("type") != "QUEUE_STALLED":
            by_topic.setdefault(t, []).append(avro.to_jsonable(r))
    return {t: sorted(rs, key=lambda r: r["event_id"]) for t, rs in by_topic.items()}


def test_records_framed_with_registered_ids_through_kafka(
    spark, kafka_bootstrap, schema_registry_url, tmp_path, caplog
):
    framed_prefix, plain_prefix = f"r{uuid.uuid4().hex[:10]}", f"u{uuid.uuid4().hex[:10]}"
    producers = SchemaRegistry(schema_registry_url)  # the producers' process
    subject = value_subject(topics.physical(topics.ACTIVITY, framed_prefix))
    own = producers.register(subject, schema_text("QueueActivity"))
    evolved = producers.register(subject, EVOLVED)
    unresolvable = producers.register(subject, NO_QMGR)  # (a field removed: compatible backward)
    elsewhere = producers.register(f"{framed_prefix}.elsewhere-value", ELSEWHERE)
    unknown = 2_000_000_000 + random.randrange(1_000_000)
    assert len({own, evolved, unresolvable, elsewhere, unknown}) == 5

    records = [
        activity(1, "PUT", 1_000),
        activity(2, "PUT", 5_000),
        activity(3, "GET", 6_000),
        activity(4, "GET", 7_000),
        activity(5, "PUT", 8_000),
    ]
    framed = [
        avro.encode("QueueActivity", records[0], schema_id=own),
        written(EVOLVED, records[1] | {"channel": "APP.SVRCONN"}, evolved),
        written(ELSEWHERE, records[2] | {"team": "PAYROLL"}, elsewhere),
        avro.encode("QueueActivity", records[3]),  # unframed: qmon's schema
        written(EVOLVED, records[4] | {"channel": "APP.SVRCONN"}, evolved),
    ]
    not_known = avro.encode("QueueActivity", activity(6, "PUT", 9_000), schema_id=unknown)
    not_resolved = written(NO_QMGR, activity(7, "PUT", 9_500), unresolvable)

    ensure_topics(kafka_bootstrap, 2, prefix=framed_prefix)
    send_commands(kafka_bootstrap, "QM1", COMMANDS, ts=T0, prefix=framed_prefix, framing=Framing(producers))
    produce(kafka_bootstrap, framed_prefix, [*framed, not_known, not_resolved])
    with caplog.at_level(logging.INFO, logger="qmon.streaming.job"):
        ckpt = str(tmp_path / "framed")
        assert (
            run(config(framed_prefix, schema_registry_url), kafka_bootstrap, ckpt, available_now=True, spark=spark) == 0
        )
    # the first query meets the id registered elsewhere, the next one the unknown id (each in no plan): each time
    # the query starts again with the id looked up, and reads the batch again
    said = [r.getMessage() for r in caplog.records if "which the query had not looked up" in r.getMessage()]
    met = [{int(i) for i in re.findall(r"\d+", re.search(r"schema id ([\d, ]+?), which", m)[1])} for m in said]
    assert set().union(*met) == {elsewhere, unknown} and len(said) <= 2, said

    ensure_topics(kafka_bootstrap, 2, prefix=plain_prefix)
    send_commands(kafka_bootstrap, "QM1", COMMANDS, ts=T0, prefix=plain_prefix)
    produce(kafka_bootstrap, plain_prefix, [avro.encode("QueueActivity", r) for r in records])
    plain_ckpt = str(tmp_path / "plain")
    assert run(config(plain_prefix, None), kafka_bootstrap, plain_ckpt, available_now=True, spark=spark) == 0

    out, plain_out = outputs(kafka_bootstrap, framed_prefix), outputs(kafka_bootstrap, plain_prefix)
    perf = [(r["type"], ms(r["ts"]) - T0) for t, r, _ in out if t == topics.PERFORMANCE]
    assert sorted(perf) == [("QSVCINT_HIGH", 5_000), ("QSVCINT_OK", 7_000)]
    assert events(out) == events(plain_out)

    dead = {bytes(r["value"]): r for t, r, _ in out if t == topics.DLQ}
    assert set(dead) == {not_known, not_resolved}
    assert dead[not_known]["reason_name"] == "QMON_UNKNOWN_SCHEMA"
    assert dead[not_known]["reason"] == CODE["QMON_UNKNOWN_SCHEMA"]
    assert dead[not_known]["error"] == f"the schema registry at {schema_registry_url} has no schema with id {unknown}"
    assert dead[not_resolved]["reason_name"] == "QMON_SCHEMA_MISMATCH"
    assert dead[not_resolved]["reason"] == CODE["QMON_SCHEMA_MISMATCH"]
    assert dead[not_resolved]["error"] == (
        f"schema id {unresolvable} does not resolve into qmon's QueueActivity: QueueActivity.qmgr: not in the "
        "writer's schema, and the reader's has no default for it"
    )
    assert all(r["dest_topic"] == topics.physical(topics.ACTIVITY, framed_prefix) for r in dead.values())
    assert not [r for t, r, _ in plain_out if t == topics.DLQ]
    assert sum(r["ok"] for t, r, _ in out if t == topics.REPLIES) == len(COMMANDS)

    # every output framed with the id of qmon's record under its topic's subject, read back by that id
    reader = SchemaRegistry(schema_registry_url)  # a consumer's process
    progress = consume(kafka_bootstrap, [topics.PROGRESS], prefix=framed_prefix, idle=4, timeout=60)
    written_out = [*out, *[(t, r, m.value()) for t, r, m in progress]]
    assert {t for t, _, _ in written_out} >= {topics.PERFORMANCE, topics.DLQ, topics.REPLIES, topics.PROGRESS}
    for logical, record, value in written_out:
        topic = topics.physical(logical, framed_prefix)
        schema_id = avro.confluent_id(value)
        assert schema_id is not None and reader.subject_ids(value_subject(topic)) == [schema_id], topic
        assert avro.decode(topics.RECORD_OF[logical], value, writer=reader.schema(schema_id)) == record
    assert all(avro.confluent_id(value) is None for _, _, value in plain_out)  # without a registry: plain Avro
