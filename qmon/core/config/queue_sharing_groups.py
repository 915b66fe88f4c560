"""``qsgs:``: queue-sharing groups (IBM MQ for z/OS), their members and their shared queues."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator

from qmon.core.config.base import Frozen
from qmon.core.sharing import QueueSharingGroup

#: an MQ object name's characters (IBM MQ, *Rules for naming IBM MQ objects*)
_MQ_NAME = re.compile(r"^[A-Za-z0-9._/%]{1,48}$")
#: a queue-sharing group's name: 1-4 characters, upper-case letters, digits, @, # and $, not a digit first
_QSG_NAME = re.compile(r"^[A-Z@#$][A-Z0-9@#$]{0,3}$")


class QsgConfig(Frozen):
    """A queue-sharing group (IBM MQ for z/OS) and its shared queues: every member's puts, gets and commands for
    a shared queue reach one queue (the semantics page, *Shared queues*)."""

    name: str = Field(
        description="the queue-sharing group's name: 1-4 characters (upper-case letters, digits, @ # $), "
        "different from every queue manager's name, as IBM MQ requires"
    )
    members: tuple[str, ...] = Field(
        min_length=1, description="its queue managers, as the records' qmgr field names them; each in one group only"
    )
    shared_queues: tuple[str, ...] = Field(
        (),
        description="names of queues shared from the start (patterns, * and ?): a member's queue whose name "
        "matches is the group's shared queue, as if a member had sent DEFINE QLOCAL(name) QSGDISP(SHARED) (which "
        "shares any other)",
    )

    @field_validator("name", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.upper() if isinstance(v, str) else v

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _QSG_NAME.match(v):
            raise ValueError(
                f"{v!r} is not a queue-sharing group name: 1-4 characters, upper-case letters, digits, @ # $, "
                "not a digit first"
            )
        return v

    @field_validator("members")
    @classmethod
    def _members(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for name in v:
            if not _MQ_NAME.match(name):
                raise ValueError(f"{name!r} is not a queue manager name (1-48 letters, digits and . / _ %)")
        dup = sorted({n for n in v if v.count(n) > 1})
        if dup:
            raise ValueError(f"{dup[0]} is listed twice")
        return v

    @field_validator("shared_queues")
    @classmethod
    def _patterns(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in v:
            if not re.fullmatch(r"[A-Za-z0-9._/%*?]{1,48}", pattern):
                raise ValueError(
                    f"{pattern!r} is not a queue-name pattern: 1-48 characters, those of a queue name "
                    "(letters, digits, . / _ %) and the wildcards * and ?"
                )
        return v

    def group(self) -> QueueSharingGroup:
        return QueueSharingGroup(self.name, self.members, self.shared_queues)
