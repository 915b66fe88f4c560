"""The routed rows' builder casts each field by its type's name: only types whose name Spark's parser reads
back as the same type (a timestamp's would follow ``spark.sql.timestampType``).  The routed rows themselves
are checked through the real pipeline (the replay tests)."""

from __future__ import annotations

import pytest
from pyspark.sql.types import StructField, StructType, TimestampType

import qmon.streaming.route as route
from qmon.streaming.rows import ROUTED


def test_every_routed_field_has_a_type_cast_by_name():
    assert all(type(f.dataType) in route._Router._BY_NAME for f in ROUTED.fields)


def test_a_type_not_cast_by_name_stops_the_builder_naming_the_field(monkeypatch):
    monkeypatch.setattr(route, "ROUTED", StructType([*ROUTED.fields, StructField("seen", TimestampType())]))
    with pytest.raises(TypeError, match=r"rows\.ROUTED\.seen"):
        route._Router(topic_index=None)  # (checked before it is used)
