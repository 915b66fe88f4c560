"""What the options every command shares resolve to: ``--config`` (the configuration), ``--bootstrap``
(Kafka's bootstrap servers) and the configured schema registry (how records are framed)."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from qmon.core.config import Config, load_config

if TYPE_CHECKING:
    from qmon.connectors.registry import Framing


def config(args: argparse.Namespace) -> Config:
    return load_config(getattr(args, "config", None))


def bootstrap(args: argparse.Namespace, config: Config) -> str:
    return args.bootstrap or os.environ.get("QMON_BOOTSTRAP") or config.kafka.bootstrap


def framing(config: Config) -> Framing:
    """``connectors.registry.Framing`` of the configured schema registry (none: records as plain Avro)."""
    from qmon.connectors import registry

    return registry.Framing(registry.from_config(config.kafka))
