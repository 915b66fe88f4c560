"""What ``qmon alertmanager`` sends to Alertmanager's v2 API, from qmon's Alert records: pure, time passed in.

One Alertmanager alert per qmon alert episode (``alert_id``).  Its labels identify it, so Alertmanager
deduplicates every re-send of the same episode: ``alertname`` (the alert type), ``severity`` (lower
case, as Prometheus rules write it: ``critical``, ``warning``), ``qmgr``, ``queue``, ``structure`` (those
that apply) and ``alert_id``.  Annotations: ``summary``, ``description`` (the product's message, e.g.
``CQS0205E STRUCTURE MSGQ1 IS FULL``, or the summary when the alert has none), ``runbook`` (the
operator action) and, for a forecast (STRUCTURE_FILL_FORECAST, QUEUE_FILL_FORECAST), ``eta``: the instant it
predicts its threshold is reached, ISO-8601 UTC.

* FIRING: sent at once with ``startsAt`` = the alert's ts and ``endsAt`` = now + ``4 × resend``, then
  re-sent every ``resend`` while it fires (Prometheus does the same), so Alertmanager never resolves it on
  its own (``resolve_timeout``) while qmon says it fires.
* RESOLVED: the episode's alert sent once more with the same labels and ``endsAt`` = the RESOLVED ts;
  it is not re-sent after that.
* A FIRING seen again for an episode already firing or resolved (a redelivered record, a replay) changes
  nothing: one episode never pages twice.  A RESOLVED for an episode never seen FIRING is skipped (its
  labels cannot be known; Alertmanager never had it).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from qmon.core.timeconv import from_ms, to_ms


def _iso(ms: int) -> str:
    return from_ms(ms).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def labels_of(rec: dict[str, Any]) -> dict[str, str]:
    labels = {"alertname": rec["type"], "severity": str(rec["severity"]).lower(), "alert_id": rec["alert_id"]}
    for name in ("qmgr", "qsg", "queue", "structure"):
        if rec.get(name):
            labels[name] = str(rec[name])
    return labels


def annotations_of(rec: dict[str, Any]) -> dict[str, str]:
    out = {
        "summary": rec["summary"],
        "description": rec.get("message") or rec["summary"],
        "runbook": rec["action"],
    }
    if rec.get("eta") is not None:  # a FIRING forecast's predicted instant
        out["eta"] = _iso(to_ms(rec["eta"]))
    return out


@dataclass
class Episode:
    labels: dict[str, str]
    annotations: dict[str, str]
    starts_at: int
    sent_at: int | None = None  # when Alertmanager last accepted it (None: not yet)


@dataclass
class AlertBook:
    """The episodes firing, and what is due to be sent."""

    resend_ms: int = 60_000
    firing: dict[str, Episode] = field(default_factory=dict)
    #: episodes that ended, newest last (bounded), so a late or repeated FIRING does not page again
    ended: OrderedDict[str, None] = field(default_factory=OrderedDict)
    keep_ended: int = 100_000

    def on_alert(self, rec: dict[str, Any], now_ms: int) -> list[dict[str, Any]]:
        """An Alert record: the Alertmanager alerts to send now (none, or one)."""
        aid, state = rec["alert_id"], rec["state"]
        if state == "FIRING":
            if aid in self.firing or aid in self.ended:
                return []
            ep = self.firing[aid] = Episode(labels_of(rec), annotations_of(rec), to_ms(rec["ts"]))
            return [self.payload(ep, now_ms)]
        if state == "RESOLVED":
            if aid not in self.firing:
                return []
            ep = self.firing.pop(aid)
            self.ended[aid] = None
            while len(self.ended) > self.keep_ended:
                self.ended.popitem(last=False)
            return [self.payload(ep, now_ms, ends_at=to_ms(rec["ts"]))]
        return []  # INFO (STRUCTURE_UNKNOWN): no episode, nothing to page

    def payload(self, ep: Episode, now_ms: int, ends_at: int | None = None) -> dict[str, Any]:
        end = ends_at if ends_at is not None else now_ms + 4 * self.resend_ms
        return {
            "labels": dict(ep.labels),
            "annotations": dict(ep.annotations),
            "startsAt": _iso(ep.starts_at),
            "endsAt": _iso(max(end, ep.starts_at)),
        }

    def sent(self, alerts: list[dict[str, Any]], now_ms: int) -> None:
        """Alertmanager accepted ``alerts``: their re-send clock starts now."""
        for a in alerts:
            ep = self.firing.get(a["labels"]["alert_id"])
            if ep is not None:
                ep.sent_at = now_ms

    def due(self, now_ms: int) -> list[dict[str, Any]]:
        """The firing episodes to (re-)send now: never accepted, or accepted ``resend`` ago."""
        return [
            self.payload(ep, now_ms)
            for ep in self.firing.values()
            if ep.sent_at is None or now_ms - ep.sent_at >= self.resend_ms
        ]
