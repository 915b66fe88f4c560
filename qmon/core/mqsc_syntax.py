"""MQSC's lexical rules, as qmon applies them, pure.

Keywords are case-insensitive; unquoted names fold to upper
case, quoted names keep their case ('' is a quote inside quotes); a line
ending in ``+`` continues with the next line's first non-blank character, one
ending in ``-`` continues with the next line as it stands; a line whose first
character is ``*`` is a comment and a blank line is ignored, wherever they stand,
even between the lines of a continued command (IBM: "any comments or blank lines
are discarded when the command is reassembled into a single string").  Blanks or
commas separate keywords, and a blank may stand between a keyword and its
parenthesised value.

Every error names the keyword at fault and says what would be accepted.
"""

from __future__ import annotations

import re

MAX_NAME = 48
_NAME_RE = re.compile(r"^[A-Za-z0-9._/%*]+$")


class MqscError(ValueError):
    """An MQSC command qmon cannot accept; ``keyword`` names the part at fault."""

    def __init__(self, keyword: str, message: str):
        super().__init__(message)
        self.keyword = keyword
        self.message = message


# ---------------------------------------------------------------- script level


def split_script(text: str) -> list[str]:
    """Join continuation lines and drop comments; one string per command."""
    commands: list[str] = []
    current = ""
    continuing = False
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.startswith("*") or not line.strip():
            continue  # comments and blank lines are dropped, inside a continued command too
        if continuing == "+":
            line = line.lstrip()
        if line.endswith("+") or line.endswith("-"):
            mark = line[-1]
            current += line[:-1]
            continuing = mark  # type: ignore[assignment]
            continue
        current += line
        continuing = False
        if current.strip():
            commands.append(current.strip())
        current = ""
    if current.strip():
        commands.append(current.strip())
    return commands


# ---------------------------------------------------------------- tokens and values


def tokens(text: str) -> list[tuple[str, str | None, bool]]:
    """(KEYWORD, value or None, value_was_quoted) in order."""
    out: list[tuple[str, str | None, bool]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " ,\t":
            i += 1
            continue
        m = re.match(r"[A-Za-z0-9_.*%/]+", text[i:])
        if not m:
            raise MqscError(text[i : i + 10], f"unexpected character {c!r} at position {i + 1}")
        word = m.group(0)
        i += len(word)
        j = i
        while j < n and text[j] == " ":
            j += 1
        value: str | None = None
        quoted = False
        if j < n and text[j] == "(":
            i = j + 1
            while i < n and text[i] == " ":
                i += 1
            if i < n and text[i] == "'":
                quoted = True
                i += 1
                buf = []
                while True:
                    if i >= n:
                        raise MqscError(word.upper(), f"{word.upper()}: the quoted value has no closing quote")
                    if text[i] == "'":
                        if i + 1 < n and text[i + 1] == "'":
                            buf.append("'")
                            i += 2
                            continue
                        i += 1
                        break
                    buf.append(text[i])
                    i += 1
                value = "".join(buf)
                while i < n and text[i] == " ":
                    i += 1
                if i >= n or text[i] != ")":
                    raise MqscError(word.upper(), f"{word.upper()}: expected ')' after the quoted value")
                i += 1
            else:
                close = text.find(")", i)
                if close < 0:
                    raise MqscError(word.upper(), f"{word.upper()}: the value has no closing parenthesis")
                value = text[i:close].strip()
                i = close + 1
        out.append((word.upper(), value, quoted))
    return out


def parse_name(keyword: str, value: str | None, quoted: bool, *, generic_ok: bool = False) -> str:
    if value is None or value == "":
        raise MqscError(keyword, f"{keyword} needs a name in parentheses, e.g. {keyword}(PAYROLL.REQUEST)")
    name = value if quoted else value.upper()
    if len(name) > MAX_NAME:
        raise MqscError(
            keyword, f"{keyword}({name}): a name is at most {MAX_NAME} characters, this one has {len(name)}"
        )
    if not _NAME_RE.match(name) or ("*" in name and not (generic_ok and name.endswith("*") and name.count("*") == 1)):
        allowed = "letters, digits, . / _ %" + (" and a final * for a generic name" if generic_ok else "")
        raise MqscError(keyword, f"{keyword}({name}): a name may hold only {allowed}")
    return name


def parse_int(keyword: str, value: str | None, lo: int, hi: int, unit: str = "") -> int:
    of_unit = f" of{unit}" if unit else ""
    if value is None or not re.fullmatch(r"\d+", value.strip()):
        raise MqscError(keyword, f"{keyword}({value or ''}): expected a whole number{of_unit} from {lo} to {hi}")
    digits = value.strip().lstrip("0") or "0"
    if len(digits) > len(str(hi)):  # never int() a 10,000-digit string
        raise MqscError(keyword, f"{keyword}({digits[:12]}...): out of range, expected {lo} to {hi}{unit}")
    number = int(digits)
    if not lo <= number <= hi:
        raise MqscError(keyword, f"{keyword}({number}): out of range, expected {lo} to {hi}{unit}")
    return number


def parse_choice(keyword: str, value: str | None, choices: tuple[str, ...]) -> str:
    v = (value or "").upper()
    if v not in choices:
        raise MqscError(keyword, f"{keyword}({value or ''}): expected one of {', '.join(choices)}")
    return v
