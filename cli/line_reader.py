"""Lines into records, as Kafka's ``LineMessageReader`` reads them (sans-I/O).

``LineReaderConfig.from_properties`` takes the console producer's
``--property`` values; ``parse_line`` turns one line into a ``LineRecord``;
``LineSplitter`` cuts a byte stream into lines the way Java's
``BufferedReader.readLine`` does (``\\n``, ``\\r\\n`` or a lone ``\\r`` end a
line; a last line without an end still counts), whatever the chunks.

A line is ``[headers<headers.delimiter>][key<key.separator>]value``:

* ``parse.headers=true``: ``h1:v1,h2:v2`` before ``headers.delimiter``
  (default tab); pairs split by ``headers.separator`` (default ``,``, a
  regular expression as in Kafka), key and value by
  ``headers.key.separator`` (default ``:``);
* ``parse.key=true``: the key before ``key.separator`` (default tab);
* ``null.marker``: a key, value, header value or whole header list equal to
  it is null; a header *key* equal to it is an error (header keys cannot be
  null);
* ``ignore.error=true``: a missing separator gives a null key (or no
  headers, or a header with a null value) instead of an error.
"""

from __future__ import annotations

import codecs
import re
from typing import Final

import attrs

from cli.console_properties import ConsoleOptionError

__all__ = ["LineFormatError", "LineReaderConfig", "LineRecord", "LineSplitter", "parse_line"]

_KNOWN: Final = frozenset({
    "parse.key", "key.separator", "parse.headers", "headers.delimiter", "headers.separator",
    "headers.key.separator", "ignore.error", "null.marker",
})
_LINE_END: Final = re.compile(r"\r\n|\r|\n")


class LineFormatError(Exception):
    """A line that does not have the parts the properties ask for (Kafka's message)."""


def _flag(properties: dict[str, str], key: str) -> bool:
    # Kafka: anything but "true" (any case, trimmed) is false
    return properties.get(key, "false").strip().lower() == "true"


@attrs.frozen(kw_only=True)
class LineReaderConfig:
    parse_key: bool = False
    key_separator: str = "\t"
    parse_headers: bool = False
    headers_delimiter: str = "\t"
    headers_separator: str = ","
    headers_key_separator: str = ":"
    ignore_error: bool = False
    null_marker: str | None = None

    @classmethod
    def from_properties(cls, properties: dict[str, str]) -> LineReaderConfig:
        """The reader's settings; separators that would make lines ambiguous are refused."""
        unknown = sorted(set(properties) - _KNOWN)
        if unknown:
            raise ConsoleOptionError(
                f"Unknown --property {', '.join(unknown)} for the line reader; it knows "
                f"{', '.join(sorted(_KNOWN))}"
            )
        config = cls(
            parse_key=_flag(properties, "parse.key"),
            key_separator=properties.get("key.separator", "\t"),
            parse_headers=_flag(properties, "parse.headers"),
            headers_delimiter=properties.get("headers.delimiter", "\t"),
            headers_separator=properties.get("headers.separator", ","),
            headers_key_separator=properties.get("headers.key.separator", ":"),
            ignore_error=_flag(properties, "ignore.error"),
            null_marker=properties.get("null.marker"),
        )
        config._check()
        return config

    def _check(self) -> None:
        # Kafka's checks and texts, in Kafka's order
        pairs = [
            (self.headers_delimiter, self.headers_separator, "headers.delimiter and headers.separator"),
            (self.headers_delimiter, self.headers_key_separator,
             "headers.delimiter and headers.key.separator"),
            (self.headers_separator, self.headers_key_separator,
             "headers.separator and headers.key.separator"),
            (self.key_separator, self.null_marker, "null.marker and key.separator"),
            (self.headers_separator, self.null_marker, "null.marker and headers.separator"),
            (self.headers_delimiter, self.null_marker, "null.marker and headers.delimiter"),
            (self.headers_key_separator, self.null_marker, "null.marker and headers.key.separator"),
        ]
        for first, second, names in pairs:
            if first == second:
                raise ConsoleOptionError(f"{names} may not be equal")
        try:
            re.compile(self.headers_separator)
        except re.error as exc:
            raise ConsoleOptionError(
                f"headers.separator is not a valid regular expression: {exc}"
            ) from None


@attrs.frozen
class LineRecord:
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def _utf8(text: str, config: LineReaderConfig) -> bytes | None:
    return None if text == config.null_marker else text.encode()


def _part(config: LineReaderConfig, line: str, start: int, separator: str, name: str,
          line_number: int) -> str | None:
    index = line.find(separator, start)
    if index == -1:
        if config.ignore_error:
            return None
        raise LineFormatError(f"No {name} found on line number {line_number}: '{line}'")
    return line[start:index]


def _java_split(pattern: str, text: str) -> list[str]:
    # String.split: no match gives [text]; trailing empty strings are dropped
    parts = re.split(pattern, text)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _headers(config: LineReaderConfig, text: str, line_number: int
             ) -> tuple[tuple[str, bytes | None], ...]:
    headers: list[tuple[str, bytes | None]] = []
    for pair in _java_split(config.headers_separator, text):
        index = pair.find(config.headers_key_separator)
        if index == -1:
            if config.ignore_error:
                headers.append((pair, None))
                continue
            raise LineFormatError(
                f"No header key separator found in pair '{pair}' on line number {line_number}"
            )
        key = pair[:index]
        if key == config.null_marker:
            raise LineFormatError(
                f"Header keys should not be equal to the null marker '{config.null_marker}' "
                "as they can't be null"
            )
        headers.append((key, _utf8(pair[index + len(config.headers_key_separator):], config)))
    return tuple(headers)


def parse_line(config: LineReaderConfig, line: str, line_number: int) -> LineRecord:
    """One line (without its end) as a record; ``line_number`` counts from 1, for errors."""
    headers = (_part(config, line, 0, config.headers_delimiter, "headers delimiter", line_number)
               if config.parse_headers else None)
    header_end = 0 if headers is None else len(headers) + len(config.headers_delimiter)
    key = (_part(config, line, header_end, config.key_separator, "key separator", line_number)
           if config.parse_key else None)
    key_end = 0 if key is None else len(key) + len(config.key_separator)
    value = line[header_end + key_end:]
    return LineRecord(
        key=None if key is None else _utf8(key, config),
        value=_utf8(value, config),
        headers=() if headers is None or headers == config.null_marker
        else _headers(config, headers, line_number),
    )


class LineSplitter:
    """Bytes in, complete lines out (decoded as UTF-8, bad bytes replaced as Java does)."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""

    def feed(self, data: bytes) -> list[str]:
        """The lines that ``data`` completes; a final ``\\r`` waits for a possible ``\\n``."""
        text = self._pending + self._decoder.decode(data)
        held = text.endswith("\r")
        if held:
            text = text[:-1]
        parts = _LINE_END.split(text)
        self._pending = parts.pop() + ("\r" if held else "")
        return parts

    def finish(self) -> list[str]:
        """At end of input: the last line, if it had no end of line."""
        text = self._pending + self._decoder.decode(b"", final=True)
        self._pending = ""
        lines = _LINE_END.split(text)
        if lines[-1] == "":
            lines.pop()
        return lines
