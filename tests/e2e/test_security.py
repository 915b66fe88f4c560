"""Authenticated Kafka: SASL/PLAIN and ACLs on the local broker.  Only the operator principal may
write qmon.control; an unauthorised producer is refused while qmon keeps working; secrets never
appear in logs or reprs."""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

import pytest
from pydantic import SecretStr

from qmon.connectors import avro
from qmon.connectors.clients import consume, produce_rows, send_commands
from qmon.connectors.kafka import client_config, ensure_topics
from qmon.core import topics
from qmon.core.config import Config, KafkaSecurity
from qmon.streaming.job import run

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

T0 = 1_700_000_000_000
USERS = {"admin": "admin-secret", "qmon": "qmon-secret-9f3", "operator": "op-secret", "intruder": "bad-secret"}


def sec(user: str) -> KafkaSecurity:
    return KafkaSecurity(
        protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", username=user, password=SecretStr(USERS[user])
    )


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from qmon.devservers.kafka import LocalKafka

    users = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
    jaas = (
        f'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        f'password="{USERS["admin"]}" {users};'
    )
    broker = LocalKafka(
        workdir=tmp_path_factory.mktemp("sasl"),
        listener_protocol="SASL_PLAINTEXT",
        extra_properties={
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.client.plain.sasl.jaas.config": jaas,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:admin;User:ANONYMOUS",
            "allow.everyone.if.no.acl.found": "false",
        },
    )
    broker.start()
    yield broker
    broker.stop()


def grant(bootstrap: str, prefix: str) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient(client_config(bootstrap, sec("admin")))

    def acl(user: str, rtype: Any, name: str, op: Any, pattern: Any = ResourcePatternType.LITERAL) -> Any:
        return AclBinding(rtype, name, pattern, f"User:{user}", "*", op, AclPermissionType.ALLOW)

    p = lambda t: topics.physical(t, prefix)  # noqa: E731
    bindings = [acl("qmon", ResourceType.TOPIC, p(t), AclOperation.READ) for t in topics.INPUTS]
    bindings += [acl("qmon", ResourceType.TOPIC, p(t), AclOperation.WRITE) for t in (*topics.OUTPUTS, *topics.STATUS)]
    bindings += [
        acl("qmon", ResourceType.TOPIC, p(t), AclOperation.DESCRIBE)
        for t in (*topics.INPUTS, *topics.OUTPUTS, *topics.STATUS)
    ]
    bindings += [
        acl("qmon", ResourceType.GROUP, "*", AclOperation.READ),
        acl("operator", ResourceType.TOPIC, p(topics.CONTROL), AclOperation.WRITE),
        acl("operator", ResourceType.TOPIC, p(topics.REPLIES), AclOperation.READ),
        acl("operator", ResourceType.GROUP, "*", AclOperation.READ),
    ]
    for fut in admin.create_acls(bindings).values():
        fut.result()
    # ACLs reach the broker's authorizer asynchronously: wait until the operator may write
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            send_commands(bootstrap, "QM0", ["PING QMGR"], security=sec("operator"), prefix=prefix)
            return
        except RuntimeError:
            time.sleep(0.5)
    raise AssertionError("the ACLs did not take effect within 30 s")


def test_only_the_operator_may_write_control_and_qmon_keeps_working(sasl_broker, spark, tmp_path, caplog):
    bootstrap = sasl_broker.bootstrap
    prefix = f"s{uuid.uuid4().hex[:8]}"
    ensure_topics(bootstrap, 2, sec("admin"), prefix=prefix)
    grant(bootstrap, prefix)

    # an unauthorised principal is refused on qmon.control
    with pytest.raises(RuntimeError) as refused:
        send_commands(
            bootstrap, "QM1", ["ALTER QMGR PERFMEV(DISABLED)"], security=sec("intruder"), ts=T0, prefix=prefix
        )
    assert "AUTHORIZATION" in str(refused.value).upper()
    # and so is qmon itself: it may read commands, not write them
    with pytest.raises(RuntimeError):
        send_commands(bootstrap, "QM1", ["PING QMGR"], security=sec("qmon"), ts=T0, prefix=prefix)

    send_commands(
        bootstrap,
        "QM1",
        ["ALTER QMGR PERFMEV(ENABLED)", "ALTER QLOCAL(PAYROLL.IN) QSVCINT(1000) QSVCIEV(HIGH)"],
        security=sec("operator"),
        ts=T0,
        prefix=prefix,
    )
    recs = [
        {
            "event_id": f"a{i}",
            "qmgr": "QM1",
            "queue": "PAYROLL.IN",
            "op": op,
            "ts": T0 + ts,
            "depth_after": None,
            "msg_bytes": 10,
            "structure": None,
            "reason": None,
        }
        for i, (op, ts) in enumerate([("PUT", 1000), ("PUT", 5000), ("GET", 6000), ("GET", 7000)])
    ]
    produce_rows(
        bootstrap,
        [(topics.physical(topics.ACTIVITY, prefix), b"QM1/PAYROLL.IN", avro.encode("QueueActivity", r)) for r in recs],
        sec("admin"),
    )

    config = Config.model_validate(
        {
            "kafka": {
                "topic_prefix": prefix,
                "partitions": 2,
                "security": {
                    "protocol": "SASL_PLAINTEXT",
                    "sasl_mechanism": "PLAIN",
                    "username": "qmon",
                    "password": USERS["qmon"],
                },
            },
            "job": {"queue_shards": 2, "shuffle_partitions": 2, "watermark_delay": "0 seconds"},
        }
    )
    assert USERS["qmon"] not in repr(config) and USERS["qmon"] not in str(config.model_dump())
    caplog.set_level(logging.DEBUG)
    assert run(config, bootstrap, str(tmp_path / "ckpt"), available_now=True, spark=spark) == 0
    out = [
        (t, r)
        for t, r, _ in consume(bootstrap, topics.OUTPUTS, prefix=prefix, to_end=True, timeout=90, security=sec("admin"))
    ]
    assert [r["type"] for t, r in out if t == topics.PERFORMANCE] == ["QSVCINT_HIGH", "QSVCINT_OK"]
    assert sorted(r["ok"] for t, r in out if t == topics.REPLIES and r["qmgr"] == "QM1") == [True, True]
    assert USERS["qmon"] not in caplog.text
