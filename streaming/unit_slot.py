"""An ``applyInPandasWithState`` group's stored value: the unit's state and the records it holds for event-time
order (``UnitSlot``)."""

from __future__ import annotations

import msgpack
from pyspark.sql.streaming.state import GroupState

from qmon.core.queues import MonitorSettings
from qmon.streaming import state_0_4
from qmon.streaming.event_order import Held


class UnitSlot:
    """An ``applyInPandasWithState`` group's state: the unit's value, the records it holds for event-time
    order (``held``, ``streaming.event_order``), and the group's event-time timeout; written once, by
    ``commit``, at the end of a call.

    Spark times a group out when the watermark passes the timeout (strictly), so a deadline ``at`` (due
    when the watermark reaches it) becomes the timeout ``at - 1``; the timeout is set again in every call
    (a call that sets none leaves the group without one).  A group holding records is timed out at the next
    batch whose watermark has moved: a batch without data, in which every partition is at its end.

    A value qmon 0.4 stored is migrated when it is loaded (``streaming.state_0_4``), and stored as this qmon's
    at the end of the call."""

    def __init__(self, state: GroupState, settings: MonitorSettings):
        self.state = state
        value = msgpack.unpackb(state.get[0], raw=False) if state.exists else {}
        if state_0_4.is_0_4(value):
            value = {"unit": state_0_4.upgrade(value, lambda queue: settings.attrs_for(queue)["QDPMAXEV"])}
        self.blob: bytes | None = value.get("unit")
        self.held = Held(value.get("order"))
        self.timer_at: int | None = None
        self.changed = False

    def load(self) -> bytes | None:
        return self.blob

    @staticmethod
    def unit_value(stored_value: bytes) -> bytes | None:
        """The unit's own value (``qmon.streaming.state``) inside a group's stored value."""
        return msgpack.unpackb(stored_value, raw=False).get("unit")

    def store(self, blob: bytes, timer_at: int | None) -> None:
        self.blob, self.timer_at, self.changed = blob, timer_at, True

    def commit(self) -> None:
        order = self.held.stored()
        if self.blob is None and order == {"frontier": None}:
            return  # nothing to keep
        self.state.update((msgpack.packb({"unit": self.blob, "order": order}, use_bin_type=True),))
        watermark = self.state.getCurrentWatermarkMs()
        timer_at = self.timer_at
        if self.held:
            timer_at = watermark + 1 if timer_at is None else min(timer_at, watermark + 1)
        if timer_at is not None:
            self.state.setTimeoutTimestamp(max(timer_at - 1, watermark, 1))
