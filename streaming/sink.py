"""Sink: the query's output rows written to their Kafka topics, each value framed with its topic's schema id
when a schema registry gives one (``streaming.framing``)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from qmon.streaming.framing import framed


def kafka_sink(
    out: DataFrame, ids: dict[str, int], options: dict[str, str], checkpoint: str, name: str, trigger_ms: int | None
) -> Any:
    """Start the query writing ``out`` (``pipeline.build``'s rows) to Kafka with ``options``; ``ids``: each output
    topic's schema id (physical name), framed before its values; ``trigger_ms`` None: read what is there now,
    then stop (``--available-now``).  Returns the StreamingQuery."""
    value = framed(F.col("value"), F.col("topic"), ids).alias("value")
    out = out.select("topic", F.col("key").cast("binary").alias("key"), value)
    writer = out.writeStream.format("kafka").options(**options).option("checkpointLocation", checkpoint).queryName(name)
    if trigger_ms is None:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{trigger_ms} milliseconds")
    return writer.start()
