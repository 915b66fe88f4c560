"""``Config``: the configuration file as a whole, its sections, the checks that span them, and the settings the
rules are given from it."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from qmon.core.config.base import Frozen
from qmon.core.config.durations import duration_ms
from qmon.core.config.forecast import ForecastConfig
from qmon.core.config.job import OWN_SPARK_KEYS, JobConfig
from qmon.core.config.kafka import KafkaConfig
from qmon.core.config.monitor import MonitorConfig, QueueDefaultsConfig
from qmon.core.config.mq_trace import MqTraceConfig
from qmon.core.config.queue_sharing_groups import QsgConfig
from qmon.core.config.structures import ExitRuleConfig, StructureConfig, exit_path
from qmon.core.queues import MonitorSettings, QueueDefaults
from qmon.core.sharing import Sharing
from qmon.core.structures import ExitRule, OverflowExit, StructureSettings


class At(ValueError):
    """A problem found by a check of the whole file (a model validator), at ``at``: the keys below the model's
    that ``load_config`` reports its line of."""

    def __init__(self, at: tuple[str | int, ...], message: str):
        super().__init__(message)
        self.at = at


class Config(Frozen):
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
                raise At(("spark", key), f"{key!r} is not a Spark setting (they start with 'spark.')")
            if key in OWN_SPARK_KEYS:
                raise At(("spark", key), f"{key!r} is set by qmon's {OWN_SPARK_KEYS[key]}: set that instead")
        return self

    def spark_settings(self) -> dict[str, str]:
        """The ``spark:`` section as Spark takes its settings (booleans as ``true``/``false``)."""
        return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in self.spark.items()}

    @field_validator("overflow_exit")
    @classmethod
    def _exit(cls, v: Any) -> Any:
        return exit_path(v) if isinstance(v, str) else v

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
                raise At(("qsgs", i, "name"), f"queue-sharing group {g.name} is declared twice (qsgs[{names[g.name]}])")
            names[g.name] = i
            for j, member in enumerate(g.members):
                if member in group_of:
                    raise At(
                        ("qsgs", i, "members", j),
                        f"queue manager {member} is a member of queue-sharing group {group_of[member]} already; a queue "
                        "manager is a member of one queue-sharing group only",
                    )
                group_of[member] = g.name
        for i, g in enumerate(self.qsgs):
            if g.name in group_of:
                raise At(
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
