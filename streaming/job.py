"""``qmon run``: the streaming job from Kafka to Kafka."""

from __future__ import annotations

import logging
import time
from typing import Any

from qmon.connectors.kafka import ensure_topics, spark_options
from qmon.core import topics
from qmon.core.config import Config, duration_ms

logger = logging.getLogger(__name__)


def start_query(
    spark: Any,
    config: Config,
    bootstrap: str,
    checkpoint: str,
    *,
    available_now: bool = False,
    query_name: str = "qmon",
) -> Any:
    """Build and start the query; returns the StreamingQuery."""
    from pyspark.sql import functions as F

    from qmon.streaming.pipeline import build
    from qmon.streaming.units import structure_buckets

    # a new checkpoint takes the shuffle partitions of the session at its first batch and keeps them
    spark.conf.set("spark.sql.shuffle.partitions", str(config.job.shuffle_partitions))
    kafka = spark_options(bootstrap, config.kafka.security)
    raw = {}
    for logical in topics.INPUTS:  # one source per input topic: each is decoded with its own record
        reader = (
            spark.readStream.format("kafka")
            .options(**kafka)
            .option("subscribe", topics.physical(logical, config.kafka.topic_prefix))
            .option("startingOffsets", config.job.starting_offsets)
            .option("includeHeaders", "false")
            # records of aborted transactions (a DLQ handler killed mid-batch) are never read
            .option("kafka.isolation.level", "read_committed")
        )
        if config.job.max_offsets_per_trigger:
            reader = reader.option("maxOffsetsPerTrigger", str(config.job.max_offsets_per_trigger))
        raw[logical] = reader.load().select("topic", "partition", "offset", "key", "value", "timestamp")
    placed = structure_buckets(spark, checkpoint, [s.strname for s in config.structures])
    out = build(
        raw,
        settings=config.monitor_settings(),
        structure_settings=config.structure_settings(),
        buckets=config.job.queue_buckets,
        watermark_delay=config.job.watermark_delay,
        ttl_ms=duration_ms(config.monitor.queue_ttl),
        prefix=config.kafka.topic_prefix,
        structure_buckets=placed,
        input_tasks=config.job.input_tasks,
    )
    out = out.select("topic", F.col("key").cast("binary").alias("key"), "value")
    writer = (
        out.writeStream.format("kafka").options(**kafka).option("checkpointLocation", checkpoint).queryName(query_name)
    )
    if available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{duration_ms(config.job.trigger)} milliseconds")
    return writer.start()


def run(
    config: Config,
    bootstrap: str,
    checkpoint: str,
    *,
    available_now: bool = False,
    max_restarts: int = 10,
    spark: Any = None,
) -> int:
    """Run the job until stopped (or, with ``available_now``, until the input is consumed).

    A query that fails (a broker outage longer than the Kafka client's retries, say) is started
    again on the same checkpoint after a backoff, up to ``max_restarts`` times in a row; the
    checkpoint makes the restart lose nothing.
    """
    from qmon.streaming.spark import session

    ensure_topics(bootstrap, config.kafka.partitions, config.kafka.security, prefix=config.kafka.topic_prefix)
    spark = spark or session(config.job.master, "qmon", shuffle_partitions=config.job.shuffle_partitions)
    failures = 0
    while True:
        query = start_query(spark, config, bootstrap, checkpoint, available_now=available_now)
        logger.info(
            "qmon job started: reading %s from %s, checkpoint %s",
            ", ".join(topics.physical(t, config.kafka.topic_prefix) for t in topics.INPUTS),
            bootstrap,
            checkpoint,
        )
        try:
            query.awaitTermination()
        except KeyboardInterrupt:
            logger.info("stopping the qmon job")
            query.stop()
            return 0
        except Exception as exc:  # noqa: BLE001 - the query failed; restart it with backoff
            if available_now:  # a one-shot run (replay, tests, benchmarks) reports the failure
                raise
            failures += 1
            if failures > max_restarts:
                logger.error("the qmon query failed %d times in a row; giving up: %s", failures, exc)
                return 1
            backoff = min(60.0, 2.0**failures)
            logger.warning(
                "the qmon query failed (%s); restarting on the same checkpoint in %.0f s",
                str(exc).splitlines()[0][:300],
                backoff,
            )
            time.sleep(backoff)
            continue
        return 0
