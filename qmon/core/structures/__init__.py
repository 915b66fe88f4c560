"""IMS CQS structure accounting and decisions: usage, alter, overflow mode, overflow
candidates through the overflow exit, leaving overflow, structure full.  Pure: no Spark,
no Kafka, no clock.  Follows IMS, *CQS structure overflow function*, and the IMS shared queues
presentation (data elements, long messages, structure full).

* Capacity is counted in 512-byte **data elements**: a structure of K KB holds 2·K
  elements; a message takes ceil(bytes / 512) elements, at least 1.
* IMS queue names begin with a queue-type digit (1 transaction ready, 2 transaction
  staging, ..., 9 OTMA ready).  A message longer than ``lgmsgsz`` puts its first
  ``lgmsgsz`` bytes on its ready queue and the rest on the staging queue (1→2, 5→6).
* After each put that leaves primary usage ≥ OVFLWMAX: **alter** (grow towards SIZE, to the
  smallest whole-KB size that brings usage to OVFLWMAX − 20 or below) and, if usage is still
  at or above OVFLWMAX, **overflow mode**: candidates (not staging, not in overflow, not
  empty; most elements first, ties by name) are offered one at a time to the **overflow
  exit** until primary usage without the approved queues is ≤ OVFLWMAX − 20, 512 queues are
  approved, or the list runs out.
* With an overflow structure (OVFLWSTR) the approved queues move there; a scan every
  ``overflow_scan_interval`` of event time returns the empty ones (QUEUE_OVERFLOW_ENDED) and
  ends overflow mode when none remain.  Without one, puts to approved queues are rejected
  and the structure leaves overflow mode when usage falls to OVFLWMAX − 20 or below.
* A put that does not fit is rejected: STRUCTURE_FULL (``CQS0205E STRUCTURE name IS FULL``)
  once per episode, relieved by the next get that frees space.  Crossing ``fullthreshold``
  raises STRUCTURE_NEAR_FULL once and resolves when usage drops below it.

Choices where IBM's documentation is silent (docs/design/semantics.md):

* A GET frees exactly what the put of that message took, ready and staging parts, in FIFO
  order per queue (the IMS shared queues presentation: MSG2A and MSG2B are deleted together).  Each queue keeps its
  messages' sizes as size runs ``[count, ready elements, staging elements]`` (equal sizes share
  a run; ``qmon.core.message_runs``), at most ``MAX_RUNS`` runs: past that the two oldest runs
  merge, their gets then free the run's average and its last get the rest, so totals stay exact.  A GET with
  ``msg_bytes`` takes the oldest message of that size if one is queued (a get by message id).
  A GET for a queue with no message qmon saw put frees nothing.
* Thresholds compare exact element counts (``used * 100 >= pct * capacity``); percentages
  are rounded for display only.
* Candidate selection runs when the threshold is *reached*: primary usage goes from below
  OVFLWMAX to at or above it.  Usage that stays above it selects nothing more; it is reached
  again once usage has been below OVFLWMAX (after a selection moved queues, or gets).
* The overflow structure has a size: an approved queue moves only if its elements fit in the
  overflow structure's free space; otherwise it stays in the primary, not in overflow mode
  (``in_overflow`` false in the OverflowCandidates record), and selection goes on with the
  next candidate.
* Hysteresis: STRUCTURE_NEAR_FULL resolves when usage has stayed below FULLTHRESHOLD −
  ``clear_margin`` points for ``clear_hold`` of event time; STRUCTURE_FULL and
  OVERFLOW_STRUCTURE_FULL when it has stayed below 100 − ``clear_margin`` that long (defaults 5
  points, 30 s).  The RESOLVED carries the instant the hold ended; a quiet structure gets it from
  the Spark timer, as for the scan.
* START carries a depth but no sizes, so it does not change structure accounting.
* Near-full is judged after alter and overflow have acted on the put, so a crossing that
  an alter removes at once raises nothing.
* The overflow scan timer runs in event time; when a structure is quiet the Spark job
  advances it on the arrival clock, as for the stall alert.
"""

from qmon.core.structures.data_elements import (
    ELEMENT_BYTES,
    QUEUE_TYPES,
    STAGING_OF,
    STAGING_TYPES,
    at_or_above,
    elements,
    queue_type,
    staging_queue,
)
from qmon.core.structures.definitions import StructureDef, StructureSettings
from qmon.core.structures.monitor import StructureMonitor
from qmon.core.structures.overflow import MAX_APPROVED
from qmon.core.structures.overflow_exit import ExitRule, OverflowExit
from qmon.core.structures.state import STATE_VERSION, StructureQueueState, StructureState

__all__ = [
    "ELEMENT_BYTES",
    "MAX_APPROVED",
    "QUEUE_TYPES",
    "STAGING_OF",
    "STAGING_TYPES",
    "STATE_VERSION",
    "ExitRule",
    "OverflowExit",
    "StructureDef",
    "StructureMonitor",
    "StructureQueueState",
    "StructureSettings",
    "StructureState",
    "at_or_above",
    "elements",
    "queue_type",
    "staging_queue",
]
