"""Dead-letter analytics (qmon.core.deadletters): labels, the handler's status of a record, the time range of
``--report``, the tally and its table."""

from __future__ import annotations

import pytest

from qmon.core.deadletters import NO_HEADER, Labels, labels, parse_time, report, status, tally, utc

NOW = 1_736_500_000_000  # 2025-01-10T09:06:40Z


def test_labels_come_from_the_header_and_a_record_without_one_is_counted_under_empty_labels():
    header = {
        "reason": 65537,
        "reason_name": "QMON_UNDECODABLE",
        "dest_topic": "qmon.activity",
        "put_appl_name": "qmon",
    }
    assert labels(header) == Labels("QMON_UNDECODABLE", "qmon.activity", "qmon")
    assert labels({"reason": 2053, "dest_topic": "PAYROLL.REQUEST"}) == Labels("2053", "PAYROLL.REQUEST", "")
    assert labels(None) == labels({}) == NO_HEADER == Labels("", "", "")


def test_status_from_the_committed_offsets_and_the_ledger():
    ledger = {"0/3": {"state": "waiting"}, "0/4": {"state": "ignored"}, "1/0": {}}
    committed = {0: 6}
    assert [status(0, o, committed, ledger) for o in range(8)] == [
        "done",
        "done",
        "done",
        "waiting",
        "ignored",
        "done",
        "unread",
        "unread",
    ]
    assert status(1, 0, committed, ledger) == "ignored"  # an entry written without a state
    assert status(1, 1, committed, ledger) == "unread"  # no committed offset: the handler has not read it


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("now", NOW),
        ("7d", NOW - 7 * 86_400_000),
        ("12h", NOW - 12 * 3_600_000),
        ("30m", NOW - 30 * 60_000),
        ("90 s ago", NOW - 90_000),
        ("2w", NOW - 14 * 86_400_000),
        ("3 days", NOW - 3 * 86_400_000),
        ("2025-01-10", 1_736_467_200_000),
        ("2025-01-10T08:00", 1_736_496_000_000),
        ("2025-01-10 08:00:00Z", 1_736_496_000_000),
        ("2025-01-10T10:00:00+02:00", 1_736_496_000_000),
    ],
)
def test_since_and_until_take_a_duration_back_from_now_or_an_iso_time_utc_by_default(text, expected):
    assert parse_time(text, NOW) == expected


@pytest.mark.parametrize("text", ["yesterday", "7 fortnights", "2025-13-01", ""])
def test_a_time_that_is_none_of_these_says_what_to_write(text):
    with pytest.raises(ValueError, match="is not a time: write a duration back from now"):
        parse_time(text, NOW)


UNDECODABLE = Labels("QMON_UNDECODABLE", "qmon.activity", "qmon")
COMMAND = Labels("QMON_INVALID_COMMAND", "qmon.control", "qmon")


def test_the_tally_counts_by_labels_and_status_largest_first_with_first_and_last():
    t = tally(
        [
            (COMMAND, "done", NOW - 5_000),
            (UNDECODABLE, "ignored", NOW - 4_000),
            (UNDECODABLE, "waiting", NOW - 9_000),
            (UNDECODABLE, "unread", NOW - 1_000),
            (NO_HEADER, "ignored", NOW - 2_000),
        ]
    )
    rows = t.sorted_rows()
    assert [r.labels for r in rows] == [UNDECODABLE, NO_HEADER, COMMAND]  # 3, then 1 and 1 by reason ("" first)
    assert rows[0].statuses == {"done": 0, "waiting": 1, "ignored": 1, "unread": 1}
    assert (rows[0].first_ms, rows[0].last_ms) == (NOW - 9_000, NOW - 1_000)
    total = t.totals()
    assert total.total == 5 and total.statuses == {"done": 1, "waiting": 1, "ignored": 2, "unread": 1}
    assert (total.first_ms, total.last_ms) == (NOW - 9_000, NOW - 1_000)
    with pytest.raises(ValueError, match="unknown dead-letter status 'lost'"):
        t.add(COMMAND, "lost", NOW)


def test_the_report_is_a_table_with_a_heading_and_a_total_line():
    t = tally(
        [
            (UNDECODABLE, "done", NOW - 60_000),
            (UNDECODABLE, "ignored", NOW - 1_000),
            (COMMAND, "unread", NOW - 30_000),
            (NO_HEADER, "ignored", NOW - 2_000),
        ]
    )
    text = report(t, "qmon.dlq", NOW - 7 * 86_400_000, NOW)
    assert text.splitlines() == [
        "qmon.dlq: 4 dead letter(s) put on the DLQ from 2025-01-03 09:06:40Z to 2025-01-10 09:06:40Z",
        "",
        "REASON                ORIGINAL TOPIC  APPLICATION  RECORDS  DONE  WAITING  IGNORED  UNREAD  FIRST                 LAST",
        "QMON_UNDECODABLE      qmon.activity   qmon               2     1        0        1       0  2025-01-10 09:05:40Z  2025-01-10 09:06:39Z",
        "(not a DeadLetter)    -               -                  1     0        0        1       0  2025-01-10 09:06:38Z  2025-01-10 09:06:38Z",
        "QMON_INVALID_COMMAND  qmon.control    qmon               1     0        0        0       1  2025-01-10 09:06:10Z  2025-01-10 09:06:10Z",
        "total                                                    4     1        0        2       1  2025-01-10 09:05:40Z  2025-01-10 09:06:39Z",
    ]
    assert report(tally([]), "qmon.dlq", None, NOW) == (
        "qmon.dlq: 0 dead letter(s) put on the DLQ from the beginning to 2025-01-10 09:06:40Z\n"
    )
    assert utc(0) == "1970-01-01 00:00:00Z"
