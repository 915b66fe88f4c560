"""Fill forecasts through the real path: a CF structure and a queue filling steadily, as QueueActivity on
Kafka, give STRUCTURE_FILL_FORECAST and QUEUE_FILL_FORECAST on the alerts topic ahead of the real alerts,
each with the instant it predicts, exactly as the pure rules give them."""

from __future__ import annotations

from typing import Any

import pytest

from qmon.connectors.kafka import ensure_topics
from qmon.core import topics
from qmon.core.config import Config
from qmon.core.reference import run_reference
from qmon.streaming.job import run
from tests.e2e.test_job_kafka import outputs, produce_activity

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

T0 = 1_700_000_010_000  # a multiple of the 30-second sample step
MIN = 60_000
WATCHED = ("STRUCTURE_FILL_FORECAST", "QUEUE_FILL_FORECAST", "OVERFLOW_MODE_ENTERED")


def _fill(n: int) -> list[dict[str, Any]]:
    """``n`` puts of one data element each to IMSA's 1PAYROLL on MSGQ1, one every 3 s."""
    return [
        {"event_id": f"p{i}", "qmgr": "IMSA", "queue": "1PAYROLL", "op": "PUT", "ts": T0 + i * 3000,
         "depth_after": None, "msg_bytes": 500, "structure": "MSGQ1", "reason": None}
        for i in range(n)
    ]  # fmt: skip


def test_a_steady_fill_is_forecast_before_overflow_mode_through_kafka(spark, kafka_bootstrap, prefix, tmp_path):
    config = Config.model_validate(
        {
            "kafka": {"topic_prefix": prefix, "partitions": 2},
            "job": {"queue_buckets": 2, "shuffle_partitions": 2, "watermark_delay": "0 seconds"},
            "structures": [{"strname": "MSGQ1", "size": 1000}],  # at its SIZE: OVFLWMAX 70 % is 1,400 elements
            "queues": [{"pattern": "1PAYROLL", "maxdepth": 1600}],  # its puts reach 1,500
        }
    )
    records = _fill(1500)
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    produce_activity(kafka_bootstrap, prefix, records)
    assert run(config, kafka_bootstrap, str(tmp_path / "ckpt"), available_now=True, spark=spark) == 0
    live = [r for t, r in outputs(kafka_bootstrap, prefix) if t == topics.ALERTS and r["type"] in WATCHED]
    want = [
        e.record
        for e in run_reference(records, config.monitor_settings(), structure_settings=config.structure_settings())
        if e.topic == topics.ALERTS and e.record["type"] in WATCHED
    ]

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        eta = r["eta"]
        eta = int(eta.timestamp() * 1000) if hasattr(eta, "timestamp") else eta
        ts = r["ts"]
        ts = int(ts.timestamp() * 1000) if hasattr(ts, "timestamp") else ts
        return (r["type"], r["state"], ts, eta, r["event_id"])

    assert sorted(map(key, live)) == sorted(map(key, want))
    fired = [r for r in map(key, live) if r[:2] == ("STRUCTURE_FILL_FORECAST", "FIRING")]
    entered = [r for r in map(key, live) if r[0] == "OVERFLOW_MODE_ENTERED"]
    assert fired and entered
    assert any(r[:2] == ("QUEUE_FILL_FORECAST", "FIRING") for r in map(key, live))
    assert fired[0][2] == T0 + 55 * MIN and fired[0][3] == T0 + 70 * MIN  # 15 minutes ahead, with its instant
    assert fired[0][2] < entered[0][2] <= fired[0][3]
