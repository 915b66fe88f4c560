"""``load_config``: a YAML file read into ``Config``; a file qmon cannot start with is a ``ConfigError`` that names
the file, the line and the key at fault, and what would fix it."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from qmon.core.config.model import At, Config

logger = logging.getLogger(__name__)


class ConfigError(ValueError):
    """A configuration file that qmon cannot start with."""


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


#: keys a qmon release has renamed (section.old -> its new name in the same section): read as the new one, with a
#: warning naming the file and line
RENAMED_KEYS = {"job.queue_buckets": "queue_shards"}


def _renamed(path: Path, doc: dict) -> dict:
    """``doc`` with each key of ``RENAMED_KEYS`` under its new name (a file that gives both names is refused)."""
    for old, new in RENAMED_KEYS.items():
        section, key = old.split(".")
        body = doc.get(section)
        if not isinstance(body, dict) or key not in body:
            continue
        line = body.get("__lines__", {}).get(key, "?")
        if new in body:
            raise ConfigError(f"{path}: line {line}: {old}: give {section}.{new} only ({old} is its former name)")
        body = dict(body)
        body[new] = body.pop(key)
        body["__lines__"] = {**body.get("__lines__", {}), new: line}
        logger.warning(
            "%s: line %s: %s is named %s.%s; rename the key (read as %s.%s)",
            path,
            line,
            old,
            section,
            new,
            section,
            new,
        )
        doc = {**doc, section: body}
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
    doc = _renamed(path, _with_definitions(path, doc))
    try:
        return Config.model_validate(_strip(doc))
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            msg = err["msg"]
            found = err.get("ctx", {}).get("error")
            if isinstance(found, At):  # a check of the whole file, at the key it names
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
