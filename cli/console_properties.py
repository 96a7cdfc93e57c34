"""The property plumbing Kafka's console tools share: ``k=v`` arguments, files, merging.

``--property``, ``--producer-property`` and ``--consumer-property`` take
``key=value`` (the value may hold ``=``; a missing value is the empty
string, as ``CommandLineUtils.parseKeyValueArgs`` reads them). A tool's own
options are merged over the properties as ``CommandLineUtils.maybeMergeOptions``
does: an option given on the command line wins; an option left out puts its
default only where the properties do not already set the key.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from pathlib import Path

from quorum.config import ConfigError, read_properties_file

__all__ = ["ConsoleOptionError", "load_properties", "merge_option", "parse_key_value_args"]


class ConsoleOptionError(Exception):
    """Options a console tool cannot run with; the message says what to change."""


def parse_key_value_args(args: Iterable[str]) -> dict[str, str]:
    """``["a=1", "b=x=y", "c"]`` -> ``{"a": "1", "b": "x=y", "c": ""}``; later keys win."""
    properties: dict[str, str] = {}
    for arg in args:
        key, _, value = arg.partition("=")
        properties[key] = value
    return properties


def load_properties(path: str | None) -> dict[str, str]:
    """A ``--*.config`` properties file (nothing when no file was named)."""
    if path is None:
        return {}
    if not Path(path).is_file():
        raise ConsoleOptionError(f"Properties file {path} does not exist")
    try:
        return read_properties_file(path)
    except (ConfigError, OSError) as exc:
        raise ConsoleOptionError(str(exc)) from None


def merge_option(
    properties: MutableMapping[str, str], key: str, given: object | None, default: object | None
) -> None:
    """Set ``key`` from a tool option: ``given`` always wins, ``default`` fills only a gap."""
    if given is not None:
        properties[key] = str(given)
    elif default is not None and key not in properties:
        properties[key] = str(default)
