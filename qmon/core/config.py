"""Configuration: frozen pydantic models read from YAML.

A bad file stops start-up with the file, the line and the key at fault and
what would fix it (``ConfigError``).  Every key is documented in the configuration reference (docs/reference/configuration.md).
"""

from __future__ import annotations

import logging
import re
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from qmon.core.forecaster import SAMPLES, ForecastSettings
from qmon.core.mqsc import MAX_NAME
from qmon.core.queues import MQ_DEFAULTS, MonitorSettings, QueueDefaults
from qmon.core.sharing import QueueSharingGroup, Sharing
from qmon.core.structures import ExitRule, OverflowExit, StructureDef, StructureSettings

logger = logging.getLogger(__name__)


class ConfigError(ValueError):
    """A configuration file that qmon cannot start with."""


class _At(ValueError):
    """A problem found by a check of the whole file (a model validator), at ``at``: the keys below the model's
    that ``load_config`` reports its line of."""

    def __init__(self, at: tuple[str | int, ...], message: str):
        super().__init__(message)
        self.at = at


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|seconds?|m|minutes?|h|hours?|d|days?)\s*$")
_UNIT_MS = {
    "ms": 1,
    "millisecond": 1,
    "milliseconds": 1,
    "s": 1000,
    "second": 1000,
    "seconds": 1000,
    "m": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
}


def duration_ms(value: Any) -> int:
    """'15 minutes', '500ms', '2s', 7 (seconds) -> milliseconds."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as '15 minutes' or '500 ms'")
    if isinstance(value, int):
        return value * 1000
    if isinstance(value, float):
        return int(Fraction(str(value)) * 1000)  # exact: 4.007 s is 4007 ms, never 4006
    m = _DURATION.match(str(value))
    if not m:
        raise ValueError(f"{value!r} is not a duration; write e.g. '15 minutes', '30 s' or '500 ms'")
    return int(Fraction(m.group(1)) * _UNIT_MS[m.group(2)])


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KafkaSecurity(_Model):
    """Client security settings, passed to every Kafka client qmon makes."""

    protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = Field(
        "PLAINTEXT", description="Kafka's security.protocol for every client qmon makes (the job's too)"
    )
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = Field(
        None, description="SASL mechanism, with a SASL protocol"
    )
    username: str | None = Field(None, description="SASL user name")
    password: SecretStr | None = Field(None, description="SASL password (never logged)")
    ssl_cafile: str | None = Field(None, description="PEM file of the CA that signed the brokers' certificates")

    @field_validator("protocol", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.upper() if isinstance(v, str) else v


class KafkaConfig(_Model):
    bootstrap: str = Field(
        "127.0.0.1:9092", description="Kafka bootstrap servers (--bootstrap and QMON_BOOTSTRAP take precedence)"
    )
    topic_prefix: str = Field(
        "qmon", pattern=r"^[A-Za-z0-9._-]{1,200}$", description="qmon.activity becomes <prefix>.activity, and so on"
    )
    partitions: int = Field(4, ge=1, le=1024, description="partitions of the topics qmon creates")
    security: KafkaSecurity = Field(KafkaSecurity(), description="client security settings")
    schema_registry_url: str | None = Field(
        None,
        description="base URL of a Confluent-compatible schema registry API (Apicurio Registry's: "
        "http://host:8080/apis/ccompat/v7): input records in Confluent's wire format are read with the schema "
        "their id names, and the job's outputs, qmon produce and qmon simulate write registered ids",
    )
    schema_registry_username: str | None = Field(
        None, description="user name for the schema registry's HTTP basic authentication"
    )
    schema_registry_password: SecretStr | None = Field(
        None, description="password for the schema registry's HTTP basic authentication (never logged)"
    )

    @field_validator("schema_registry_url")
    @classmethod
    def _registry_url(cls, v: str | None) -> str | None:
        if v is None:
            return v
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(v.strip())
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number
        except ValueError as exc:
            raise ValueError(f"{v!r} is not a URL: {exc}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{v!r} is not an http:// or https:// URL with a host (e.g. http://registry:8081)")
        if parts.username is not None or parts.password is not None:
            raise ValueError(
                "the URL holds credentials: give them as kafka.schema_registry_username and "
                "kafka.schema_registry_password (the URL appears in logs and dead letters)"
            )
        if parts.query or parts.fragment:
            raise ValueError(f"{v!r} has a query or a fragment; give the base URL of the registry's API")
        return v.strip().rstrip("/")

    @model_validator(mode="after")
    def _registry_login(self) -> KafkaConfig:
        if (self.schema_registry_username is None) != (self.schema_registry_password is None):
            raise ValueError(
                "kafka.schema_registry_username and kafka.schema_registry_password go together (HTTP basic "
                "authentication): give both or neither"
            )
        if self.schema_registry_username is not None and self.schema_registry_url is None:
            raise ValueError("kafka.schema_registry_username is set but kafka.schema_registry_url is not")
        return self


class JobConfig(_Model):
    checkpoint: str = Field(
        "./qmon-checkpoint", description="checkpoint directory: offsets and state; keep it to restart (--checkpoint)"
    )
    checkpoint_fs: Literal["nio", "hadoop"] = Field(
        "nio",
        description="a local checkpoint's files through Java's file API (nio) or Hadoop's local file system, "
        "which runs chmod in a child process for every file it writes (hadoop)",
    )
    master: str | None = Field(
        None,
        description="Spark master (--master): local[N], spark://host:7077, yarn, k8s://...; unset, the master "
        "Spark was given (spark-submit's --master, spark-defaults.conf's spark.master), else local[*]",
    )
    trigger: str = Field("1 second", description="micro-batch interval (a duration)")
    shuffle_partitions: int = Field(
        4, ge=1, le=10_000, description="Spark's shuffle partitions; a new checkpoint keeps the number it started with"
    )
    input_tasks: int | None = Field(
        None, ge=1, le=10_000, description="tasks reading the input per batch (default: one per Kafka partition)"
    )
    queue_buckets: int = Field(8, ge=1, le=4096, description="shards per queue manager; fixed for a checkpoint")
    queue_units: int | None = Field(
        None,
        ge=1,
        le=4096,
        description="groups the queue managers' shards are kept in, each a key of the operator (default: one per "
        "shuffle partition of the checkpoint); fixed for a checkpoint",
    )
    watermark_delay: str = Field(
        "5 seconds", description="how far the arrival clock's watermark trails the newest record (a duration)"
    )
    max_lateness: str = Field(
        "0 seconds",
        description="how far behind the slowest input partition read (in ts) a record may arrive and still be "
        "applied in ts order; each batch's records wait that much longer (a duration)",
    )
    max_offsets_per_trigger: int | None = Field(
        None, ge=1, description="most input records a micro-batch reads (default: all available)"
    )
    starting_offsets: Literal["earliest", "latest"] = Field(
        "earliest", description="where a new checkpoint starts reading the input topics"
    )
    fetch_max_wait: str = Field(
        "10 milliseconds",
        description="how long the broker may hold the input's fetch past the log end (Kafka's fetch.max.wait.ms)",
    )

    @field_validator("trigger", "watermark_delay", "max_lateness")
    @classmethod
    def _duration(cls, v: str) -> str:
        duration_ms(v)
        return v

    @field_validator("fetch_max_wait")
    @classmethod
    def _fetch_wait(cls, v: str) -> str:
        if duration_ms(v) > 10_000:  # (a duration is never negative)
            raise ValueError(f"{v!r} is more than 10 seconds (Kafka's fetch.max.wait.ms; 10 milliseconds by default)")
        return v


class QueueDefaultsConfig(_Model):
    """Defaults for queues whose names match ``pattern`` (first match wins)."""

    pattern: str = Field(description="queue-name pattern (glob, * and ?); the first matching entry applies")
    qsvciev: Literal["HIGH", "OK", "NONE"] | None = Field(None, description="QSVCIEV: which service interval event")
    qsvcint: int | None = Field(None, ge=0, le=999_999_999, description="QSVCINT: the service interval (ms)")
    maxdepth: int | None = Field(None, ge=0, le=999_999_999, description="MAXDEPTH: messages the queue may hold")
    qdepthhi: int | None = Field(None, ge=0, le=100, description="QDEPTHHI: % of MAXDEPTH for QDEPTH_HIGH")
    qdepthlo: int | None = Field(None, ge=0, le=100, description="QDEPTHLO: % of MAXDEPTH for QDEPTH_LOW")
    qdphiev: Literal["ENABLED", "DISABLED"] | None = Field(None, description="QDPHIEV: queue depth high events")
    qdploev: Literal["ENABLED", "DISABLED"] | None = Field(None, description="QDPLOEV: queue depth low events")
    qdpmaxev: Literal["ENABLED", "DISABLED"] | None = Field(None, description="QDPMAXEV: queue full events")

    @field_validator("qsvciev", "qdphiev", "qdploev", "qdpmaxev", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.upper() if isinstance(v, str) else v

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, v: str) -> str:
        if not v or len(v) > MAX_NAME:
            raise ValueError(f"a queue-name pattern is 1 to {MAX_NAME} characters")
        return v

    def attrs(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in MQ_DEFAULTS:
            value = getattr(self, key.lower())
            if value is None:
                continue
            out[key] = (value == "ENABLED") if key.startswith("QDP") else value
        return out


class MonitorConfig(_Model):
    perfmev: Literal["ENABLED", "DISABLED"] = Field(
        "DISABLED", description="PERFMEV of every queue manager until ALTER QMGR changes it"
    )
    dedup_window: str = Field("10 minutes", description="how long a record's event_id is remembered (duplicates)")
    queue_ttl: str = Field("7 days", description="a queue idle (no record) this long is forgotten (bounded state)")
    journal_near_pct: int = Field(90, ge=1, le=100, description="RECEIVER_NEAR_THRESHOLD at this % of THRESHOLD")
    stall_clear_hold: str = Field(
        "30 seconds",
        description="QUEUE_STALLED resolves once the queue has been served within QSVCINT (or emptied) for this long",
    )
    snapshot_interval: str = Field(
        "10 seconds",
        description="a unit that changed publishes a snapshot (qmon.events.snapshot) at most this often; 0 turns them off",
    )

    @field_validator("perfmev", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.upper() if isinstance(v, str) else v

    @field_validator("dedup_window", "queue_ttl", "stall_clear_hold", "snapshot_interval")
    @classmethod
    def _duration(cls, v: str) -> str:
        duration_ms(v)
        return v


class ForecastConfig(_Model):
    """Fill forecasts: STRUCTURE_FILL_FORECAST and QUEUE_FILL_FORECAST (the alert catalogue)."""

    horizon: str = Field(
        "15 minutes",
        description="a forecast fires when a structure or queue is predicted to reach its threshold within this "
        "much event time; the trend is read over as long a window (a duration; 0 s turns forecasts off)",
    )
    min_confidence: float = Field(
        0.5,
        ge=0,
        le=1,
        description="the least confidence a forecast fires with: the rank correlation of the window's samples "
        "with time, 1 for a level that only rises, near 0 for one that climbs and falls back (a consumer "
        "draining in batches)",
    )

    @field_validator("horizon")
    @classmethod
    def _horizon(cls, v: str) -> str:
        ms = duration_ms(v)
        if 0 < ms < 1000 * SAMPLES:
            raise ValueError(f"{v!r} is shorter than {SAMPLES} seconds (the trend is sampled {SAMPLES} times over it)")
        return v

    def settings(self) -> ForecastSettings:
        return ForecastSettings(duration_ms(self.horizon), self.min_confidence)


#: an MQ object name's characters (IBM MQ, *Rules for naming IBM MQ objects*)
_MQ_NAME = re.compile(r"^[A-Za-z0-9._/%]{1,48}$")
#: a queue-sharing group's name: 1-4 characters, upper-case letters, digits, @, # and $, not a digit first
_QSG_NAME = re.compile(r"^[A-Z@#$][A-Z0-9@#$]{0,3}$")


class QsgConfig(_Model):
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


class StructureConfig(_Model):
    """A CQSSGxxx STRUCTURE statement plus its CFRM policy entry (IMS, *CQS structure overflow function*); sizes
    in KB."""

    strname: str = Field(
        pattern=r"^[A-Z][A-Z0-9@#$_]{0,15}$",
        description="CF list structure name: 1-16 characters, upper case, starting with a letter",
    )
    size: int = Field(ge=1, description="SIZE in the CFRM policy: the most an alter can grow it to (KB)")
    initsize: int | None = Field(None, ge=1, description="INITSIZE in the CFRM policy (KB); default SIZE")
    ovflwmax: int = Field(70, ge=21, le=100, description="OVFLWMAX: usage % that triggers alter / overflow")
    ovflwstr: str | None = Field(
        None, pattern=r"^[A-Z][A-Z0-9@#$_]{0,15}$", description="OVFLWSTR: the overflow structure's name, if any"
    )
    ovflwsize: int | None = Field(None, ge=1, description="SIZE of the overflow structure (KB)")
    fullthreshold: int = Field(80, ge=1, le=100, description="FULLTHRESHOLD %: STRUCTURE_NEAR_FULL")
    lgmsgsz: int = Field(4096, ge=512, description="bytes of a long message kept on its ready queue")
    overflow_scan_interval: str = Field(
        "15 minutes", description="how often queues in overflow mode are scanned for emptiness (a duration)"
    )
    type: Literal["msgq", "resource"] = Field(
        "msgq", description="msgq, or resource: never altered and never overflowed (full monitoring still warns)"
    )
    clear_margin: int = Field(
        5,
        ge=0,
        le=50,
        description="points below FULLTHRESHOLD (near full) or 100% (full) "
        "that usage must fall before the alert resolves ...",
    )
    clear_hold: str = Field("30 seconds", description="... and how long (event time) it must stay there")

    @field_validator("strname", "ovflwstr", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.upper() if isinstance(v, str) else v

    @field_validator("overflow_scan_interval")
    @classmethod
    def _duration(cls, v: str) -> str:
        if duration_ms(v) <= 0:
            raise ValueError("the overflow scan interval must be positive")
        return v

    @field_validator("clear_hold")
    @classmethod
    def _hold(cls, v: str) -> str:
        duration_ms(v)
        return v

    @model_validator(mode="after")
    def _consistent(self) -> StructureConfig:
        if self.initsize is not None and self.initsize > self.size:
            raise ValueError(
                f"initsize ({self.initsize} KB) is larger than size ({self.size} KB); INITSIZE must not exceed SIZE"
            )
        if self.ovflwstr and not self.ovflwsize:
            raise ValueError(f"ovflwstr {self.ovflwstr} needs ovflwsize (its SIZE in KB)")
        if self.ovflwsize and not self.ovflwstr:
            raise ValueError("ovflwsize is set but ovflwstr (the overflow structure's name) is not")
        if self.clear_margin >= self.fullthreshold:
            raise ValueError(
                f"clear_margin ({self.clear_margin}) must be smaller than fullthreshold "
                f"({self.fullthreshold}): STRUCTURE_NEAR_FULL resolves below fullthreshold - clear_margin"
            )
        return self

    def definition(self) -> StructureDef:
        return StructureDef(
            self.strname,
            self.size,
            self.initsize,
            self.ovflwmax,
            self.ovflwstr,
            self.ovflwsize,
            self.fullthreshold,
            self.lgmsgsz,
            duration_ms(self.overflow_scan_interval),
            self.type == "resource",
            self.clear_margin,
            duration_ms(self.clear_hold),
        )


class ExitRuleConfig(_Model):
    queue: str = Field(min_length=1, max_length=MAX_NAME, description="queue-name pattern (glob, * and ?)")
    decision: Literal["approve", "reject"] = Field(description="what the overflow exit answers for these queues")

    @field_validator("decision", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.lower() if isinstance(v, str) else v


def _exit_path(v: str) -> str:
    if not re.match(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$", v):
        raise ValueError(f"{v!r} is not a module:function path (e.g. mysite.exits:overflow)")
    return v


class MqTraceConfig(_Model):
    """The MQ application activity trace input (``<prefix>.mq.trace``)."""

    enabled: bool | Literal["auto"] = Field(
        "auto", description="read the trace topic: auto (when it exists at start), true (created if missing), false"
    )
    encoding: str = Field("utf-8", description="character set of the trace's strings (cp037, cp500: EBCDIC)")
    timezone: str = Field("UTC", description="time zone of OperationDate/OperationTime, when a call has no HighResTime")

    @field_validator("enabled", mode="before")
    @classmethod
    def _switch(cls, v: Any) -> Any:
        if isinstance(v, bool) or v == "auto":
            return v
        raise ValueError(f"{v!r} is not auto, true or false")

    @field_validator("encoding")
    @classmethod
    def _codec(cls, v: str) -> str:
        import codecs

        try:
            codecs.lookup(v)
        except LookupError as exc:
            raise ValueError(f"{v!r} is not a character set Python knows (e.g. utf-8, cp037, cp500)") from exc
        return v

    @field_validator("timezone")
    @classmethod
    def _zone(cls, v: str) -> str:
        if v.upper() == "UTC":
            return v
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"{v!r} is not a time zone (e.g. UTC, Europe/London)") from exc
        return v

    def settings(self) -> tuple[str, str]:
        return (self.encoding, self.timezone)


#: Spark settings qmon's configuration has a key of its own for (the ``spark:`` section refuses them)
OWN_SPARK_KEYS = {
    "spark.master": "job.master (or --master)",
    "spark.sql.shuffle.partitions": "job.shuffle_partitions",
    "spark.app.name": "application name (qmon)",
}


class Config(_Model):
    kafka: KafkaConfig = Field(KafkaConfig(), description="the Kafka cluster and qmon's topics")
    mq_trace: MqTraceConfig = Field(MqTraceConfig(), description="IBM MQ application activity trace as input")
    job: JobConfig = Field(JobConfig(), description="the Spark job")
    monitor: MonitorConfig = Field(MonitorConfig(), description="the monitor's rules")
    forecast: ForecastConfig = Field(ForecastConfig(), description="fill forecasts of structures and queues")
    queues: tuple[QueueDefaultsConfig, ...] = Field(
        (), description="queue attributes by name pattern, as DEFINE QLOCAL would set them"
    )
    structures: tuple[StructureConfig, ...] = Field(
        (), description="the CF structures (CQSSGxxx STRUCTURE statements and CFRM sizes)"
    )
    overflow_exit: tuple[ExitRuleConfig, ...] | str | None = Field(
        None,
        description="the Queue Overflow exit: rules (first match wins; default approve) or a module:function path",
    )
    qsgs: tuple[QsgConfig, ...] = Field(
        (), description="queue-sharing groups (IBM MQ for z/OS): their members and shared queues"
    )
    spark: dict[str, str | int | float | bool] = Field(
        {},
        description="Spark settings for qmon's session (spark.executor.memory: 4g, ...): each wins over qmon's "
        "own default for its key, and a setting given to Spark itself (spark-submit's --conf, "
        "spark-defaults.conf) wins over it",
    )

    @model_validator(mode="after")
    def _spark(self) -> Config:
        for key in self.spark:
            if not key.startswith("spark."):
                raise _At(("spark", key), f"{key!r} is not a Spark setting (they start with 'spark.')")
            if key in OWN_SPARK_KEYS:
                raise _At(("spark", key), f"{key!r} is set by qmon's {OWN_SPARK_KEYS[key]}: set that instead")
        return self

    def spark_settings(self) -> dict[str, str]:
        """The ``spark:`` section as Spark takes its settings (booleans as ``true``/``false``)."""
        return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in self.spark.items()}

    @field_validator("overflow_exit")
    @classmethod
    def _exit(cls, v: Any) -> Any:
        return _exit_path(v) if isinstance(v, str) else v

    @model_validator(mode="after")
    def _unique_structures(self) -> Config:
        names = [s.strname for s in self.structures]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"structure {dup[0]} is defined more than once")
        return self

    @model_validator(mode="after")
    def _groups(self) -> Config:
        """A queue manager is a member of one queue-sharing group at most, and a group's name is no queue
        manager's (IBM MQ: "must be different from any queue manager names")."""
        group_of: dict[str, str] = {}
        names: dict[str, int] = {}
        for i, g in enumerate(self.qsgs):
            if g.name in names:
                raise _At(
                    ("qsgs", i, "name"), f"queue-sharing group {g.name} is declared twice (qsgs[{names[g.name]}])"
                )
            names[g.name] = i
            for j, member in enumerate(g.members):
                if member in group_of:
                    raise _At(
                        ("qsgs", i, "members", j),
                        f"queue manager {member} is a member of queue-sharing group {group_of[member]} already; a queue "
                        "manager is a member of one queue-sharing group only",
                    )
                group_of[member] = g.name
        for i, g in enumerate(self.qsgs):
            if g.name in group_of:
                raise _At(
                    ("qsgs", i, "name"),
                    f"{g.name} is the name of a queue manager (a member of {group_of[g.name]}); a queue-sharing "
                    "group's name must be different from every queue manager's",
                )
        return self

    def sharing(self) -> Sharing:
        return Sharing(tuple(g.group() for g in self.qsgs))

    def structure_settings(self) -> StructureSettings:
        if isinstance(self.overflow_exit, str):
            exit_ = OverflowExit(callable_path=self.overflow_exit)
        else:
            exit_ = OverflowExit(rules=tuple(ExitRule(r.queue, r.decision) for r in self.overflow_exit or ()))
        return StructureSettings(
            tuple(s.definition() for s in self.structures),
            exit_,
            snapshot_interval_ms=duration_ms(self.monitor.snapshot_interval),
            forecast=self.forecast.settings(),
        )

    def monitor_settings(self) -> MonitorSettings:
        return MonitorSettings(
            perfmev=self.monitor.perfmev,
            queue_defaults=tuple(QueueDefaults(q.pattern, q.attrs()) for q in self.queues),
            journal_near_pct=self.monitor.journal_near_pct,
            stall_clear_hold_ms=duration_ms(self.monitor.stall_clear_hold),
            snapshot_interval_ms=duration_ms(self.monitor.snapshot_interval),
            forecast=self.forecast.settings(),
            sharing=self.sharing(),
        )


# ---------------------------------------------------------------- loading with line numbers


class _LineLoader(yaml.SafeLoader):
    """A SafeLoader that remembers the line of every mapping key and sequence item."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> dict:
    mapping = {}
    lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in mapping:
            raise ConfigError(f"line {key_node.start_mark.line + 1}: key {key!r} appears twice in the same mapping")
        mapping[key] = loader.construct_object(value_node, deep=True)
        lines[key] = key_node.start_mark.line + 1
    mapping["__lines__"] = lines
    return mapping


def _construct_sequence(loader: _LineLoader, node: yaml.SequenceNode) -> list:
    items = [loader.construct_object(child, deep=True) for child in node.value]
    return _LinedList(items, [child.start_mark.line + 1 for child in node.value])


class _LinedList(list):
    def __init__(self, items: list, lines: list[int]):
        super().__init__(items)
        self.lines = lines


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k != "__lines__"}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _line_of(doc: Any, loc: tuple) -> int | None:
    line = None
    node = doc
    for part in loc:
        if isinstance(node, dict):
            lines = node.get("__lines__", {})
            if part in lines:
                line = lines[part]
            node = node.get(part)
        elif isinstance(node, _LinedList) and isinstance(part, int) and part < len(node):
            line = node.lines[part]
            node = node[part]
        else:
            break
    return line


def _with_definitions(path: Path, doc: dict) -> dict:
    """``structures_from: {cqssg: FILE, cfrm: FILE}``: structures read from a CQSSGxxx member and a
    CFRM policy (paths relative to the configuration file), added to ``structures:``."""
    from qmon.core.cqssg import DefinitionError, merge, parse_cfrm, parse_cqssg

    src = doc.pop("structures_from", None)
    if src is None:
        return doc
    line = doc.get("__lines__", {}).get("structures_from", "?")
    if not isinstance(src, dict) or set(_strip(src)) != {"cqssg", "cfrm"}:
        raise ConfigError(f"{path}: line {line}: structures_from: give both cqssg: FILE and cfrm: FILE")
    texts = {}
    for key in ("cqssg", "cfrm"):
        file = (path.parent / str(src[key])).resolve()
        try:
            texts[key] = (file, file.read_text())
        except OSError as exc:
            raise ConfigError(
                f"{path}: line {src['__lines__'][key]}: structures_from.{key}: cannot read {file}: {exc.strerror}"
            ) from None
    try:
        cqssg = parse_cqssg(texts["cqssg"][1])
    except DefinitionError as exc:
        raise ConfigError(f"{texts['cqssg'][0]}: {exc}") from None
    try:
        cfrm = parse_cfrm(texts["cfrm"][1])
        merged = merge(cqssg, cfrm)
    except DefinitionError as exc:
        raise ConfigError(f"{texts['cqssg'][0]} / {texts['cfrm'][0]}: {exc}") from None
    doc = dict(doc)
    doc["structures"] = _LinedList(
        [*(doc.get("structures") or []), *merged], [*getattr(doc.get("structures"), "lines", []), *[line] * len(merged)]
    )
    return doc


#: keys a qmon release has removed, and why (said instead of "unknown key")
REMOVED_KEYS = {
    "monitor.dedup_state": "duplicates are always found by the check ahead of the monitor, by 10-second slice of ts",
    "monitor.dedup_max": "the duplicate check remembers every event_id within monitor.dedup_window",
}


def load_config(path: str | Path | None) -> Config:
    """Read and validate a configuration file (None: all defaults)."""
    if path is None:
        return Config()
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the configuration file: {exc.strerror}") from exc
    try:
        doc = yaml.load(text, Loader=_LineLoader) or {}
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "somewhere"
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{path}: {where}: not valid YAML: {problem}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: line 1: the file must be a mapping of sections (kafka, job, monitor, queues, ...)")
    doc = _with_definitions(path, doc)
    try:
        return Config.model_validate(_strip(doc))
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            msg = err["msg"]
            found = err.get("ctx", {}).get("error")
            if isinstance(found, _At):  # a check of the whole file, at the key it names
                loc, msg = loc + found.at, str(found)
            key = ".".join(str(p) for p in loc)
            line = _line_of(doc, loc)
            where = f"line {line}" if line else "line ?"
            if err["type"] == "extra_forbidden" and key in REMOVED_KEYS:
                msg = f"no longer a setting: {REMOVED_KEYS[key]}; delete the key"
            elif err["type"] == "extra_forbidden":
                msg = "unknown key (check its spelling against the configuration reference, docs/reference/configuration.md)"
            elif err["type"] == "missing":
                msg = "required key is missing"
            problems.append(f"{path}: {where}: {key}: {msg}")
        raise ConfigError("\n".join(problems)) from None
