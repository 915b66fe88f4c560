"""The Grafana dashboard against a real Prometheus (Debian package; skipped with the reason when it is not
installed).  Grafana's server cannot be installed here, so the check is what Grafana would ask: the job runs
over a workload that gives every panel something to show (a service interval breached and met again, a queue
left stalled, a structure altered into overflow mode, another filling towards full, a third and its queue filling
steadily, so that qmon forecasts when they reach their thresholds and a QUEUE_FILL_FORECAST fires, dead
letters), the DLQ
handler leaves the dead letters on the DLQ, ``qmon metrics`` serves it all and Prometheus scrapes it; then every
panel's query, with "All" (``.*``) for each variable, must parse and return series through Prometheus' HTTP
API, and every variable must have values."""

from __future__ import annotations

import time
import urllib.error
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from qmon.app.exporter import Exporter
from qmon.connectors import avro
from qmon.connectors.clients import produce_rows, send_commands
from qmon.connectors.dlqhandler import Handler
from qmon.connectors.kafka import ensure_topics
from qmon.core import topics
from qmon.core.config import Config
from qmon.core.dlqrules import parse_rules
from qmon.streaming.job import run
from tests import dashboards
from tests.conftest import assert_eventually
from tests.e2e.test_job_kafka import T0, activity
from tests.servers import http_json, prometheus

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def config_for(prefix: str) -> Config:
    return Config.model_validate(
        {
            "kafka": {"topic_prefix": prefix, "partitions": 2},
            "job": {"queue_shards": 2, "shuffle_partitions": 2, "watermark_delay": "0 seconds"},
            "monitor": {"snapshot_interval": "1 second"},
            # 1GROWING's MAXDEPTH: its steady fill (second run) reaches it within the forecast's 15 minutes
            "queues": [{"pattern": "1GROWING", "maxdepth": 40}],
            "structures": [
                # altered, then into overflow mode with its overflow structure (as in test_job_kafka)
                {"strname": "MSGQ1", "size": 20, "initsize": 10, "ovflwstr": "OVFQ1", "ovflwsize": 20},
                # 10 KB: 20 data elements of one 512-byte message each; filled to 50 %, then to 85 % (NEAR_FULL)
                {"strname": "MSGQ2", "size": 10, "ovflwmax": 100, "fullthreshold": 80, "clear_hold": "0 seconds"},
                # 40 KB: 80 data elements; filled by one 512-byte message every 30 s (a sample of the 15-minute
                # forecast each): its snapshot says when it reaches OVFLWMAX (70 %) and full
                {"strname": "MSGQ3", "size": 40},
            ],
        }
    )


def first_run_records() -> list[dict[str, Any]]:
    recs = [
        # QSVCINT 1 s: no get for 4 s after the put at 1 s (QSVCINT_HIGH at 5 s), a get within 1 s at 7 s (QSVCINT_OK)
        activity(1, "PUT", 1_000, "PAYROLL.IN"),
        activity(2, "PUT", 5_000, "PAYROLL.IN"),
        activity(3, "GET", 6_000, "PAYROLL.IN"),
        activity(4, "GET", 7_000, "PAYROLL.IN"),
        # never got: QUEUE_STALLED fires at the second put, and stays firing
        activity(1, "PUT", 1_000, "STALLED.Q"),
        activity(2, "PUT", 5_000, "STALLED.Q"),
    ]
    recs += [activity(i, "PUT", i, "1KEEPME", "IMSA", structure="MSGQ1", msg_bytes=512) for i in range(14)]
    recs += [activity(100 + i, "PUT", 100 + i, "1PAYROLL", "IMSA", structure="MSGQ1", msg_bytes=1024) for i in range(7)]
    recs += [activity(200 + i, "PUT", 200 + i, "1FILLING", "IMSB", structure="MSGQ2", msg_bytes=512) for i in range(10)]
    return sorted(recs, key=lambda r: r["ts"])


def second_run_records() -> list[dict[str, Any]]:
    recs = [
        activity(300 + i, "PUT", 20_000 + i, "1FILLING", "IMSB", structure="MSGQ2", msg_bytes=512) for i in range(7)
    ]
    # 20 puts 30 s apart (10 minutes of event time, read at once): 1GROWING at 20 of its MAXDEPTH 40 with a
    # QUEUE_FILL_FORECAST firing (it resolves only once the job's clock has run minutes past the last put), MSGQ3
    # at 25 % and rising
    recs += [
        activity(400 + i, "PUT", 30_000 + i * 30_000, "1GROWING", "IMSC", structure="MSGQ3", msg_bytes=512)
        for i in range(20)
    ]
    return sorted(recs, key=lambda r: r["ts"])


def produce_activity(bootstrap: str, prefix: str, records: list[Any]) -> None:
    """Activity records (or raw bytes) to the activity topic, in the order given (one partition)."""
    topic = topics.physical(topics.ACTIVITY, prefix)
    rows = [(topic, b"qmon", r if isinstance(r, bytes) else avro.encode("QueueActivity", r)) for r in records]
    produce_rows(bootstrap, rows)


def evaluate(url: str, expr: str) -> tuple[bool, str]:
    """Whether Prometheus evaluates ``expr`` now to at least one series, and what it said."""
    try:
        answer = http_json(url + "/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
    except urllib.error.HTTPError as exc:  # a query Prometheus cannot parse: 400 with its error
        return False, f"HTTP {exc.code}: {exc.read().decode(errors='replace')[:300]}"
    result = answer["data"]["result"] if answer.get("status") == "success" else []
    return bool(result), f"{len(result)} series" if result else f"no series ({answer.get('status')})"


def label_values(url: str, selector: str, label: str) -> list[str]:
    query = urllib.parse.urlencode({"match[]": selector})
    return http_json(f"{url}/api/v1/label/{label}/values?{query}")["data"]


def test_every_panel_query_and_variable_returns_series_from_prometheus_scraping_qmon(
    kafka_bootstrap, spark, prefix, tmp_path: Path
):
    config = config_for(prefix)
    ensure_topics(kafka_bootstrap, 2, prefix=prefix)
    send_commands(
        kafka_bootstrap,
        "QM1",
        [
            "ALTER QMGR PERFMEV(ENABLED)",
            "ALTER QLOCAL(PAYROLL.IN) QSVCINT(1000) QSVCIEV(HIGH)",
            "ALTER QLOCAL(STALLED.Q) QSVCINT(1000) QSVCIEV(HIGH)",
            "DROP EVERYTHING",  # invalid: a QMON_INVALID_COMMAND dead letter
        ],
        ts=T0,
        prefix=prefix,
    )
    produce_activity(kafka_bootstrap, prefix, [*first_run_records(), b"\xff" * 40])  # + QMON_UNDECODABLE
    assert run(config, kafka_bootstrap, str(tmp_path / "ckpt"), available_now=True, spark=spark) == 0
    # the DLQ handler leaves every dead letter on the DLQ: its ledger feeds qmon_dead_letters_left
    dlq = topics.physical(topics.DLQ, prefix)
    table = parse_rules(f"INPUTQ({dlq}) WAIT(NO)\nACTION(IGNORE)\n")
    totals = Handler(kafka_bootstrap, table, prefix=prefix, group=f"{prefix}-handler", printer=lambda _l: None).run()
    assert totals.ignored >= 2, totals

    exporter = Exporter(kafka_bootstrap, prefix=prefix)
    port = exporter.serve(0, "127.0.0.1")
    exporter.start()
    prom = prometheus(tmp_path / "prometheus", port).start()
    try:

        def value(expr: str) -> float | None:
            url = prom.url + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
            result = http_json(url)["data"]["result"]
            return float(result[0]["value"][1]) if result else None

        assert_eventually(lambda: value('qmon_structure_usage_ratio{structure="MSGQ2"}') == 0.5, timeout=90)
        assert_eventually(lambda: value("sum(qmon_dead_letters_left)"), timeout=60)
        produce_activity(kafka_bootstrap, prefix, second_run_records())
        assert run(config, kafka_bootstrap, str(tmp_path / "ckpt"), available_now=True, spark=spark) == 0
        assert_eventually(lambda: value('qmon_structure_usage_ratio{structure="MSGQ2"}') == 0.85, timeout=90)
        # qmon's forecasts: MSGQ3's snapshot says when it reaches OVFLWMAX and full, 1GROWING's forecast fires
        assert_eventually(lambda: value('qmon_structure_full_eta_timestamp_seconds{structure="MSGQ3"}'), timeout=60)
        assert_eventually(lambda: value('qmon_queue_fill_eta_timestamp_seconds{queue="1GROWING"}'), timeout=60)

        d = dashboards.load()
        expressions = [(f"{title!r} ({ref})", dashboards.substituted(e, d)) for title, ref, e in dashboards.queries(d)]
        assert len(expressions) >= 20

        def empty() -> list[str]:
            out = []
            for where, expr in expressions:
                ok, said = evaluate(prom.url, expr)
                if not ok:
                    out.append(f"{where}: {expr} -> {said}")
            return out

        # rates need two scrapes in their window: give every query its chance, then name those still empty
        deadline = time.monotonic() + 60
        missing = empty()
        while missing and time.monotonic() < deadline:
            time.sleep(2)
            missing = empty()
        assert not missing, "panels whose query returns no series:\n" + "\n".join(missing)

        for name, v in dashboards.template_variables(d).items():
            if v["type"] != "query":
                continue
            selector, label = dashboards.label_values(v["query"])
            values = label_values(prom.url, dashboards.substituted(selector, d), label)
            assert values, f"variable {name}: {v['query']} has no values"
        assert "QM1" in label_values(prom.url, "qmon_queue_depth", "qmgr")
        # the shipped rules load and evaluate
        groups = http_json(prom.url + "/api/v1/rules")["data"]["groups"]
        assert {g["name"] for g in groups} == {"qmon-recording", "qmon-alerts"}
        assert all(r["health"] in ("ok", "unknown") for g in groups for r in g["rules"])
        assert {"MSGQ1", "MSGQ2", "MSGQ3"} <= set(label_values(prom.url, "qmon_structure_usage_ratio", "structure"))
        # the thresholds drawn on the usage, from the snapshots; OVFLWMAX (70 %) comes before full
        assert (
            value('qmon_structure_ovflwmax_ratio{structure="MSGQ2"}'),
            value('qmon_structure_fullthreshold_ratio{structure="MSGQ2"}'),
        ) == (1.0, 0.8)
        ovflwmax_eta = value('qmon_structure_ovflwmax_eta_timestamp_seconds{structure="MSGQ3"}')
        assert ovflwmax_eta is not None and ovflwmax_eta < (
            value('qmon_structure_full_eta_timestamp_seconds{structure="MSGQ3"}') or 0
        )
    finally:
        prom.stop()
        exporter.stop()
