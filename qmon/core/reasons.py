"""qmon's dead-letter reason codes.

They sit in the MQ range for application-defined feedback (MQFB_APPL_FIRST = 65536),
so a DLQ handler rule may name them by number or by symbol, as with MQ reason codes.
"""

from __future__ import annotations

MQFB_APPL_FIRST = 65536

REASONS: dict[str, tuple[int, str]] = {
    "QMON_UNDECODABLE": (
        65537,
        "the value is not a record of the topic's Avro schema (truncated, wrong schema, random bytes, empty)",
    ),
    "QMON_MISSING_FIELD": (65538, "a required field is absent or null"),
    "QMON_INVALID_FIELD": (
        65539,
        "a field is out of range (name length, negative depth or length, timestamp out of range)",
    ),
    "QMON_UNKNOWN_OP": (65540, "op is not PUT, GET or START"),
    "QMON_INVALID_JSON": (65541, "a replay input line is not a JSON object"),
    "QMON_INVALID_COMMAND": (65542, "the MQSC command is unknown or invalid (the reply names the keyword)"),
    "QMON_UNKNOWN_RECORD": (65543, "a replay input line is neither activity, a command nor journal status"),
    "QMON_BAD_PCF": (65544, "an MQ activity trace message is not PCF activity trace, or is cut short"),
    "QMON_UNKNOWN_SCHEMA": (
        65545,
        "the value's Confluent header names a schema id the schema registry does not know (the error names the "
        "id and the registry)",
    ),
    "QMON_SCHEMA_MISMATCH": (
        65546,
        "the value was written with a registered schema that does not resolve into the topic's record (a field "
        "qmon requires that the writer lacks and has no default, a type qmon cannot read it as), or that is not "
        "Avro (the error names each problem)",
    ),
}

CODE = {name: code for name, (code, _) in REASONS.items()}
NAME_OF = {code: name for name, (code, _) in REASONS.items()}

# MQ reason codes qmon uses in performance events.
MQRC_Q_FULL = 2053
MQRC_Q_DEPTH_HIGH = 2224
MQRC_Q_DEPTH_LOW = 2225
MQRC_Q_SERVICE_INTERVAL_HIGH = 2226
MQRC_Q_SERVICE_INTERVAL_OK = 2227
