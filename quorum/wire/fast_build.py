"""What the generated codecs' fast paths are built from: slot stores and struct tables.

``slot_setters(cls)`` decides whether a decoder may build ``cls`` without its
``__init__``. A slotted attrs class whose ``__init__`` attrs generated, with no
validators, converters, pre/post-init hooks, ``init=False`` or self-taking
factories, no slots besides its fields (and ``__weakref__``), and either
frozen (its ``__init__`` stores through ``object.__setattr__``) or without any
``__setattr__`` of its own, is initialised by exactly one store per field into
the field's slot. ``object.__new__`` plus those stores through the slot
descriptors is then the same object at about half the cost of the keyword
call. Any class that fails a check (the checks err on that side) keeps
``__init__``.

``array_structs(code, length_code)`` is a table of precompiled structs for the
element counts below ``ARRAY_TABLE_SIZE``: index ``n`` packs or unpacks an
optional length prefix then ``n`` elements, replacing a format string built
and looked up per array.
"""

from __future__ import annotations

import functools
import struct
import types
from collections.abc import Callable
from typing import Any, Final

import attrs

from quorum.wire.schema import field_specs

__all__ = ["ARRAY_TABLE_SIZE", "array_structs", "factory_of", "slot_setters"]

# Compact counts below 128 take one byte; replica lists are a handful of ids.
ARRAY_TABLE_SIZE: Final = 127

_ATTRS_INIT_FILE: Final = "<attrs generated"


def _attrs_made_init(cls: type) -> bool:
    init = cls.__dict__.get("__init__")
    code = getattr(init, "__code__", None)
    return code is not None and str(code.co_filename).startswith(_ATTRS_INIT_FILE)


def _stores_plainly(cls: type) -> bool:
    """Whether ``__init__``'s stores reach the slots directly."""
    setattr_: object = cls.__setattr__
    if setattr_ is object.__setattr__:
        return True  # ``self.x = x`` is a slot store
    # attrs' frozen classes refuse setattr, so their __init__ uses object.__setattr__
    return getattr(setattr_, "__qualname__", "") == "_frozen_setattrs"


def _slots(cls: type) -> set[str] | None:
    """Every slot of ``cls`` and its bases; None if instances also have a ``__dict__``."""
    if getattr(cls, "__dictoffset__", 0):
        return None
    found: set[str] = set()
    for klass in cls.__mro__[:-1]:
        declared = klass.__dict__.get("__slots__", ())
        found.update((declared,) if isinstance(declared, str) else declared)
    return found


def _stores_only_slots(cls: type) -> bool:
    if not attrs.has(cls) or not _attrs_made_init(cls) or not _stores_plainly(cls):
        return False
    if hasattr(cls, "__attrs_pre_init__") or hasattr(cls, "__attrs_post_init__"):
        return False
    fields = attrs.fields(cls)
    names = {f.name for f in fields}
    slots = _slots(cls)
    if slots is None or not slots <= names | {"__weakref__"}:
        return False
    if {name for name, _spec, _default in field_specs(cls)} != names:
        return False
    for f in fields:
        if not f.init or f.validator is not None or f.converter is not None:
            return False
        if isinstance(f.default, attrs.Factory) and f.default.takes_self:  # type: ignore[arg-type]
            return False
        if not isinstance(getattr(cls, f.name, None), types.MemberDescriptorType):
            return False
    return True


@functools.cache
def slot_setters(cls: type) -> dict[str, Callable[[Any, Any], None]] | None:
    """Field name -> its slot descriptor's ``__set__``, or None if ``cls`` needs ``__init__``."""
    if not _stores_only_slots(cls):
        return None
    return {f.name: getattr(cls, f.name).__set__ for f in attrs.fields(cls)}


def factory_of(cls: type, name: str) -> Callable[[], Any] | None:
    """The factory attrs calls for field ``name`` when it is not passed, if it has one."""
    default = attrs.fields_dict(cls)[name].default
    if not isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        return None
    factory: Callable[[], Any] = default.factory  # type: ignore[union-attr]
    return factory


@functools.cache
def array_structs(code: str, length_code: str = "") -> tuple[struct.Struct, ...]:
    """Structs for 0..ARRAY_TABLE_SIZE-1 elements of ``code``, after a ``length_code`` prefix."""
    return tuple(struct.Struct(f">{length_code}{n}{code}") for n in range(ARRAY_TABLE_SIZE))
