"""The options of the job's Kafka source, one input topic at a time (no Spark needed)."""

from __future__ import annotations

from qmon.core.config import Config
from qmon.streaming.job import source_options


def test_the_source_reads_committed_records_and_waits_at_most_fetch_max_wait_at_the_log_end():
    # Spark's pooled consumer pipelines a fetch past the log end after each batch; the broker parks it for
    # fetch.max.wait.ms, and the next batch's seek waits for it: 500 ms (Kafka's default) a batch at low rates
    opts = source_options(Config(), "127.0.0.1:9092")
    assert opts["kafka.fetch.max.wait.ms"] == "10"
    assert opts["kafka.isolation.level"] == "read_committed"
    assert opts["kafka.bootstrap.servers"] == "127.0.0.1:9092"
    assert opts["startingOffsets"] == "earliest" and opts["includeHeaders"] == "false"
    assert "maxOffsetsPerTrigger" not in opts


def test_source_options_follow_the_configuration():
    config = Config.model_validate(
        {"job": {"fetch_max_wait": "0 ms", "max_offsets_per_trigger": 5000, "starting_offsets": "latest"}}
    )
    opts = source_options(config, "broker:9093")
    assert opts["kafka.fetch.max.wait.ms"] == "0"
    assert opts["maxOffsetsPerTrigger"] == "5000" and opts["startingOffsets"] == "latest"
