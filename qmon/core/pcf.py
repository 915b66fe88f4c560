"""IBM MQ application activity trace (PCF) -> QueueActivity records.  Pure: bytes in, dicts out.

A queue manager's activity trace writes one PCF message per connection and interval to
``SYSTEM.ADMIN.TRACE.ACTIVITY.QUEUE``; IBM's Kafka Connect MQ source connector copies each body unchanged
into a Kafka topic.  Its layout (IBM's *Activity trace message reference*; the structures MQCFH, MQCFIN,
MQCFIN64, MQCFST, MQCFBS, MQCFGR; checked against ``ibm-messaging/mq-golang`` ``ibmmq/mqiPCF.go``):

* an MQCFH of 36 bytes: Type 26 (MQCFT_APP_ACTIVITY), Command 209 (MQCMD_ACTIVITY_TRACE),
  ParameterCount counting a group as one;
* top-level parameters (queue manager name 2015, application name 3024, ...), then one MQCFGR group
  (8013, MQGACF_ACTIVITY_TRACE) per MQI call.  A group's StrucLength covers its 16-byte header only; its
  ParameterCount members follow it, nested groups included.  Every structure advances by its StrucLength
  (padded to 4 bytes); types qmon does not use (MQCFIL, MQCFIL64, MQCFSL, ...) are skipped.

No MQMD reaches Kafka, so the byte order is read from the first word (26 little- or big-endian) and the
strings' character set comes from configuration (``encoding``: ASCII/UTF-8 by default, ``cp037`` /
``cp500`` for EBCDIC queue managers); names are blank- or NUL-padded.

``decode(data, ...)`` returns ``Decoded``: the activity records and the problems, each with the byte
offset where it was found.  A structure that cannot be read (truncated, a StrucLength that runs past the
end) stops decoding there: the groups before it are kept, and the message is a problem as a whole
(``fatal``).  A group that is whole but makes no sense (no operation, no queue) is a problem of its own
and the other groups are kept.
"""

from __future__ import annotations

import datetime as dt
import struct
from dataclasses import dataclass, field
from typing import Any

from qmon.core.ids import event_id
from qmon.core.records import Activity
from qmon.core.timeconv import to_ms

# structure types (MQCFT_*)
CFT_INTEGER, CFT_STRING, CFT_BYTE_STRING, CFT_GROUP, CFT_INTEGER64, CFT_APP_ACTIVITY = 3, 4, 9, 20, 23, 26
CMD_ACTIVITY_TRACE = 209
HEADER = 36

# parameters
Q_MGR_NAME = 2015
APPL_NAME = 3024
ACTIVITY_TRACE = 8013
OPERATION_ID = 1356
COMP_CODE = 1242
REASON_CODE = 1254
MSG_LENGTH = 1248
HIGHRES_TIME = 838
OBJECT_NAME = 3046
RESOLVED_Q_NAME = 3141
RESOLVED_LOCAL_Q_NAME = 3195
GET_OPTIONS = 1367
PUT_OPTIONS = 1373
CALL_TYPE = 1361
THREAD_ID = 1025
OPERATION_DATE = 3132
OPERATION_TIME = 3133
CONNECTION_ID = 7006

# MQXF_* operations
XF_PUT1, XF_PUT, XF_GET, XF_CMIT, XF_BACK, XF_CALLBACK = 8, 9, 10, 15, 16, 21
BROWSE = 0x10 | 0x20 | 0x800  # MQGMO_BROWSE_FIRST, _NEXT, _MSG_UNDER_CURSOR: nothing removed
SYNCPOINT = 0x2  # MQPMO_SYNCPOINT, MQGMO_SYNCPOINT
CBCT_MSG_REMOVED = 6
CC_FAILED = 2
MQRC_BACKED_OUT = 2003

TS_MAX = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z: the latest time qmon accepts

#: the logical topic the trace is read from; ids derive from it, not from the prefixed name
TOPIC = "qmon.mq.trace"


class PcfError(ValueError):
    def __init__(self, offset: int, message: str):
        super().__init__(f"at byte {offset}: {message}")
        self.offset, self.message = offset, message


@dataclass
class Problem:
    offset: int  # byte offset in the message where it was found
    message: str


@dataclass
class Decoded:
    activity: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    fatal: Problem | None = None  # the message cannot be read on from here (it goes to the DLQ whole)
    qmgr: str | None = None
    ignored: int = 0  # calls that are not queue activity (browse, open, inquire, ...) or backed out


#: one decoded structure: (parameter, value, offset); the value is an int, a str, bytes, a list of Param (a
#: group), or None (a type qmon skips)
Param = tuple[int, Any, int]


class _Reader:
    def __init__(self, data: bytes, encoding: str):
        self.data, self.encoding, self.size = data, encoding, len(data)
        first = data[:4]
        if len(first) < 4:
            raise PcfError(len(data), f"{len(data)} bytes: too short for a PCF header (36)")
        if struct.unpack("<i", first)[0] == CFT_APP_ACTIVITY:
            self.order = "<"
        elif struct.unpack(">i", first)[0] == CFT_APP_ACTIVITY:
            self.order = ">"
        else:
            raise PcfError(
                0,
                f"not an activity trace message: the first word is {struct.unpack('<i', first)[0]} "
                f"(little-endian) / {struct.unpack('>i', first)[0]} (big-endian), not 26 (MQCFT_APP_ACTIVITY)",
            )
        self.i1, self.i2 = struct.Struct(self.order + "i"), struct.Struct(self.order + "ii")
        self.i3, self.q = struct.Struct(self.order + "iii"), struct.Struct(self.order + "q")

    def ints(self, pos: int, n: int) -> tuple[int, ...]:
        if pos + 4 * n > self.size:
            raise PcfError(pos, f"truncated: {self.size - pos} bytes left, {4 * n} needed")
        return struct.unpack_from(f"{self.order}{n}i", self.data, pos)

    def text(self, raw: bytes) -> str:
        return raw.decode(self.encoding, errors="replace").rstrip(" \x00")

    def param(self, pos: int, depth: int = 0) -> tuple[Param, int]:
        """The structure at ``pos``: (parameter, value, offset), and where the next one starts.  A group's
        value is the list of its members; a type qmon does not use has the value None."""
        data, size = self.data, self.size
        if pos + 12 > size:
            if pos + 8 <= size and self.i2.unpack_from(data, pos)[1] == 8:
                return (0, None, pos), pos + 8  # an 8-byte structure of a type qmon does not use
            raise PcfError(pos, f"truncated: {size - pos} bytes left where a structure starts")
        typ, length, parameter = self.i3.unpack_from(data, pos)
        end = pos + length
        if length < 8 or end > size:
            raise PcfError(
                pos,
                f"structure of type {typ} has StrucLength {length}, "
                f"{'less than 8' if length < 8 else f'past the end ({size - pos} bytes left)'}",
            )
        if typ == CFT_INTEGER and length >= 16:
            return (parameter, self.i1.unpack_from(data, pos + 12)[0], pos), end
        if typ == CFT_STRING and length >= 20:
            n = self.i1.unpack_from(data, pos + 16)[0]
            if n < 0 or 20 + n > length:
                raise PcfError(pos, f"string parameter {parameter}: StringLength {n} does not fit StrucLength {length}")
            return (parameter, self.text(data[pos + 20 : pos + 20 + n]), pos), end
        if typ == CFT_INTEGER64 and length >= 24:
            return (parameter, self.q.unpack_from(data, pos + 16)[0], pos), end
        if typ == CFT_GROUP and length >= 16:
            count = self.i1.unpack_from(data, pos + 12)[0]
            if count < 0 or depth > 16:
                raise PcfError(pos, f"group {parameter}: ParameterCount {count} at nesting {depth}")
            members, nxt = [], end
            for _ in range(count):
                member, nxt = self.param(nxt, depth + 1)
                members.append(member)
            return (parameter, members, pos), nxt
        if typ == CFT_BYTE_STRING and length >= 16:
            n = self.i1.unpack_from(data, pos + 12)[0]
            if n < 0 or 16 + n > length:
                raise PcfError(pos, f"byte string {parameter}: StringLength {n} does not fit StrucLength {length}")
            return (parameter, bytes(data[pos + 16 : pos + 16 + n]), pos), end
        return (parameter, None, pos), end  # a type qmon does not use: skipped


def _fields(members: list[Param]) -> dict[int, Any]:
    """A call's members by parameter (the first of each)."""
    out: dict[int, Any] = {}
    for parameter, value, _ in members:
        if parameter not in out:
            out[parameter] = value
    return out


def decode(
    data: bytes,
    *,
    partition: int = 0,
    offset: int = 0,
    encoding: str = "utf-8",
    timezone: Any = None,
    topic: str = TOPIC,
) -> Decoded:
    """One trace message (the Kafka record's value at ``partition``/``offset``) -> its queue activity."""
    out = Decoded()
    try:
        reader = _Reader(bytes(data), encoding)
        typ, length, _version, command, _seq, _control, _cc, _reason, count = reader.ints(0, 9)
        if command != CMD_ACTIVITY_TRACE:
            raise PcfError(12, f"Command is {command}, not 209 (MQCMD_ACTIVITY_TRACE)")
        if length < HEADER:
            raise PcfError(4, f"MQCFH StrucLength is {length}, less than 36")
    except PcfError as exc:
        out.fatal = Problem(exc.offset, exc.message)
        return out
    pos, top = length, []
    pending: list[dict[str, Any]] = []  # work under syncpoint, waiting for MQCMIT / MQBACK
    index = 0
    for _ in range(count):
        try:
            param, pos = reader.param(pos)
        except PcfError as exc:
            out.fatal = Problem(exc.offset, exc.message)
            break
        parameter, value, at = param
        if parameter != ACTIVITY_TRACE or not isinstance(value, list):
            top.append(param)
            if parameter == Q_MGR_NAME and isinstance(value, str):
                out.qmgr = value
            continue
        index += 1
        _call(out, param, index, pending, partition, offset, topic, timezone)
    # work under syncpoint whose MQCMIT is in a later message: counted as committed (docs/guides/activity-trace.md)
    out.activity.extend(pending)
    return out


def _ts(members: dict[int, Any], timezone: Any) -> int | None:
    micros = members.get(HIGHRES_TIME)
    if isinstance(micros, int) and micros > 0:
        ms = micros // 1000
        return ms if ms <= TS_MAX else None
    date, clock = members.get(OPERATION_DATE), members.get(OPERATION_TIME)
    if not (isinstance(date, str) and isinstance(clock, str)):
        return None
    try:
        when = dt.datetime.strptime(f"{date.strip()} {clock.strip().replace('.', ':')}", "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None
    return to_ms(when.replace(tzinfo=timezone or dt.UTC))


def _call(
    out: Decoded,
    group: Param,
    index: int,
    pending: list[dict[str, Any]],
    partition: int,
    offset: int,
    topic: str,
    timezone: Any,
) -> None:
    _, listed, at = group
    members = _fields(listed)
    op = members.get(OPERATION_ID)
    if op == XF_CMIT:
        if members.get(COMP_CODE) == CC_FAILED and members.get(REASON_CODE) != MQRC_BACKED_OUT:
            return  # the commit did not happen and the unit of work is still open
        if members.get(COMP_CODE) == CC_FAILED:  # MQRC_BACKED_OUT: the queue manager backed it out
            out.ignored += len(pending)
        else:
            out.activity.extend(pending)
        pending.clear()
        return
    if op == XF_BACK:
        out.ignored += len(pending)
        pending.clear()
        return
    if op in (XF_PUT, XF_PUT1):
        verb, options = "PUT", members.get(PUT_OPTIONS)
    elif op == XF_GET:
        options = members.get(GET_OPTIONS)
        if isinstance(options, int) and options & BROWSE:
            out.ignored += 1
            return
        verb = "GET"
    elif op == XF_CALLBACK:
        if members.get(CALL_TYPE) != CBCT_MSG_REMOVED:
            out.ignored += 1
            return
        verb, options = "GET", members.get(GET_OPTIONS)
    elif op is None:
        out.problems.append(Problem(at, f"MQI call {index}: no operation id (1356)"))
        return
    else:
        out.ignored += 1
        return
    queue = next(
        (q for q in (members.get(n) for n in (RESOLVED_LOCAL_Q_NAME, RESOLVED_Q_NAME, OBJECT_NAME)) if q),
        None,
    )
    ts = _ts(members, timezone)
    if not queue or ts is None or not out.qmgr:
        what = (
            "queue name (3195, 3141, 3046: activity trace detail LOW leaves them out; set ActivityTrace detail MEDIUM)"
            if not queue
            else "time (838, or 3132 and 3133)"
            if ts is None
            else "queue manager (2015)"
        )
        out.problems.append(Problem(at, f"MQI call {index} ({verb}): no {what}"))
        return
    length = members.get(MSG_LENGTH)
    bad = (
        f"queue name of {len(queue)} characters (MQ's are 1-48)"
        if len(queue) > 48
        else f"queue manager name of {len(out.qmgr)} characters (MQ's are 1-48)"
        if len(out.qmgr) > 48
        else f"negative message length {length}"
        if isinstance(length, int) and length < 0
        else None
    )
    if bad:  # what QueueActivity's checks would refuse (QMON_INVALID_FIELD there)
        out.problems.append(Problem(at, f"MQI call {index} ({verb}): {bad}"))
        return
    failed = members.get(COMP_CODE) == CC_FAILED
    rec = Activity(
        event_id=event_id("mq-trace", topic, partition, offset, index),
        qmgr=out.qmgr,
        queue=queue,
        op=verb,
        ts=ts,
        msg_bytes=length,
        reason=members.get(REASON_CODE) if failed else None,
    ).record()
    if failed and rec["reason"] is None:
        rec["reason"] = 0
    if not failed and isinstance(options, int) and options & SYNCPOINT:
        pending.append(rec)
    else:
        out.activity.append(rec)


# ---------------------------------------------------------------- encoding (the simulator, the tests)


class Encoder:
    """PCF structures in IBM's documented layout, in one byte order and character set."""

    def __init__(self, order: str = "<", encoding: str = "utf-8", pad: str = " "):
        self.order, self.encoding, self.pad = order, encoding, pad

    def _ints(self, *values: int) -> bytes:
        return struct.pack(f"{self.order}{len(values)}i", *values)

    def integer(self, parameter: int, value: int) -> bytes:
        return self._ints(CFT_INTEGER, 16, parameter, value)

    def integer64(self, parameter: int, value: int) -> bytes:
        return self._ints(CFT_INTEGER64, 24, parameter, 0) + struct.pack(f"{self.order}q", value)

    def string(self, parameter: int, text: str, width: int | None = None, ccsid: int = 1208) -> bytes:
        raw = text.encode(self.encoding)
        if width is not None:  # MQ's fixed-length names: blank (or NUL) padded
            raw = raw.ljust(width, self.pad.encode(self.encoding))
        padded = raw + b"\x00" * (-len(raw) % 4)
        return self._ints(CFT_STRING, 20 + len(padded), parameter, ccsid, len(raw)) + padded

    def byte_string(self, parameter: int, value: bytes) -> bytes:
        padded = value + b"\x00" * (-len(value) % 4)
        return self._ints(CFT_BYTE_STRING, 16 + len(padded), parameter, len(value)) + padded

    def integer_list(self, parameter: int, values: list[int]) -> bytes:
        return self._ints(5, 16 + 4 * len(values), parameter, len(values), *values)  # MQCFIL: skipped

    def group(self, parameter: int, members: list[bytes]) -> bytes:
        return self._ints(CFT_GROUP, 16, parameter, len(members)) + b"".join(members)

    def message(self, top: list[bytes]) -> bytes:
        """MQCFH (version 3, MQCFC_LAST) + the top-level parameters (a group counts as one)."""
        return self._ints(CFT_APP_ACTIVITY, HEADER, 3, CMD_ACTIVITY_TRACE, 1, 1, 0, 0, len(top)) + b"".join(top)

    def call(
        self,
        op: int,
        queue: str | None = None,
        *,
        ts_ms: int | None = None,
        msg_length: int | None = None,
        comp_code: int = 0,
        reason: int = 0,
        options: int | None = None,
        call_type: int | None = None,
        resolved: str | None = None,
        thread: int = 1,
        extra: list[bytes] | None = None,
    ) -> bytes:
        """One MQI call's group, as activity trace writes it at the default MEDIUM detail."""
        members = [self.integer(OPERATION_ID, op), self.integer(THREAD_ID, thread)]
        if ts_ms is not None:
            stamp = dt.datetime.fromtimestamp(ts_ms // 1000, dt.UTC)
            members.append(self.string(OPERATION_DATE, stamp.strftime("%Y-%m-%d"), 12))
            members.append(self.string(OPERATION_TIME, stamp.strftime("%H:%M:%S"), 8))
            members.append(self.integer64(HIGHRES_TIME, ts_ms * 1000))
        members.extend([self.integer(COMP_CODE, comp_code), self.integer(REASON_CODE, reason)])
        if queue is not None:
            members.append(self.string(OBJECT_NAME, queue, 48))
            members.append(self.string(RESOLVED_Q_NAME, resolved or queue, 48))
        if msg_length is not None:
            members.append(self.integer(MSG_LENGTH, msg_length))
        if options is not None:
            members.append(self.integer(GET_OPTIONS if op in (XF_GET, XF_CALLBACK) else PUT_OPTIONS, options))
        if call_type is not None:
            members.append(self.integer(CALL_TYPE, call_type))
        members.extend(extra or [])
        return self.group(ACTIVITY_TRACE, members)

    def trace(self, qmgr: str, calls: list[bytes], appl: str = "qmon-simulator") -> bytes:
        """A whole activity trace message: the queue manager and application, then one group per call."""
        return self.message([self.string(Q_MGR_NAME, qmgr, 48), self.string(APPL_NAME, appl, 28), *calls])
