"""``job:``: the Spark job (checkpoint, master, trigger, partitions, shards, watermark, input); and the Spark
settings qmon has keys of its own for, which the ``spark:`` section refuses."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from qmon.core.config.base import Frozen
from qmon.core.config.durations import duration_ms


class JobConfig(Frozen):
    checkpoint: str = Field(
        "./qmon-checkpoint", description="checkpoint directory: offsets and state; keep it to restart (--checkpoint)"
    )
    checkpoint_fs: Literal["nio", "hadoop"] = Field(
        "nio",
        description="a local checkpoint's files through Java's file API (nio) or Hadoop's local file system, "
        "which runs chmod in a child process for every file it writes (hadoop)",
    )
    master: str | None = Field(
        None,
        description="Spark master (--master): local[N], spark://host:7077, yarn, k8s://...; unset, the master "
        "Spark was given (spark-submit's --master, spark-defaults.conf's spark.master), else local[*]",
    )
    trigger: str = Field("1 second", description="micro-batch interval (a duration)")
    shuffle_partitions: int = Field(
        4, ge=1, le=10_000, description="Spark's shuffle partitions; a new checkpoint keeps the number it started with"
    )
    input_tasks: int | None = Field(
        None, ge=1, le=10_000, description="tasks reading the input per batch (default: one per Kafka partition)"
    )
    queue_shards: int = Field(
        8, ge=1, le=4096, description="shards per queue manager (and per queue-sharing group); fixed for a checkpoint"
    )
    queue_units: int | None = Field(
        None,
        ge=1,
        le=4096,
        description="queue units the shards are kept in, each a key of the operator (default: one per shuffle "
        "partition of the checkpoint); fixed for a checkpoint",
    )
    watermark_delay: str = Field(
        "5 seconds", description="how far the arrival clock's watermark trails the newest record (a duration)"
    )
    max_lateness: str = Field(
        "0 seconds",
        description="how far behind the slowest input partition read (in ts) a record may arrive and still be "
        "applied in ts order; each batch's records wait that much longer (a duration)",
    )
    max_offsets_per_trigger: int | None = Field(
        None, ge=1, description="most input records a micro-batch reads (default: all available)"
    )
    starting_offsets: Literal["earliest", "latest"] = Field(
        "earliest", description="where a new checkpoint starts reading the input topics"
    )
    fetch_max_wait: str = Field(
        "10 milliseconds",
        description="how long the broker may hold the input's fetch past the log end (Kafka's fetch.max.wait.ms)",
    )

    @field_validator("trigger", "watermark_delay", "max_lateness")
    @classmethod
    def _duration(cls, v: str) -> str:
        duration_ms(v)
        return v

    @field_validator("fetch_max_wait")
    @classmethod
    def _fetch_wait(cls, v: str) -> str:
        if duration_ms(v) > 10_000:  # (a duration is never negative)
            raise ValueError(f"{v!r} is more than 10 seconds (Kafka's fetch.max.wait.ms; 10 milliseconds by default)")
        return v


#: Spark settings qmon's configuration has a key of its own for (the ``spark:`` section refuses them)
OWN_SPARK_KEYS = {
    "spark.master": "job.master (or --master)",
    "spark.sql.shuffle.partitions": "job.shuffle_partitions",
    "spark.app.name": "application name (qmon)",
}
