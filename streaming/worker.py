"""What qmon does once in each of PySpark's Python workers.

PySpark's daemon runs ``gc.collect()`` after every task a reused worker finishes, and a full collection
walks every object the worker holds: pandas', pyarrow's, PySpark's and qmon's modules, tens of thousands
of objects, for every Python task of every micro-batch.  ``freeze_imports`` collects once and moves everything alive into
the permanent generation (``gc.freeze``), so later collections walk only what tasks create.  Frozen objects
are still freed by reference counting; a cycle among them is never collected (there is none: the first
call collects before freezing).
"""

from __future__ import annotations

import gc

_frozen = False


def freeze_imports() -> None:
    """Freeze what the worker holds now (its modules), once per worker process."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.collect()
        gc.freeze()
