"""The Spark session qmon starts: the JVM compiles the huge methods Spark generates for the input stage, keeps
its heap close to the live data (``HEAP_FREE_RATIO``), and a local checkpoint's files are written without a
``chmod`` child process each."""

from __future__ import annotations

import os
import stat

import pytest

from qmon.streaming import spark as qspark
from qmon.streaming.spark import (
    AVRO_LIMITS,
    HEAP_FREE_RATIO,
    JIT_HUGE_METHODS,
    checkpoint_fs,
    is_local_path,
    spark_defaults,
    with_java_options,
)

DRIVER, EXECUTOR = "spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"


LIMITS = " ".join(AVRO_LIMITS)
BOTH = f"{JIT_HUGE_METHODS} {HEAP_FREE_RATIO} {LIMITS}"
JIT = f"{JIT_HUGE_METHODS} {LIMITS}"
RATIO = f"{HEAP_FREE_RATIO} {LIMITS}"


def _with(options, defaults=None, env=None):  # noqa: ANN001, ANN202
    return with_java_options(options, defaults, env={} if env is None else env)


def test_qmons_java_options_are_added_for_driver_and_executors_after_the_options_given():
    out = _with({DRIVER: "-Dx=1", "spark.master": "local[2]"})
    assert out[DRIVER] == f"-Dx=1 {BOTH}"
    assert out[EXECUTOR] == BOTH
    assert out["spark.master"] == "local[2]"
    assert _with(out) == out  # once
    assert HEAP_FREE_RATIO == "-XX:MinHeapFreeRatio=5 -XX:MaxHeapFreeRatio=20"


def test_an_explicit_choice_either_way_stays_side_by_side():
    out = _with({EXECUTOR: "-XX:+DontCompileHugeMethods"})  # the executors opt out
    assert out[EXECUTOR] == f"-XX:+DontCompileHugeMethods {RATIO}"
    assert out[DRIVER] == BOTH
    out = _with({DRIVER: "-XX:+DontCompileHugeMethods -Dy=2"})
    assert out[DRIVER] == f"-XX:+DontCompileHugeMethods -Dy=2 {RATIO}" and out[EXECUTOR] == BOTH


def test_a_heap_free_ratio_given_leaves_both_out():
    """A minimum above the other's maximum stops the JVM ("MinHeapFreeRatio (50) must be less than or equal
    to MaxHeapFreeRatio (20)"): one ratio given, by either of HotSpot's names, qmon adds neither."""
    for given in ("-XX:MinHeapFreeRatio=50", "-XX:MaxHeapFreeRatio=90", "-Xminf0.5", "-Xmaxf0.9"):
        assert _with({DRIVER: given})[DRIVER] == f"{given} {JIT}"


def test_only_whole_options_count_not_a_name_inside_another():
    """A GC log named after a setting, or a property's value, names no option."""
    given = "-Xlog:gc:file=/tmp/gc_XXMaxHeapFreeRatio20.log -Dnote=-XX:+DontCompileHugeMethods"
    assert _with({DRIVER: given})[DRIVER] == f"{given} {BOTH}"


def test_the_drivers_environment_counts_for_the_driver(monkeypatch):
    """``JAVA_TOOL_OPTIONS``, ``JDK_JAVA_OPTIONS``, ``SPARK_SUBMIT_OPTS`` and ``_JAVA_OPTIONS`` (which HotSpot
    reads after the command line): the process's own environment, as the session reads it."""
    names = ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "SPARK_SUBMIT_OPTS", "_JAVA_OPTIONS")
    for variable in names:
        for name in names:
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv(variable, "-Dz=1 -XX:MaxHeapFreeRatio=50")
        out = with_java_options({})  # (env: os.environ)
        assert out[DRIVER] == JIT, variable
        assert out[EXECUTOR] == BOTH, variable  # an executor's JVM has an environment of its own
    monkeypatch.setenv("_JAVA_OPTIONS", "-XX:+DontCompileHugeMethods")
    assert with_java_options({})[DRIVER] == RATIO


def test_an_executors_environment_and_default_options_count_for_the_executors():
    out = _with({"spark.executorEnv._JAVA_OPTIONS": "-XX:MinHeapFreeRatio=40"}, env={"JAVA_TOOL_OPTIONS": "-Da=1"})
    assert out[EXECUTOR] == JIT and out[DRIVER] == BOTH
    out = _with({}, {"spark.executorEnv.JAVA_TOOL_OPTIONS": "-XX:+DontCompileHugeMethods"})
    assert out[EXECUTOR] == RATIO


def test_default_java_options_count_and_stay_where_they_are():
    """``spark.*.defaultJavaOptions`` (an administrator's, ahead of extraJavaOptions): named there counts as
    given; qmon writes only extraJavaOptions."""
    out = _with({"spark.driver.defaultJavaOptions": "-XX:MinHeapFreeRatio=30 -XX:MaxHeapFreeRatio=60"})
    assert out[DRIVER] == JIT and out[EXECUTOR] == BOTH
    assert out["spark.driver.defaultJavaOptions"] == "-XX:MinHeapFreeRatio=30 -XX:MaxHeapFreeRatio=60"
    out = _with({}, {"spark.executor.defaultJavaOptions": "-XX:+DontCompileHugeMethods"})
    assert out[EXECUTOR] == RATIO and "spark.executor.defaultJavaOptions" not in out


def test_spark_defaults_java_options_are_kept_not_replaced(tmp_path, monkeypatch):
    """A ``--conf`` replaces spark-defaults.conf's value of the same key: qmon adds its flag to that value."""
    (tmp_path / "spark-defaults.conf").write_text(
        "# site settings\n"
        "spark.driver.extraJavaOptions   -Djava.io.tmpdir=/big -Dlog4j.configurationFile=site.xml\n"
        "spark.executor.extraJavaOptions=-XX:+DontCompileHugeMethods\n"
        "spark.master local[4]\n"
        "spark.driver.defaultJavaOptions: -XX:MinHeapFreeRatio=40 -XX:MaxHeapFreeRatio=70\n"
        "spark.executorEnv._JAVA_OPTIONS -Xminf0.4\n"
    )
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    defaults = spark_defaults()
    assert defaults == {
        DRIVER: "-Djava.io.tmpdir=/big -Dlog4j.configurationFile=site.xml",
        EXECUTOR: "-XX:+DontCompileHugeMethods",
        "spark.driver.defaultJavaOptions": "-XX:MinHeapFreeRatio=40 -XX:MaxHeapFreeRatio=70",
        "spark.executorEnv._JAVA_OPTIONS": "-Xminf0.4",
        "spark.master": "local[4]",
    }
    out = _with({"spark.master": "local[2]"}, defaults)
    # the file's ratios (HotSpot's own: how to opt out) keep qmon's out of both JVMs
    assert out[DRIVER] == f"-Djava.io.tmpdir=/big -Dlog4j.configurationFile=site.xml {JIT}"
    assert out[EXECUTOR] == f"-XX:+DontCompileHugeMethods {LIMITS}"
    # options given to the session win over the file's, as a --conf does
    assert _with({DRIVER: "-Da=1"}, defaults)[DRIVER] == f"-Da=1 {JIT}"
    assert _with({DRIVER: "-Da=1"}, {DRIVER: "-Db=2"})[DRIVER] == f"-Da=1 {BOTH}"
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "none"))
    assert spark_defaults() == {}


def test_an_avro_limit_given_is_kept_and_the_others_added():
    given = "-Dorg.apache.avro.limits.string.maxLength=100000000"
    out = _with({EXECUTOR: given})[EXECUTOR]
    assert out == f"{given} {JIT_HUGE_METHODS} {HEAP_FREE_RATIO} {AVRO_LIMITS[1]} {AVRO_LIMITS[2]}"
    assert AVRO_LIMITS[0] == "-Dorg.apache.avro.limits.string.maxLength=16777216"


@pytest.mark.spark
def test_the_running_jvm_compiles_huge_methods_and_keeps_its_heap_close_to_the_live_data(spark):
    jvm = spark.sparkContext._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert JIT_HUGE_METHODS in arguments
    assert JIT_HUGE_METHODS in spark.sparkContext.getConf().get(EXECUTOR)
    flags = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean")
    )
    assert flags.getVMOption("MinHeapFreeRatio").getValue() == "5"
    assert flags.getVMOption("MaxHeapFreeRatio").getValue() == "20"
    assert HEAP_FREE_RATIO in spark.sparkContext.getConf().get(EXECUTOR)
    assert jvm.java.lang.System.getProperty("org.apache.avro.limits.string.maxLength") == "16777216"


def test_which_checkpoint_locations_are_local():
    assert is_local_path("/var/qmon/ckpt", "file:///")
    assert is_local_path("./qmon-checkpoint", "file:///")
    assert is_local_path("file:///var/qmon/ckpt", "hdfs://nn:8020")
    assert is_local_path("FILE:/var/qmon/ckpt", "file:///")
    assert is_local_path("C:/qmon/ckpt", "file:///")  # a drive letter is not a scheme
    assert not is_local_path("/var/qmon/ckpt", "hdfs://nn:8020")  # no scheme: the default file system's
    assert not is_local_path("hdfs://nn:8020/qmon/ckpt", "file:///")
    assert not is_local_path("s3a://bucket/qmon/ckpt", "file:///")


def _file_system(spark, path):
    """The Hadoop file system a query's checkpoint would get (the session's Hadoop configuration)."""
    jvm = spark.sparkContext._jvm
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    return jvm.org.apache.hadoop.fs.Path(path).getFileSystem(conf)


@pytest.mark.spark
def test_a_local_checkpoint_is_written_through_java_nio_with_hadoops_permissions(spark, tmp_path):
    try:
        assert checkpoint_fs(spark, str(tmp_path / "ckpt")) == "nio"
        fs = _file_system(spark, str(tmp_path))
        assert fs.getClass().getName() == "com.globalmentor.apache.hadoop.fs.BareLocalFileSystem"
        assert "FileSystemBased" in spark.conf.get("spark.sql.streaming.checkpointFileManagerClass")
        # a file and its checksum, with the permissions Hadoop gives (0644 after its default umask 022)
        out = fs.create(spark.sparkContext._jvm.org.apache.hadoop.fs.Path(str(tmp_path / "f")), False)
        out.write(bytearray(b"qmon"))
        out.close()
        assert (tmp_path / "f").read_bytes() == b"qmon" and (tmp_path / ".f.crc").exists()
        assert stat.S_IMODE(os.stat(tmp_path / "f").st_mode) == 0o644

        # a checkpoint elsewhere, or the choice of Hadoop's own: Spark's defaults
        assert checkpoint_fs(spark, "hdfs://namenode:8020/qmon/ckpt") == "hadoop"
        assert spark.conf.get("spark.sql.streaming.checkpointFileManagerClass", None) is None
        before = _file_system(spark, str(tmp_path))  # the session's own (Hive's ProxyLocalFileSystem in PySpark)
        assert before.getClass().getName() != "com.globalmentor.apache.hadoop.fs.BareLocalFileSystem"
        assert spark.sparkContext._jvm.java.lang.Class.forName("org.apache.hadoop.fs.LocalFileSystem").isInstance(
            before
        )
        assert checkpoint_fs(spark, str(tmp_path), "hadoop") == "hadoop"
        assert spark.conf.get("fs.file.impl", None) is None
    finally:
        checkpoint_fs(spark, str(tmp_path))


@pytest.mark.spark
def test_without_the_jar_a_local_checkpoint_keeps_hadoops_file_system_and_says_so(spark, tmp_path, monkeypatch, caplog):
    monkeypatch.setitem(qspark.NIO_SETTINGS, "fs.file.impl", "com.example.NoSuchFileSystem")
    try:
        assert checkpoint_fs(spark, str(tmp_path)) == "hadoop"
        assert spark.conf.get("fs.file.impl", None) is None
        assert "com.example.NoSuchFileSystem is not on Spark's class path" in caplog.text
    finally:
        monkeypatch.undo()
        checkpoint_fs(spark, str(tmp_path))


@pytest.fixture
def maven_mirror(tmp_path, monkeypatch):
    """A Maven repository served over HTTP from a directory (Python's own server), and an empty qmon cache."""
    import functools
    import http.server
    import threading

    root = tmp_path / "repo"
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("QMON_MAVEN_REPOSITORY", f"http://127.0.0.1:{server.server_address[1]}/")
    monkeypatch.setenv("QMON_CACHE", str(tmp_path / "cache"))
    group, artifact, version = qspark.NIO_LOCAL_FS.split(":")
    path = root / group.replace(".", "/") / artifact / version / f"{artifact}-{version}.jar"
    path.parent.mkdir(parents=True)
    yield path
    server.shutdown()


def test_the_jar_is_fetched_once_and_checked(maven_mirror, monkeypatch):
    import hashlib

    body = b"PK\x03\x04 a jar"
    maven_mirror.write_bytes(body)
    monkeypatch.setattr(qspark, "NIO_LOCAL_FS_SHA1", hashlib.sha1(body).hexdigest())
    jar = qspark.nio_local_fs_jar()
    assert jar is not None and open(jar, "rb").read() == body
    maven_mirror.unlink()  # from the cache now
    assert qspark.nio_local_fs_jar() == jar


def test_a_jar_that_does_not_match_its_sha1_is_refused_and_said(maven_mirror, caplog):
    maven_mirror.write_bytes(b"PK\x03\x04 not the published jar")
    assert qspark.nio_local_fs_jar() is None
    assert "expected " + qspark.NIO_LOCAL_FS_SHA1 in caplog.text and "Hadoop's local file system" in caplog.text
    assert not list((maven_mirror.parents[5] / "cache").rglob("*.jar"))


def test_an_unreachable_repository_is_said_and_nothing_fails(maven_mirror, caplog):
    maven_mirror.unlink(missing_ok=True)
    assert qspark.nio_local_fs_jar(timeout=5) is None  # 404
    assert "could not fetch com.globalmentor:hadoop-bare-naked-local-fs:0.1.0" in caplog.text


def test_a_cache_that_cannot_be_written_is_said_and_nothing_fails(maven_mirror, monkeypatch, caplog):
    blocker = maven_mirror.parents[5] / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("QMON_CACHE", str(blocker / "qmon"))  # mkdir fails under a file
    assert qspark.nio_local_fs_jar(timeout=5) is None
    assert "could not fetch" in caplog.text


def test_spark_defaults_jars_are_read_so_that_qmon_adds_to_them(tmp_path, monkeypatch):
    (tmp_path / "spark-defaults.conf").write_text("spark.jars /opt/site/a.jar,/opt/site/b.jar\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert spark_defaults() == {"spark.jars": "/opt/site/a.jar,/opt/site/b.jar"}


@pytest.mark.spark
def test_a_checkpoint_file_manager_the_user_chose_is_kept(spark, tmp_path):
    key = "spark.sql.streaming.checkpointFileManagerClass"
    theirs = "org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager"
    checkpoint_fs(spark, "hdfs://namenode:8020/qmon/ckpt")  # the session's own settings back (none)
    saved = spark.__dict__.pop("_qmon_own_fs_settings", None)  # as if qmon had never touched them
    spark.conf.set(key, theirs)
    try:
        assert checkpoint_fs(spark, str(tmp_path)) == "hadoop"
        assert spark.conf.get(key) == theirs and spark.conf.get("fs.file.impl", None) is None
    finally:
        spark.conf.unset(key)
        spark.__dict__.pop("_qmon_own_fs_settings", None)
        if saved is not None:
            spark._qmon_own_fs_settings = saved
        checkpoint_fs(spark, str(tmp_path))


def test_a_cluster_master_gets_no_address_from_qmon_and_a_local_one_binds_loopback():
    from qmon.streaming.spark import session_options

    cluster = session_options("spark://master:7077", "qmon", 4, environ={})
    assert "spark.driver.host" not in cluster and "spark.driver.bindAddress" not in cluster
    local = session_options("local[2]", "qmon", 4, environ={})
    assert local["spark.driver.host"] == local["spark.driver.bindAddress"] == "127.0.0.1"


def test_an_address_the_user_names_anywhere_is_kept():
    from qmon.streaming.spark import session_options

    assert "spark.driver.host" not in session_options("local[2]", "qmon", 4, environ={"SPARK_LOCAL_IP": "10.0.0.5"})
    given = session_options("local[2]", "qmon", 4, {"spark.driver.host": "me"}, environ={})
    assert given["spark.driver.host"] == "me" and "spark.driver.bindAddress" not in given
    defaults = {"spark.driver.bindAddress": "0.0.0.0"}
    assert "spark.driver.host" not in session_options("local[2]", "qmon", 4, defaults=defaults, environ={})


def test_the_web_ui_only_when_asked():
    from qmon.streaming.spark import session_options

    assert session_options("local[2]", "qmon", 4, environ={})["spark.ui.enabled"] == "false"
    assert session_options("local[2]", "qmon", 4, ui=True, environ={})["spark.ui.enabled"] == "true"


def test_settings_given_to_spark_win_over_qmons_own_defaults_and_the_callers_do_not():
    from qmon.streaming.spark import session_options

    given = {"spark.driver.memory": "8g", "spark.ui.showConsoleProgress": "true", "spark.master": "local[4]"}
    out = session_options("spark://m:7077", "qmon", 4, {"spark.executor.cores": "2"}, defaults=given, environ={})
    assert "spark.driver.memory" not in out and "spark.ui.showConsoleProgress" not in out  # Spark takes theirs
    assert out["spark.master"] == "spark://m:7077"  # --master and job.master are the caller's
    assert out["spark.executor.cores"] == "2"
    assert out["spark.sql.streaming.stateStore.providerClass"].endswith("RocksDBStateStoreProvider")


def test_with_no_master_of_its_own_the_job_runs_on_the_one_spark_was_given():
    """spark-submit's ``--master`` (in the settings it gives the session), else ``spark-defaults.conf``'s, else
    every core of this host; a master qmon is given (``--master``, ``job.master``) wins over both."""
    from qmon.core.config import Config
    from qmon.streaming.spark import session_options

    assert Config().job.master is None
    k8s = {"spark.master": "k8s://https://kubernetes.default.svc:443"}
    out = session_options(None, "qmon", 4, defaults=k8s, environ={})
    assert out["spark.master"] == k8s["spark.master"] and "spark.driver.host" not in out
    assert session_options(None, "qmon", 4, environ={})["spark.master"] == "local[*]"
    assert session_options("local[2]", "qmon", 4, defaults=k8s, environ={})["spark.master"] == "local[2]"


def test_the_spark_section_wins_over_qmons_defaults_and_settings_given_to_spark_win_over_it():
    from qmon.core.config import Config
    from qmon.streaming.spark import session_options

    config = Config.model_validate(
        {"spark": {"spark.driver.memory": "6g", "spark.executor.memory": "4g", "spark.ui.enabled": True}}
    )
    settings = config.spark_settings()
    assert settings["spark.ui.enabled"] == "true"
    out = session_options(
        "local[2]", "qmon", 4, defaults={"spark.executor.memory": "8g"}, environ={}, settings=settings
    )
    assert out["spark.driver.memory"] == "6g"  # over qmon's own default (2g)
    assert out["spark.ui.enabled"] == "true"
    assert "spark.executor.memory" not in out  # spark-submit's --conf or spark-defaults.conf: Spark keeps its own
    given = {"spark.driver.extraJavaOptions": "-Dsite=1"}
    options = with_java_options(session_options("local[2]", "qmon", 4, environ={}, settings=given), env={})
    assert options[DRIVER].startswith("-Dsite=1 ") and JIT_HUGE_METHODS in options[DRIVER]


def test_the_spark_section_takes_only_spark_settings_qmon_has_no_key_of_its_own_for(tmp_path):
    from qmon.core.config import Config, ConfigError, load_config

    for bad, says in (
        ({"executor.memory": "4g"}, "is not a Spark setting"),
        ({"spark.sql.shuffle.partitions": 8}, "job.shuffle_partitions"),
        ({"spark.master": "yarn"}, "job.master"),
    ):
        with pytest.raises(ValueError, match=says):
            Config.model_validate({"spark": bad})
    path = tmp_path / "qmon.yaml"
    path.write_text("job:\n  trigger: 1 second\nspark:\n  spark.executor.memory: 4g\n  spark.master: yarn\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(path) in str(err.value) and "line" in str(err.value) and "job.master" in str(err.value)
