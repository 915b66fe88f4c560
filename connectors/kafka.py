"""Kafka clients and topic administration (confluent-kafka), with qmon's security settings."""

from __future__ import annotations

import logging
from typing import Any

from qmon.core import topics
from qmon.core.config import KafkaSecurity

logger = logging.getLogger(__name__)


def client_config(bootstrap: str, security: KafkaSecurity | None = None, /, **extra: Any) -> dict[str, Any]:
    """librdkafka settings; the password is read from its SecretStr only here and never logged."""
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "log_level": 3}
    if security is not None and security.protocol != "PLAINTEXT":
        conf["security.protocol"] = security.protocol
        if security.sasl_mechanism:
            conf["sasl.mechanism"] = security.sasl_mechanism
        if security.username is not None:
            conf["sasl.username"] = security.username
        if security.password is not None:
            conf["sasl.password"] = security.password.get_secret_value()
        if security.ssl_cafile:
            conf["ssl.ca.location"] = security.ssl_cafile
    conf.update(extra)
    return conf


def spark_options(bootstrap: str, security: KafkaSecurity | None = None) -> dict[str, str]:
    """The same settings for Spark's Kafka source and sink (``kafka.`` prefixed)."""
    opts = {"kafka.bootstrap.servers": bootstrap}
    if security is not None and security.protocol != "PLAINTEXT":
        opts["kafka.security.protocol"] = security.protocol
        if security.sasl_mechanism:
            opts["kafka.sasl.mechanism"] = security.sasl_mechanism
            module = (
                "org.apache.kafka.common.security.plain.PlainLoginModule"
                if security.sasl_mechanism == "PLAIN"
                else "org.apache.kafka.common.security.scram.ScramLoginModule"
            )
            pw = security.password.get_secret_value() if security.password else ""
            opts["kafka.sasl.jaas.config"] = f'{module} required username="{security.username}" password="{pw}";'
        if security.ssl_cafile:
            opts["kafka.ssl.truststore.location"] = security.ssl_cafile
            opts["kafka.ssl.truststore.type"] = "PEM"  # (the Java client reads a PEM CA file so, as librdkafka does)
    return opts


def ensure_topics(
    bootstrap: str,
    partitions: int = 4,
    security: KafkaSecurity | None = None,
    timeout: float = 30.0,
    prefix: str = "qmon",
    replication_factor: int = 1,
    mq_trace: bool = False,
) -> None:
    """Create qmon's topics if absent (with ``mq_trace``, the MQ activity trace topic too).

    The input topics use broker append time (``message.timestamp.type=LogAppendTime``): the job's
    watermark runs on it, so it only ever moves forward per partition and no record is ever
    behind it (Spark would silently drop such a record).
    """
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(client_config(bootstrap, security))
    existing = set(admin.list_topics(timeout=timeout).topics)
    wanted = []
    inputs = (*topics.INPUTS, topics.MQ_TRACE) if mq_trace else topics.INPUTS
    warn_create_time(admin, [n for n in (topics.physical(t, prefix) for t in inputs) if n in existing], timeout)
    for logical in (*inputs, *topics.OUTPUTS, *topics.STATUS):
        name = topics.physical(logical, prefix)
        if name in existing:
            continue
        config = {"message.timestamp.type": "LogAppendTime"} if logical in inputs else {}
        wanted.append(NewTopic(name, num_partitions=partitions, replication_factor=replication_factor, config=config))
    if not wanted:
        return
    for name, fut in admin.create_topics(wanted, operation_timeout=timeout).items():
        try:
            fut.result()
            logger.info("created topic %s", name)
        except Exception as exc:  # noqa: BLE001
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise


def create_time_topics(admin: Any, names: list[str], timeout: float = 30.0) -> list[str] | None:
    """Which of the topics ``names`` keep the producer's timestamp (``message.timestamp.type`` CreateTime) rather
    than the broker's append time; None when their configuration cannot be read (no DescribeConfigs right)."""
    from confluent_kafka.admin import ConfigResource

    if not names:
        return []
    resources = [ConfigResource(ConfigResource.Type.TOPIC, n) for n in names]
    try:
        found = []
        for resource, fut in admin.describe_configs(resources, request_timeout=timeout).items():
            entry = fut.result().get("message.timestamp.type")
            if entry is not None and entry.value != "LogAppendTime":
                found.append(resource.name)
        return sorted(found)
    except Exception as exc:  # noqa: BLE001 - a principal without DescribeConfigs on the topics
        logger.info("could not read the input topics' message.timestamp.type (%s)", exc)
        return None


def warn_create_time(admin: Any, names: list[str], timeout: float = 30.0) -> list[str]:
    """Warn about input topics that keep the producer's timestamp: qmon's timers (a stalled queue, the overflow
    scan, the end of a hold) run on the records' Kafka timestamps, which are then the producers' clocks."""
    wrong = create_time_topics(admin, names, timeout) or []
    for name in wrong:
        logger.warning(
            "input topic %s keeps the producer's timestamp (message.timestamp.type=CreateTime): qmon's timers then "
            "run on the producers' clocks. Set it to the broker's append time: kafka-configs.sh --alter "
            "--entity-type topics --entity-name %s --add-config message.timestamp.type=LogAppendTime",
            name,
            name,
        )
    return wrong


def topic_exists(bootstrap: str, name: str, security: KafkaSecurity | None = None, timeout: float = 30.0) -> bool:
    from confluent_kafka.admin import AdminClient

    return name in AdminClient(client_config(bootstrap, security)).list_topics(timeout=timeout).topics


def end_offsets(
    bootstrap: str, names: list[str], security: KafkaSecurity | None = None, timeout: float = 30.0
) -> dict[tuple[str, int], int]:
    """The end offset (the next to be written) of every partition of the topics ``names`` that exist."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        client_config(bootstrap, security, **{"group.id": "qmon-end-offsets", "enable.auto.commit": False})
    )
    try:
        listed = consumer.list_topics(timeout=timeout).topics
        ends = {}
        for name in names:
            for partition in sorted(listed[name].partitions) if name in listed else []:
                _low, high = consumer.get_watermark_offsets(TopicPartition(name, partition), timeout=timeout)
                ends[(name, partition)] = int(high)
        return ends
    finally:
        consumer.close()
