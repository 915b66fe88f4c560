"""What qmon's Grafana dashboard shows, as plain data: its template variables (``VARIABLES``) and its sections
(``SECTIONS``: a row title and its panels, each with its PromQL); ``qmon.app.dashboard`` builds the dashboard from them.

Every query uses only metrics ``qmon metrics`` serves (the metrics reference lists them) and only these
template variables:

* ``datasource``: the Prometheus data source (every panel and query names it);
* ``qmgr``, ``queue``, ``structure``: multi-value, with "All" as the regular expression ``.*``, always
  used with ``=~``, so a query with ``.*`` put in for each of them is a valid query over every series
  (which is how the tests evaluate them against a real Prometheus);
* Grafana's own ``$__rate_interval`` and ``$__range``.

Thresholds are drawn as dashed lines beside what they bound (a query with ``threshold``): a queue's QSVCINT
beside its service time, a structure's OVFLWMAX and FULLTHRESHOLD beside its usage.  Times to a threshold are
qmon's own forecasts (the instants the exporter serves, less ``time()``), not PromQL extrapolations.  What is
not on it, because the exporter does not serve it: a queue's MAXDEPTH and QDEPTHHI (only the instant a
QUEUE_FILL_FORECAST predicts), and which queues are in overflow (only how many).  The guide
(docs/guides/grafana.md) says the same to users.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: What "All" stands for in each query variable: a regular expression every value matches.
ALL = ".*"
#: The query variables: name -> (label, Prometheus query of their values).
VARIABLES = {
    "qmgr": ("Queue manager", "label_values(qmon_queue_depth, qmgr)"),
    "queue": ("Queue", 'label_values(qmon_queue_depth{qmgr=~"$qmgr"}, queue)'),
    "structure": ("CF structure", "label_values(qmon_structure_usage_ratio, structure)"),
}

Q = 'qmgr=~"$qmgr", queue=~"$queue"'  # a queue's series, as the variables select them
S = 'structure=~"$structure"'
#: The alert types about a structure (the alert catalogue lists them), for the structure alerts panel.
STRUCTURE_ALERTS = (
    "STRUCTURE_FILL_FORECAST|STRUCTURE_NEAR_FULL|STRUCTURE_FULL|OVERFLOW_MODE_ENTERED|OVERFLOW_STRUCTURE_FULL"
    "|QUEUE_PUTS_REJECTED"
)


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str = ""
    instant: bool = False  # a table's query: one value per series, at the end of the time range
    threshold: bool = False  # a threshold (QSVCINT, OVFLWMAX, ...): drawn dashed


@dataclass(frozen=True)
class Panel:
    """One panel: ``kind`` is timeseries, bars (a time series drawn as bars), stat, state (state timeline) or table."""

    kind: str
    title: str
    description: str
    queries: tuple[Query, ...]
    unit: str = "short"
    width: int = 12
    height: int = 8
    max: float | None = None
    step: bool = False  # a value that changes only at events: drawn as steps, not slopes
    mappings: dict[str, str] = field(default_factory=dict)  # value -> text (state timelines)


SECTIONS: tuple[tuple[str, tuple[Panel, ...]], ...] = (
    (
        "Overview",
        (
            Panel(
                "stat",
                "Alerts firing",
                "qmon's alert episodes firing now, of every type (qmon_alerts_firing).",
                (Query("count(qmon_alerts_firing) or vector(0)"),),
                width=6,
                height=4,
            ),
            Panel(
                "stat",
                "Queues stalled",
                "Queues with a QUEUE_STALLED alert firing: messages waiting longer than QSVCINT without a get.",
                (Query('count(qmon_alerts_firing{type="QUEUE_STALLED", subject=~"$queue"}) or vector(0)'),),
                width=6,
                height=4,
            ),
            Panel(
                "stat",
                "Structures in overflow mode",
                "Primary CF structures in overflow mode now (usage reached OVFLWMAX).",
                (Query(f"sum(qmon_structure_overflow_mode{{{S}}}) or vector(0)"),),
                width=6,
                height=4,
            ),
            Panel(
                "stat",
                "Since the job's last micro-batch",
                "Time since qmon's job finished a micro-batch; the QmonJobStopped rule pages above 5 minutes.",
                (Query("time() - qmon_last_batch_timestamp_seconds"),),
                unit="s",
                width=6,
                height=4,
            ),
            Panel(
                "table",
                "Alerts firing now",
                "Every alert episode firing: its type and subject (a structure, a queue or a journal).",
                (Query("qmon_alerts_firing", instant=True),),
                height=6,
            ),
            Panel(
                "timeseries",
                "Alerts firing by type",
                "How many episodes of each alert type fire, over time: qmon's fill forecasts "
                "(STRUCTURE_FILL_FORECAST, QUEUE_FILL_FORECAST) ahead of the alerts they foresee.",
                (Query("count by (type) (qmon_alerts_firing)", "{{type}}"),),
                height=6,
                step=True,
            ),
        ),
    ),
    (
        "Queues",
        (
            Panel(
                "timeseries",
                "Queue depth",
                "Messages on each queue as qmon accounts them, from the latest snapshot that named the queue.",
                (Query(f"qmon_queue_depth{{{Q}}}", "{{qmgr}} {{queue}}"),),
            ),
            Panel(
                "timeseries",
                "Service time",
                "MQ's service time in the queue's latest QSVCINT_HIGH or QSVCINT_OK event (how long the "
                "queue went without a get), and the queue's QSVCINT (dashed) from the same event: a service "
                "time above its QSVCINT is a QSVCINT_HIGH.",
                (
                    Query(f"qmon_queue_service_time_seconds{{{Q}}}", "{{qmgr}} {{queue}}"),
                    Query(f"qmon_queue_service_interval_seconds{{{Q}}}", "{{qmgr}} {{queue}} QSVCINT", threshold=True),
                ),
                unit="s",
                step=True,
            ),
            Panel(
                "bars",
                "Service interval events",
                "QSVCINT_HIGH (no get within QSVCINT of a put or a previous get) and QSVCINT_OK (a get within "
                "QSVCINT again) events raised, per queue.",
                (
                    Query(
                        f'sum by (qmgr, queue, type) (increase(qmon_queue_events_total{{{Q}, type=~"QSVCINT_HIGH|QSVCINT_OK"}}'
                        "[$__rate_interval]))",
                        "{{qmgr}} {{queue}} {{type}}",
                    ),
                ),
            ),
            Panel(
                "timeseries",
                "Oldest message age",
                "Age of the oldest message on each queue (MQ's MSGAGE), from the puts and gets qmon sees: it grows "
                "while a queue is not served. No line while a queue is empty, or while it holds messages whose puts "
                "qmon did not see (it started after them).",
                (Query(f"qmon_queue_oldest_message_age_seconds{{{Q}}}", "{{qmgr}} {{queue}}"),),
                unit="s",
            ),
            Panel(
                "timeseries",
                "Since the last put and get",
                "How long since the last put and the last get qmon saw on each queue (MQ's LPUTDATE/LPUTTIME and "
                "LGETDATE/LGETTIME): puts going on while the time since the last get grows is a consumer that "
                "stopped. No line until qmon has seen one.",
                (
                    Query(f"time() - qmon_queue_last_put_timestamp_seconds{{{Q}}}", "{{qmgr}} {{queue}} put"),
                    Query(f"time() - qmon_queue_last_get_timestamp_seconds{{{Q}}}", "{{qmgr}} {{queue}} get"),
                ),
                unit="s",
            ),
            Panel(
                "state",
                "Stalled queues",
                "QUEUE_STALLED alerts: a queue with messages on it and no get for longer than QSVCINT (MQ raises "
                "nothing when no put or get comes). The alert's series names the queue, not its queue manager.",
                (Query('qmon_alerts_firing{type="QUEUE_STALLED", subject=~"$queue"}', "{{subject}}"),),
                mappings={"1": "stalled"},
            ),
            Panel(
                "timeseries",
                "Time to MAXDEPTH or QDEPTHHI",
                "While a QUEUE_FILL_FORECAST fires for a queue: how long until its depth reaches MAXDEPTH, or "
                "QDEPTHHI where depth high events are enabled, at its trend (the instant qmon predicts, less now). "
                "No line while no forecast fires.",
                (Query(f"qmon_queue_fill_eta_timestamp_seconds{{{Q}}} - time()", "{{qmgr}} {{queue}}"),),
                unit="s",
            ),
            Panel(
                "state",
                "Queue fill forecasts",
                "QUEUE_FILL_FORECAST alerts: a queue whose depth is forecast to reach MAXDEPTH, or QDEPTHHI, within "
                "the forecast's horizon. The alert's series names the queue, not its queue manager.",
                (Query('qmon_alerts_firing{type="QUEUE_FILL_FORECAST", subject=~"$queue"}', "{{subject}}"),),
                mappings={"1": "forecast"},
            ),
        ),
    ),
    (
        "CF structures",
        (
            Panel(
                "timeseries",
                "Structure usage",
                "Data elements in use over capacity, with each primary structure's OVFLWMAX (overflow mode, or an "
                "alter) and FULLTHRESHOLD (STRUCTURE_NEAR_FULL) dashed. An overflow structure (OVFLWSTR) appears "
                "under its own name.",
                (
                    Query(f"qmon_structure_usage_ratio{{{S}}}", "{{structure}}"),
                    Query(f"qmon_structure_ovflwmax_ratio{{{S}}}", "{{structure}} OVFLWMAX", threshold=True),
                    Query(f"qmon_structure_fullthreshold_ratio{{{S}}}", "{{structure}} FULLTHRESHOLD", threshold=True),
                ),
                unit="percentunit",
                max=1,
            ),
            Panel(
                "state",
                "Overflow mode",
                "Whether each primary structure is in overflow mode (entered at OVFLWMAX).",
                (Query(f"qmon_structure_overflow_mode{{{S}}}", "{{structure}}"),),
                mappings={"0": "normal", "1": "overflow"},
            ),
            Panel(
                "timeseries",
                "Queues in overflow",
                "How many queues the overflow exit approved: moved to the overflow structure, or with puts rejected.",
                (Query(f"qmon_structure_queues_in_overflow{{{S}}}", "{{structure}}"),),
            ),
            Panel(
                "table",
                "Which queues are in overflow",
                "Each queue in overflow of a structure in overflow mode, from the structure's latest overflow "
                "selection (the OverflowCandidates records on qmon.events.overflow).",
                (Query(f"qmon_structure_queue_in_overflow{{{S}}}", instant=True),),
            ),
            Panel(
                "timeseries",
                "Time to OVFLWMAX and full",
                "How long until each structure's usage reaches OVFLWMAX, and full, at its trend: the instants qmon "
                "forecasts in the structure's latest snapshot, less now (an overflow structure's full under its own "
                "name). No line while a structure is not heading there. A structure publishes a snapshot only once "
                "used again, so a quiet one's line keeps falling: below 0, it stopped before getting there.",
                (
                    Query(f"qmon_structure_ovflwmax_eta_timestamp_seconds{{{S}}} - time()", "{{structure}} OVFLWMAX"),
                    Query(f"qmon_structure_full_eta_timestamp_seconds{{{S}}} - time()", "{{structure}} full"),
                ),
                unit="s",
            ),
            Panel(
                "timeseries",
                "Structure size",
                "Each structure's SIZE, after any alter (IMS raises a structure's size towards its maximum).",
                (Query(f"qmon_structure_size_bytes{{{S}}}", "{{structure}}"),),
                unit="bytes",
            ),
            Panel(
                "state",
                "Structure alerts",
                "Structure alerts firing: STRUCTURE_FILL_FORECAST (OVFLWMAX or full forecast within the horizon), "
                "STRUCTURE_NEAR_FULL (usage at FULLTHRESHOLD), STRUCTURE_FULL, OVERFLOW_MODE_ENTERED, "
                "OVERFLOW_STRUCTURE_FULL, QUEUE_PUTS_REJECTED.",
                (
                    Query(
                        f'qmon_alerts_firing{{type=~"{STRUCTURE_ALERTS}", subject=~"$structure"}}',
                        "{{type}} {{subject}}",
                    ),
                ),
                mappings={"1": "firing"},
            ),
        ),
    ),
    (
        "Dead letters",
        (
            Panel(
                "bars",
                "Dead letters by reason",
                "Records qmon put on its dead-letter topic, by reason (QMON_UNDECODABLE, QMON_INVALID_COMMAND, ...).",
                (Query("sum by (reason) (increase(qmon_dead_letters_total[$__rate_interval]))", "{{reason}}"),),
            ),
            Panel(
                "bars",
                "Dead letters by original topic",
                "The same records by the topic they were read from and the application that put them on the DLQ.",
                (
                    Query(
                        "sum by (origin, appl) (increase(qmon_dead_letters_total[$__rate_interval]))",
                        "{{origin}} ({{appl}})",
                    ),
                ),
            ),
            Panel(
                "table",
                "Dead letters in the time range",
                "How many dead letters of each reason, original topic and application arrived in the dashboard's "
                "time range (qmon dlq-handler --report gives the same by what the handler did with them).",
                (
                    Query(
                        "sum by (reason, origin, appl) (increase(qmon_dead_letters_total[$__range]))",
                        instant=True,
                    ),
                ),
            ),
            Panel(
                "timeseries",
                "Left on the DLQ by the handler",
                "Dead letters qmon dlq-handler has left on the DLQ: waiting for a retry, or ignored for good "
                "(no rule matched, ACTION(IGNORE), or every matching rule failed).",
                (
                    Query(
                        "sum by (state, reason, origin) (qmon_dead_letters_left)",
                        "{{state}} {{reason}} {{origin}}",
                    ),
                ),
            ),
        ),
    ),
    (
        "The job",
        (
            Panel(
                "timeseries",
                "Input lag",
                "Records of each input topic the job had not read when its latest micro-batch was planned.",
                (Query("sum by (topic) (qmon_input_lag_records)", "{{topic}}"),),
            ),
            Panel(
                "timeseries",
                "Input records per second",
                "Records the job read, per input topic.",
                (Query("sum by (topic) (rate(qmon_input_records_total[$__rate_interval]))", "{{topic}}"),),
                unit="rps",
            ),
            Panel(
                "timeseries",
                "Micro-batch duration",
                "How long the job's micro-batches take; an event reaches its topic up to two micro-batches after "
                "its input (the QmonEventsLate rule warns above 2.5 s at the 90th percentile).",
                tuple(
                    Query(
                        f"histogram_quantile({q}, sum by (le) (rate(qmon_batch_duration_seconds_bucket[$__rate_interval])))",
                        f"p{round(q * 100)}",
                    )
                    for q in (0.5, 0.9, 0.99)
                )
                + (
                    Query(
                        "rate(qmon_batch_duration_seconds_sum[$__rate_interval]) / "
                        "rate(qmon_batch_duration_seconds_count[$__rate_interval])",
                        "mean",
                    ),
                ),
                unit="s",
            ),
            Panel(
                "timeseries",
                "Records applied out of order",
                "Records that came later than job.max_lateness behind the other input partitions: applied at once, "
                "out of event-time order (the QmonRecordsOutOfOrder rule warns).",
                (Query("sum(increase(qmon_late_records_total[$__rate_interval]))", "late records"),),
            ),
            Panel(
                "timeseries",
                "State store",
                "Rows in the job's state store (one per unit: a queue shard or a structure) and the memory it "
                "reports using.",
                (Query("qmon_state_rows", "rows"), Query("qmon_state_memory_bytes", "memory")),
            ),
        ),
    ),
)
