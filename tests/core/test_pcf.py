"""The activity trace decoder (qmon.core.pcf), on messages built by an encoder written from IBM's documented
layout: both byte orders, padding, MQCFIN64's reserved word, nested groups, skipped types, browse and
callback, failed calls, syncpoint, truncated and random bytes."""

import datetime as dt
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qmon.core import pcf
from qmon.core.pcf import Encoder, decode

T = 1_700_000_000_123  # ms


def ops(decoded):
    return [(r["op"], r["queue"], r["ts"], r["msg_bytes"], r["reason"]) for r in decoded.activity]


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("pad", [" ", "\x00"])
def test_puts_and_gets_in_either_byte_order_and_padding(order, pad):
    e = Encoder(order=order, pad=pad)
    msg = e.trace(
        "QM1",
        [
            e.call(pcf.XF_PUT, "PAY.IN", ts_ms=T, msg_length=512),
            e.call(pcf.XF_PUT1, "PAY.IN", ts_ms=T + 1, msg_length=100),
            e.call(pcf.XF_GET, "PAY.IN", ts_ms=T + 2, msg_length=512, options=0x4),
        ],
    )
    d = decode(msg, partition=1, offset=42)
    assert d.fatal is None and d.problems == [] and d.qmgr == "QM1"
    assert ops(d) == [
        ("PUT", "PAY.IN", T, 512, None),
        ("PUT", "PAY.IN", T + 1, 100, None),
        ("GET", "PAY.IN", T + 2, 512, None),
    ]
    assert all(r["depth_after"] is None and r["qmgr"] == "QM1" for r in d.activity)


def test_event_ids_follow_the_kafka_coordinates_and_the_call():
    e = Encoder()
    msg = e.trace("QM1", [e.call(pcf.XF_PUT, "Q", ts_ms=T), e.call(pcf.XF_PUT, "Q", ts_ms=T)])
    a, b = decode(msg, partition=0, offset=7).activity
    assert a["event_id"] != b["event_id"]
    assert [r["event_id"] for r in decode(msg, partition=0, offset=7).activity] == [a["event_id"], b["event_id"]]
    assert decode(msg, partition=0, offset=8).activity[0]["event_id"] != a["event_id"]
    # the same bytes in the other byte order are the same records
    be = Encoder(order=">")
    other = be.trace("QM1", [be.call(pcf.XF_PUT, "Q", ts_ms=T), be.call(pcf.XF_PUT, "Q", ts_ms=T)])
    assert decode(other, partition=0, offset=7).activity == [a, b]


def test_the_high_resolution_time_is_an_int64_after_a_reserved_word():
    e = Encoder(order=">")
    d = decode(e.trace("QM1", [e.call(pcf.XF_PUT, "Q", ts_ms=4_102_444_800_001)]))  # 2100: past 2**32 µs
    assert d.activity[0]["ts"] == 4_102_444_800_001
    raw = e.integer64(pcf.HIGHRES_TIME, 5)
    assert len(raw) == 24 and struct.unpack(">iiiiq", raw) == (23, 24, 838, 0, 5)


def test_without_high_resolution_time_the_operation_date_and_time_in_the_configured_zone():
    e = Encoder()
    call = e.group(
        pcf.ACTIVITY_TRACE,
        [
            e.integer(pcf.OPERATION_ID, pcf.XF_PUT),
            e.string(pcf.OPERATION_DATE, "2026-11-23", 12),
            e.string(pcf.OPERATION_TIME, "10:15:30", 8),
            e.string(pcf.OBJECT_NAME, "Q", 48),
        ],
    )
    msg = e.trace("QM1", [call])
    utc = dt.datetime(2026, 11, 23, 10, 15, 30, tzinfo=dt.UTC)
    assert decode(msg).activity[0]["ts"] == int(utc.timestamp()) * 1000
    cet = dt.timezone(dt.timedelta(hours=1))
    assert decode(msg, timezone=cet).activity[0]["ts"] == (int(utc.timestamp()) - 3600) * 1000


def test_browses_and_callbacks():
    e = Encoder()
    calls = [
        e.call(pcf.XF_GET, "Q", ts_ms=T, options=0x10),  # MQGMO_BROWSE_FIRST
        e.call(pcf.XF_GET, "Q", ts_ms=T, options=0x20),  # MQGMO_BROWSE_NEXT
        e.call(pcf.XF_GET, "Q", ts_ms=T, options=0x800),  # MQGMO_BROWSE_MSG_UNDER_CURSOR
        e.call(pcf.XF_CALLBACK, "Q", ts_ms=T + 1, call_type=6),  # MQCBCT_MSG_REMOVED: a get
        e.call(pcf.XF_CALLBACK, "Q", ts_ms=T + 2, call_type=7),  # MQCBCT_MSG_NOT_REMOVED: a browse
        e.call(6, "Q", ts_ms=T + 3),  # MQXF_OPEN
    ]
    d = decode(e.trace("QM1", calls))
    assert ops(d) == [("GET", "Q", T + 1, None, None)] and d.ignored == 5


def test_failed_calls_are_kept_with_their_reason():
    e = Encoder()
    calls = [
        e.call(pcf.XF_PUT, "Q", ts_ms=T, comp_code=2, reason=2053),  # MQRC_Q_FULL
        e.call(pcf.XF_GET, "Q", ts_ms=T + 1, comp_code=2, reason=2033),  # MQRC_NO_MSG_AVAILABLE
        e.call(pcf.XF_GET, "Q", ts_ms=T + 2, comp_code=1, reason=2079, msg_length=9),  # a warning: it was removed
    ]
    assert ops(decode(e.trace("QM1", calls))) == [
        ("PUT", "Q", T, None, 2053),
        ("GET", "Q", T + 1, None, 2033),
        ("GET", "Q", T + 2, 9, None),
    ]


def test_the_resolved_queue_is_the_one_counted():
    e = Encoder()
    d = decode(e.trace("QM1", [e.call(pcf.XF_PUT, "PAY.ALIAS", ts_ms=T, resolved="PAY.IN")]))
    assert d.activity[0]["queue"] == "PAY.IN"
    local = e.string(pcf.RESOLVED_LOCAL_Q_NAME, "SYSTEM.CLUSTER.TRANSMIT.QUEUE", 48)
    d = decode(e.trace("QM1", [e.call(pcf.XF_PUT, "REMOTE.Q", ts_ms=T, resolved="PAY.IN", extra=[local])]))
    assert d.activity[0]["queue"] == "SYSTEM.CLUSTER.TRANSMIT.QUEUE"  # a remote queue: where the message is


def test_nested_groups_and_types_qmon_does_not_use_are_skipped():
    e = Encoder()
    nested = e.group(9999, [e.integer(1, 2), e.string(3, "x"), e.group(9998, [e.integer_list(4, [1, 2, 3])])])
    odd = struct.pack("<iiii", 99, 16, 7, 0)  # an unknown type, advanced over by its StrucLength
    call = e.call(pcf.XF_PUT, "Q", ts_ms=T, msg_length=5, extra=[nested, odd, e.byte_string(7013, b"\x01" * 24)])
    top = [e.string(pcf.Q_MGR_NAME, "QM1", 48), e.integer_list(1, [5]), odd, call]
    d = decode(e.message(top))
    assert ops(d) == [("PUT", "Q", T, 5, None)] and d.problems == [] and d.fatal is None


def test_work_under_syncpoint_counts_when_committed_and_never_when_backed_out():
    e = Encoder()
    calls = [
        e.call(pcf.XF_PUT, "A", ts_ms=T, options=0x2),  # MQPMO_SYNCPOINT
        e.call(pcf.XF_GET, "B", ts_ms=T + 1, options=0x2),  # MQGMO_SYNCPOINT
        e.call(pcf.XF_CMIT, ts_ms=T + 2),
        e.call(pcf.XF_PUT, "A", ts_ms=T + 3, options=0x2),
        e.call(pcf.XF_BACK, ts_ms=T + 4),  # backed out: moves no depth
        e.call(pcf.XF_GET, "B", ts_ms=T + 5, options=0x2),  # its MQCMIT comes in a later message
    ]
    d = decode(e.trace("QM1", calls))
    assert ops(d) == [("PUT", "A", T, None, None), ("GET", "B", T + 1, None, None), ("GET", "B", T + 5, None, None)]
    assert d.ignored == 1


def test_a_commit_that_fails_backed_out_drops_the_work_and_one_that_fails_otherwise_leaves_it_open():
    e = Encoder()
    calls = [
        e.call(pcf.XF_PUT, "A", ts_ms=T, options=0x2),
        e.call(pcf.XF_CMIT, ts_ms=T + 1, comp_code=2, reason=2003),  # MQRC_BACKED_OUT: nothing happened
        e.call(pcf.XF_PUT, "A", ts_ms=T + 2, options=0x2),
        e.call(pcf.XF_CMIT, ts_ms=T + 3, comp_code=2, reason=2009),  # MQRC_CONNECTION_BROKEN: still open
        e.call(pcf.XF_CMIT, ts_ms=T + 4),  # ... and committed here
    ]
    d = decode(e.trace("QM1", calls))
    assert ops(d) == [("PUT", "A", T + 2, None, None)]
    assert d.ignored == 1


def test_ebcdic_strings_from_configuration():
    e = Encoder(order=">", encoding="cp037")
    d = decode(e.trace("QMI", [e.call(pcf.XF_PUT, "PAY.IN", ts_ms=T)]), encoding="cp037")
    assert (d.qmgr, d.activity[0]["queue"]) == ("QMI", "PAY.IN")


def test_not_a_trace_message_or_a_wrong_command_is_fatal_at_its_offset():
    assert decode(b"").fatal.offset == 0
    assert "not an activity trace message" in decode(b"\x07\x00\x00\x00" + bytes(40)).fatal.message
    e = Encoder()
    header = bytearray(e.trace("QM1", []))
    header[12:16] = struct.pack("<i", 44)  # MQCMD_INQUIRE_Q_MGR... not 209
    assert decode(bytes(header)).fatal.offset == 12


def test_a_truncated_message_keeps_the_calls_before_the_cut():
    e = Encoder()
    msg = e.trace(
        "QM1",
        [e.call(pcf.XF_PUT, "Q", ts_ms=T), e.call(pcf.XF_PUT, "Q", ts_ms=T + 1), e.call(pcf.XF_GET, "Q", ts_ms=T + 2)],
    )
    third = msg.rindex(struct.pack("<iiii", 20, 16, pcf.ACTIVITY_TRACE, 9))
    cut = decode(msg[: third + 40])
    assert ops(cut) == [("PUT", "Q", T, None, None), ("PUT", "Q", T + 1, None, None)]
    assert cut.fatal is not None and cut.fatal.offset >= third


def test_a_call_without_a_queue_is_a_problem_of_its_own():
    e = Encoder()
    msg = e.trace("QM1", [e.call(pcf.XF_PUT, None, ts_ms=T), e.call(pcf.XF_PUT, "Q", ts_ms=T + 1)])
    d = decode(msg)
    assert ops(d) == [("PUT", "Q", T + 1, None, None)]
    assert len(d.problems) == 1 and "no queue name" in d.problems[0].message and d.fatal is None
    assert "detail MEDIUM" in d.problems[0].message  # what the operator does about it


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.integers(0, 3))
def test_random_bytes_never_raise(data, prefix):
    heads = [b"", struct.pack("<i", 26), struct.pack(">i", 26), Encoder().trace("QM1", [])[:36]]
    d = decode(heads[prefix] + data)
    assert d.fatal is not None or d.activity is not None


@pytest.mark.parametrize("order", ["<", ">"])
def test_a_message_cut_at_any_length_is_a_fault_and_keeps_a_prefix_of_its_calls(order):
    e = Encoder(order=order)
    msg = e.trace(
        "QM1",
        [
            e.call(pcf.XF_PUT, "PAY.IN", ts_ms=T, msg_length=10),
            e.call(pcf.XF_GET, "PAY.IN", ts_ms=T + 5, msg_length=10, options=0x4),
            e.call(pcf.XF_PUT1, "PAY.OUT", ts_ms=T + 9, extra=[e.integer_list(9999, [1, 2, 3])]),
        ],
    )
    whole = decode(msg)
    assert whole.fatal is None and len(whole.activity) == 3
    for n in range(len(msg)):
        cut = decode(msg[:n])
        assert cut.fatal is not None and 0 <= cut.fatal.offset <= n, n
        assert cut.activity == whole.activity[: len(cut.activity)], n


def test_a_call_qmon_would_refuse_as_activity_is_a_problem_and_the_others_count():
    e = Encoder()
    msg = e.trace(
        "QM1",
        [
            e.call(pcf.XF_PUT, "Q" * 49, ts_ms=T),
            e.call(pcf.XF_PUT, "Q", ts_ms=T + 1, msg_length=-5),
            e.call(pcf.XF_PUT, "Q", ts_ms=T + 2),
        ],
    )
    d = decode(msg)
    assert [r["ts"] for r in d.activity] == [T + 2]
    assert ["49 characters" in d.problems[0].message, "negative message length" in d.problems[1].message] == [
        True,
        True,
    ]
