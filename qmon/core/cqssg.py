"""Structure definitions from the real thing: a CQS global PROCLIB member (CQSSGxxx) and a
CFRM policy (IXCMIAPU input).  Pure.

    CQSSGxxx:  STRUCTURE (STRNAME=MSGQ1,OVFLWSTR=MSGQ1OV,OVFLWMAX=70,SRDSDSN1=...,SRDSDSN2=...)
    CFRM:      STRUCTURE NAME(MSGQ1) SIZE(2048) INITSIZE(1024) FULLTHRESHOLD(80) PREFLIST(CF01,CF02)

Keywords are case-insensitive; a statement may span lines; ``*`` in column 1 and ``/* ... */``
are comments.  CFRM sizes are in KB unless suffixed (``u``: K, M, G, T).  ``merge`` joins the two
into qmon's structure definitions: OVFLWMAX defaults to 70 as in CQS, FULLTHRESHOLD to 80 as in
CFRM, and an overflow structure's size comes from its own CFRM entry.
"""

from __future__ import annotations

import re
from typing import Any


class DefinitionError(ValueError):
    """A statement qmon cannot read, with its line number."""

    def __init__(self, line: int, message: str):
        self.line = line
        super().__init__(f"line {line}: {message}")


def _statements(text: str) -> list[tuple[int, str]]:
    """(first line, text) of each STRUCTURE statement, comments removed, lines joined."""
    text = re.sub(
        r"/\*.*?\*/",
        lambda m: " " * len(m.group(0).replace("\n", "")) + "\n" * m.group(0).count("\n"),
        text,
        flags=re.S,
    )
    out: list[tuple[int, str]] = []
    current: list[str] | None = None
    start = 0
    for no, raw in enumerate(text.splitlines(), start=1):
        if raw.startswith("*"):
            continue
        line = raw.strip()
        if not line:
            continue
        if re.match(r"(?i)^STRUCTURE\b", line):
            if current is not None:
                out.append((start, " ".join(current)))
            current, start = [line], no
        elif current is not None:
            current.append(line)
    if current is not None:
        out.append((start, " ".join(current)))
    return out


_SIZE = re.compile(r"^(\d+)\s*([KMGT]?)$", re.I)
_UNITS = {"": 1, "K": 1, "M": 1024, "G": 1024**2, "T": 1024**3}


def _kb(line: int, key: str, value: str) -> int:
    m = _SIZE.match(value.strip())
    if not m:
        raise DefinitionError(line, f"{key}({value}): expected a size such as 2048, 512M or 2G")
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


def parse_cqssg(text: str) -> list[dict[str, Any]]:
    """STRUCTURE (STRNAME=...,OVFLWSTR=...,OVFLWMAX=...) statements of a CQSSGxxx member."""
    out = []
    for line, stmt in _statements(text):
        m = re.match(r"(?i)^STRUCTURE\s*\((.*)\)\s*$", stmt)
        if not m:
            raise DefinitionError(line, "expected STRUCTURE (STRNAME=name,...)")
        params: dict[str, str] = {}
        for part in m.group(1).split(","):
            if not part.strip():
                continue
            if "=" not in part:
                raise DefinitionError(line, f"{part.strip()!r}: expected KEYWORD=value")
            k, v = part.split("=", 1)
            params[k.strip().upper()] = v.strip().upper()
        if "STRNAME" not in params:
            raise DefinitionError(line, "STRUCTURE needs STRNAME=")
        entry: dict[str, Any] = {"strname": params["STRNAME"], "line": line}
        if params.get("OVFLWSTR"):
            entry["ovflwstr"] = params["OVFLWSTR"]
        if "OVFLWMAX" in params:
            if not params["OVFLWMAX"].isdigit():
                raise DefinitionError(line, f"OVFLWMAX={params['OVFLWMAX']}: expected a percentage")
            entry["ovflwmax"] = int(params["OVFLWMAX"])
        out.append(entry)
    return out


def parse_cfrm(text: str) -> dict[str, dict[str, Any]]:
    """STRUCTURE NAME(...) SIZE(...) [INITSIZE(...)] [FULLTHRESHOLD(...)] entries of a CFRM policy."""
    out: dict[str, dict[str, Any]] = {}
    for line, stmt in _statements(text):
        params = {k.upper(): v for k, v in re.findall(r"([A-Za-z]+)\s*\(([^)]*)\)", stmt)}
        if "NAME" not in params:
            raise DefinitionError(line, "STRUCTURE needs NAME(...)")
        if "SIZE" not in params:
            raise DefinitionError(line, f"STRUCTURE NAME({params['NAME']}) needs SIZE(...)")
        entry: dict[str, Any] = {"size": _kb(line, "SIZE", params["SIZE"]), "line": line}
        if "INITSIZE" in params:
            entry["initsize"] = _kb(line, "INITSIZE", params["INITSIZE"])
        if "FULLTHRESHOLD" in params:
            if not params["FULLTHRESHOLD"].strip().isdigit():
                raise DefinitionError(line, f"FULLTHRESHOLD({params['FULLTHRESHOLD']}): expected a percentage")
            entry["fullthreshold"] = int(params["FULLTHRESHOLD"])
        out[params["NAME"].strip().upper()] = entry
    return out


def merge(cqssg: list[dict[str, Any]], cfrm: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """qmon structure definitions (the keys of ``structures:``) from both sources."""
    out = []
    for s in cqssg:
        name = s["strname"]
        policy = cfrm.get(name)
        if policy is None:
            raise DefinitionError(s["line"], f"structure {name} has no STRUCTURE NAME({name}) in the CFRM policy")
        d: dict[str, Any] = {"strname": name, "size": policy["size"]}
        for key in ("initsize", "fullthreshold"):
            if key in policy:
                d[key] = policy[key]
        if "ovflwmax" in s:
            d["ovflwmax"] = s["ovflwmax"]
        if "ovflwstr" in s:
            ovf = cfrm.get(s["ovflwstr"])
            if ovf is None:
                raise DefinitionError(s["line"], f"overflow structure {s['ovflwstr']} has no CFRM entry (its SIZE)")
            d["ovflwstr"], d["ovflwsize"] = s["ovflwstr"], ovf["size"]
        out.append(d)
    return out
