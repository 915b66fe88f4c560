"""``mq_trace.enabled: auto`` keeps what a checkpoint was started with (Spark refuses a query whose sources
differ from its checkpoint's): ``streaming.source.checkpoint_reads`` reads the latest offsets file."""

from __future__ import annotations

from qmon.streaming.source import checkpoint_reads

V1 = 'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{}}\n'


def offsets(tmp_path, n: int, *sources: str) -> None:
    d = tmp_path / "offsets"
    d.mkdir(exist_ok=True)
    (d / str(n)).write_text(V1 + "\n".join(sources))


def test_no_checkpoint_or_no_batch_yet_says_nothing(tmp_path):
    assert checkpoint_reads(str(tmp_path / "none"), "qmon.mq.trace") is None
    (tmp_path / "offsets").mkdir()
    assert checkpoint_reads(str(tmp_path), "qmon.mq.trace") is None
    assert checkpoint_reads("hdfs://nn/ckpt", "qmon.mq.trace") is None


def test_the_latest_offsets_file_names_the_trace_topic_or_not(tmp_path):
    offsets(tmp_path, 2, '{"qmon.activity":{"0":5}}', '{"qmon.control":{"0":1}}', '{"qmon.journal":{"0":0}}')
    assert checkpoint_reads(str(tmp_path), "qmon.mq.trace") is False
    offsets(tmp_path, 10, '{"qmon.activity":{"0":5}}', '{"qmon.mq.trace":{"0":3,"1":0}}')
    assert checkpoint_reads(str(tmp_path), "qmon.mq.trace") is True  # 10 is later than 2 (not "10" < "2")
    assert checkpoint_reads(f"file://{tmp_path}", "qmon.mq.trace") is True
    assert checkpoint_reads(str(tmp_path), "other.mq.trace") is False
