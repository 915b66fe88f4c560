"""Structure full and near full, with hysteresis: STRUCTURE_FULL when a put does not fit, STRUCTURE_NEAR_FULL
at FULLTHRESHOLD (z/OS structure full monitoring), OVERFLOW_STRUCTURE_FULL; each resolves once usage has
stayed ``clear_margin`` points below its threshold for ``clear_hold`` of event time.  Pure."""

from __future__ import annotations

from qmon.core.ids import event_id
from qmon.core.records import Activity, Emit
from qmon.core.structures.data_elements import at_or_above, usage_pct
from qmon.core.structures.state import ALERT_ID_OF
from qmon.core.structures.structure import Structure


class FullMonitoring:
    """The full and near-full alerts of a structure: STRUCTURE_NEAR_FULL after an operation (``near_full``), the
    holds that resolve them (``restart_hold`` after a rejected put, ``track_clear`` after an operation), and the
    holds' ends due by event time (``catch_up``, ``due``).  STRUCTURE_FULL and OVERFLOW_STRUCTURE_FULL fire
    where a put is rejected (``accounting``)."""

    def __init__(self, structure: Structure):
        self.structure = structure
        self.definition = structure.definition
        self.state = structure.state

    def _clear(self, key: str) -> bool:
        """Whether the condition that ends alert ``key`` holds: usage ``clear_margin`` points below its threshold."""
        d, st, s = self.definition, self.state, self.structure
        assert d is not None
        if key == "near":  # (the configuration keeps clear_margin below fullthreshold)
            return not at_or_above(st["used"], s.capacity, max(1, d.fullthreshold - d.clear_margin))
        if key == "full":
            return not at_or_above(st["used"], s.capacity, 100 - d.clear_margin)
        return not at_or_above(st["overflow_used"], s.ovf_capacity, 100 - d.clear_margin)

    def restart_hold(self, key: str, ts: int) -> None:
        """A rejected put: the structure is full again, so the hold starts over — at this put if usage is
        below the clear level all the same (a message larger than the free space), else when it gets there."""
        clear = self.state.setdefault("clear", {})
        if self.state[ALERT_ID_OF[key]] is not None and self._clear(key):
            clear[key] = ts
        else:
            clear.pop(key, None)

    def track_clear(self, ts: int) -> list[Emit]:
        """After an operation: note since when each firing alert's clear condition has held (forget it when
        usage went back up), and resolve those that held ``clear_hold``."""
        st = self.state
        clear = st.setdefault("clear", {})
        if (
            not clear
            and st["full_alert_id"] is None
            and st["ovf_full_alert_id"] is None
            and st["near_alert_id"] is None
        ):
            return []  # nothing firing, no hold running: nothing to note or resolve
        for key in ("full", "ovf_full", "near"):
            if st[ALERT_ID_OF[key]] is not None and self._clear(key):
                clear.setdefault(key, ts)
            else:
                clear.pop(key, None)
        return self._resolve_due(ts)

    def catch_up(self, now_ts: int) -> list[Emit]:
        """Before a record at event time ``now_ts``, or on the clock: the alerts whose hold has ended by then."""
        return self._resolve_due(now_ts) if self.state.get("clear") else []  # (no hold runs: none due)

    def due(self) -> int | None:
        """The event time at which the first running hold ends, or None."""
        d, clear = self.definition, self.state.get("clear")
        if not clear or d is None:
            return None
        return min(clear.values()) + d.clear_hold_ms

    def _resolve_due(self, now_ts: int) -> list[Emit]:
        """RESOLVED, at the instant the hold ended, for every alert whose clear condition held ``clear_hold``
        by event time ``now_ts``."""
        d, st, s = self.definition, self.state, self.structure
        assert d is not None
        out: list[Emit] = []
        for key in ("full", "ovf_full", "near"):
            since = st.get("clear", {}).get(key)
            if since is None or now_ts < since + d.clear_hold_ms:
                continue
            at = since + d.clear_hold_ms
            del st["clear"][key]
            aid, st[ALERT_ID_OF[key]] = st[ALERT_ID_OF[key]], None
            usage, src = s.usage(), f"clear@{at}"
            held = f" for {d.clear_hold_ms // 1000} s" if d.clear_hold_ms else ""
            if key == "full":
                out.append(
                    s.alert(
                        "STRUCTURE_FULL_RELIEVED",
                        "RESOLVED",
                        aid,
                        "INFO",
                        at,
                        src,
                        usage_before_pct=usage,
                        usage_after_pct=usage,
                        summary=(
                            f"Structure {s.name} is no longer full: it has been below {100 - d.clear_margin}% "
                            f"used{held} ({usage}% now)."
                        ),
                        action="None; check that the consumers keep up.",
                    )
                )
            elif key == "ovf_full":
                out.append(
                    s.alert(
                        "OVERFLOW_STRUCTURE_FULL",
                        "RESOLVED",
                        aid,
                        "INFO",
                        at,
                        src,
                        usage_before_pct=s.ovf_usage(),
                        usage_after_pct=s.ovf_usage(),
                        summary=(
                            f"Overflow structure {d.ovflwstr} of {s.name} has room again: below "
                            f"{100 - d.clear_margin}% used{held} ({s.ovf_usage()}% now)."
                        ),
                        action="None.",
                    )
                )
            else:
                out.append(
                    s.alert(
                        "STRUCTURE_NEAR_FULL",
                        "RESOLVED",
                        aid,
                        "INFO",
                        at,
                        src,
                        usage_before_pct=usage,
                        usage_after_pct=usage,
                        message=f"IXC586I STRUCTURE {s.name} IS NOW BELOW STRUCTURE FULL MONITORING THRESHOLD",
                        summary=(
                            f"Structure {s.name} is {usage}% used: it has been more than {d.clear_margin} points "
                            f"below its full threshold of {d.fullthreshold}%{held}."
                        ),
                        action="None.",
                    )
                )
        return out

    def near_full(self, rec: Activity, before: tuple[int, int]) -> list[Emit]:
        """After ``rec`` (usage ``before`` it: used, capacity): STRUCTURE_NEAR_FULL if usage is at or above
        FULLTHRESHOLD and it does not fire yet."""
        d, st, s = self.definition, self.state, self.structure
        assert d is not None
        if st["near_alert_id"] is None and at_or_above(st["used"], s.capacity, d.fullthreshold):
            usage = s.usage()
            aid = st["near_alert_id"] = event_id("near", s.name, rec.event_id)
            return [
                s.alert(
                    "STRUCTURE_NEAR_FULL",
                    "FIRING",
                    aid,
                    "WARNING",
                    rec.ts,
                    rec.event_id,
                    queue=rec.queue,
                    qmgr=rec.qmgr,
                    usage_before_pct=usage_pct(*before),
                    usage_after_pct=usage,
                    size_kb_before=st["size_kb"],
                    size_kb_after=st["size_kb"],
                    message=f"IXC585E STRUCTURE {s.name} IS AT OR ABOVE STRUCTURE FULL MONITORING THRESHOLD OF "
                    f"{d.fullthreshold}%",
                    summary=(
                        f"Structure {s.name} is {usage}% used, at or above its full threshold of "
                        f"{d.fullthreshold}%; at 100% puts are rejected (CQS0205E)."
                    ),
                    action=(
                        "Find the deepest queues of the structure and drain them; consider a larger SIZE or an "
                        "overflow structure."
                    ),
                )
            ]
        return []
