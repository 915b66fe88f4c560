"""The exporter's model (qmon.core.metrics): output records -> metric families, series that come and go."""

from datetime import UTC, datetime

from qmon.core import topics
from qmon.core.metrics import BATCH_BUCKETS, Metrics

#: the scrape's time (Unix seconds)
NOW = 1_700_000_100.0


def samples(m: Metrics, name: str, now: float = NOW) -> dict:
    fam = next(f for f in m.families(now=now) if f.name == name)
    return dict(fam.samples)


def test_queue_depth_comes_from_snapshots_and_goes_when_the_shard_forgets_the_queue():
    m = Metrics()
    m.on_record(topics.SNAPSHOT, {"qmgr": "QM1", "queues": [{"queue": "A", "depth": 3}, {"queue": "B", "depth": 0}]})
    m.on_record(topics.PERFORMANCE, {"qmgr": "QM1", "queue": "B", "type": "QSVCINT_HIGH", "service_time_ms": 7500})
    assert samples(m, "qmon_queue_depth") == {("QM1", "A"): 3.0, ("QM1", "B"): 0.0}
    assert samples(m, "qmon_queue_service_time_seconds") == {("QM1", "B"): 7.5}
    assert samples(m, "qmon_queue_service_interval_seconds") == {}  # (an event without service_interval_ms)
    m.on_record(
        topics.PERFORMANCE,
        {"qmgr": "QM1", "queue": "B", "type": "QSVCINT_OK", "service_time_ms": 500, "service_interval_ms": 2000},
    )
    m.on_record(topics.PERFORMANCE, {"qmgr": "QM1", "queue": "B", "type": "QDEPTH_HIGH", "service_interval_ms": None})
    assert samples(m, "qmon_queue_service_time_seconds") == {("QM1", "B"): 0.5}
    assert samples(m, "qmon_queue_service_interval_seconds") == {("QM1", "B"): 2.0}
    assert samples(m, "qmon_queue_events") == {
        ("QM1", "B", "QSVCINT_HIGH"): 1.0,
        ("QM1", "B", "QSVCINT_OK"): 1.0,
        ("QM1", "B", "QDEPTH_HIGH"): 1.0,
    }
    m.on_record(topics.SNAPSHOT, {"qmgr": "QM1", "queues": [], "forgotten": ["B"]})
    assert samples(m, "qmon_queue_depth") == {("QM1", "A"): 3.0}
    assert samples(m, "qmon_queue_service_time_seconds") == {}
    assert samples(m, "qmon_queue_service_interval_seconds") == {}
    assert samples(m, "qmon_queue_events") == {}


def test_a_queue_s_oldest_message_age_at_the_scrape_and_its_last_put_and_get_none_where_the_snapshot_has_none():
    """The age is measured at each scrape from the oldest message's put time, so it grows while the queue does not
    change (a stalled queue publishes no snapshot); a queue with no oldest put (empty, or its oldest puts unseen) or
    no put or get seen has no sample, not 0."""
    t = 1_700_000_000_000
    m = Metrics()
    m.on_record(
        topics.SNAPSHOT,
        {
            "qmgr": "QM1",
            "queues": [
                {"queue": "A", "depth": 2, "oldest_message_put": t, "last_put": t + 30_000, "last_get": t + 40_500},
                {"queue": "B", "depth": 0, "oldest_message_put": None, "last_put": t + 1_000, "last_get": t + 2_000},
                {"queue": "C", "depth": 3, "oldest_message_put": None, "last_put": None, "last_get": None},
            ],
        },
    )
    assert samples(m, "qmon_queue_oldest_message_age_seconds") == {("QM1", "A"): 100.0}
    assert samples(m, "qmon_queue_oldest_message_age_seconds", now=NOW + 60) == {("QM1", "A"): 160.0}
    assert samples(m, "qmon_queue_oldest_message_age_seconds", now=NOW - 200) == {("QM1", "A"): 0.0}  # never below 0
    assert samples(m, "qmon_queue_last_put_timestamp_seconds") == {
        ("QM1", "A"): 1_700_000_030.0,
        ("QM1", "B"): 1_700_000_001.0,
    }
    assert samples(m, "qmon_queue_last_get_timestamp_seconds") == {
        ("QM1", "A"): 1_700_000_040.5,
        ("QM1", "B"): 1_700_000_002.0,
    }
    # A drained: its age goes with the next snapshot that names it; a snapshot without the fields (written with a
    # schema without them) gives none either
    m.on_record(topics.SNAPSHOT, {"qmgr": "QM1", "queues": [{"queue": "A", "depth": 0, "last_get": t + 50_000}]})
    assert samples(m, "qmon_queue_oldest_message_age_seconds") == {}
    assert samples(m, "qmon_queue_last_put_timestamp_seconds") == {("QM1", "B"): 1_700_000_001.0}
    assert samples(m, "qmon_queue_last_get_timestamp_seconds")[("QM1", "A")] == 1_700_000_050.0
    m.on_record(topics.SNAPSHOT, {"qmgr": "QM1", "queues": [], "forgotten": ["A", "B"]})
    assert samples(m, "qmon_queue_last_get_timestamp_seconds") == {}


def test_structure_gauges_primary_and_overflow_structure_under_its_own_name():
    m = Metrics()
    m.on_record(
        topics.SNAPSHOT,
        {
            "structure": "MSGQ1",
            "size_kb": 200,
            "capacity_elements": 400,
            "used_elements": 300,
            "overflow_structure": "OVFQ1",
            "overflow_size_kb": 100,
            "overflow_capacity_elements": 200,
            "overflow_used_elements": 50,
            "overflow_mode": True,
            "queues_in_overflow": 2,
        },
    )
    assert samples(m, "qmon_structure_usage_ratio") == {("MSGQ1",): 0.75, ("OVFQ1",): 0.25}
    assert samples(m, "qmon_structure_size_bytes") == {("MSGQ1",): 204800.0, ("OVFQ1",): 102400.0}
    assert samples(m, "qmon_structure_overflow_mode") == {("MSGQ1",): 1.0}
    assert samples(m, "qmon_structure_queues_in_overflow") == {("MSGQ1",): 2.0}
    # a snapshot written without thresholds or forecasts (a schema without the fields): none of those series
    for name in (
        "qmon_structure_ovflwmax_ratio",
        "qmon_structure_fullthreshold_ratio",
        "qmon_structure_ovflwmax_eta_timestamp_seconds",
        "qmon_structure_full_eta_timestamp_seconds",
    ):
        assert samples(m, name) == {}, name


def test_the_queues_in_overflow_by_name_from_the_latest_selection_until_overflow_mode_ends():
    m = Metrics()

    def selection(*candidates: tuple[str, str, bool]) -> dict:
        return {
            "structure": "MSGQ1",
            "candidates": [{"queue": q, "elements": 10, "decision": d, "in_overflow": i} for q, d, i in candidates],
        }

    m.on_record(topics.OVERFLOW, selection(("1KEEPME", "reject", False), ("1PAYROLL", "approve", False)))
    assert samples(m, "qmon_structure_queue_in_overflow") == {("MSGQ1", "1PAYROLL"): 1.0}
    # the next scan: the queue already there stays, another is approved
    m.on_record(topics.OVERFLOW, selection(("1PAYROLL", "approve", True), ("2ORDERS", "approve", False)))
    assert samples(m, "qmon_structure_queue_in_overflow") == {
        ("MSGQ1", "1PAYROLL"): 1.0,
        ("MSGQ1", "2ORDERS"): 1.0,
    }
    still = {"structure": "MSGQ1", "capacity_elements": 400, "used_elements": 300, "overflow_mode": True}
    m.on_record(topics.SNAPSHOT, still)
    assert len(samples(m, "qmon_structure_queue_in_overflow")) == 2
    m.on_record(topics.SNAPSHOT, still | {"overflow_mode": False})
    assert samples(m, "qmon_structure_queue_in_overflow") == {}


def test_a_structure_s_thresholds_and_the_instants_its_trend_reaches_them():
    """OVFLWMAX and FULLTHRESHOLD as ratios beside usage; qmon's forecasts (the snapshot's etas, Avro-decoded as
    datetimes) as Unix times, the overflow structure's full under its own name; a null eta is no sample."""
    m = Metrics()
    snapshot = {
        "structure": "MSGQ1",
        "size_kb": 200,
        "capacity_elements": 400,
        "used_elements": 200,
        "overflow_structure": "OVFQ1",
        "overflow_size_kb": 100,
        "overflow_capacity_elements": 200,
        "overflow_used_elements": 0,
        "ovflwmax": 70,
        "fullthreshold": 85,
        "ovflwmax_eta": 1_700_000_700_000,
        "full_eta": datetime(2023, 11, 14, 22, 25, tzinfo=UTC),
        "overflow_full_eta": 1_700_003_000_500,
    }
    m.on_record(topics.SNAPSHOT, snapshot)
    assert samples(m, "qmon_structure_ovflwmax_ratio") == {("MSGQ1",): 0.7}
    assert samples(m, "qmon_structure_fullthreshold_ratio") == {("MSGQ1",): 0.85}
    assert samples(m, "qmon_structure_ovflwmax_eta_timestamp_seconds") == {("MSGQ1",): 1_700_000_700.0}
    assert samples(m, "qmon_structure_full_eta_timestamp_seconds") == {
        ("MSGQ1",): 1_700_000_700.0,
        ("OVFQ1",): 1_700_003_000.5,
    }
    # no longer heading there, and a resource structure (no OVFLWMAX): the series go with the next snapshot
    m.on_record(topics.SNAPSHOT, {**snapshot, "ovflwmax": None, "ovflwmax_eta": None, "overflow_full_eta": None})
    assert samples(m, "qmon_structure_ovflwmax_ratio") == {}
    assert samples(m, "qmon_structure_ovflwmax_eta_timestamp_seconds") == {}
    assert samples(m, "qmon_structure_full_eta_timestamp_seconds") == {("MSGQ1",): 1_700_000_700.0}


def alert(aid, state, type_="QUEUE_STALLED", subject="PAYROLL"):
    return {"alert_id": aid, "state": state, "type": type_, "subject": subject}


def test_an_alert_is_firing_until_every_episode_of_it_is_resolved():
    m = Metrics()
    m.on_record(topics.ALERTS, alert("a1", "FIRING"))
    m.on_record(topics.ALERTS, alert("a2", "FIRING"))
    m.on_record(topics.ALERTS, alert("a1", "RESOLVED"))
    assert samples(m, "qmon_alerts_firing") == {("QUEUE_STALLED", "PAYROLL"): 1.0}
    m.on_record(topics.ALERTS, alert("a2", "RESOLVED"))
    assert samples(m, "qmon_alerts_firing") == {}
    m.on_record(topics.ALERTS, alert("a3", "INFO", "STRUCTURE_UNKNOWN", "X"))
    assert samples(m, "qmon_alerts_firing") == {}


def test_a_firing_queue_fill_forecast_gives_its_queue_s_eta_until_it_resolves():
    """The earliest eta of the queue's FIRING QUEUE_FILL_FORECAST episodes (QDEPTHHI comes before MAXDEPTH);
    a RESOLVED record carries none, and ends its episode's."""

    def forecast(aid, state, eta=None, queue="PAYROLL.IN"):
        return {**alert(aid, state, "QUEUE_FILL_FORECAST", queue), "qmgr": "QM1", "queue": queue, "eta": eta}

    m = Metrics()
    m.on_record(topics.ALERTS, forecast("max", "FIRING", datetime(2023, 11, 14, 22, 30, tzinfo=UTC)))
    m.on_record(topics.ALERTS, forecast("high", "FIRING", 1_700_000_400_000))
    m.on_record(topics.ALERTS, forecast("other", "FIRING", 1_700_000_900_000, queue="B"))
    m.on_record(topics.ALERTS, {**alert("s", "FIRING", "STRUCTURE_FILL_FORECAST", "MSGQ1"), "eta": 1_700_000_500_000})
    assert samples(m, "qmon_queue_fill_eta_timestamp_seconds") == {
        ("QM1", "PAYROLL.IN"): 1_700_000_400.0,
        ("QM1", "B"): 1_700_000_900.0,
    }
    m.on_record(topics.ALERTS, forecast("high", "RESOLVED"))
    m.on_record(topics.ALERTS, forecast("other", "RESOLVED"))
    assert samples(m, "qmon_queue_fill_eta_timestamp_seconds") == {("QM1", "PAYROLL.IN"): 1_700_001_000.0}
    m.on_record(topics.ALERTS, forecast("max", "RESOLVED"))
    assert samples(m, "qmon_queue_fill_eta_timestamp_seconds") == {}


def dead(name, origin="qmon.activity"):
    return {"reason": 65537, "reason_name": name, "dest_topic": origin, "put_appl_name": "qmon"}


def test_dead_letters_count_by_reason_original_topic_and_application():
    m = Metrics()
    for name in ("QMON_UNDECODABLE", "QMON_UNDECODABLE", "QMON_MISSING_FIELD"):
        m.on_record(topics.DLQ, dead(name))
    m.on_record(topics.DLQ, dead("QMON_INVALID_COMMAND", "qmon.control"))
    assert samples(m, "qmon_dead_letters") == {
        ("QMON_UNDECODABLE", "qmon.activity", "qmon"): 2.0,
        ("QMON_MISSING_FIELD", "qmon.activity", "qmon"): 1.0,
        ("QMON_INVALID_COMMAND", "qmon.control", "qmon"): 1.0,
    }


def test_dead_letters_left_follow_the_handlers_ledger_entries_and_tombstones():
    m = Metrics()
    header = {
        "reason": 65537,
        "reason_name": "QMON_UNDECODABLE",
        "dest_topic": "qmon.activity",
        "put_appl_name": "qmon",
    }
    m.on_ledger("0/1", {"state": "waiting", "header": header})
    m.on_ledger("0/2", {"state": "ignored", "header": header})
    m.on_ledger("0/3", {"state": "ignored", "header": header})
    m.on_ledger("0/4", {"header": None})  # not a DeadLetter, and an entry written without a state: ignored
    assert samples(m, "qmon_dead_letters_left") == {
        ("waiting", "QMON_UNDECODABLE", "qmon.activity", "qmon"): 1.0,
        ("ignored", "QMON_UNDECODABLE", "qmon.activity", "qmon"): 2.0,
        ("ignored", "", "", ""): 1.0,
    }
    m.on_ledger("0/1", None)  # forwarded: its entry is deleted
    m.on_ledger("0/2", {"state": "waiting", "header": header})  # planned again at a restart
    m.on_ledger("0/4", None)
    assert samples(m, "qmon_dead_letters_left") == {
        ("waiting", "QMON_UNDECODABLE", "qmon.activity", "qmon"): 1.0,
        ("ignored", "QMON_UNDECODABLE", "qmon.activity", "qmon"): 1.0,
    }


def progress(batch, duration_ms, rows, end, latest, ts=1_700_000_000_000):
    return {
        "query": "qmon",
        "batch_id": batch,
        "ts": ts,
        "duration_ms": duration_ms,
        "input_rows": rows,
        "input_topics": [{"topic": "qmon.activity", "rows": rows}],
        "inputs": [{"topic": "qmon.activity", "partition": 0, "end_offset": end, "latest_offset": latest}],
        "state_rows": 18,
        "state_memory_bytes": 4096,
    }


def test_job_health_from_progress_a_batch_run_again_counted_once():
    m = Metrics()
    m.on_record(topics.PROGRESS, progress(0, 400, 100, 100, 150))
    m.on_record(topics.PROGRESS, progress(1, 1500, 50, 150, 150))
    m.on_record(topics.PROGRESS, progress(1, 1500, 50, 150, 150))  # after a restart
    assert samples(m, "qmon_input_records") == {("qmon.activity",): 150.0}
    assert samples(m, "qmon_input_lag_records") == {("qmon.activity", "0"): 0.0}
    ((_, (buckets, count, total)),) = next(
        f for f in m.families(now=NOW) if f.name == "qmon_batch_duration_seconds"
    ).samples
    assert count == 2 and total == 1.9
    assert dict(buckets)[0.5] == 1 and dict(buckets)[2.0] == 2 and dict(buckets)[float("inf")] == 2
    assert len(buckets) == len(BATCH_BUCKETS) + 1
    assert samples(m, "qmon_state_rows") == {(): 18.0}
    assert samples(m, "qmon_last_batch_timestamp_seconds") == {(): 1_700_000_001.5}


def test_a_spark_progress_report_becomes_a_query_progress_record():
    from qmon.connectors import avro
    from qmon.core.progress import progress_record

    report = {
        "id": "q-1",
        "runId": "r-1",
        "name": "qmon",
        "timestamp": "2026-11-23T10:00:00.250Z",
        "batchId": 7,
        "numInputRows": 30,
        "durationMs": {"triggerExecution": 812, "addBatch": 600},
        "stateOperators": [{"numRowsTotal": 18, "memoryUsedBytes": 1000}],
        "observedMetrics": {"qmon_order": {"late_records": 3}},
        "sources": [
            {
                "description": "KafkaV2[Subscribe[qmon.activity]]",
                "startOffset": None,  # the first batch
                "endOffset": '{"qmon.activity":{"1":20,"0":10}}',
                "latestOffset": '{"qmon.activity":{"0":15,"1":20}}',
                "numInputRows": 30,
            }
        ],
    }
    rec = progress_record(report)
    assert rec["ts"] == 1_795_428_000_250 and rec["batch_id"] == 7 and rec["duration_ms"] == 812
    assert rec["input_topics"] == [{"topic": "qmon.activity", "rows": 30}]
    assert [(i["partition"], i["end_offset"], i["latest_offset"]) for i in rec["inputs"]] == [(0, 10, 15), (1, 20, 20)]
    assert (rec["state_rows"], rec["state_memory_bytes"], rec["late_records"]) == (18, 1000, 3)
    assert progress_record({**report, "observedMetrics": {}})["late_records"] is None
    avro.encode("QueryProgress", rec)  # the record its schema describes
    m = Metrics()
    m.on_record(topics.PROGRESS, avro.decode("QueryProgress", avro.encode("QueryProgress", rec)))
    assert samples(m, "qmon_input_lag_records") == {("qmon.activity", "0"): 5.0, ("qmon.activity", "1"): 0.0}
    assert samples(m, "qmon_input_records") == {("qmon.activity",): 30.0}
    assert samples(m, "qmon_late_records") == {(): 3.0}


def test_a_shared_queue_s_series_are_under_its_group_whichever_member_raised_its_events():
    """A queue-sharing group's snapshot names the group as its qmgr; the events of its shared queue, each naming
    the member that raised it, count under the group too, and go with the queue."""
    m = Metrics()
    m.on_record(topics.SNAPSHOT, {"qmgr": "QSG1", "qsg": "QSG1", "queues": [{"queue": "PAY.IN", "depth": 2}]})
    for qmgr in ("QM1", "QM2"):
        rec = {"qmgr": qmgr, "qsg": "QSG1", "queue": "PAY.IN", "type": "QSVCINT_HIGH", "service_time_ms": 2000}
        m.on_record(topics.PERFORMANCE, rec)
    assert samples(m, "qmon_queue_depth") == {("QSG1", "PAY.IN"): 2.0}
    assert samples(m, "qmon_queue_events") == {("QSG1", "PAY.IN", "QSVCINT_HIGH"): 2.0}
    m.on_record(topics.SNAPSHOT, {"qmgr": "QSG1", "qsg": "QSG1", "queues": [], "forgotten": ["PAY.IN"]})
    assert samples(m, "qmon_queue_events") == {} and samples(m, "qmon_queue_service_time_seconds") == {}
