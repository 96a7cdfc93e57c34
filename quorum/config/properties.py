"""Java ``.properties`` syntax, as ``java.util.Properties.load`` and ``store`` define it.

Reading follows Java exactly: natural lines end at ``\\n``, ``\\r`` or ``\\r\\n``;
lines whose first non-blank character is ``#`` or ``!`` are comments; a line
ending in an odd number of backslashes continues on the next line, whose
leading blanks are dropped; the key ends at the first unescaped ``=``, ``:``
or blank; blanks around the separator are skipped; escapes are ``\\t \\n \\r
\\f \\uXXXX`` and ``\\x`` for any other ``x``. Values keep trailing blanks
(Kafka trims them when it parses a setting). A key given twice keeps its
last value. One deliberate difference: files are read as UTF-8, not
ISO-8859-1, so paths and names with non-ASCII characters survive.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from attrs import frozen

from quorum.config.errors import ConfigError

__all__ = [
    "PropertyEntry",
    "format_properties",
    "parse_properties",
    "parse_property_entries",
    "read_properties_file",
    "read_property_entries",
]

_BLANKS = " \t\f"
_NATURAL_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


@frozen
class PropertyEntry:
    """One key/value pair and the (1-based) line its logical line starts on."""

    key: str
    value: str
    line: int


def _trailing_backslashes(text: str) -> int:
    return len(text) - len(text.rstrip("\\"))


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """Yield (first line number, logical line) with continuations joined."""
    natural = _NATURAL_LINE_BREAK.split(text)
    index = 0
    while index < len(natural):
        number = index + 1
        line = natural[index].lstrip(_BLANKS)
        index += 1
        if not line or line[0] in "#!":
            continue
        parts: list[str] = []
        while _trailing_backslashes(line) % 2 == 1:
            # the odd backslash escapes the line break: drop it and continue
            parts.append(line[:-1])
            if index == len(natural):
                line = ""
                break
            line = natural[index].lstrip(_BLANKS)
            index += 1
        parts.append(line)
        yield number, "".join(parts)


def _split_key_value(line: str) -> tuple[str, str]:
    """Split a logical line at the first unescaped separator (Java's rules)."""
    key_end = len(line)
    value_start = len(line)
    has_separator = False
    escaped = False
    for position, char in enumerate(line):
        if not escaped and char in "=:":
            key_end, value_start, has_separator = position, position + 1, True
            break
        if not escaped and char in _BLANKS:
            key_end, value_start = position, position + 1
            break
        escaped = (not escaped) if char == "\\" else False
    while value_start < len(line):
        char = line[value_start]
        if char in _BLANKS:
            value_start += 1
        elif not has_separator and char in "=:":
            has_separator = True
            value_start += 1
        else:
            break
    return line[:key_end], line[value_start:]


def _unescape(text: str, *, line: int, source: str) -> str:
    out: list[str] = []
    position = 0
    while position < len(text):
        char = text[position]
        position += 1
        if char != "\\" or position == len(text):
            out.append(char)
            continue
        char = text[position]
        position += 1
        if char == "u":
            digits = text[position : position + 4]
            if len(digits) != 4 or not set(digits) <= _HEX_DIGITS:
                escape = "\\u" + digits
                raise ConfigError.single(
                    f"malformed \\uXXXX escape {escape!r}", source=source, line=line
                )
            out.append(chr(int(digits, 16)))
            position += 4
        else:
            out.append(_SIMPLE_ESCAPES.get(char, char))
    return "".join(out)


def parse_property_entries(text: str, *, source: str = "<string>") -> list[PropertyEntry]:
    """Every key/value pair in ``text`` in file order, duplicates included."""
    entries = []
    for number, line in _logical_lines(text):
        raw_key, raw_value = _split_key_value(line)
        key = _unescape(raw_key, line=number, source=source)
        value = _unescape(raw_value, line=number, source=source)
        entries.append(PropertyEntry(key=key, value=value, line=number))
    return entries


def parse_properties(text: str, *, source: str = "<string>") -> dict[str, str]:
    """The properties in ``text`` as a dict; a repeated key keeps its last value."""
    return {e.key: e.value for e in parse_property_entries(text, source=source)}


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError.single(
            f"cannot read the file: {exc.strerror or exc}", source=str(path)
        ) from None
    try:
        # utf-8-sig: a byte-order mark some editors add must not join the first key
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError.single(
            "the file is not valid UTF-8", source=str(path), line=line
        ) from None


def read_property_entries(path: str | Path) -> list[PropertyEntry]:
    """Parse a ``.properties`` file; errors name the file and line."""
    return parse_property_entries(_read_text(Path(path)), source=str(path))


def read_properties_file(path: str | Path) -> dict[str, str]:
    """Parse a ``.properties`` file into a dict; errors name the file and line."""
    return {e.key: e.value for e in read_property_entries(path)}


def _escape(text: str, *, is_key: bool) -> str:
    out: list[str] = []
    for position, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char == " ":
            # Java escapes every blank of a key but only a value's leading one
            out.append("\\ " if is_key or position == 0 else " ")
        elif char in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[char])
        elif char in "=:#!":
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            # Java writes other control characters raw; escaping them keeps the
            # file readable by editors that treat them as line breaks
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)


def format_properties(
    values: Mapping[str, str], *, comments: Iterable[str] = ()
) -> str:
    """``values`` in ``.properties`` syntax, keys sorted, comments first (as Java 18+ stores)."""
    lines = []
    for comment in comments:
        assert "\n" not in comment and "\r" not in comment, "a comment is one line"
        lines.append("#" + comment)
    for key in sorted(values):
        lines.append(f"{_escape(key, is_key=True)}={_escape(values[key], is_key=False)}")
    return "".join(line + "\n" for line in lines)
