"""The writers' schemas of the input topics, planned at a query's start: what a record framed with each id
becomes (read as qmon's own, read by resolution, or a dead letter with its reason), from a registry's answers
(an in-memory stand-in; the real registry's are in test_writer_schemas_registry.py); and the job's loop,
which starts the query again when a record names an id no plan holds."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from qmon.connectors.registry import NotAvro, RegistryError, RegistryUnreachable, UnknownSchemaId
from qmon.connectors.schema import schema_text
from qmon.core import topics
from qmon.core.config import Config
from qmon.core.reasons import REASONS
from qmon.streaming import job
from qmon.streaming.writer_schemas import (
    MISMATCH,
    NEW_ID,
    UNKNOWN,
    Dead,
    Writer,
    choose,
    new_ids,
    plan,
    plan_topic,
)

URL = "http://registry.test:8081"


def activity(change: Any = None) -> str:
    schema = json.loads(schema_text("QueueActivity"))
    if change is not None:
        change(schema)
    return json.dumps(schema)


def without(*names: str) -> Any:
    def change(schema: dict[str, Any]) -> None:
        schema["fields"] = [f for f in schema["fields"] if f["name"] not in names]

    return change


def evolved(schema: dict[str, Any]) -> None:
    """A field added with a default, an optional field removed."""
    without("reason")(schema)
    schema["fields"].append({"name": "channel", "type": "string", "default": "SYSTEM.DEF.SVRCONN"})


def undocumented(schema: dict[str, Any]) -> None:
    """qmon's own schema as a registry may hand it back: the same Avro, written otherwise."""
    schema.pop("doc")
    for f in schema["fields"]:
        f.pop("doc", None)


class StandIn:
    """A registry's answers: the ids of each subject's versions, and each id's schema (or its error)."""

    url = URL

    def __init__(self, subjects: dict[str, list[int]], schemas: dict[int, str | RegistryError]):
        self.subjects, self.schemas = subjects, schemas

    def subject_ids(self, subject: str) -> list[int]:
        return list(self.subjects.get(subject, []))

    def schema(self, schema_id: int) -> str:
        found = self.schemas.get(schema_id)
        if found is None:
            raise UnknownSchemaId(schema_id, self.url)
        if isinstance(found, RegistryError):
            raise found
        return found


SCHEMAS: dict[int, str | RegistryError] = {
    1: activity(undocumented),
    2: activity(evolved),
    3: activity(without("qmgr")),
    4: schema_text("ControlCommand"),
    5: NotAvro(5, "PROTOBUF"),
    6: schema_text("ControlCommand"),
}


def test_each_id_of_a_topics_subject_and_each_id_met_is_planned():
    registry = StandIn({"p.activity-value": [1, 2, 3, 4, 5]}, SCHEMAS)
    p = plan_topic(registry, "p.activity", "QueueActivity", ids={2, 9})
    assert p.own == {1}
    assert p.writers == {2: Writer(activity(evolved))}
    assert set(p.dead) == {3, 4, 5, 9} and p.ids == {1, 2, 3, 4, 5, 9}
    assert p.dead[3] == Dead(
        MISMATCH,
        "schema id 3 does not resolve into qmon's QueueActivity: QueueActivity.qmgr: not in the writer's schema, "
        "and the reader's has no default for it",
    )
    assert p.dead[4].reason == MISMATCH and "is not the reader's record QueueActivity" in p.dead[4].error
    assert p.dead[5] == Dead(MISMATCH, "schema id 5 is a PROTOBUF schema, not Avro")
    assert p.dead[9] == Dead(UNKNOWN, f"the schema registry at {URL} has no schema with id 9")
    assert p.describe() == (
        "p.activity: qmon's own schema: ids 1; read by resolution: ids 2; dead letters (QMON_UNKNOWN_SCHEMA): "
        "ids 9; dead letters (QMON_SCHEMA_MISMATCH): ids 3, 4, 5"
    )


def test_every_input_topic_that_carries_avro_has_a_plan_under_the_prefix():
    registry = StandIn({"p.control-value": [6], "p.activity-value": [1]}, SCHEMAS)
    plans = plan(registry, "p", ids={2})
    assert set(plans) == set(topics.INPUTS)
    assert [(p.topic, p.record) for p in plans.values()] == [
        ("p.activity", "QueueActivity"),
        ("p.control", "ControlCommand"),
        ("p.journal", "JournalStatus"),
    ]
    assert plans[topics.ACTIVITY].own == {1} and set(plans[topics.ACTIVITY].writers) == {2}
    assert plans[topics.CONTROL].own == {6} and plans[topics.CONTROL].dead[2].reason == MISMATCH
    assert plans[topics.JOURNAL].ids == {2} and plans[topics.JOURNAL].describe().startswith("p.journal: dead")
    empty = plan(StandIn({}, {}), "p")[topics.JOURNAL]
    assert empty.ids == frozenset() and empty.describe() == "p.journal: no schema id registered"


def test_a_registry_that_cannot_answer_stops_the_plan():
    class Down(StandIn):
        def subject_ids(self, subject: str) -> list[int]:
            raise RegistryUnreachable(URL, "connection refused")

    with pytest.raises(RegistryUnreachable):
        plan(Down({}, {}), "p")
    with pytest.raises(RegistryError, match="HTTP 500"):
        plan_topic(StandIn({"p.activity-value": [7]}, {7: RegistryError("HTTP 500", status=500)}), "p.activity", "X")


def test_a_recursive_writer_is_read_without_its_length_checked():
    schema = json.loads(activity(evolved))
    schema["fields"].append(
        {
            "name": "hops",
            "type": ["null", {"type": "record", "name": "Hop", "fields": [{"name": "next", "type": ["null", "Hop"]}]}],
            "default": None,
        }
    )
    assert choose(8, json.dumps(schema), "QueueActivity") == Writer(json.dumps(schema), checked=False)
    assert choose(2, activity(evolved), "QueueActivity") == Writer(activity(evolved), checked=True)


def test_a_writer_that_is_not_avro_is_a_mismatch():
    found = choose(8, '{"type": "recrd"}', "QueueActivity")
    assert isinstance(found, Dead) and found.reason == MISMATCH and found.error.startswith("schema id 8 is not valid")
    assert choose(1, activity(undocumented), "QueueActivity") == "own"


def test_the_reasons_are_qmons_dead_letter_reasons():
    assert {UNKNOWN, MISMATCH} <= set(REASONS)


SPARK_ERROR = (
    "[STREAM_FAILED] Query [id = 3f0c, runId = 9a1b] terminated with exception: Job aborted due to stage failure: "
    "Task 0 in stage 4.0 failed 1 times, most recent failure: Lost task 0.0 in stage 4.0 (TID 7) (10.0.0.1 executor "
    "driver): org.apache.spark.SparkRuntimeException: [USER_RAISED_EXCEPTION] "
    f"{NEW_ID}123 in a record of p.activity, which the query did not plan SQLSTATE: P0001\n"
    "\tat org.apache.spark.sql.errors.QueryExecutionErrors$.raiseError(QueryExecutionErrors.scala:2751)\n"
)


def test_the_ids_a_failed_query_names_as_new_are_read_from_its_error():
    assert new_ids(SPARK_ERROR) == {123}
    assert new_ids(SPARK_ERROR + SPARK_ERROR.replace("123", "4000000000")) == {123, 4_000_000_000}
    assert new_ids("Job aborted due to stage failure: java.net.ConnectException: schema id 123") == set()


# ---------------------------------------------------------------- the job's loop


class Query:
    """A started query that fails with ``error`` (or ends, when None)."""

    def __init__(self, error: Exception | None):
        self.error = error
        self.lastProgress = None

    def awaitTermination(self, timeout: float) -> bool:  # noqa: N802 - PySpark's name
        if self.error is not None:
            raise self.error
        return True


def loop(
    monkeypatch: pytest.MonkeyPatch, outcomes: list[Exception | None], *, registry: bool = True, **kw: Any
) -> tuple[int, list[set[int]]]:
    """Run the job's loop over queries that end as ``outcomes`` say (an exception raised at the start: the
    registry's); returns its status and the ids each start was given."""
    given: list[set[int]] = []

    def start_query(*_args: Any, schema_ids: Any = (), **_kw: Any) -> Query:
        given.append(set(schema_ids))
        outcome = outcomes.pop(0)
        if isinstance(outcome, RegistryError):
            raise outcome
        return Query(outcome)

    monkeypatch.setattr(job, "start_query", start_query)
    config = Config.model_validate({"kafka": {"schema_registry_url": URL} if registry else {}})
    kw = {"available_now": True, "max_restarts": 3, **kw}
    status = job._run(None, config, "b:9092", "/ckpt", stopping=threading.Event(), **kw)
    return status, given


def test_a_record_with_a_new_id_starts_the_query_again_at_once_with_the_id(monkeypatch):
    status, given = loop(monkeypatch, [RuntimeError(SPARK_ERROR), RuntimeError(SPARK_ERROR.replace("123", "7")), None])
    assert status == 0 and given == [set(), {123}, {123, 7}]
    status, given = loop(monkeypatch, [RuntimeError(SPARK_ERROR), None], available_now=False, max_restarts=0)
    assert status == 0 and given == [set(), {123}]  # not counted as a failure (none is allowed here)


def test_an_id_planned_already_is_an_ordinary_failure(monkeypatch):
    with pytest.raises(RuntimeError, match="USER_RAISED_EXCEPTION"):
        loop(monkeypatch, [RuntimeError(SPARK_ERROR), RuntimeError(SPARK_ERROR)])


def test_without_a_registry_the_error_is_an_ordinary_failure(monkeypatch):
    with pytest.raises(RuntimeError, match="USER_RAISED_EXCEPTION"):
        loop(monkeypatch, [RuntimeError(SPARK_ERROR)], registry=False)


def test_a_registry_that_does_not_answer_at_the_start_is_a_failure_of_the_query(monkeypatch):
    down = RegistryUnreachable(URL, "connection refused")
    status, given = loop(monkeypatch, [down], available_now=False, max_restarts=0)
    assert status == 1 and given == [set()]
    with pytest.raises(RegistryUnreachable):  # a one-shot run reports it
        loop(monkeypatch, [down])
    refused = RegistryError("POST ...: HTTP 409: incompatible", status=409)
    with pytest.raises(RegistryError, match="409"):  # not one that passes by itself: reported at once
        loop(monkeypatch, [refused], available_now=False)
