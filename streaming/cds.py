"""Spark's JVM started from an archive of the classes it loaded before (Java's class data sharing, AppCDS).

A new Spark JVM loads and verifies some 20,000 classes (Spark's SQL engine, Hadoop, Kafka's client, Janino)
before qmon's first micro-batch; on this 2-core machine that was most of the ~6 s the session took to
start and ~1 s of the query's start.  Java can save the classes a JVM loaded in an archive when it exits
(``-XX:ArchiveClassesAtExit``, JDK 13 and later) and map that archive into the next JVM
(``-XX:SharedArchiveFile``), already parsed and verified (README, *class data sharing*).

How qmon uses it (``QMON_CLASS_DATA_SHARING=off`` turns it off):

* The archive is kept in qmon's cache (``$QMON_CACHE``, else ``~/.cache/qmon``), under ``cds/``, named by a
  key of the Java binary (path, size, time) and of PySpark's install (version, directory, jars): another
  JDK, PySpark or virtualenv makes another archive (~150 MB).  One no JVM has used for ``UNUSED_DAYS``
  is removed.
* No archive yet, and a caller that stops its session with ``shutdown`` (``make=True``: ``qmon run``,
  ``qmon demo``, the tests, the benchmark): the JVM writes one when it exits, to a file of its own
  (``….<pid>-<random>.part``).  It becomes the archive only if ``shutdown`` saw the JVM exit cleanly and a
  JVM started from it with ``-Xshare:on`` (which refuses an archive it cannot map, where the default,
  ``-Xshare:auto``, crashed on a truncated one) prints its version.  If not, a ``.failed`` file says why,
  and no JVM tries again for ``RETRY_DAYS``.  A part whose writer is gone is removed.
* An archive: checked the same way (~0.1 s) at every start, and used.  A JDK or class path that differs
  from the archive's makes the JVM run without it, as it would have anyway.
* Java options that already choose (``-Xshare``, ``SharedArchiveFile``, ``ArchiveClassesAtExit``, in the
  driver's options or ``JAVA_TOOL_OPTIONS``, ``JDK_JAVA_OPTIONS``, ``SPARK_SUBMIT_OPTS``) are left alone,
  as is a cache path the launcher's option parser would need quoting for.  The JVM's own CDS messages
  are silenced (``-Xlog:cds*=off``): making an archive lists every class it leaves out.
* The cache's ``cds/.lock`` (``flock``) keeps two qmon processes from checking, removing or keeping an
  archive at the same time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

ENV = "QMON_CLASS_DATA_SHARING"
QUIET = ("-Xlog:cds*=off",)
CHOSEN = ("-Xshare", "SharedArchiveFile", "ArchiveClassesAtExit")
#: Where else the JVM Spark's launcher starts takes Java options from.
OPTION_VARIABLES = ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "SPARK_SUBMIT_OPTS")
#: An archive no JVM has used for this long is removed (~150-200 MB each; one per Java, PySpark and install).
UNUSED_DAYS = 14
#: After an archive could not be made (a JVM that did not exit cleanly, or refused what it wrote): no new
#: try for this long, so a failure that repeats does not cost every run the ~10 s of writing one.
RETRY_DAYS = 7


@dataclass
class Archive:
    """The archive a JVM uses (``making`` False) or writes when it exits (``making`` True, to ``part``)."""

    path: Path
    part: Path | None = None
    class_path: str | None = None  # (the JVM's, read once it runs: checked against when keeping it)
    heap: str | None = None  # (the JVM's -Xmx: a heap of 32 GB or more changes how it maps an archive)

    @property
    def making(self) -> bool:
        return self.part is not None

    def java_options(self) -> str:
        flag = f"-XX:ArchiveClassesAtExit={self.part}" if self.part else f"-XX:SharedArchiveFile={self.path}"
        return " ".join((flag, *QUIET))


def _plain(path: Path) -> bool:
    """Whether ``path`` goes into Spark's Java options as it is (its launcher splits them on white space and
    reads quotes and backslashes)."""
    return not any(c.isspace() or c in "'\"\\" for c in str(path))


def java_binary() -> str | None:
    """The ``java`` Spark's launcher runs: ``$JAVA_HOME/bin/java``, else the first on ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(java) if java and os.path.exists(java) else None


def key(java: str) -> str:
    """What an archive is good for: this Java binary, and this PySpark's install and jars (the JVM's class
    path: another virtualenv is another key, and Spark's launcher settings that change the class path)."""
    import pyspark

    st = os.stat(java)
    home = Path(pyspark.__file__).resolve().parent
    names = sorted(os.listdir(home / "jars")) if (home / "jars").is_dir() else []
    env = [os.environ.get(v) for v in ("SPARK_HOME", "SPARK_CONF_DIR", "SPARK_DIST_CLASSPATH")]
    material = json.dumps([java, st.st_size, st.st_mtime_ns, pyspark.__version__, str(home), names, env])
    return hashlib.sha256(material.encode()).hexdigest()[:16]


def usable(java: str, archive: Path, class_path: str, heap: str | None = None, timeout: float = 60.0) -> bool:
    """Whether a JVM maps ``archive`` with ``class_path`` (``-Xshare:on`` fails rather than run without it).
    A JVM that crashes on it leaves no crash report or core file behind (in the archive's folder, not the
    user's working directory, were it to)."""
    check = [java, "-Xshare:on", f"-XX:SharedArchiveFile={archive}", *QUIET, "-XX:-CreateCoredumpOnCrash"]
    check += [f"-Xmx{heap}"] if heap else []
    check += ["-XX:ErrorFile=/dev/null", "-cp", class_path, "-version"]
    try:
        done = subprocess.run(
            check,
            cwd=archive.parent if archive.parent.is_dir() else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """The cache's lock (another qmon process checks, removes or keeps an archive after this one)."""
    import fcntl

    with open(folder / ".lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def wanted() -> bool:
    """``QMON_CLASS_DATA_SHARING``: off (0, false, no) or on (unset, empty, 1, true, yes); any other value is
    said in a warning, naming the variable and the values it takes, and means on."""
    value = os.environ.get(ENV, "").strip().lower()
    if value in {"0", "off", "false", "no"}:
        return False
    if value not in {"", "1", "on", "true", "yes"}:
        logger.warning("%s=%r is neither on nor off (on, off, 1, 0, true, false, yes, no): on", ENV, value)
    return True


def chosen_already(java_options: str) -> bool:
    """Whether the JVM's Java options (these, or the environment's) already say how it shares classes."""
    given = " ".join([java_options, *(os.environ.get(v, "") for v in OPTION_VARIABLES)])
    return any(c in given for c in CHOSEN)


def plan(
    java_options: str = "",
    cache: Path | None = None,
    java: str | None = None,
    *,
    make: bool = True,
    heap: str | None = None,
) -> Archive | None:
    """The archive for the JVM about to start, or None: turned off, chosen already, no Java, a cache it
    cannot use, or none made yet and ``make`` False (a caller that will not ``shutdown`` its session).
    Never raises."""
    if not wanted() or chosen_already(java_options):
        return None
    try:
        java = java or java_binary()
        if java is None:
            return None
        if cache is None:
            from qmon.connectors.broker import cache_dir

            cache = cache_dir()
        folder = (cache / "cds").resolve()
        if not _plain(folder):
            logger.info("class data sharing: not used (%s would need quoting in Spark's Java options)", folder)
            return None
        folder.mkdir(parents=True, exist_ok=True)
        k = key(java)
        path = folder / f"spark-{k}.jsa"
        with _locked(folder):
            meta = _meta(path)
            if meta is not None and path.is_file() and path.stat().st_size == meta.get("size"):
                if usable(java, path, str(meta.get("class_path", "")), heap):
                    os.utime(path.with_suffix(".json"))  # (used: kept by ``_tidy``)
                    _tidy(folder, keep=k)
                    return Archive(path)
                logger.warning("class data sharing: %s cannot be used (a JVM refused it): removed", path)
            _remove(path, path.with_suffix(".json"))
            _tidy(folder, keep=k)
            if not make or _failed_lately(path):
                return None
            part = folder / f"spark-{k}.{os.getpid()}-{os.urandom(4).hex()}.part"
            part.touch()  # (a folder the JVM could not write in fails here, not when it exits)
            part.unlink()
            return Archive(path, part=part, heap=heap)
    except Exception as exc:  # noqa: BLE001 - an optimisation: the JVM starts without it
        logger.info("class data sharing: not used (%s: %s)", type(exc).__name__, exc)
        return None


def _failed_lately(path: Path) -> bool:
    import time

    failed = path.with_suffix(".failed")
    try:
        return time.time() - failed.stat().st_mtime < RETRY_DAYS * 86400
    except OSError:
        return False


def _meta(path: Path) -> dict | None:
    try:
        doc = json.loads(path.with_suffix(".json").read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _remove(*paths: Path) -> None:
    for p in paths:
        with contextlib.suppress(OSError):
            p.unlink()


def _tidy(folder: Path, keep: str, now: float | None = None) -> None:
    """Remove the parts of writers that are gone, and other keys' archives unused for ``UNUSED_DAYS``."""
    import time

    now = time.time() if now is None else now
    for p in folder.iterdir():
        name = p.name
        if not name.startswith("spark-"):
            continue
        if name.endswith((".part", ".part.json")):
            pid = name.split(".")[1].split("-")[0]
            if pid.isdigit() and int(pid) != os.getpid() and _alive(int(pid)):
                continue  # (another qmon's JVM is making one now)
            _remove(p)
        elif name.startswith(f"spark-{keep}."):
            continue
        elif name.endswith(".jsa") and not p.with_suffix(".json").exists():
            _remove(p)  # (an archive whose record was never written)
        elif name.endswith((".json", ".failed")):
            with contextlib.suppress(OSError):
                if now - p.stat().st_mtime > UNUSED_DAYS * 86400:
                    _remove(p.with_suffix(".jsa"), p)


def finish(archive: Archive, exit_code: int | None, java: str | None = None) -> bool:
    """After the JVM that was making ``archive`` exited with ``exit_code``: keep its part as the archive if
    the JVM exited cleanly and a JVM maps it; else remove it and write why in ``.failed``.  ``exit_code``
    None (the JVM was not seen to exit) removes the part and writes nothing.  Returns whether the archive
    is now there.  Never raises."""
    part = archive.part
    if part is None:
        return False
    if exit_code is None:  # (not seen to exit: stopped waiting for it, or killed): no verdict either way
        _remove(part)
        return False
    try:
        java = java or java_binary()
        why = (
            f"Spark's JVM exited with {exit_code}"
            if exit_code != 0
            else "no class path"
            if archive.class_path is None
            else "no Java"
            if java is None
            else "the JVM wrote no archive"
            if not part.is_file()
            else "a JVM refused it (-Xshare:on)"
            if not usable(java, part, archive.class_path, archive.heap)
            else None
        )
        with _locked(part.parent):
            if why is not None:
                _remove(part)
                archive.path.with_suffix(".failed").write_text(why + "\n")
                logger.info("class data sharing: no archive kept (%s); no new try for %d days", why, RETRY_DAYS)
                return False
            meta = {"size": part.stat().st_size, "class_path": archive.class_path}
            tmp = part.with_name(part.name + ".json")
            tmp.write_text(json.dumps(meta))
            os.replace(tmp, archive.path.with_suffix(".json"))
            os.replace(part, archive.path)
            _remove(archive.path.with_suffix(".failed"))
    except Exception as exc:  # noqa: BLE001 - an optimisation: the next JVM starts without it
        logger.info("class data sharing: could not keep %s (%s: %s)", archive.path, type(exc).__name__, exc)
        _remove(part)
        return False
    logger.info("class data sharing: the next Spark JVM starts from %s", archive.path)
    return True
