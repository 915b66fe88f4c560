"""The writers' schemas planned from a real registry (Apicurio Registry, started by the session fixture): qmon's
QueueActivity, an evolved version and one that does not resolve under the activity topic's subject, an id
registered under another subject only, an id the registry does not know; and the ids of the job's outputs."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from qmon.connectors import avro
from qmon.connectors.registry import SchemaRegistry, value_subject
from qmon.connectors.schema import schema_text
from qmon.core import topics
from qmon.streaming.writer_schemas import MISMATCH, UNKNOWN, Dead, Writer, output_ids, plan

pytestmark = pytest.mark.registry


def activity(drop: str | None = None, **added: Any) -> dict[str, Any]:
    schema = json.loads(schema_text("QueueActivity"))
    schema["fields"] = [f for f in schema["fields"] if f["name"] != drop]
    schema["fields"] += [{"name": name, "type": "string", "default": default} for name, default in added.items()]
    return schema


def test_a_plan_from_the_registrys_subjects_and_the_ids_met(schema_registry_url: str):
    prefix = f"w{uuid.uuid4().hex[:8]}"
    subject = value_subject(topics.physical(topics.ACTIVITY, prefix))
    producers = SchemaRegistry(schema_registry_url)
    own = producers.register(subject, schema_text("QueueActivity"))
    evolved = producers.register(subject, activity("reason", channel="SYSTEM.DEF.SVRCONN"))
    # under subjects of their own (a registry's compatibility rule may refuse them under one)
    unresolvable = producers.register(f"{prefix}.unresolvable-value", activity("qmgr"))
    elsewhere = producers.register(f"{prefix}.elsewhere-value", activity(team="OPS"))
    unknown = 2_000_000_003

    job = SchemaRegistry(schema_registry_url)  # the job's own process
    plans = plan(job, prefix, ids={elsewhere, unresolvable, unknown})
    p = plans[topics.ACTIVITY]
    assert p.own == {own}
    assert p.writers == {evolved: Writer(job.schema(evolved)), elsewhere: Writer(job.schema(elsewhere))}
    assert (
        p.dead[unresolvable].reason == MISMATCH
        and "QueueActivity.qmgr: not in the writer's" in p.dead[unresolvable].error
    )
    assert p.dead[unknown] == Dead(
        UNKNOWN, f"the schema registry at {schema_registry_url} has no schema with id {unknown}"
    )
    assert plans[topics.CONTROL].own == frozenset() and set(plans[topics.CONTROL].dead) == {
        elsewhere,
        unresolvable,
        unknown,
    }


def test_the_outputs_ids_name_qmons_records(schema_registry_url: str):
    prefix = f"o{uuid.uuid4().hex[:8]}"
    ids = output_ids(SchemaRegistry(schema_registry_url), prefix)
    assert set(ids) == {topics.physical(t, prefix) for t in (*topics.OUTPUTS, *topics.STATUS)}
    reader = SchemaRegistry(schema_registry_url)
    for logical in (*topics.OUTPUTS, *topics.STATUS):
        topic = topics.physical(logical, prefix)
        assert reader.subject_ids(value_subject(topic)) == [ids[topic]]
        assert json.loads(reader.schema(ids[topic]))["name"] == topics.RECORD_OF[logical]
    assert output_ids(SchemaRegistry(schema_registry_url), prefix) == ids  # the same ids at every start
    assert avro.header(ids[topics.physical(topics.DLQ, prefix)])[0] == 0
