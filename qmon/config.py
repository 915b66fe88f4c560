"""Configuration: frozen pydantic models read from YAML.

A bad file stops start-up with the file, the line and the key at fault and
what would fix it (``ConfigError``).  Every key is documented in the README.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from qmon.mqsc import MAX_NAME
from qmon.queues import MQ_DEFAULTS, MonitorSettings, QueueDefaults

logger = logging.getLogger(__name__)


class ConfigError(ValueError):
    """A configuration file that qmon cannot start with."""


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|seconds?|m|minutes?|h|hours?|d|days?)\s*$")
_UNIT_MS = {"ms": 1, "millisecond": 1, "milliseconds": 1, "s": 1000, "second": 1000, "seconds": 1000,
            "m": 60_000, "minute": 60_000, "minutes": 60_000, "h": 3_600_000, "hour": 3_600_000,
            "hours": 3_600_000, "d": 86_400_000, "day": 86_400_000, "days": 86_400_000}


def duration_ms(value: Any) -> int:
    """'15 minutes', '500ms', '2s', 7 (seconds) -> milliseconds."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as '15 minutes' or '500 ms'")
    if isinstance(value, (int, float)):
        return int(value * 1000)
    m = _DURATION.match(str(value))
    if not m:
        raise ValueError(f"{value!r} is not a duration; write e.g. '15 minutes', '30 s' or '500 ms'")
    return int(float(m.group(1)) * _UNIT_MS[m.group(2)])


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KafkaSecurity(_Model):
    """Client security settings, passed to every Kafka client qmon makes."""

    protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    username: str | None = None
    password: SecretStr | None = None
    ssl_cafile: str | None = None

    @field_validator("protocol", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.upper() if isinstance(v, str) else v


class KafkaConfig(_Model):
    bootstrap: str = "127.0.0.1:9092"
    topic_prefix: str = Field("qmon", pattern=r"^[A-Za-z0-9._-]{1,200}$",
                              description="qmon.activity becomes <prefix>.activity, and so on")
    partitions: int = Field(4, ge=1, le=1024, description="partitions of the topics qmon creates")
    security: KafkaSecurity = KafkaSecurity()


class JobConfig(_Model):
    checkpoint: str = "./qmon-checkpoint"
    master: str = "local[*]"
    trigger: str = "1 second"
    shuffle_partitions: int = Field(4, ge=1, le=10_000)
    queue_buckets: int = Field(8, ge=1, le=4096, description="shards per queue manager; fixed for a checkpoint")
    watermark_delay: str = "5 seconds"
    max_offsets_per_trigger: int | None = Field(None, ge=1)
    starting_offsets: Literal["earliest", "latest"] = "earliest"

    @field_validator("trigger", "watermark_delay")
    @classmethod
    def _duration(cls, v: str) -> str:
        duration_ms(v)
        return v


class QueueDefaultsConfig(_Model):
    """Defaults for queues whose names match ``pattern`` (first match wins)."""

    pattern: str
    qsvciev: Literal["HIGH", "OK", "NONE"] | None = None
    qsvcint: int | None = Field(None, ge=0, le=999_999_999)
    maxdepth: int | None = Field(None, ge=0, le=999_999_999)
    qdepthhi: int | None = Field(None, ge=0, le=100)
    qdepthlo: int | None = Field(None, ge=0, le=100)
    qdphiev: Literal["ENABLED", "DISABLED"] | None = None
    qdploev: Literal["ENABLED", "DISABLED"] | None = None
    qdpmaxev: Literal["ENABLED", "DISABLED"] | None = None

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
    perfmev: Literal["ENABLED", "DISABLED"] = "DISABLED"
    dedup_window: str = "10 minutes"
    dedup_max: int = Field(256, ge=1, le=1_000_000)
    queue_ttl: str = "7 days"

    @field_validator("perfmev", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.upper() if isinstance(v, str) else v

    @field_validator("dedup_window", "queue_ttl")
    @classmethod
    def _duration(cls, v: str) -> str:
        duration_ms(v)
        return v


class Config(_Model):
    kafka: KafkaConfig = KafkaConfig()
    job: JobConfig = JobConfig()
    monitor: MonitorConfig = MonitorConfig()
    queues: tuple[QueueDefaultsConfig, ...] = ()
    structures: tuple[dict[str, Any], ...] = ()
    overflow_exit: Any = None

    def monitor_settings(self) -> MonitorSettings:
        return MonitorSettings(
            perfmev=self.monitor.perfmev,
            queue_defaults=tuple(QueueDefaults(q.pattern, q.attrs()) for q in self.queues),
            dedup_window_ms=duration_ms(self.monitor.dedup_window),
            dedup_max=self.monitor.dedup_max,
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
    try:
        return Config.model_validate(_strip(doc))
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            key = ".".join(str(p) for p in loc)
            line = _line_of(doc, loc)
            where = f"line {line}" if line else "line ?"
            msg = err["msg"]
            if err["type"] == "extra_forbidden":
                msg = "unknown key (check its spelling against the README's configuration reference)"
            elif err["type"] == "missing":
                msg = "required key is missing"
            problems.append(f"{path}: {where}: {key}: {msg}")
        raise ConfigError("\n".join(problems)) from None
