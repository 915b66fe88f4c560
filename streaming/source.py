"""Source: one Kafka source per input topic, each read from its own subscription so that each is decoded
with its own record (``streaming.decode``); the MQ activity trace topic too when ``mq_trace.enabled`` says so."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from qmon.connectors.kafka import spark_options, topic_exists
from qmon.core import topics
from qmon.core.config import Config, duration_ms

logger = logging.getLogger(__name__)

#: the columns of Spark's Kafka source the query reads
COLUMNS = ("topic", "partition", "offset", "key", "value", "timestamp")


def source_options(config: Config, bootstrap: str) -> dict[str, str]:
    """The options of the Kafka source of every input topic (``subscribe`` aside)."""
    opts = spark_options(bootstrap, config.kafka.security)
    opts.update(
        {
            "startingOffsets": config.job.starting_offsets,
            "includeHeaders": "false",
            # records of aborted transactions (a DLQ handler killed mid-batch) are never read
            "kafka.isolation.level": "read_committed",
            # A task's poll leaves a fetch past the newest records, which the broker holds for fetch.max.wait.ms;
            # Spark's reader then asks for the partition's offsets on the same connection, answered only after
            # it. Kafka's 500 ms would be added to most batches at low rates; at high rates a new record answers
            # the held fetch at once, whatever this says.
            "kafka.fetch.max.wait.ms": str(duration_ms(config.job.fetch_max_wait)),
        }
    )
    if config.job.max_offsets_per_trigger:
        opts["maxOffsetsPerTrigger"] = str(config.job.max_offsets_per_trigger)
    return opts


def sources(spark: Any, config: Config, bootstrap: str, checkpoint: str) -> tuple[dict[str, Any], list[str], bool]:
    """(logical topic -> its streaming DataFrame, the physical topic names read, whether the MQ activity trace
    topic is among them)."""
    reading = source_options(config, bootstrap)

    def source(topic: str) -> Any:
        reader = spark.readStream.format("kafka").options(**reading).option("subscribe", topic)
        return reader.load().select(*COLUMNS)

    raw = {logical: source(topics.physical(logical, config.kafka.topic_prefix)) for logical in topics.INPUTS}
    names = [topics.physical(logical, config.kafka.topic_prefix) for logical in raw]
    trace = topics.physical(topics.MQ_TRACE, config.kafka.topic_prefix)
    read_trace = config.mq_trace.enabled is True
    if config.mq_trace.enabled == "auto":  # as the checkpoint was started, else whether the topic exists now
        recorded = checkpoint_reads(checkpoint, trace)
        read_trace = recorded if recorded is not None else topic_exists(bootstrap, trace, config.kafka.security)
    if read_trace:  # raw PCF bytes, decoded in the query (streaming.trace)
        raw[topics.MQ_TRACE] = source(trace)
        names.append(trace)
        logger.info("qmon job: reading MQ activity trace from %s", trace)
    return raw, names, read_trace


def checkpoint_reads(checkpoint: str, topic: str) -> bool | None:
    """Whether an existing checkpoint's query reads ``topic`` (from its latest offsets file, which names every
    Kafka source's topics); None when there is no local checkpoint with offsets yet.  Spark refuses a query
    whose sources differ from its checkpoint's, so ``mq_trace.enabled: auto`` keeps what the checkpoint has."""

    path = checkpoint.removeprefix("file://") if checkpoint.startswith("file://") else checkpoint
    if "://" in path:  # a checkpoint on HDFS, S3, ...: not read here
        return None
    offsets = Path(path) / "offsets"
    batches = [f for f in offsets.iterdir() if f.name.isdigit()] if offsets.is_dir() else []
    if not batches:
        return None
    latest = max(batches, key=lambda f: int(f.name))
    return json.dumps(topic) + ":" in latest.read_text(errors="replace")
