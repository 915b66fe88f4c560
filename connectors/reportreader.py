"""Reading qmon's output topics for ``qmon report``, without changing anything.

The alerts (``qmon.events.alerts``), the performance events (``qmon.events.performance``) and the snapshots
(``qmon.events.snapshot``) are read as ``connectors.topicrange`` reads a topic: from the first record the
broker appended at ``since`` less ``MARGIN_MS``, to each partition's end offset when reading began.  The
records are decoded and handed, topic after topic, to ``qmon.core.service_report``, which places each by its
event time (``ts``) and decides what the figures are.  Nothing is kept: a report reads the topics again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

from qmon.connectors import avro, topicrange
from qmon.core import service_report, topics
from qmon.core.config import KafkaSecurity

logger = logging.getLogger(__name__)

#: Records are read from those the broker appended this long before ``since``: the job writes a record after
#: its event time, but the clocks of the producers (which set ``ts``) and of the job's hosts may differ.
MARGIN_MS = 10 * 60_000

#: The group ids of the report's consumers begin so (they join no group and commit nothing).
GROUP_PREFIX = "qmon-report"


class ReportReadError(RuntimeError):
    """An output topic cannot be read (it does not exist, or the broker did not answer in time)."""


def decoded(
    bootstrap: str, topic: str, record: str, security: KafkaSecurity | None, since_ms: int
) -> Iterator[dict[str, Any]]:
    """The ``record`` records of ``topic`` appended from ``since_ms`` less the margin on, decoded; those that do
    not decode are skipped and counted in a warning."""
    skipped = 0
    for raw in topicrange.records(bootstrap, topic, security, since_ms=since_ms - MARGIN_MS, group_prefix=GROUP_PREFIX):
        if raw.value is None:
            continue
        try:
            yield avro.decode(record, raw.value)
        except avro.AvroDecodeError:
            skipped += 1
    if skipped:
        logger.warning("%s: %d record(s) that are not %s records were skipped", topic, skipped, record)


def read(
    bootstrap: str,
    security: KafkaSecurity | None,
    *,
    prefix: str,
    since_ms: int,
    until_ms: int,
    queues: Sequence[str] = (),
    structures: Sequence[str] = (),
) -> service_report.ServiceReport:
    """``qmon report``'s figures for ``[since_ms, until_ms)`` from the output topics under ``prefix``."""

    def of(logical: str) -> Iterator[dict[str, Any]]:
        return decoded(bootstrap, topics.physical(logical, prefix), topics.RECORD_OF[logical], security, since_ms)

    try:
        return service_report.build(
            of(topics.ALERTS),
            of(topics.PERFORMANCE),
            of(topics.SNAPSHOT),
            since_ms,
            until_ms,
            queues=queues,
            structures=structures,
        )
    except topicrange.NoSuchTopic as exc:
        msg = (
            f"the topic {exc.topic} does not exist: check --config's kafka.topic_prefix and --bootstrap "
            "(qmon run and qmon kafka start create it)"
        )
        raise ReportReadError(msg) from None
    except topicrange.TopicReadError as exc:
        raise ReportReadError(str(exc)) from None
