"""Python UDFs of the query (created on the driver when the query is built)."""

from __future__ import annotations

from typing import Any

import pandas as pd
from pyspark.sql.types import BooleanType, StringType, StructField, StructType

from qmon.core.mqsc import MqscError, parse_command, split_script

PARSED = StructType(
    [
        StructField("ok", BooleanType()),
        StructField("error", StringType()),
        StructField("scope", StringType()),
        StructField("name", StringType()),
    ]
)


def parse_text(text: str | None) -> tuple[bool, str | None, str | None, str | None]:
    """(ok, error, scope, name) of one control record's MQSC text."""
    if text is None or not text.strip():
        return False, "MQSC: the command text is empty", None, None
    commands = split_script(text)
    if len(commands) != 1:
        return False, f"MQSC: a control record holds exactly one command; this one holds {len(commands)}", None, None
    try:
        cmd = parse_command(commands[0])
    except MqscError as exc:
        return False, f"MQSC error at {exc.keyword or 'the start'}: {exc.message}", None, None
    except Exception as exc:  # noqa: BLE001 - hostile text must never stop the job
        return False, f"MQSC: the command cannot be parsed ({type(exc).__name__})", None, None
    return True, None, cmd.scope, cmd.name


def _parse_series(texts: pd.Series) -> pd.DataFrame:
    from qmon.streaming.worker import freeze_imports

    freeze_imports()
    return pd.DataFrame([parse_text(t) for t in texts], columns=["ok", "error", "scope", "name"])


def parse_mqsc(col: Any) -> Any:
    from pyspark.sql.functions import pandas_udf

    return pandas_udf(_parse_series, PARSED)(col)  # type: ignore[call-overload]
