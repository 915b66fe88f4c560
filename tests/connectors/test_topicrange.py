"""Reading a topic over a time range (connectors.topicrange) against a stand-in for librdkafka's consumer: where
each partition starts (the first offset at or after ``since``, and never before a given start), where it ends
(its end offset when reading began), the records' timestamps, and giving up when the broker sends nothing.
The same reading through the real broker is tested by ``qmon dlq-handler --report``'s and ``qmon report``'s
Kafka tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import KafkaError

from qmon.connectors import topicrange


@dataclass
class Msg:
    """A stand-in for a message, or for the end-of-partition notice (``eof``)."""

    p: int
    o: int
    ts: int = 0
    ts_type: int = 1  # 1: CreateTime; 0: no timestamp
    eof: bool = False

    def error(self) -> Any:
        if not self.eof:
            return None
        return type("Err", (), {"code": staticmethod(lambda: KafkaError._PARTITION_EOF)})()

    def partition(self) -> int:
        return self.p

    def offset(self) -> int:
        return self.o

    def timestamp(self) -> tuple[int, int]:
        return (self.ts_type, self.ts)

    def value(self) -> bytes:
        return f"{self.p}/{self.o}".encode()


class FakeConsumer:
    """Two partitions: partition 0 holds offsets 0-9 put at 1000 + 100 × offset (ms); partition 1 is empty."""

    def __init__(self, *, silent: bool = False) -> None:
        self.silent = silent
        self.assigned: list[tuple[int, int]] = []
        self.queue: list[Msg] = []
        self.closed = False

    def list_topics(self, topic: str, timeout: float) -> Any:
        meta = type("T", (), {"error": None, "partitions": {0: None, 1: None}})()
        return type("M", (), {"topics": {"t": meta} if topic == "t" else {}})()

    def get_watermark_offsets(self, tp: Any, timeout: float) -> tuple[int, int]:
        return (0, 10) if tp.partition == 0 else (0, 0)

    def offsets_for_times(self, tps: list[Any], timeout: float) -> list[Any]:
        (tp,) = tps
        first = next((o for o in range(10) if 1000 + 100 * o >= tp.offset), -1)
        return [type("TP", (), {"offset": first})()]

    def assign(self, tps: list[Any]) -> None:
        self.assigned = [(tp.partition, tp.offset) for tp in tps]
        for p, begin in self.assigned:
            end = 10 if p == 0 else 0
            self.queue += [Msg(p, o, 1000 + 100 * o, 0 if o == 9 else 1) for o in range(begin, end)]
            self.queue.append(Msg(p, end, eof=True))
            self.queue.append(Msg(p, end + 1, 99_999))  # written after reading began: never read

    def poll(self, timeout: float) -> Msg | None:
        if self.silent or not self.queue:
            return None
        return self.queue.pop(0)

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def fake(monkeypatch):
    made: list[FakeConsumer] = []

    def consumer(bootstrap, security, group_prefix, **extra):
        assert extra == {"enable.partition.eof": True} and group_prefix == "qmon-test"
        made.append(FakeConsumer(silent=bootstrap == "silent"))
        return made[-1]

    monkeypatch.setattr(topicrange, "consumer", consumer)
    return made


def read(bootstrap: str = "b", topic: str = "t", **kw: Any) -> list[topicrange.Raw]:
    return list(topicrange.records(bootstrap, topic, group_prefix="qmon-test", **kw))


def test_from_the_first_record_put_at_since_to_the_end_offset_when_reading_began(fake):
    got = read(since_ms=1_650)
    assert fake[0].assigned == [(0, 7)]  # partition 1 is empty: not assigned
    assert [(r.partition, r.offset, r.timestamp_ms, r.value) for r in got] == [
        (0, 7, 1_700, b"0/7"),
        (0, 8, 1_800, b"0/8"),
        (0, 9, None, b"0/9"),  # a record without a timestamp
    ]
    assert fake[0].closed


def test_without_since_from_the_beginning_and_never_before_a_given_start(fake):
    assert [r.offset for r in read()] == list(range(10))
    assert [r.offset for r in read(start={0: 4}, since_ms=1_200)] == [4, 5, 6, 7, 8, 9]
    assert [r.offset for r in read(start={0: 4}, since_ms=1_800)] == [8, 9]
    assert read(since_ms=5_000) == []  # nothing put since then


def test_a_missing_topic_and_a_silent_broker_are_errors(fake):
    with pytest.raises(topicrange.NoSuchTopic, match="the topic nope does not exist"):
        read(topic="nope")
    with pytest.raises(topicrange.TopicReadError, match=r"partitions \[0\] not read to their end: nothing came"):
        read("silent", timeout=0.2)
    assert all(c.closed for c in fake)
