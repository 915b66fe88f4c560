"""What qmon does once in each of PySpark's Python workers.

PySpark's daemon runs ``gc.collect()`` after every task a reused worker finishes, and a full collection
walks every object the worker holds: pandas', pyarrow's, PySpark's and qmon's modules, ~80,000 objects,
~45 ms on this machine, for every Python task of every micro-batch (16 % of the operator workers' time at
5,000 records/s, measured with py-spy).  ``freeze_imports`` collects once and moves everything alive into
the permanent generation (``gc.freeze``), so later collections walk only what tasks create.  Frozen objects
are still freed by reference counting; a cycle among them is never collected (there is none: the first
call collects before freezing).

``start_workers`` starts the workers, and has them import, before a query's first batch needs them.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Iterator
from typing import Any

logger = logging.getLogger(__name__)

_frozen = False


def freeze_imports() -> None:
    """Freeze what the worker holds now (its modules), once per worker process."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.collect()
        gc.freeze()


#: The job description of the warm-up job (Spark's UI and event log show it).
WARM_UP = "qmon: starting the Python workers"
#: Seconds after which a warm-up job still running is cancelled (it takes ~3 s on a cold 2-core machine).
WARM_UP_TIMEOUT = 60.0


def warm(batches: Iterator[Any]) -> Iterator[Any]:
    """The warm-up job's function (``mapInPandas``): in the worker that runs it, import what the operator
    and the MQSC parser use (pandas, pyarrow, PySpark's state and serializers, qmon's rules), freeze it
    (``freeze_imports``), and yield the worker's process id."""
    import os

    import pandas as pd

    import qmon.streaming.operators  # noqa: F401 - imported for the worker, which keeps it
    import qmon.streaming.udfs  # noqa: F401

    freeze_imports()
    for _ in batches:
        pass
    yield pd.DataFrame({"pid": [os.getpid()]})


def start_workers(spark: Any, pids: list[int] | None = None) -> threading.Thread | None:
    """Start PySpark's Python workers, one a core (``defaultParallelism``), in a job of their own run by a
    background thread, so that they start and import while the driver builds and plans the query.

    PySpark starts a worker when a task first needs one: on a new JVM, the first micro-batch's operator
    tasks each waited ~1 s for the daemon and its fork and ~1-2 s more for the worker's imports (pandas,
    pyarrow, qmon), with the input stage already done.  A worker that finishes a task waits, idle, for the
    next task of any kind (``spark.python.worker.reuse``, qmon's default; up to a minute), so the
    operator's tasks find them started.  Returns the thread (None when workers are not reused: nothing
    to gain); ``pids``, if given, receives the workers' process ids.  Never raises: a failed warm-up is
    logged and the query starts its workers itself; one still running after ``WARM_UP_TIMEOUT`` is
    cancelled."""
    sc = spark.sparkContext
    if sc.getConf().get("spark.python.worker.reuse", "true").lower() == "false":
        return None

    def run() -> None:
        group = f"qmon-warm-up-{threading.get_ident()}"
        timer = None
        try:
            sc.setJobGroup(group, WARM_UP, interruptOnCancel=True)
            # (a warm-up that hangs must not hold the cores the query's first batch waits for)
            timer = threading.Timer(WARM_UP_TIMEOUT, sc.cancelJobGroup, [group])
            timer.daemon = True
            timer.start()
            tasks = max(1, int(sc.defaultParallelism))
            rows = spark.range(0, tasks, 1, tasks).mapInPandas(warm, "pid long").collect()
            if pids is not None:
                pids.extend(int(r.pid) for r in rows)
        except Exception as exc:  # noqa: BLE001 - an optimisation: the query starts its own workers
            logger.info("starting the Python workers ahead of the query failed (%s: %s)", type(exc).__name__, exc)
        finally:
            if timer is not None:
                timer.cancel()

    thread = threading.Thread(target=run, name="qmon-warm-workers", daemon=True)
    thread.start()
    return thread
