"""Journal receiver monitoring for IBM MQ for IBM i (SPEC §8, seed 003).  Pure.

Receivers of a queue manager's AMQAJRN journal are named ``AMQArnnnnn``:

* ``A`` (the instance letter): A-Z; A for a single-instance queue manager;
* ``r`` (the restore digit): 0-9, incremented each time a receiver is restored;
* ``nnnnn`` (the sequence): 00000-99999, incremented by one for the next receiver.

The next name is ``AMQAr(nnnnn+1)``, wrapping 99999 → 00000 within the same ``r``:
AMQA099999 → AMQA000000, AMQA999999 → AMQA900000.  If that name already exists,
IBM i sends CPI70E3 to QSYSOPR and automatic receiver switching stops (the seed
prints it as CPI7OE3); the attached receiver keeps growing until someone acts.
If no name in the sequence is free, old receivers must be deleted and RCDMQMIMG run.

From each JournalStatus (attached receiver, its size and threshold, the receivers
present) qmon raises, as FIRING/RESOLVED episodes (SPEC §9):

* RECEIVER_NEAR_THRESHOLD: size ≥ ``near_pct`` (default 90) % of the threshold;
* SWITCH_BLOCKED: the next name already exists;
* NAME_SPACE_EXHAUSTED: no name in the sequence is free;
* RECEIVER_SWITCHED (INFO): the attached receiver changed since the last status.

A status older than the newest one seen for the journal is stale and ignored, so
a replayed or reordered status raises nothing new.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, NamedTuple

from qmon import topics
from qmon.alerts import alert
from qmon.ids import event_id

#: A receiver name; the Spark job validates input with the same pattern.
RECEIVER_PATTERN = r"^AMQ[A-Z][0-9]{6}$"
_RECEIVER = re.compile(r"^AMQ([A-Z])([0-9])([0-9]{5})$")
SEQUENCE_SIZE = 100_000


class ReceiverNameError(ValueError):
    """A name that is not a journal receiver name ``AMQArnnnnn``."""


class Receiver(NamedTuple):
    instance: str  # A-Z
    restore: int  # r, 0-9
    sequence: int  # nnnnn, 0-99999

    @property
    def name(self) -> str:
        return f"AMQ{self.instance}{self.restore}{self.sequence:05d}"


def parse(name: str) -> Receiver:
    """``AMQA012345`` -> Receiver('A', 0, 12345); a clear error for anything else."""
    if not isinstance(name, str):
        raise ReceiverNameError(f"{name!r} is not a journal receiver name: expected a string like AMQA000001")
    m = _RECEIVER.match(name)
    if m:
        return Receiver(m.group(1), int(m.group(2)), int(m.group(3)))
    if not name.startswith("AMQ"):
        why = "it does not start with AMQ"
    elif len(name) != 10:
        why = f"it is {len(name)} characters long; a receiver name is 10 (AMQ, a letter, a digit r, 5 digits)"
    elif not ("A" <= name[3] <= "Z"):
        why = f"its 4th character {name[3]!r} is not an instance letter A-Z"
    else:
        why = f"{name[4:]!r} is not six digits (the restore digit r and the sequence nnnnn)"
    raise ReceiverNameError(f"{name!r} is not a journal receiver name AMQArnnnnn: {why}")


def next_name(name: str) -> str:
    """The next receiver name by rule 1: nnnnn + 1, wrapping 99999 → 00000 with r kept."""
    r = parse(name)
    return Receiver(r.instance, r.restore, (r.sequence + 1) % SEQUENCE_SIZE).name


def first_free(name: str, present: Iterable[str]) -> str | None:
    """The first name after ``name`` in its sequence that is not present, or None if all are taken."""
    taken = set(present)
    r = parse(name)
    for step in range(1, SEQUENCE_SIZE + 1):
        candidate = Receiver(r.instance, r.restore, (r.sequence + step) % SEQUENCE_SIZE).name
        if candidate not in taken:
            return candidate
    return None


class JournalStatus(NamedTuple):
    event_id: str
    qmgr: str
    ts: int
    library: str
    attached: str
    size_kb: int
    threshold_kb: int
    receivers: tuple[str, ...]


class JournalMonitor:
    """Episodes of the journals of one queue manager (state: library -> dict)."""

    def __init__(self, qmgr: str, state: dict[str, Any], near_pct: int = 90):
        self.qmgr = qmgr
        self.state = state
        self.near_pct = near_pct

    def _emit(self, s: JournalStatus, type_: str, state: str, alert_id: str, severity: str, *, summary: str,
              action: str, message: str | None = None) -> tuple[str, str, dict[str, Any]]:
        journal = f"{s.library}/AMQAJRN"
        rec = alert(event_id("journal", self.qmgr, s.library, type_, state, alert_id, s.event_id), type_, state,
                    alert_id, severity, structure=journal, qmgr=self.qmgr, ts=s.ts, summary=summary,
                    action=action, message=message, size_kb_after=s.size_kb,
                    usage_after_pct=round(100.0 * s.size_kb / s.threshold_kb, 1) if s.threshold_kb > 0 else None)
        return topics.STRUCTURE, f"{self.qmgr}/{s.library}", rec

    def on_status(self, s: JournalStatus) -> list[tuple[str, str, dict[str, Any]]]:
        j = self.state.get(s.library)
        if j is None:
            j = self.state[s.library] = {"attached": None, "ts": None, "near": None, "blocked": None,
                                         "exhausted": None}
        if j["ts"] is not None and s.ts < j["ts"]:
            return []  # stale
        j["ts"] = s.ts
        out = []
        lib = s.library
        if j["attached"] is not None and j["attached"] != s.attached:
            out.append(self._emit(
                s, "RECEIVER_SWITCHED", "INFO", event_id("switch", self.qmgr, lib, j["attached"], s.attached), "INFO",
                summary=(f"Journal AMQAJRN of {self.qmgr} (library {lib}) switched from receiver {j['attached']} "
                         f"to {s.attached}."),
                action="None. Save and delete detached receivers that are no longer needed."))
        j["attached"] = s.attached

        # near threshold
        near = s.threshold_kb > 0 and s.size_kb * 100 >= self.near_pct * s.threshold_kb
        pct = round(100.0 * s.size_kb / s.threshold_kb, 1) if s.threshold_kb > 0 else 0.0
        if near and j["near"] is None:
            j["near"] = event_id("near", self.qmgr, lib, s.attached)
            out.append(self._emit(
                s, "RECEIVER_NEAR_THRESHOLD", "FIRING", j["near"], "WARNING",
                summary=(f"Journal receiver {lib}/{s.attached} of {self.qmgr} is {s.size_kb} KB, {pct}% of its "
                         f"threshold of {s.threshold_kb} KB; the system switches to {next_name(s.attached)} "
                         "when it passes the threshold."),
                action=(f"Check that {next_name(s.attached)} does not already exist in {lib} (WRKJRNRCV), so the "
                        "automatic switch can happen, and that the ASP has room for the new receiver.")))
        elif not near and j["near"] is not None:
            aid, j["near"] = j["near"], None
            out.append(self._emit(
                s, "RECEIVER_NEAR_THRESHOLD", "RESOLVED", aid, "INFO",
                summary=f"Journal receiver {lib}/{s.attached} of {self.qmgr} is below {self.near_pct}% of its threshold.",
                action="None."))

        # switch blocked / name space exhausted
        nxt = next_name(s.attached)
        present = set(s.receivers)
        blocked = nxt in present
        if blocked and j["blocked"] is None:
            j["blocked"] = event_id("blocked", self.qmgr, lib, s.attached)
            free = first_free(s.attached, present) or "AMQ" + s.attached[3] + "rnnnnn"
            out.append(self._emit(
                s, "SWITCH_BLOCKED", "FIRING", j["blocked"], "CRITICAL",
                message=f"CPI70E3 Journal receiver {nxt} already exists in library {lib}; automatic change stopped",
                summary=(f"Receiver {lib}/{nxt}, the next name after the attached {s.attached}, already exists: "
                         f"IBM i stops automatic receiver switching for journal AMQAJRN of {self.qmgr}, and "
                         f"{s.attached} keeps growing past its threshold of {s.threshold_kb} KB."),
                action=(f"Investigate why {nxt} exists (a restored receiver?). Then create and attach a new receiver "
                        f"by hand: CRTJRNRCV JRNRCV({lib}/{free}) THRESHOLD({s.threshold_kb}) "
                        f"TEXT('MQM LOCAL JOURNAL RECEIVER'); CHGOBJOWN OBJ({lib}/{free}) OBJTYPE(*JRNRCV) "
                        f"NEWOWN(QMQM); CHGJRN JRN({lib}/AMQAJRN) JRNRCV({lib}/{free}).")))
        elif not blocked and j["blocked"] is not None:
            aid, j["blocked"] = j["blocked"], None
            out.append(self._emit(
                s, "SWITCH_BLOCKED", "RESOLVED", aid, "INFO",
                summary=(f"Journal AMQAJRN of {self.qmgr} can switch again: the next receiver name {nxt} is free."),
                action="None."))
        exhausted = blocked and first_free(s.attached, present) is None
        if exhausted and j["exhausted"] is None:
            j["exhausted"] = event_id("exhausted", self.qmgr, lib, s.attached)
            r = parse(s.attached)
            out.append(self._emit(
                s, "NAME_SPACE_EXHAUSTED", "FIRING", j["exhausted"], "CRITICAL",
                summary=(f"Every receiver name AMQ{r.instance}{r.restore}00000-AMQ{r.instance}{r.restore}99999 exists "
                         f"in {lib}: journal AMQAJRN of {self.qmgr} has no name to switch to."),
                action=("Do both: 1. delete journal receivers no longer needed (save them first); 2. record the "
                        "journal changes into the latest receiver with RCDMQMIMG, then repeat step 1, so old "
                        "receiver names can be reused.")))
        elif not exhausted and j["exhausted"] is not None:
            aid, j["exhausted"] = j["exhausted"], None
            out.append(self._emit(
                s, "NAME_SPACE_EXHAUSTED", "RESOLVED", aid, "INFO",
                summary=f"Receiver names are free again in {lib} for journal AMQAJRN of {self.qmgr}.",
                action="None."))
        return out
