"""``qmon run``: the streaming job from Kafka to Kafka."""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from qmon.connectors.kafka import end_offsets, ensure_topics, spark_options
from qmon.core import topics
from qmon.core.config import Config, duration_ms

logger = logging.getLogger(__name__)


def start_query(
    spark: Any,
    config: Config,
    bootstrap: str,
    checkpoint: str,
    *,
    available_now: bool = False,
    query_name: str = "qmon",
    publish_progress: bool = True,
    schema_ids: Iterable[int] = (),
) -> Any:
    """Build and start the query; returns the StreamingQuery (its progress published by a driver thread).

    With ``kafka.schema_registry_url``, the input topics' writer schemas are looked up first (every id of each
    topic's value subject, and ``schema_ids``: ids met since this process started), and qmon's record of each
    output topic is registered under the topic's value subject, its id written before every output value
    (``streaming.writer_schemas``).  Raises the registry's ``RegistryError`` when it cannot answer."""
    from qmon.connectors import registry
    from qmon.streaming import writer_schemas
    from qmon.streaming.pipeline import build
    from qmon.streaming.sink import kafka_sink
    from qmon.streaming.source import sources
    from qmon.streaming.spark import checkpoint_fs
    from qmon.streaming.units import placement

    client = registry.from_config(config.kafka)
    plans = writer_schemas.plan(client, config.kafka.topic_prefix, schema_ids) if client is not None else None
    out_ids = writer_schemas.output_ids(client, config.kafka.topic_prefix) if client is not None else {}
    # a new checkpoint takes the shuffle partitions of the session at its first batch and keeps them
    spark.conf.set("spark.sql.shuffle.partitions", str(config.job.shuffle_partitions))
    fs = checkpoint_fs(spark, checkpoint, config.job.checkpoint_fs)
    logger.info("qmon job: checkpoint %s on the %s local file system", checkpoint, fs)
    kafka = spark_options(bootstrap, config.kafka.security)

    raw, names, read_trace = sources(spark, config, bootstrap, checkpoint)
    placed = placement(
        spark,
        checkpoint,
        [s.strname for s in config.structures],
        config.job.queue_units,
        config.job.queue_shards,
        queue_sharing_groups=bool(config.qsgs),
    )
    out = build(
        raw,
        settings=config.monitor_settings(),
        structure_settings=config.structure_settings(),
        shards=placed.queue_shards,
        watermark_delay=config.job.watermark_delay,
        ttl_ms=duration_ms(config.monitor.queue_ttl),
        prefix=config.kafka.topic_prefix,
        structure_buckets=placed.structures,
        queue_units=placed.queue_units,
        input_tasks=config.job.input_tasks,
        dedup_window_ms=duration_ms(config.monitor.dedup_window),
        mq_trace=config.mq_trace.settings() if read_trace else None,
        max_lateness_ms=duration_ms(config.job.max_lateness),
        # a run that stops where the input ends now: a partition read to its end holds nothing back
        ends=end_offsets(bootstrap, sorted(names), config.kafka.security) if available_now else None,
        writer_plans=plans,
    )
    trigger_ms = None if available_now else duration_ms(config.job.trigger)
    query = kafka_sink(out, out_ids, kafka, checkpoint, query_name, trigger_ms)
    if publish_progress:
        progress = out_ids.get(topics.physical(topics.PROGRESS, config.kafka.topic_prefix))
        ProgressPublisher(spark, bootstrap, config, schema_id=progress).attach(query)
    return query


class ProgressListener:
    """Each progress report of one run of a query, handed to ``on_report`` once, as a dict, when its batch
    ends; ``on_end`` when the run terminates.

    A py4j listener that asks the JVM for each report's JSON in one call.  (PySpark's own
    ``StreamingQueryListener`` builds every event field by field, dozens of py4j calls per report, and
    polling ``recentProgress`` renders every retained report each time: either takes a noticeable share of
    the cores the job has.)  A failing callback is logged, never
    raised into Spark's listener bus."""

    def __init__(self, spark: Any, on_report: Any, on_end: Any = None):
        self.spark, self.on_report, self.on_end = spark, on_report, on_end
        self.run_id: str | None = None
        self.jlistener: Any = None
        self.last_batch = -1
        self.lock = threading.Lock()  # the listener bus's thread and ``attach`` may both hand reports over

    def attach(self, query: Any) -> ProgressListener:
        from py4j.java_gateway import java_import
        from pyspark import SparkContext
        from pyspark.java_gateway import ensure_callback_server_started

        gateway = SparkContext._gateway
        assert gateway is not None
        java_import(gateway.jvm, "org.apache.spark.sql.streaming.*")
        ensure_callback_server_started(gateway)
        self.run_id = str(query.runId)
        self.jlistener = gateway.jvm.PythonStreamingQueryListenerWrapper(_JavaEvents(self))
        self.spark._jsparkSession.streams().addListener(self.jlistener)
        if not query.isActive:  # it ended before the listener was there (a short Trigger.AvailableNow run)
            for p in query.recentProgress:
                self.progress(p.json)
            self.terminated(self.run_id)
        return self

    def progress(self, text: str) -> None:
        report = json.loads(text)
        batch = int(report.get("batchId", -1))
        with self.lock:
            if report.get("runId") != self.run_id or batch <= self.last_batch:
                return
            self.last_batch = batch
            self.on_report(report)

    def terminated(self, run_id: str | None) -> None:
        with self.lock:
            if run_id != self.run_id or self.jlistener is None:
                return
            if self.on_end is not None:
                self.on_end()
            self.detach()

    def detach(self) -> None:
        """Stop listening (from a thread of its own: this may run on the listener bus's thread)."""
        jlistener, self.jlistener = self.jlistener, None
        if jlistener is None:
            return

        def remove() -> None:
            try:
                self.spark._jsparkSession.streams().removeListener(jlistener)
            except Exception as exc:  # noqa: BLE001 - the session already stopped
                logger.debug("qmon job: progress listener not removed: %s", exc)

        threading.Thread(target=remove, name="qmon-progress-detach", daemon=True).start()


class _JavaEvents:
    """The Java side's ``PythonStreamingQueryListener``, implemented through py4j."""

    def __init__(self, owner: ProgressListener):
        self.owner = owner

    def onQueryStarted(self, jevent: Any) -> None:
        pass

    def onQueryProgress(self, jevent: Any) -> None:
        try:
            self.owner.progress(jevent.progress().json())
        except Exception as exc:  # noqa: BLE001
            logger.warning("qmon job: a progress report not handled: %s", exc)

    def onQueryIdle(self, jevent: Any) -> None:
        pass

    def onQueryTerminated(self, jevent: Any) -> None:
        try:
            self.owner.terminated(jevent.runId().toString())
        except Exception as exc:  # noqa: BLE001
            logger.warning("qmon job: the end of a query not handled: %s", exc)

    class Java:
        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]


class ProgressPublisher:
    """The query's progress, one ``QueryProgress`` record per micro-batch on ``qmon.events.progress`` (the
    job's health for ``qmon metrics``), from a ``ProgressListener``.  A failure to publish is logged and never
    stops the job."""

    def __init__(self, spark: Any, bootstrap: str, config: Config, *, schema_id: int | None = None):
        self.spark, self.bootstrap, self.config = spark, bootstrap, config
        self.topic = topics.physical(topics.PROGRESS, config.kafka.topic_prefix)
        self.schema_id = schema_id  # with a schema registry: Confluent's wire format, with this id
        self.out: Any = None

    def attach(self, query: Any) -> None:
        """Publish ``query``'s progress from now until it terminates."""
        from qmon.connectors.clients import producer

        try:
            self.out = producer(self.bootstrap, self.config.kafka.security, **{"linger.ms": 50})
        except Exception as exc:  # noqa: BLE001
            logger.warning("qmon job: not publishing its progress: %s", exc)
            return
        ProgressListener(self.spark, self.publish, self.flush).attach(query)

    def publish(self, report: dict[str, Any]) -> None:
        from qmon.connectors import avro
        from qmon.core.progress import progress_record

        if self.out is None:
            return
        try:
            value = avro.encode("QueryProgress", progress_record(report), schema_id=self.schema_id)
            self.out.produce(self.topic, key=b"qmon", value=value)
            self.out.poll(0)
        except Exception as exc:  # noqa: BLE001 - a broker hiccup, a full local queue
            logger.debug("qmon job: progress not published: %s", exc)

    def flush(self) -> None:
        out, self.out = self.out, None
        if out is not None:
            out.flush(5)


def run(
    config: Config,
    bootstrap: str,
    checkpoint: str,
    *,
    available_now: bool = False,
    max_restarts: int = 10,
    spark: Any = None,
) -> int:
    """Run the job until stopped (or, with ``available_now``, until the input is consumed).

    SIGTERM or Ctrl-C (SIGINT) stops it cleanly (``stop_query``): between micro-batches where there is a
    moment between them, Spark's messages about the stop in ``spark_log()`` rather than on the terminal,
    exit status 0; the next start resumes from the checkpoint.  A query that fails (a broker outage longer than the Kafka
    client's retries, say) is started again on the same checkpoint after a backoff, up to ``max_restarts``
    times in a row; the checkpoint makes the restart lose nothing.
    """
    from qmon.streaming.spark import session

    ensure_topics(
        bootstrap,
        config.kafka.partitions,
        config.kafka.security,
        prefix=config.kafka.topic_prefix,
        mq_trace=config.mq_trace.enabled is True,
    )
    stopping = threading.Event()
    with stop_signals(stopping):
        own = spark is None  # (a session run starts, run stops: its JVM exits before run returns)
        spark = spark or session(
            config.job.master,
            "qmon",
            shuffle_partitions=config.job.shuffle_partitions,
            checkpoint_fs=config.job.checkpoint_fs,
            ui=True,
            settings=config.spark_settings(),
        )
        if own and spark.sparkContext.uiWebUrl:
            logger.info("qmon job: Spark's web UI on %s", spark.sparkContext.uiWebUrl)
        try:
            if stopping.is_set():
                return 0
            return _run(
                spark,
                config,
                bootstrap,
                checkpoint,
                available_now=available_now,
                max_restarts=max_restarts,
                stopping=stopping,
            )
        finally:
            if own:
                from qmon.streaming.spark import shutdown

                shutdown(spark)


@contextlib.contextmanager
def stop_signals(stopping: threading.Event) -> Iterator[None]:
    """While inside, SIGTERM and SIGINT set ``stopping`` instead of ending the process (main thread only:
    elsewhere Python gives no signals, and nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def handle(signum: int, _frame: Any) -> None:
        if not stopping.is_set():
            logger.info("qmon job: %s received; stopping between two micro-batches", signal.Signals(signum).name)
        stopping.set()

    for sig in previous:
        signal.signal(sig, handle)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def spark_log() -> Path:
    """The file that receives what Spark's JVM prints while a query stops (``qmon.streaming.spark.log_to_file``)."""
    from qmon.cache import cache_dir

    return cache_dir() / "logs" / "spark.log"


def stop_query(query: Any, *, wait: float = 10.0, log: Path | None = None) -> None:
    """Stop ``query`` quietly, between micro-batches when there is a moment between them.

    ``StreamingQuery.stop`` cancels the tasks of a running batch: nothing is lost (the batch runs again from
    the checkpoint at the next start, its outputs with the same event ids), but Spark logs every cancelled
    task with its stack trace.  So this waits up to ``wait`` seconds for the query to be between batches (a
    job that keeps up is, most of the time; one reading a backlog runs them back to back and is stopped
    mid-batch), and sends what Spark's JVM prints from then on to ``log`` (default ``spark_log()``)."""
    from qmon.streaming.spark import log_to_file

    deadline = time.monotonic() + wait
    try:
        while query.isActive and query.status.get("isTriggerActive") and time.monotonic() < deadline:
            time.sleep(0.02)
    except Exception as exc:  # noqa: BLE001 - the query or the JVM went away meanwhile
        logger.debug("qmon job: status not read while stopping: %s", exc)
    log_to_file(log or spark_log())
    try:
        query.stop()
    except Exception as exc:  # noqa: BLE001 - it had failed or stopped already
        logger.debug("qmon job: stopping the query: %s", exc)


def _progressed(query: Any) -> bool:
    """Whether ``query`` (this start of it) finished a micro-batch."""
    try:
        return query.lastProgress is not None
    except Exception:  # noqa: BLE001 - a query whose JVM side is gone: no progress to read
        return False


def _transient(exc: Exception) -> bool:
    """Whether a schema registry's error may pass by itself (no answer, an error of its server)."""
    from qmon.connectors.registry import RegistryUnreachable

    return isinstance(exc, RegistryUnreachable) or (getattr(exc, "status", None) or 0) >= 500


def _again(failures: int, max_restarts: int, what: str, stopping: threading.Event) -> int | None:
    """After ``failures`` failures in a row: None when the query is to start again (after a backoff), else the
    job's exit status (1: too many failures; 0: stopped while waiting)."""
    if failures > max_restarts:
        logger.error("the qmon query failed %d times in a row; giving up: %s", failures, what)
        return 1
    backoff = min(60.0, 2.0**failures)
    logger.warning("the qmon query failed (%s); restarting on the same checkpoint in %.0f s", what[:300], backoff)
    return 0 if stopping.wait(backoff) else None


def _run(
    spark: Any,
    config: Config,
    bootstrap: str,
    checkpoint: str,
    *,
    available_now: bool,
    max_restarts: int,
    stopping: threading.Event,
) -> int:
    from qmon.connectors.registry import RegistryError
    from qmon.streaming.writer_schemas import new_ids

    failures = 0
    schema_ids: set[int] = set()  # ids of records framed with an id the query had not planned
    while True:
        try:
            query = start_query(
                spark, config, bootstrap, checkpoint, available_now=available_now, schema_ids=schema_ids
            )
        except RegistryError as exc:  # the writers' schemas cannot be looked up, or the outputs' registered
            if available_now or not _transient(exc):
                raise
            failures += 1
            status = _again(failures, max_restarts, str(exc), stopping)
            if status is None:
                continue
            return status
        logger.info(
            "qmon job started: reading %s from %s, checkpoint %s",
            ", ".join(topics.physical(t, config.kafka.topic_prefix) for t in topics.INPUTS),
            bootstrap,
            checkpoint,
        )
        try:
            while not stopping.is_set() and not query.awaitTermination(0.5):
                pass
        except Exception as exc:  # noqa: BLE001 - the query failed; restart it with backoff
            new = new_ids(str(exc)) - schema_ids
            if new and config.kafka.schema_registry_url:  # an id registered since the query started: plan it
                schema_ids |= new
                logger.info(
                    "qmon job: records framed with schema id %s, which the query had not looked up; "
                    "starting it again on the same checkpoint with it",
                    ", ".join(str(i) for i in sorted(new)),
                )
                if stopping.is_set():
                    return 0
                continue
            if available_now:  # a one-shot run (replay, tests, benchmarks) reports the failure
                raise
            # in a row: a query that finished a batch before it failed starts the count again
            failures = 1 if _progressed(query) else failures + 1
            status = _again(failures, max_restarts, str(exc).splitlines()[0], stopping)
            if status is None:
                continue
            return status
        if stopping.is_set():
            stop_query(query)
            logger.info("qmon job stopped; the next start resumes from %s", checkpoint)
        return 0
