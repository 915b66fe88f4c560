"""Configuration: frozen pydantic models read from YAML.

A bad file stops start-up with the file, the line and the key at fault and
what would fix it (``ConfigError``).  Every key is documented in the configuration reference (docs/reference/configuration.md).

A module for each section (``kafka``, ``job``, ``monitor`` with ``queues``, ``forecast``, ``structures`` with
``overflow_exit``, ``queue_sharing_groups``, ``mq_trace``); ``model`` has ``Config``, the whole file, and
``loading`` reads a file into it (``load_config``).  Everything is imported from here.
"""

from qmon.core.config.durations import duration_ms
from qmon.core.config.forecast import ForecastConfig
from qmon.core.config.job import OWN_SPARK_KEYS, JobConfig
from qmon.core.config.kafka import KafkaConfig, KafkaSecurity
from qmon.core.config.loading import REMOVED_KEYS, ConfigError, load_config
from qmon.core.config.model import Config
from qmon.core.config.monitor import MonitorConfig, QueueDefaultsConfig
from qmon.core.config.mq_trace import MqTraceConfig
from qmon.core.config.queue_sharing_groups import QsgConfig
from qmon.core.config.structures import ExitRuleConfig, StructureConfig

__all__ = [
    "OWN_SPARK_KEYS",
    "REMOVED_KEYS",
    "Config",
    "ConfigError",
    "ExitRuleConfig",
    "ForecastConfig",
    "JobConfig",
    "KafkaConfig",
    "KafkaSecurity",
    "MonitorConfig",
    "MqTraceConfig",
    "QsgConfig",
    "QueueDefaultsConfig",
    "StructureConfig",
    "duration_ms",
    "load_config",
]
