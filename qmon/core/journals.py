"""Journal receiver monitoring for IBM MQ for IBM i (*Queue manager journals on IBM i*).  Pure.

Each queue manager instance has a journal ``QMGRLIB/AMQAJRN`` in the queue manager library, where
``A`` is the letter of the instance (A for a single-instance queue manager; it varies between the
instances of a multi-instance one).  Its receivers are named ``AMQArnnnnn`` with the same letter:

* ``A`` (the instance letter): A-Z; A for a single-instance queue manager;
* ``r`` (the restore digit): 0-9, incremented each time a receiver is restored;
* ``nnnnn`` (the sequence): 00000-99999, incremented by one for the next receiver.

The next name is ``AMQAr(nnnnn+1)``, wrapping 99999 → 00000 within the same ``r``:
AMQA099999 → AMQA000000, AMQA999999 → AMQA900000.  If that name already exists,
IBM i sends CPI70E3 to QSYSOPR and automatic receiver switching stops; the attached
receiver keeps growing until someone acts.
If no name in the sequence is free, old receivers must be deleted and RCDMQMIMG run.

From each JournalStatus (attached receiver, its size and threshold, the receivers
present) qmon raises, as FIRING/RESOLVED episodes:

* RECEIVER_NEAR_THRESHOLD: size ≥ ``near_pct`` (default 90) % of the threshold;
* SWITCH_BLOCKED: the next name already exists;
* NAME_SPACE_EXHAUSTED: no name in the sequence is free;
* RECEIVER_SWITCHED (INFO): the attached receiver changed since the last status.

The journal of a status is named after its attached receiver's instance letter:
receiver ``AMQB000001`` is attached to journal ``LIB/AMQBJRN``, and every alert names
that journal (``structure``, summary, the CHGJRN command).  State is kept per journal
(library and instance), so statuses from two instances of a multi-instance queue
manager never look like a switch between them, and a status older than the newest one
seen for its journal is stale and ignored, so a replayed or reordered status raises
nothing new.  The attached receiver always exists, whether or not the status lists it
among the receivers present.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, TypedDict

from qmon.core import topics
from qmon.core.ids import event_id
from qmon.core.records import SubjectKind, alert

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
    """The first name after ``name`` in its sequence that is not present, or None if all are taken.

    ``name`` itself is never offered: it is the attached receiver, which exists whether or not
    ``present`` lists it.
    """
    taken = set(present)
    r = parse(name)
    for step in range(1, SEQUENCE_SIZE):
        candidate = Receiver(r.instance, r.restore, (r.sequence + step) % SEQUENCE_SIZE).name
        if candidate not in taken:
            return candidate
    return None


def journal_name(library: str, attached: str) -> str:
    """``LIB/AMQxJRN``: the journal the receiver ``attached`` belongs to (x: its instance letter)."""
    return f"{library}/AMQ{parse(attached).instance}JRN"


class JournalState(TypedDict):
    """One journal's state (under ``LIB/AMQxJRN`` in a queue manager shard's ``journals``)."""

    attached: str | None  # the attached receiver
    ts: int | None  # the newest status applied
    near_alert_id: str | None  # the firing RECEIVER_NEAR_THRESHOLD episode, if any
    blocked_alert_id: str | None  # the firing SWITCH_BLOCKED episode, if any
    exhausted_alert_id: str | None  # the firing NAME_SPACE_EXHAUSTED episode, if any


#: alert-id fields as queue state version 1 names them (``*_alert_id`` from version 2)
class JournalStatus(NamedTuple):
    event_id: str
    qmgr: str
    ts: int
    library: str
    attached: str
    size_kb: int
    threshold_kb: int
    receivers: tuple[str, ...]

    @classmethod
    def of(cls, event_id: str, qmgr: str, ts: int, fields: Mapping[str, Any]) -> JournalStatus:
        """From a JournalStatus record's journal fields (library, attached, size_kb, threshold_kb, receivers)."""
        return cls(
            event_id,
            qmgr,
            ts,
            fields["library"],
            fields["attached"],
            int(fields["size_kb"]),
            int(fields["threshold_kb"]),
            tuple(fields["receivers"]),
        )


class JournalMonitor:
    """Episodes of the journals of one queue manager (state: journal ``LIB/AMQxJRN`` -> dict)."""

    def __init__(self, qmgr: str, state: dict[str, Any], near_pct: int = 90):
        self.qmgr = qmgr
        self.state = state
        self.near_pct = near_pct

    def _emit(
        self,
        s: JournalStatus,
        type_: str,
        state: str,
        alert_id: str,
        severity: str,
        *,
        summary: str,
        action: str,
        message: str | None = None,
    ) -> tuple[str, str, dict[str, Any]]:
        journal = journal_name(s.library, s.attached)
        rec = alert(
            event_id("journal", self.qmgr, s.library, type_, state, alert_id, s.event_id),
            type_,
            state,
            alert_id,
            severity,
            subject_kind=SubjectKind.JOURNAL,
            subject=journal,
            qmgr=self.qmgr,
            ts=s.ts,
            summary=summary,
            action=action,
            message=message,
            size_kb_after=s.size_kb,
            usage_after_pct=round(100.0 * s.size_kb / s.threshold_kb, 1) if s.threshold_kb > 0 else None,
        )
        return topics.ALERTS, f"{self.qmgr}/{s.library}", rec

    def on_status(self, s: JournalStatus) -> list[tuple[str, str, dict[str, Any]]]:
        journal = journal_name(s.library, s.attached)
        jrn = journal.split("/", 1)[1]  # AMQxJRN
        j = self.state.get(journal)
        if j is None:
            j = self.state[journal] = {
                "attached": None,
                "ts": None,
                "near_alert_id": None,
                "blocked_alert_id": None,
                "exhausted_alert_id": None,
            }
        if j["ts"] is not None and s.ts < j["ts"]:
            return []  # stale
        j["ts"] = s.ts
        out = []
        lib = s.library
        if j["attached"] is not None and j["attached"] != s.attached:
            out.append(
                self._emit(
                    s,
                    "RECEIVER_SWITCHED",
                    "INFO",
                    event_id("switch", self.qmgr, lib, j["attached"], s.attached),
                    "INFO",
                    summary=(
                        f"Journal {jrn} of {self.qmgr} (library {lib}) switched from receiver {j['attached']} "
                        f"to {s.attached}."
                    ),
                    action="None. Save and delete detached receivers that are no longer needed.",
                )
            )
        j["attached"] = s.attached

        # near threshold
        near = s.threshold_kb > 0 and s.size_kb * 100 >= self.near_pct * s.threshold_kb
        pct = round(100.0 * s.size_kb / s.threshold_kb, 1) if s.threshold_kb > 0 else 0.0
        if near and j["near_alert_id"] is None:
            aid = j["near_alert_id"] = event_id("near", self.qmgr, lib, s.attached)
            out.append(
                self._emit(
                    s,
                    "RECEIVER_NEAR_THRESHOLD",
                    "FIRING",
                    aid,
                    "WARNING",
                    summary=(
                        f"Journal receiver {lib}/{s.attached} of {self.qmgr} is {s.size_kb} KB, {pct}% of its "
                        f"threshold of {s.threshold_kb} KB; the system switches to {next_name(s.attached)} "
                        "when it passes the threshold."
                    ),
                    action=(
                        f"Check that {next_name(s.attached)} does not already exist in {lib} (WRKJRNRCV), so the "
                        "automatic switch can happen, and that the ASP has room for the new receiver."
                    ),
                )
            )
        elif not near and j["near_alert_id"] is not None:
            aid, j["near_alert_id"] = j["near_alert_id"], None
            out.append(
                self._emit(
                    s,
                    "RECEIVER_NEAR_THRESHOLD",
                    "RESOLVED",
                    aid,
                    "INFO",
                    summary=f"Journal receiver {lib}/{s.attached} of {self.qmgr} is below {self.near_pct}% of its threshold.",
                    action="None.",
                )
            )

        # switch blocked / name space exhausted
        nxt = next_name(s.attached)
        present = set(s.receivers)
        present.add(s.attached)  # it exists, listed or not: never advise creating it
        blocked = nxt in present
        if blocked and j["blocked_alert_id"] is None:
            aid = j["blocked_alert_id"] = event_id("blocked", self.qmgr, lib, s.attached)
            free = first_free(s.attached, present) or "AMQ" + s.attached[3] + "rnnnnn"
            out.append(
                self._emit(
                    s,
                    "SWITCH_BLOCKED",
                    "FIRING",
                    aid,
                    "CRITICAL",
                    message=f"CPI70E3 Journal receiver {nxt} already exists in library {lib}; automatic change stopped",
                    summary=(
                        f"Receiver {lib}/{nxt}, the next name after the attached {s.attached}, already exists: "
                        f"IBM i stops automatic receiver switching for journal {jrn} of {self.qmgr}, and "
                        f"{s.attached} keeps growing past its threshold of {s.threshold_kb} KB."
                    ),
                    action=(
                        f"Investigate why {nxt} exists (a restored receiver?). Then create and attach a new receiver "
                        f"by hand: CRTJRNRCV JRNRCV({lib}/{free}) THRESHOLD({s.threshold_kb}) "
                        f"TEXT('MQM LOCAL JOURNAL RECEIVER'); CHGOBJOWN OBJ({lib}/{free}) OBJTYPE(*JRNRCV) "
                        f"NEWOWN(QMQM); CHGJRN JRN({journal}) JRNRCV({lib}/{free})."
                    ),
                )
            )
        elif not blocked and j["blocked_alert_id"] is not None:
            aid, j["blocked_alert_id"] = j["blocked_alert_id"], None
            out.append(
                self._emit(
                    s,
                    "SWITCH_BLOCKED",
                    "RESOLVED",
                    aid,
                    "INFO",
                    summary=(f"Journal {jrn} of {self.qmgr} can switch again: the next receiver name {nxt} is free."),
                    action="None.",
                )
            )
        exhausted = blocked and first_free(s.attached, present) is None
        if exhausted and j["exhausted_alert_id"] is None:
            aid = j["exhausted_alert_id"] = event_id("exhausted", self.qmgr, lib, s.attached)
            r = parse(s.attached)
            out.append(
                self._emit(
                    s,
                    "NAME_SPACE_EXHAUSTED",
                    "FIRING",
                    aid,
                    "CRITICAL",
                    summary=(
                        f"Every receiver name AMQ{r.instance}{r.restore}00000-AMQ{r.instance}{r.restore}99999 exists "
                        f"in {lib}: journal {jrn} of {self.qmgr} has no name to switch to."
                    ),
                    action=(
                        "Do both: 1. delete journal receivers no longer needed (save them first); 2. record the "
                        "journal changes into the latest receiver with RCDMQMIMG, then repeat step 1, so old "
                        "receiver names can be reused."
                    ),
                )
            )
        elif not exhausted and j["exhausted_alert_id"] is not None:
            aid, j["exhausted_alert_id"] = j["exhausted_alert_id"], None
            out.append(
                self._emit(
                    s,
                    "NAME_SPACE_EXHAUSTED",
                    "RESOLVED",
                    aid,
                    "INFO",
                    summary=f"Receiver names are free again in {lib} for journal {jrn} of {self.qmgr}.",
                    action="None.",
                )
            )
        return out
