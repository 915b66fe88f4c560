"""``qmon report`` through the real broker: Alert, PerformanceEvent and Snapshot records put on the output
topics (two partitions each, under a prefix of the test's own) are read back over a time range by time
(``offsets_for_times``) to the end offsets, and give the figures worked out by hand in
``test_reportreader.py``; reading commits nothing, so a second report gives the same."""

from __future__ import annotations

import csv
import io
import json
import time
import uuid

import pytest

from qmon.app import cli
from qmon.connectors import reportreader
from qmon.connectors.clients import produce_rows
from qmon.connectors.kafka import ensure_topics
from qmon.core import topics
from qmon.core.records import iso
from tests.connectors.test_reportreader import MIN, check, run_records

pytestmark = [pytest.mark.kafka]


def test_the_report_reads_the_output_topics_over_a_time_range(kafka_bootstrap, tmp_path, capsys):
    prefix = f"r{uuid.uuid4().hex[:8]}"
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    until = int(time.time() * 1000)
    since = until - 60 * MIN
    produce_rows(
        kafka_bootstrap,
        [
            (topics.physical(logical, prefix), key, value)
            for logical, rows in run_records(since).items()
            for key, value in rows
        ],
    )
    cfg = tmp_path / "qmon.yaml"
    cfg.write_text(f"kafka:\n  topic_prefix: {prefix}\n")
    argv = [
        "report",
        "--config",
        str(cfg),
        "--bootstrap",
        kafka_bootstrap,
        "--since",
        iso(since),
        "--until",
        iso(until),
    ]

    assert cli.main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["since_ms"], doc["until_ms"]) == (since, until)
    (payroll,) = doc["queues"]
    assert (payroll["qmgr"], payroll["queue"], payroll["service_interval"]["served_pct"]) == ("QM1", "PAYROLL.IN", 87.5)
    assert [(a["type"], a["episodes"], a["in_breach_ms"]) for a in payroll["alerts"]] == [
        ("QUEUE_STALLED", 4, 15 * MIN)
    ]
    (msgq1,) = doc["structures"]
    assert (msgq1["overflow_mode_ms"], msgq1["peak_usage_pct"]) == (20 * MIN, 75.0)

    assert cli.main([*argv, "--csv", "--queue", "QM1/*"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [
        (r["kind"], r["queue"], r["alert_type"], r["in_breach_s"], r["served_within_qsvcint_pct"]) for r in rows
    ] == [("queue", "PAYROLL.IN", "QUEUE_STALLED", "900", "87.5")]

    page = tmp_path / "report.html"
    assert cli.main([*argv, "--html", str(page)]) == 0
    assert page.read_text().count("<svg") == 3  # served within QSVCINT, MSGQ1's usage, the episodes

    # nothing was committed or consumed: the same figures again, straight from the reader
    check(reportreader.read(kafka_bootstrap, None, prefix=prefix, since_ms=since, until_ms=until), since)
