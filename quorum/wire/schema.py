"""Declarations that describe Kafka message layouts.

A message or nested struct is a frozen attrs class whose fields are declared
with :func:`field`.  Each field carries the facts of Kafka's JSON message
schemas: the wire type, the versions in which it is present, the versions in
which it may be null, and (for tagged fields) its tag and tagged versions.  The
codec compiler (``quorum.wire.codec``) turns these declarations into one
encoder and one decoder per (class, version), once.

Example::

    @message(api_key=52, versions=(0, 2), flexible="0+")
    @attrs.frozen(kw_only=True)
    class VoteRequest:
        cluster_id: str | None = field(STRING, nullable="0+", default=None)
        voter_id: int = field(INT32, versions="1+", default=-1)
        topics: tuple[VoteTopic, ...] = field(array(VoteTopic), default=())

Version ranges use the schema notation: ``"0+"``, ``"3-5"``, ``"2"``,
``"none"``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

import attrs

__all__ = [
    "BOOL",
    "BYTES",
    "FLOAT64",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "RECORDS",
    "STRING",
    "UINT16",
    "UINT32",
    "UUID",
    "ArrayType",
    "FieldSpec",
    "MessageInfo",
    "Primitive",
    "StructType",
    "VersionRange",
    "array",
    "field",
    "message",
    "message_info",
    "parse_versions",
    "struct",
]


@attrs.frozen
class VersionRange:
    """An inclusive range of versions; ``high`` is None for "and every later"."""

    low: int
    high: int | None

    NONE: ClassVar[VersionRange]

    def __contains__(self, version: int) -> bool:
        if self.low < 0:
            return False
        return self.low <= version and (self.high is None or version <= self.high)

    def is_empty(self) -> bool:
        return self.low < 0


VersionRange.NONE = VersionRange(-1, -1)


def parse_versions(text: str | None) -> VersionRange:
    """Parse ``"0+"``, ``"3-5"``, ``"2"`` or ``"none"`` (None means none)."""
    if text is None or text == "none" or text == "":
        return VersionRange.NONE
    if text.endswith("+"):
        return VersionRange(int(text[:-1]), None)
    if "-" in text:
        low, high = text.split("-", 1)
        return VersionRange(int(low), int(high))
    return VersionRange(int(text), int(text))


@attrs.frozen
class Primitive:
    """A scalar wire type. ``name`` follows Kafka's schema type names."""

    name: str

    def __repr__(self) -> str:
        return self.name


INT8: Final = Primitive("int8")
INT16: Final = Primitive("int16")
INT32: Final = Primitive("int32")
INT64: Final = Primitive("int64")
UINT16: Final = Primitive("uint16")
UINT32: Final = Primitive("uint32")
FLOAT64: Final = Primitive("float64")
BOOL: Final = Primitive("bool")
# 16 raw bytes on the wire; in Python a ``uuid.UUID``.
UUID: Final = Primitive("uuid")
# str on the wire as UTF-8; compact in flexible versions.
STRING: Final = Primitive("string")
# bytes; decoded as a memoryview slice of the frame (zero copy) or bytes.
BYTES: Final = Primitive("bytes")
# Kafka's "records": nullable bytes holding record batches, kept as raw bytes.
RECORDS: Final = Primitive("records")


@attrs.frozen
class StructType:
    """A nested struct: an attrs class whose fields are declared with ``field``."""

    cls: type


@attrs.frozen
class ArrayType:
    """An array of a primitive or a struct; Python value is a tuple."""

    element: Primitive | StructType


WireType = Primitive | StructType | ArrayType


def struct(cls: type) -> StructType:
    return StructType(cls)


def array(element: Primitive | type) -> ArrayType:
    if isinstance(element, Primitive):
        return ArrayType(element)
    return ArrayType(StructType(element))


@attrs.frozen
class FieldSpec:
    """The wire facts of one field; stored in the attrs field's metadata."""

    type: WireType
    versions: VersionRange
    nullable: VersionRange
    tag: int | None
    tagged: VersionRange
    # A field outside its versions may hold a non-default value and is then
    # silently left out (Kafka's "ignorable"); otherwise encoding raises.
    ignorable: bool


_SPEC_KEY: Final = "kafka"


def field(
    type_: WireType,
    *,
    versions: str = "0+",
    nullable: str | None = None,
    tag: int | None = None,
    tagged: str | None = None,
    ignorable: bool = False,
    default: Any = attrs.NOTHING,
    factory: Any = None,
) -> Any:
    """Declare one message field (returns an ``attrs.field``)."""
    spec = FieldSpec(
        type=type_,
        versions=parse_versions(versions),
        nullable=parse_versions(nullable),
        tag=tag,
        tagged=parse_versions(tagged) if tag is not None else VersionRange.NONE,
        ignorable=ignorable,
    )
    if factory is not None:
        return attrs.field(factory=factory, metadata={_SPEC_KEY: spec})
    return attrs.field(default=default, metadata={_SPEC_KEY: spec})


def field_specs(cls: type) -> list[tuple[str, FieldSpec, Any]]:
    """(python name, spec, default) for every declared field, in order."""
    out = []
    for a in attrs.fields(cls):
        spec = a.metadata.get(_SPEC_KEY)
        if spec is None:
            continue
        default = a.default
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            default = default.factory()
        out.append((a.name, spec, default))
    return out


@attrs.frozen
class MessageInfo:
    """Message-level facts: api key (None for data schemas), versions, flexibility."""

    api_key: int | None
    low: int
    high: int
    flexible: VersionRange


_INFO_ATTR: Final = "__kafka_message__"


def message(
    *, api_key: int | None, versions: tuple[int, int], flexible: str
) -> Any:
    """Class decorator that records the message-level facts on an attrs class."""

    def wrap(cls: type) -> type:
        setattr(
            cls,
            _INFO_ATTR,
            MessageInfo(api_key, versions[0], versions[1], parse_versions(flexible)),
        )
        return cls

    return wrap


def message_info(cls: type) -> MessageInfo:
    info = getattr(cls, _INFO_ATTR, None)
    if info is None:
        raise TypeError(f"{cls.__name__} is not a declared Kafka message")
    assert isinstance(info, MessageInfo)
    return info
