"""Random valid instances of any declared message or struct, from its declarations alone.

``message_strategy(cls, version)`` is a Hypothesis strategy for round-trip
property tests; ``random_message(cls, version, rng)`` builds the same kind of
instance from a seeded ``random.Random`` (fast; the fuzz corpus uses it).

Rules, for a value that must survive ``decode(encode(x)) == x``:
fields outside ``version`` keep their defaults; null only where the field is
nullable at ``version``; tagged fields are sometimes their default (then not
written) and sometimes not; integers stay in their type's range; floats are
never NaN (NaN != NaN); strings are short so non-flexible int16 lengths fit.
"""

from __future__ import annotations

import random
import uuid
from typing import Any, Final

import attrs
from hypothesis import strategies as st

from quorum.wire.schema import ArrayType, FieldSpec, Primitive, StructType, field_specs

__all__ = ["INT_RANGES", "message_strategy", "random_message"]

INT_RANGES: Final[dict[str, tuple[int, int]]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}
MAX_ARRAY: Final = 3
MAX_TEXT: Final = 12
MAX_BYTES: Final = 24


def _aliases(cls: type) -> dict[str, str]:
    return {a.name: a.alias for a in attrs.fields(cls)}


def _is_tagged(spec: FieldSpec, version: int) -> bool:
    return spec.tag is not None and version in spec.tagged


# -- Hypothesis ----------------------------------------------------------------


def _primitive_strategy(name: str) -> st.SearchStrategy[Any]:
    if name in INT_RANGES:
        low, high = INT_RANGES[name]
        return st.integers(low, high)
    table: dict[str, st.SearchStrategy[Any]] = {
        "float64": st.floats(allow_nan=False),
        "bool": st.booleans(),
        "uuid": st.uuids() | st.just(uuid.UUID(int=0)),
        "string": st.text(max_size=MAX_TEXT),
        "bytes": st.binary(max_size=MAX_BYTES),
        "records": st.binary(max_size=MAX_BYTES),
    }
    return table[name]


def _value_strategy(t: Any, version: int) -> st.SearchStrategy[Any]:
    if isinstance(t, Primitive):
        return _primitive_strategy(t.name)
    if isinstance(t, StructType):
        return message_strategy(t.cls, version)
    assert isinstance(t, ArrayType)
    return st.lists(_value_strategy(t.element, version), max_size=MAX_ARRAY).map(tuple)


def message_strategy(cls: type, version: int) -> st.SearchStrategy[Any]:
    """Valid instances of ``cls`` (a message or a nested struct) at ``version``."""
    aliases = _aliases(cls)
    kwargs: dict[str, st.SearchStrategy[Any]] = {}
    for name, spec, default in field_specs(cls):
        if version not in spec.versions:
            continue
        value = _value_strategy(spec.type, version)
        if version in spec.nullable:
            value = st.none() | value
        if _is_tagged(spec, version):
            value = st.just(default) | value
        kwargs[aliases[name]] = value
    return st.builds(cls, **kwargs)


# -- seeded random -------------------------------------------------------------

_TEXT_ALPHABET: Final = "abcxyz-_.09 éß€😀"


def _random_primitive(name: str, rng: random.Random) -> Any:
    if name in INT_RANGES:
        low, high = INT_RANGES[name]
        # Edges are where codecs break; pick them often.
        return rng.choice((low, high, 0, -1 if low < 0 else 1, rng.randint(low, high)))
    if name == "float64":
        return rng.choice((0.0, -1.5, 1e300, rng.uniform(-1e9, 1e9)))
    if name == "bool":
        return rng.random() < 0.5
    if name == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    if name == "string":
        return "".join(rng.choice(_TEXT_ALPHABET) for _ in range(rng.randrange(MAX_TEXT)))
    return rng.randbytes(rng.randrange(MAX_BYTES))


def _random_value(t: Any, version: int, rng: random.Random) -> Any:
    if isinstance(t, Primitive):
        return _random_primitive(t.name, rng)
    if isinstance(t, StructType):
        return random_message(t.cls, version, rng)
    assert isinstance(t, ArrayType)
    return tuple(_random_value(t.element, version, rng) for _ in range(rng.randrange(MAX_ARRAY + 1)))


def random_message(cls: type, version: int, rng: random.Random) -> Any:
    """A valid instance of ``cls`` at ``version``, drawn from ``rng``."""
    aliases = _aliases(cls)
    kwargs: dict[str, Any] = {}
    for name, spec, default in field_specs(cls):
        if version not in spec.versions:
            continue
        if version in spec.nullable and rng.random() < 0.2:
            kwargs[aliases[name]] = None
        elif _is_tagged(spec, version) and rng.random() < 0.3:
            kwargs[aliases[name]] = default
        else:
            kwargs[aliases[name]] = _random_value(spec.type, version, rng)
    return cls(**kwargs)
