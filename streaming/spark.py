"""The Spark session qmon runs on.

Spark's Kafka connector and Avro functions are resolved from Maven Central by
Spark itself (Ivy, cached under ``~/.ivy2*``; never committed).  Maven Central
as reached here does not carry ``spark-sql-kafka-0-10_2.13`` or
``spark-avro_2.13`` at 4.3.0, the PySpark version qmon pins, so qmon uses the
newest of each that it does carry (see ``DEFAULT_PACKAGES``); the end-to-end
tests prove they work with PySpark 4.3.0.  ``QMON_SPARK_PACKAGES`` overrides
the list (comma-separated Maven coordinates), e.g. to the matching 4.3.x
artifacts once they are published.  One more jar, for a local checkpoint's files
(``NIO_LOCAL_FS``, see ``checkpoint_fs``), qmon fetches itself into its cache.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from typing import IO, Any

logger = logging.getLogger(__name__)

KAFKA_CONNECTOR = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
AVRO_FUNCTIONS = "org.apache.spark:spark-avro_2.13:4.1.1"
DEFAULT_PACKAGES = (KAFKA_CONNECTOR, AVRO_FUNCTIONS)

#: Hadoop's local file system through Java's own file API (Apache-2.0, one 9 KB jar with no dependencies;
#: see ``checkpoint_fs``).  Fetched by qmon itself, not by Spark's Ivy: Ivy also looks for the jar of its
#: parent POM in every repository it knows, and prints a warning for each one it cannot reach, at every start.
NIO_LOCAL_FS = "com.globalmentor:hadoop-bare-naked-local-fs:0.1.0"
NIO_LOCAL_FS_SHA1 = "cd03dc0f6e2b8d8957d97d421e95d9ceaa16b06b"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def packages() -> str:
    return os.environ.get("QMON_SPARK_PACKAGES") or ",".join(DEFAULT_PACKAGES)


def nio_local_fs_jar(timeout: float = 15.0) -> str | None:
    """``NIO_LOCAL_FS``'s jar: from qmon's cache, or downloaded once from Maven Central
    (``QMON_MAVEN_REPOSITORY`` for a mirror; urllib honours ``https_proxy``) and checked against its
    SHA-1.  Never raises: None, with a warning, if it cannot be had (a local checkpoint then stays on
    Hadoop's local file system)."""
    import hashlib
    import tempfile
    import urllib.request

    from qmon.cache import cache_dir

    group, artifact, version = NIO_LOCAL_FS.split(":")
    repo = os.environ.get("QMON_MAVEN_REPOSITORY") or MAVEN_CENTRAL
    url = f"{repo.rstrip('/')}/{group.replace('.', '/')}/{artifact}/{version}/{artifact}-{version}.jar"
    partial = None
    try:
        jar = cache_dir() / "jars" / f"{artifact}-{version}.jar"
        if jar.is_file() and hashlib.sha1(jar.read_bytes()).hexdigest() == NIO_LOCAL_FS_SHA1:
            return str(jar)
        with urllib.request.urlopen(url, timeout=timeout) as response:
            body = response.read()
        if hashlib.sha1(body).hexdigest() != NIO_LOCAL_FS_SHA1:
            raise ValueError(f"SHA-1 {hashlib.sha1(body).hexdigest()}, expected {NIO_LOCAL_FS_SHA1}")
        jar.parent.mkdir(parents=True, exist_ok=True)
        fd, partial = tempfile.mkstemp(dir=jar.parent, prefix=f".{jar.name}.", suffix=".part")
        with os.fdopen(fd, "wb") as f:
            f.write(body)
        os.replace(partial, jar)  # (two processes fetching at once: each renames a whole, checked file)
        partial = None
        return str(jar)
    except Exception as exc:  # noqa: BLE001 - any failure (offline, a read-only cache, a bad mirror): said, not raised
        logger.warning(
            "could not fetch %s from %s (%s: %s): a local checkpoint uses Hadoop's local file system, which "
            "runs chmod for every file it writes",
            NIO_LOCAL_FS,
            url,
            type(exc).__name__,
            exc,
        )
        return None
    finally:
        if partial is not None:
            with contextlib.suppress(OSError):
                os.unlink(partial)


#: HotSpot never compiles a method of more than 8,000 bytes of bytecode (``DontCompileHugeMethods``), and
#: the code Spark generates for the input stage (decode, validate and route, a struct of 23 fields per
#: routed row) is one such method: without this flag it runs interpreted, and every record pays for it.
JIT_HUGE_METHODS = "-XX:-DontCompileHugeMethods"

#: After a marking cycle G1 resizes the heap so that 5-20 % of it is free (HotSpot's defaults: 40-70 %).
#: A big micro-batch holds its sorted rows in the heap, and with HotSpot's defaults G1 grows the heap far
#: beyond them; with these the JVM's peak stays closer to its live data, at the price of more frequent young
#: collections.  The heap's maximum (``spark.driver.memory``) is unchanged: G1 still grows the heap when
#: collecting takes too much of the time.
HEAP_FREE_RATIO = "-XX:MinHeapFreeRatio=5 -XX:MaxHeapFreeRatio=20"

#: The longest string or bytes value, and the most items of an array or map, that Avro's decoder reads from
#: an input record (Avro's own limits, read when its decoder first runs).  Avro allocates a value before it
#: reads its bytes, so without them a few bytes of garbage that declare a string of 2 GB stop the JVM with
#: an OutOfMemoryError; with them the record does not decode and goes to the dead-letter topic.  A Kafka
#: record is at most ``message.max.bytes`` (1 MiB unless raised), so a longer value is never a real one.
AVRO_LIMIT = 16 * 1024 * 1024
AVRO_LIMITS = tuple(
    f"-Dorg.apache.avro.limits.{name}.maxLength={AVRO_LIMIT}" for name in ("string", "bytes", "collectionItems")
)

#: qmon's Java options for Spark's JVMs, each with a pattern of the options that, given already (a whole
#: option), leave it out.  The two ratios go together: a minimum above the other's maximum stops the JVM,
#: and ``-Xminf``/``-Xmaxf`` are HotSpot's other names for them.
JAVA_DEFAULTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"-XX:[+-]DontCompileHugeMethods$"), JIT_HUGE_METHODS),
    (re.compile(r"-XX:M(?:in|ax)HeapFreeRatio=|-Xm(?:in|ax)f"), HEAP_FREE_RATIO),
    *((re.compile(re.escape(limit.split("=")[0]) + "="), limit) for limit in AVRO_LIMITS),
)

#: The variables a JVM also takes Java options from (``_JAVA_OPTIONS``: HotSpot reads it after the command
#: line, so a ratio there beside one of qmon's on the command line could stop the JVM).
ENV_OPTION_VARIABLES = ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "SPARK_SUBMIT_OPTS", "_JAVA_OPTIONS")

_JAVA_OPTIONS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")
#: Spark puts these ahead of the extraJavaOptions of the same JVM (an administrator's options)
_DEFAULT_JAVA_OPTIONS = ("spark.driver.defaultJavaOptions", "spark.executor.defaultJavaOptions")
#: an executor's JVM takes its environment from these (on a cluster: the driver's does not reach it)
_EXECUTOR_ENV = tuple(f"spark.executorEnv.{v}" for v in ENV_OPTION_VARIABLES)
#: Where Spark takes the driver's address from, besides ``SPARK_LOCAL_IP``: the user's choice, kept.
_ADDRESS_KEYS = ("spark.driver.host", "spark.driver.bindAddress")


def spark_defaults() -> dict[str, str]:
    """The settings of Spark's ``spark-defaults.conf`` (``$SPARK_CONF_DIR``, else ``$SPARK_HOME/conf``): each
    wins over qmon's own default for its key (``session_options``), and qmon adds to its Java options and
    ``spark.jars``, which a ``--conf`` of the same key would otherwise replace."""
    conf_dir = os.environ.get("SPARK_CONF_DIR") or (
        os.path.join(os.environ["SPARK_HOME"], "conf") if os.environ.get("SPARK_HOME") else None
    )
    if conf_dir is None:
        import pyspark

        conf_dir = os.path.join(os.path.dirname(pyspark.__file__), "conf")
    found: dict[str, str] = {}
    try:
        with open(os.path.join(conf_dir, "spark-defaults.conf"), encoding="utf-8") as f:
            for line in f:  # (a Java properties file: "key value", "key=value" or "key: value")
                m = re.match(r"\s*([^\s=:#!]+)\s*[=:\s]\s*(.*)$", line)
                if m and m.group(1).startswith("spark."):
                    found[m.group(1)] = m.group(2).strip()
    except OSError:
        pass
    return found


def with_java_options(
    options: dict[str, Any], defaults: dict[str, str] | None = None, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """``options`` with qmon's ``JAVA_DEFAULTS`` added to the driver's and the executors' Java options, after
    those given (in ``options``, else in ``defaults``: spark-defaults.conf's), each unless that JVM's
    options already name it either way: its extraJavaOptions and defaultJavaOptions, and the variables of
    ``ENV_OPTION_VARIABLES`` in its environment (the driver's: ``env``, default ``os.environ``; an
    executor's: ``spark.executorEnv.*``).  ``-XX:+DontCompileHugeMethods`` keeps HotSpot's default: how to
    opt out, and what the benchmarks use to measure the difference."""
    environ = os.environ if env is None else env
    known = {**(defaults or {}), **options}
    out = dict(options)
    for key, default_key in zip(_JAVA_OPTIONS, _DEFAULT_JAVA_OPTIONS, strict=True):
        given = str(out[key] if key in out else (defaults or {}).get(key, ""))
        if key.startswith("spark.driver."):
            elsewhere = [environ.get(v, "") for v in ENV_OPTION_VARIABLES]
        else:
            elsewhere = [str(known.get(v, "")) for v in _EXECUTOR_ENV]
        named = " ".join([given, str(known.get(default_key, "")), *elsewhere]).split()
        added = [flag for pattern, flag in JAVA_DEFAULTS if not any(pattern.match(o) for o in named)]
        out[key] = " ".join([given, *added]).strip()
    return out


def session_options(
    master: str | None,
    app_name: str,
    shuffle_partitions: int,
    extra: dict[str, Any] | None = None,
    *,
    ui: bool = False,
    defaults: dict[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    settings: dict[str, str] | None = None,
) -> dict[str, Any]:
    """qmon's settings for a session on ``master``.

    ``defaults`` are the settings the user gave Spark itself (``spark-defaults.conf``, or spark-submit's
    ``--master`` and ``--conf``): each wins over qmon's own default for its key, and over ``settings`` (the
    ``spark:`` section of qmon's configuration), which win over qmon's defaults; ``master``, ``app_name`` and
    ``extra`` are the caller's and apply.  A ``master`` of None is the one Spark was given (spark-submit's, or
    ``spark-defaults.conf``'s ``spark.master``), else ``local[*]``.  Addresses are Spark's own resolution (``SPARK_LOCAL_IP``, ``spark.driver.host``,
    ``spark.driver.bindAddress``, else the host name's address): a cluster's executors connect back to the
    driver at the address it advertises, so qmon sets none for a cluster master.  A ``local`` master has no
    other host: its driver binds to and advertises loopback, unless the user named an address anywhere."""
    environ = os.environ if environ is None else environ
    defaults = defaults or {}
    own: dict[str, Any] = {
        "spark.jars.packages": packages(),
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
        # a batch writes RocksDB's changes, not a snapshot (Spark's advice for low latency; compatible
        # with existing checkpoints)
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "true" if ui else "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": "2g",
        # qmon is installed in the interpreter the workers run (editable or from the wheel): no PYTHONPATH
        "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.python.worker.reuse": "true",
        # one pool of Python workers for every Python step: Spark keeps a daemon and its workers per set of
        # worker environment variables, and its SQL runners add SPARK_SIMPLIFIED_TRACEBACK where
        # transformWithStateInPandas' runner does not (the duplicate check ahead of the monitor would have a
        # second pool: more workers, their memory, and a second daemon to start); tracebacks are whole
        "spark.sql.execution.pyspark.udf.simplifiedTraceback.enabled": "false",
        "spark.sql.streaming.noDataMicroBatches.enabled": "true",
    }
    options = {k: v for k, v in own.items() if k not in defaults}
    options.update({k: v for k, v in (settings or {}).items() if k not in defaults})
    master = master or defaults.get("spark.master") or "local[*]"
    options.update({"spark.master": master, "spark.app.name": app_name, **(extra or {})})
    named = "SPARK_LOCAL_IP" in environ or any(k in options or k in defaults for k in _ADDRESS_KEYS)
    if master.startswith("local") and not named:
        options.update(dict.fromkeys(_ADDRESS_KEYS, "127.0.0.1"))
    return options


def session(
    master: str | None = None,
    app_name: str = "qmon",
    shuffle_partitions: int = 4,
    extra: dict[str, Any] | None = None,
    checkpoint_fs: str = "nio",
    ui: bool = False,
    settings: dict[str, str] | None = None,
):
    """A SparkSession with the connectors, RocksDB state and the project's interpreter for workers (and, unless
    ``checkpoint_fs`` is ``hadoop``, ``NIO_LOCAL_FS``'s jar for local checkpoints); Spark's web UI with
    ``ui``; ``settings``: the ``spark:`` section of qmon's configuration.  Its settings: ``session_options``."""
    # Python workers must run this interpreter (pandas, fastavro and qmon live in its venv).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    # py4j logs every command it sends to the JVM at DEBUG, Kafka options (SASL passwords) included
    logging.getLogger("py4j").setLevel(logging.WARNING)

    defaults = _given_to_spark()
    options = session_options(master, app_name, shuffle_partitions, extra, ui=ui, defaults=defaults, settings=settings)
    if options.get("spark.driver.bindAddress") == "127.0.0.1" and "spark.driver.bindAddress" not in (extra or {}):
        # a local master on loopback (session_options): the rest of Spark's address resolution too, so it
        # does not look for another interface when the host name resolves to loopback
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    jar = nio_local_fs_jar() if checkpoint_fs == "nio" else None
    if jar is not None:  # (spark.jars: on the driver's class path and shipped to the executors)
        given = options.get("spark.jars", defaults.get("spark.jars"))
        options["spark.jars"] = ",".join(j for j in (given, jar) if j)
    options = with_java_options(options, defaults)
    launched = _launch_jvm(options)
    builder = SparkSession.builder
    for k, v in options.items():
        # spark-submit added the jars of spark.jars.packages to spark.jars in the JVM's own settings, which
        # the session reads: setting spark.jars again here would drop them (the executors of a cluster
        # would run without the Kafka and Avro jars)
        if k != "spark.jars":
            builder = builder.config(k, v)
    if not launched and options.get("spark.jars"):  # a JVM qmon did not start (spark-submit's): added to its own
        from pyspark import SparkConf

        builder = builder.config(
            "spark.jars", ",".join(filter(None, (SparkConf().get("spark.jars", None), options["spark.jars"])))
        )
    main = threading.current_thread() is threading.main_thread()
    interrupt = signal.getsignal(signal.SIGINT) if main else None
    spark = builder.getOrCreate()
    if main:
        # PySpark's SparkContext makes Ctrl-C cancel every running job (the tasks of a micro-batch killed
        # mid-write, each with its stack trace); qmon stops its query between batches instead
        # (``qmon.streaming.job.stop_query``), so the handler the caller had stays.
        signal.signal(signal.SIGINT, interrupt)
    spark.sparkContext.setLogLevel(os.environ.get("QMON_SPARK_LOG_LEVEL", "ERROR"))
    return spark


def _given_to_spark() -> dict[str, str]:
    """What the user gave Spark itself: spark-submit's settings (its ``--conf`` and ``spark-defaults.conf``)
    when it started the JVM, else ``spark-defaults.conf``'s."""
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        from pyspark import SparkConf, SparkContext

        SparkContext._ensure_initialized()  # (the gateway to spark-submit's JVM, whose settings SparkConf reads)
        return {str(k): str(v) for k, v in SparkConf().getAll()}
    return spark_defaults()


def _jvm_running() -> bool:
    """Whether Spark's JVM runs already (this process's gateway, or spark-submit's): qmon starts none then,
    and adds no options of its own to it."""
    from pyspark import SparkContext

    return SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ


#: What PySpark's driver-side Python workers print on every start (``print`` to their stdout, which Spark
#: copies to the JVM's stderr): e.g. "Starting Streaming TransformWithStateInPandas Python worker." and
#: "... Received UDF from JVM: <bound method ...>".  Not errors, not warnings: dropped.
WORKER_CHATTER = re.compile(rb"^(Starting )?Streaming \w+ Python worker\b")

#: What every start of Spark's JVM prints that tells a qmon user nothing: Ivy's report of the Kafka and Avro
#: jars it found in its cache, log4j's default-profile notice, the well-known native-hadoop warning, and, on
#: Java 24 and later, the JVM's note that a package Spark's launcher opens (``--add-opens``) does not exist.
#: Ivy's errors (unresolved dependencies), its downloads on a first start, and every other warning or error
#: still pass.
STARTUP_NOISE = re.compile(
    rb"^(WARNING: Using incubator modules: jdk\.incubator\.vector"
    rb"|WARNING: package sun\.security\.action not in java\.base\s*$"
    rb"|:: loading settings :: url = "
    rb"|Ivy Default Cache set to: "
    rb"|The jars for the packages stored in: "
    rb"|\S+#\S+ added as a dependency\s*$"
    rb"|:: resolving dependencies :: "
    rb"|\tconfs: \[default\]\s*$"
    rb"|\tfound \S+ in \S+\s*$"
    rb"|:: resolution report :: "
    rb"|\t:: modules in use:\s*$"
    rb"|\t\S+ from \S+ in \[default\]\s*$"
    rb"|\t-+\s*$"
    rb"|\t\|.*\|\s*$"
    rb"|:: retrieving :: "
    rb"|\t\d+ artifacts copied, \d+ already retrieved"
    rb"|\S+ \S+ WARN NativeCodeLoader: Unable to load native-hadoop library"
    rb"|Using Spark's default log4j profile: "
    rb"|Setting default log level to "
    rb"|To adjust logging level use sc\.setLogLevel)"
)


def _launch_jvm(options: dict[str, str]) -> bool:
    """Start Spark's JVM (unless one runs: False) with its stderr through ``_forward``, which drops the Python
    workers' chatter and the start-up noise and passes everything else (Spark's own errors and warnings)
    to our stderr."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if _jvm_running():
        return False
    conf = SparkConf(loadDefaults=False).setAll(list(options.items()))
    # A session of its own: Ctrl-C at a terminal signals the whole foreground process group, and PySpark's
    # Python workers (children of the JVM) turn SIGINT into KeyboardInterrupt, failing the running tasks
    # before qmon can stop the query between batches.  The JVM still exits with this process: it watches
    # its stdin, a pipe from here.
    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE, "start_new_session": True})
    threading.Thread(target=_forward, args=(gateway.proc.stderr,), name="qmon-jvm-stderr", daemon=True).start()
    SparkContext._ensure_initialized(gateway=gateway, conf=conf)
    return True


#: Where the JVM's stderr goes instead of the terminal, once ``log_to_file`` has named a file.
_log_file: IO[bytes] | None = None
_log_lock = threading.Lock()


def log_to_file(path: str | os.PathLike[str]) -> None:
    """From now on, write what Spark's JVM prints to ``path`` (appended), not to the terminal: the demo's
    view owns its screen, and a stopping query's messages (tasks of a batch cancelled, say) are for the log."""
    global _log_file
    from pathlib import Path

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with _log_lock:
        previous, _log_file = _log_file, open(path, "ab")  # noqa: SIM115 - closed by the next call
    if previous is not None:
        previous.close()


def _forward(stream: IO[bytes]) -> None:
    """Copy the JVM's stderr to ours (or to ``log_to_file``'s file), line by line, without the workers'
    chatter (and the blank line each of those prints leaves after it)."""
    out = sys.stderr.buffer if hasattr(sys.stderr, "buffer") else None
    dropped = False
    for line in iter(stream.readline, b""):
        if WORKER_CHATTER.match(line) or (dropped and not line.strip()):
            dropped = True
            continue
        if STARTUP_NOISE.match(line):
            continue
        dropped = False
        with _log_lock:
            if _log_file is not None:
                _log_file.write(line)
                _log_file.flush()
                continue
        if out is not None:
            out.write(line)
            out.flush()
        else:
            sys.stderr.write(line.decode(errors="replace"))


def shutdown(spark: Any, timeout: float = 60.0) -> None:
    """Stop the session and wait for Spark's JVM to exit, so nothing is left running."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    spark.stop()
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    try:
        gateway.shutdown()
    except Exception:  # noqa: BLE001 - already gone
        pass
    try:
        if proc is not None:
            proc.stdin.close() if proc.stdin else None  # the JVM exits when its stdin closes
            proc.wait(timeout=timeout)
    except BaseException as exc:  # a JVM that would not exit, or a second Ctrl-C
        if proc is not None:
            proc.kill()
        if not isinstance(exc, Exception):
            raise
    finally:
        SparkContext._gateway = None
        SparkContext._jvm = None


#: Without Hadoop's native library (PySpark ships none), Hadoop's local file system sets the permissions of
#: every file it creates by running ``chmod`` in a child process of Spark's JVM.  A micro-batch creates
#: several in the checkpoint (its offsets and commit files and their checksums, each state store's
#: changelog), so every batch would wait for a ``chmod`` process per file.  ``nio`` makes ``file:``
#: paths of the query's checkpoint use ``BareLocalFileSystem`` (the same files, checksums included, with
#: permissions set through ``java.nio``) and Spark's ``FileSystem``-based checkpoint file manager (its
#: default, ``FileContext``, would go through Hadoop's own local file system again).
NIO_SETTINGS = {
    "fs.file.impl": "com.globalmentor.apache.hadoop.fs.BareLocalFileSystem",
    # the JVM may hold Hadoop's local file system in its cache already: a query's own instance instead
    "fs.file.impl.disable.cache": "true",
    "spark.sql.streaming.checkpointFileManagerClass": (
        "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
    ),
}


def is_local_path(path: str, default_fs: str) -> bool:
    """Whether a checkpoint location is on the local file system: ``file:`` paths, and paths without a
    scheme when Hadoop's default file system (``fs.defaultFS``) is the local one."""
    scheme = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):", path)
    if scheme and len(scheme.group(1)) > 1:  # (a Windows drive letter is not a scheme)
        return scheme.group(1).lower() == "file"
    return default_fs.lower().startswith("file:")


def checkpoint_fs(spark: Any, checkpoint: str, mode: str = "nio") -> str:
    """Set the session up for a query whose checkpoint is ``checkpoint`` (before it starts); returns the file
    system it gets: ``nio`` for a local checkpoint when ``mode`` is ``nio`` and both classes are on the
    JVM's class path (``NIO_LOCAL_FS``), else ``hadoop``: the session's own settings, as they were before
    qmon's first call (a checkpoint file manager the user chose is kept, and means ``hadoop``)."""
    own = getattr(spark, "_qmon_own_fs_settings", None)
    if own is None:  # the session's settings before qmon changed any: restored for ``hadoop``
        own = {key: spark.conf.get(key, None) for key in NIO_SETTINGS}
        spark._qmon_own_fs_settings = own
    default_fs = spark._jsparkSession.sessionState().newHadoopConf().get("fs.defaultFS") or "file:///"
    chosen = "nio" if mode == "nio" and is_local_path(checkpoint, default_fs) else "hadoop"
    if chosen == "nio" and own["spark.sql.streaming.checkpointFileManagerClass"] is not None:
        logger.info(
            "the checkpoint file manager given (%s) is kept", own["spark.sql.streaming.checkpointFileManagerClass"]
        )
        chosen = "hadoop"
    if chosen == "nio":
        for name in (NIO_SETTINGS["fs.file.impl"], NIO_SETTINGS["spark.sql.streaming.checkpointFileManagerClass"]):
            try:
                spark._jvm.org.apache.spark.util.Utils.classForName(name, True, False)
            except Exception:  # noqa: BLE001 - the jar could not be fetched (logged then), or another Spark
                logger.warning(
                    "%s is not on Spark's class path (%s): the checkpoint uses Hadoop's local file system, which "
                    "runs chmod for every file it writes",
                    name,
                    NIO_LOCAL_FS,
                )
                chosen = "hadoop"
                break
    for key, value in NIO_SETTINGS.items():
        if chosen == "nio":
            spark.conf.set(key, value)
        elif own[key] is not None:
            spark.conf.set(key, own[key])
        else:
            spark.conf.unset(key)
    return chosen
