"""The version of the state qmon keeps in a checkpoint: every queue-manager shard, structure and unit value
carries it, and so does the checkpoint's ``qmon-placement.json``.  A qmon's rules read state of its own version
only; the job migrates qmon 0.4's as it loads it (``qmon.streaming.state_0_4``), and refuses a checkpoint of any
other version when it starts, naming the version found (upgrading across a new version means a new checkpoint,
given the old one's queues by ``qmon state export`` and ``import``; a release that keeps the version keeps the
checkpoint).  Pure."""

from __future__ import annotations

#: 7: every queue and structure keeps its fill forecasts' samples and episodes (``forecast``), and every queue its
#: messages' put times and its last put and get; a queue-sharing group's shard keeps its members' PERFMEV, and
#: each shared queue the member of its latest record; every field is named as its ``TypedDict`` declares it
#: (``qmon.core.queues.QueueState``, ``qmon.core.structures.StructureState``), a queue's stored by position in
#: that order (``qmon.streaming.state.LAYOUTS``)
STATE_VERSION = 7


class StateVersionError(ValueError):
    """State written by a qmon of another state version."""

    def __init__(self, what: str, found: object, expected: int = STATE_VERSION):
        self.found = found
        super().__init__(
            f"{what} state of version {found!r}; this qmon reads state version {expected} only: "
            "start the job with a new checkpoint directory and `qmon state import` what the old one held (see the "
            "production guide, upgrading)"
        )
