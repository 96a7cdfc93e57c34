"""Settings as data: each attrs field of a config class declares its Kafka key.

A config class is written as one line per setting::

    election_timeout_ms: int = setting("controller.quorum.election.timeout.ms", INT, "1000")

``setting`` records the key, the parser (text -> value), Kafka's default as
text (``None`` for a nullable setting, ``REQUIRED`` for none) and extra checks
in the field's metadata. ``structure_settings`` builds a cattrs converter from
that metadata (one structure hook per field, renamed to its Kafka key,
extra keys forbidden) and turns cattrs' grouped errors into one
``ConfigError`` whose problems name the key and the line.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Generic, TypeVar

import attrs
import cattrs
from attrs import frozen
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    ForbiddenExtraKeysError,
)
from cattrs.gen import make_dict_structure_fn, override

from quorum.config.errors import ConfigError, ConfigProblem

__all__ = [
    "BOOLEAN",
    "DOUBLE",
    "INT",
    "LONG",
    "REQUIRED",
    "STRING",
    "Check",
    "InvalidValue",
    "Setting",
    "at_least",
    "between",
    "csv_entries",
    "one_of",
    "setting",
    "settings_of",
    "structure_settings",
    "with_lines",
]

T = TypeVar("T")
Check = Callable[[Any], "str | None"]

_SETTING: Final = "pykraft.setting"
_INTEGER = re.compile(r"[+-]?[0-9]+")
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


class InvalidValue(ValueError):
    """Raised by a parser or check; the text is the reason after the key."""


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Final = _Required()


def _integer(kind: str, bounds: tuple[int, int]) -> Callable[[str], int]:
    def parse(text: str) -> int:
        # Java's parseInt/parseLong: optional sign, decimal digits, in range
        if not _INTEGER.fullmatch(text) or not bounds[0] <= int(text) <= bounds[1]:
            raise InvalidValue(f"Not a number of type {kind}")
        return int(text)

    parse.__name__ = kind
    return parse


INT: Final = _integer("INT", _INT32)
LONG: Final = _integer("LONG", _INT64)


_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[dDfF]?")


def _double(text: str) -> float:
    """Java's Double.parseDouble on decimal text (no hex floats, NaN or Infinity)."""
    if not _DECIMAL.fullmatch(text):
        raise InvalidValue("Not a number of type DOUBLE")
    return float(text.rstrip("dDfF"))


DOUBLE: Final = _double


def _boolean(text: str) -> bool:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    raise InvalidValue("Expected value to be either true or false")


def _string(text: str) -> str:
    return text


# parsers named after Kafka's ConfigDef.Type
BOOLEAN: Final = _boolean
STRING: Final = _string


def csv_entries(text: str) -> list[str]:
    """Kafka's LIST type: comma-separated, blanks around commas dropped."""
    return [] if not text else [entry.strip() for entry in text.split(",")]


def one_of(*choices: str) -> Check:
    """Kafka's ValidString.in: the value must be one of ``choices`` (case-sensitive)."""

    def check(value: str) -> str | None:
        return None if value in choices else f"String must be one of: {', '.join(choices)}"

    return check


def at_least(minimum: int) -> Check:
    def check(value: int) -> str | None:
        return None if value >= minimum else f"Value must be at least {minimum}"

    return check


def between(minimum: int, maximum: int) -> Check:
    def check(value: int) -> str | None:
        if value < minimum:
            return f"Value must be at least {minimum}"
        return None if value <= maximum else f"Value must be no more than {maximum}"

    return check


@frozen
class Setting(Generic[T]):
    """One Kafka setting: its key, how its text becomes a value, its default."""

    key: str
    parse: Callable[[str], T]
    default: str | _Required | None
    checks: tuple[Check, ...] = ()

    @property
    def required(self) -> bool:
        return isinstance(self.default, _Required)

    def convert(self, raw: str) -> T | None:
        """Trimmed text -> checked value; blank text unsets a nullable setting."""
        text = raw.strip()
        if not text and self.default is None:
            return None
        value = self.parse(text)
        for check in self.checks:
            reason = check(value)
            if reason is not None:
                raise InvalidValue(reason)
        return value


def setting(
    key: str,
    parse: Callable[[str], T],
    default: str | _Required | None,
    *checks: Check,
) -> Any:
    """An attrs field bound to a Kafka key; ``default`` is Kafka's default text."""
    spec = Setting(key=key, parse=parse, default=default, checks=checks)
    metadata = {_SETTING: spec}
    if isinstance(default, _Required):
        return attrs.field(metadata=metadata)
    typed_default = None if default is None else spec.convert(default)
    return attrs.field(default=typed_default, metadata=metadata)


def settings_of(cls: type) -> dict[str, Setting[Any]]:
    """Kafka key -> Setting for every field of an attrs config class."""
    table: dict[str, Setting[Any]] = {}
    for field in attrs.fields(cls):
        spec = field.metadata[_SETTING]
        assert spec.key not in table, f"{spec.key} is declared twice on {cls.__name__}"
        table[spec.key] = spec
    return table


def _struct_hook(spec: Setting[Any]) -> Callable[[Any, Any], Any]:
    def hook(raw: Any, _type: Any) -> Any:
        return spec.convert(raw)

    return hook


_CONVERTERS: dict[type, cattrs.Converter] = {}


def _converter_for(cls: type) -> cattrs.Converter:
    """One converter per config class: each field renamed to its Kafka key and
    structured by its setting; unknown keys forbidden; all errors collected."""
    if cls in _CONVERTERS:
        return _CONVERTERS[cls]
    converter = cattrs.Converter(detailed_validation=True, forbid_extra_keys=True)
    overrides: dict[str, Any] = {
        field.name: override(
            rename=field.metadata[_SETTING].key,
            struct_hook=_struct_hook(field.metadata[_SETTING]),
        )
        for field in attrs.fields(cls)
    }
    # typed as Any: mypy cannot match **overrides against the named bool flags
    make_fn: Any = make_dict_structure_fn
    hook = make_fn(cls, converter, _cattrs_forbid_extra_keys=True, **overrides)
    converter.register_structure_hook(cls, hook)
    return _CONVERTERS.setdefault(cls, converter)


def _unknown_key(key: str, known: Iterable[str]) -> ConfigProblem:
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f" Did you mean `{close[0]}`?" if close else ""
    return ConfigProblem(
        f"Unknown configuration `{key}`: pykraft rejects settings it does not implement.{hint}",
        key=key,
    )


def _problems_from(
    error: ClassValidationError, cls: type, raw: Mapping[str, str]
) -> list[ConfigProblem]:
    keys = {field.name: field.metadata[_SETTING].key for field in attrs.fields(cls)}
    problems = []
    for exc in error.exceptions:
        if isinstance(exc, ForbiddenExtraKeysError):
            problems += [_unknown_key(key, keys.values()) for key in sorted(exc.extra_fields)]
            continue
        notes = [n for n in getattr(exc, "__notes__", ()) if isinstance(n, AttributeValidationNote)]
        assert notes and isinstance(exc, KeyError | InvalidValue), f"unexpected {exc!r}"
        key = keys[notes[0].name]
        if isinstance(exc, KeyError):
            message = f'Missing required configuration "{key}" which has no default value.'
        else:
            message = f"Invalid value {raw[key].strip()} for configuration {key}: {exc}"
        problems.append(ConfigProblem(message, key=key))
    return problems


def structure_settings(
    cls: type[T],
    raw: Mapping[str, str],
    *,
    source: str | None = None,
    lines: Mapping[str, int] | None = None,
) -> T:
    """Build ``cls`` from raw text settings; every problem in one ConfigError."""
    try:
        return _converter_for(cls).structure(dict(raw), cls)
    except ClassValidationError as error:
        problems = _problems_from(error, cls, raw)
        raise ConfigError(with_lines(problems, lines), source=source) from None


def with_lines(
    problems: Sequence[ConfigProblem], lines: Mapping[str, int] | None
) -> list[ConfigProblem]:
    """Attach each problem's line and order them as the file reads."""
    lines = lines or {}
    placed = [
        attrs.evolve(p, line=lines.get(p.key)) if p.key is not None and p.line is None else p
        for p in problems
    ]
    return sorted(placed, key=lambda p: (p.line is None, p.line or 0))
