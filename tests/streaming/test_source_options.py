"""The options of the job's Kafka source, one input topic at a time (no Spark needed)."""

from __future__ import annotations

from qmon.core.config import Config
from qmon.streaming.source import source_options


def test_the_source_reads_committed_records_and_waits_at_most_fetch_max_wait_at_the_log_end():
    # a task's poll leaves a fetch past the newest records, held by the broker for fetch.max.wait.ms, and
    # Spark's offset lookup on the same connection waits for it: up to 500 ms (Kafka's default) at low rates
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


class _Stop(Exception):
    pass


class _Reader:
    """Spark's ``readStream`` as far as the job's Kafka sources use it: records the options given."""

    def __init__(self, seen: list[dict[str, str]]) -> None:
        self.seen = seen
        self.opts: dict[str, str] = {}

    def format(self, name: str) -> _Reader:
        assert name == "kafka"
        return self

    def options(self, **opts: str) -> _Reader:
        self.opts.update(opts)
        return self

    def option(self, key: str, value: str) -> _Reader:
        self.opts[key] = value
        return self

    def load(self) -> None:
        self.seen.append(self.opts)
        raise _Stop  # enough: the query is not built


def test_the_job_reads_every_input_topic_with_these_options(monkeypatch) -> None:  # noqa: ANN001
    import types

    import pytest

    from qmon.streaming import job, spark

    seen: list[dict[str, str]] = []
    conf = types.SimpleNamespace(set=lambda *a: None)
    fake = type("FakeSpark", (), {"conf": conf, "readStream": property(lambda self: _Reader(seen))})()
    monkeypatch.setattr(spark, "checkpoint_fs", lambda *a, **k: "nio")
    config = Config.model_validate({"job": {"fetch_max_wait": "25 ms"}})
    with pytest.raises(_Stop):
        job.start_query(fake, config, "127.0.0.1:9092", "/tmp/unused-checkpoint")
    assert seen and seen[0]["kafka.fetch.max.wait.ms"] == "25"
    assert {k: v for k, v in seen[0].items() if k != "subscribe"} == source_options(config, "127.0.0.1:9092")
