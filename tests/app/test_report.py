"""``qmon report``'s renderings of one report (the recorded run of ``tests/core/test_service_report.py``): the
table on the terminal, CSV and JSON for spreadsheets and scripts, and the HTML page with a plot per chart."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from qmon.app import report as render
from qmon.core.service_report import build
from tests.core.test_service_report import SINCE, UNTIL
from tests.core.test_service_report import report as recorded

SINCE_ISO, UNTIL_ISO = "2025-01-10T00:00:00.000Z", "2025-01-10T08:00:00.000Z"


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (0, "0s"),
        (250, "250ms"),
        (59_999, "59s"),
        (3 * 60_000, "3m 00s"),
        (3_725_000, "1h 02m"),
        (8 * 3_600_000, "8h 00m"),
        (7 * 86_400_000 + 3_600_000, "7d 01h"),
    ],
)
def test_durations_read_at_a_glance(ms, text):
    assert render.duration(ms) == text


def rows_of(text: str, heading: str) -> list[list[str]]:
    """The rows of the table under ``heading`` (cells split on runs of two blanks and more)."""
    block = text.split(f"\n{heading}\n", 1)[1].split("\n\n", 1)[0]
    return [re.split(r"\s{2,}", line.strip()) for line in block.splitlines()]


def test_the_table_has_queues_structures_and_alert_episodes():
    text = render.text(recorded())
    lines = text.splitlines()
    assert lines[0] == "Service report from 2025-01-10 00:00:00Z to 2025-01-10 08:00:00Z (8h 00m)"
    assert "already open at --since count from --since" in lines[1]
    assert rows_of(text, "Queues: Queue Service Interval High and OK events") == [
        ["QUEUE", "HIGH EVENTS", "OK EVENTS", "NOT SERVED WITHIN QSVCINT", "SERVED WITHIN QSVCINT"],
        ["QM1/PAYROLL.IN", "2", "2", "1h 00m", "87.50%"],
        ["QM2/ORDERS", "1", "1", "1h 45m", "78.12%"],  # 78.125 rounded down
    ]
    assert rows_of(text, "Structures") == [
        ["STRUCTURE", "OVERFLOW MODE", "PEAK USAGE", "PEAK AT", "OVERFLOW STRUCTURE", "PEAK OVERFLOW USAGE"],
        ["MSGQ1", "45m 00s", "73.00%", "2025-01-10 04:05:00Z", "-", "-"],
        ["MSGQ2", "8h 00m", "100.00%", "2025-01-10 06:00:00Z", "OVFQ2", "30.00%"],
    ]
    assert rows_of(text, "Alert episodes") == [
        [
            "SUBJECT",
            "ALERT",
            "EPISODES",
            "OPEN AT SINCE",
            "OPEN AT UNTIL",
            "IN BREACH",
            "LONGEST",
            "RESOLVE MEDIAN",
            "RESOLVE MAX",
        ],  # fmt: skip
        ["QM1/PAYROLL.IN", "QUEUE_STALLED", "4", "1", "1", "20m 00s", "10m 00s", "4m 00s", "5m 00s"],
        ["MSGQ1", "OVERFLOW_MODE_ENTERED", "1", "0", "0", "45m 00s", "45m 00s", "45m 00s", "45m 00s"],
        ["MSGQ1", "QUEUE_PUTS_REJECTED", "2", "0", "0", "35m 00s", "35m 00s", "30m 00s", "35m 00s"],
        ["MSGQ2", "OVERFLOW_MODE_ENTERED", "1", "1", "1", "8h 00m", "8h 00m", "-", "-"],
        ["MSGQ2", "STRUCTURE_FULL", "1", "0", "1", "2h 00m", "2h 00m", "-", "-"],
    ]


def test_an_empty_report_says_so():
    text = render.text(build([], [], [], SINCE, UNTIL))
    assert text.splitlines()[-1] == "No alert episode, Queue Service Interval event or structure usage in the range."


def test_csv_one_row_per_alert_type_with_the_queues_and_structures_figures():
    rows = list(csv.reader(io.StringIO(render.csv_text(recorded()))))
    assert rows[0] == [
        "kind", "qmgr", "queue", "structure", "alert_type", "episodes", "open_at_since", "open_at_until",
        "in_breach_s", "longest_s", "resolved", "resolve_median_s", "resolve_max_s", "qsvcint_high_events",
        "qsvcint_ok_events", "not_served_within_qsvcint_s", "served_within_qsvcint_pct", "overflow_mode_s",
        "peak_usage_pct", "peak_usage_at", "overflow_structure", "peak_overflow_usage_pct",
        "peak_overflow_usage_at", "since", "until",
    ]  # fmt: skip
    at_0405, at_0600, at_0100 = "2025-01-10T04:05:00.000Z", "2025-01-10T06:00:00.000Z", "2025-01-10T01:00:00.000Z"
    no_alert, no_queue, no_structure = [""] * 8, [""] * 4, [""] * 6
    assert rows[1:] == [
        ["queue", "QM1", "PAYROLL.IN", "", "QUEUE_STALLED", "4", "1", "1", "1200", "600", "2", "240", "300",
         "2", "2", "3600", "87.5", *no_structure, SINCE_ISO, UNTIL_ISO],
        ["queue", "QM2", "ORDERS", "", "", *no_alert, "1", "1", "6300", "78.125", *no_structure, SINCE_ISO, UNTIL_ISO],
        ["structure", "", "", "MSGQ1", "OVERFLOW_MODE_ENTERED", "1", "0", "0", "2700", "2700", "1", "2700", "2700",
         *no_queue, "2700", "73.0", at_0405, "", "", "", SINCE_ISO, UNTIL_ISO],
        ["structure", "", "", "MSGQ1", "QUEUE_PUTS_REJECTED", "2", "0", "0", "2100", "2100", "2", "1800", "2100",
         *no_queue, "2700", "73.0", at_0405, "", "", "", SINCE_ISO, UNTIL_ISO],
        ["structure", "", "", "MSGQ2", "OVERFLOW_MODE_ENTERED", "1", "1", "1", "28800", "28800", "0", "", "",
         *no_queue, "28800", "100.0", at_0600, "OVFQ2", "30.0", at_0100, SINCE_ISO, UNTIL_ISO],
        ["structure", "", "", "MSGQ2", "STRUCTURE_FULL", "1", "0", "1", "7200", "7200", "0", "", "",
         *no_queue, "28800", "100.0", at_0600, "OVFQ2", "30.0", at_0100, SINCE_ISO, UNTIL_ISO],
    ]  # fmt: skip


def test_csv_seconds_keep_their_milliseconds():
    assert render.seconds(1_500) == "1.5" and render.seconds(1_001) == "1.001" and render.seconds(60_000) == "60"


def test_json_has_the_range_then_each_queue_and_structure_with_its_alerts_and_episodes():
    doc = json.loads(render.json_text(recorded()))
    assert list(doc) == ["since", "until", "since_ms", "until_ms", "range_ms", "queues", "structures"]
    assert (doc["since"], doc["until"], doc["range_ms"]) == (SINCE_ISO, UNTIL_ISO, 8 * 3_600_000)
    payroll, orders = doc["queues"]
    assert list(payroll) == ["qmgr", "queue", "alerts", "episodes", "service_interval"]
    assert payroll["alerts"] == [
        {
            "type": "QUEUE_STALLED",
            "episodes": 4,
            "open_at_since": 1,
            "open_at_until": 1,
            "in_breach_ms": 1_200_000,
            "longest_ms": 600_000,
            "resolved": 2,
            "resolve_median_ms": 240_000,
            "resolve_max_ms": 300_000,
        }
    ]
    assert payroll["episodes"][0] == {
        "alert_id": "st-0",
        "type": "QUEUE_STALLED",
        "start_ms": SINCE,
        "end_ms": SINCE + 120_000,
        "open_at_since": True,
        "open_at_until": False,
    }
    assert orders["service_interval"] == {
        "high_events": 1,
        "ok_events": 1,
        "not_served_ms": 6_300_000,
        "served_pct": 78.125,
        "periods": [[SINCE, SINCE + 2_700_000], [SINCE + 25_200_000, UNTIL]],
    }
    msgq1, msgq2 = doc["structures"]
    assert list(msgq1) == [
        "structure", "alerts", "episodes", "overflow_mode_ms", "overflow_mode_periods", "peak_usage_pct",
        "peak_usage_ms", "overflow_structure", "peak_overflow_usage_pct", "peak_overflow_usage_ms", "usage",
    ]  # fmt: skip
    assert msgq2["episodes"][0]["alert_id"] is None  # overflow mode known from snapshots only
    assert msgq1["usage"][0] == [SINCE + 4 * 3_600_000 - 10 * 60_000, 70.1]  # STRUCTURE_ALTERED at 03:50


def test_the_html_page_is_self_contained_with_an_svg_per_plot():
    r = recorded()
    titles = [title for title, _draw in render.plots(r)]
    assert titles == [
        "Served within QSVCINT, per queue",
        "MSGQ1: usage",
        "MSGQ2: usage",
        "Alert episodes",
    ]
    page = render.html(r)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count("<svg") == len(titles) == 4
    assert all(f"<figcaption>{t}</figcaption>" in page for t in titles)
    assert not re.search(r"<script|<link|<img|\bsrc=|url\(http", page)  # nothing fetched from anywhere
    assert "<td>QM1/PAYROLL.IN</td>" in page and "87.50%" in page


def test_an_empty_report_page_has_no_plot():
    page = render.html(build([], [], [], SINCE, UNTIL))
    assert "<svg" not in page and "No alert episode" in page
