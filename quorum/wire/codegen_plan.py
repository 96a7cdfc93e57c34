"""The shared ground of the codec generator: field plans, layout runs and the source being built.

``plan_struct`` says which fields of a struct are absent, regular or tagged at
one version; ``Source`` collects generated lines and the namespace they run
in. ``quorum.wire.codegen`` (encoders, ``generate``) and
``quorum.wire.codegen_decode`` (decoders) build on them.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any, Final

import attrs

from quorum.wire import primitives as p
from quorum.wire.errors import WireDecodeError, WireEncodeError
from quorum.wire.schema import ArrayType, FieldSpec, Primitive, field_specs
from quorum.wire.uuids import cached_uuid, uuid_from_bytes

__all__ = [
    "BYTES_LIKE",
    "FIXED_CODES",
    "Compiled",
    "EncodedArray",
    "FieldPlan",
    "Resolver",
    "Source",
    "fixed_runs",
    "is_fixed_run",
    "min_size",
    "plan_struct",
    "run_struct",
]

# wire type name -> (struct code, size)
FIXED_CODES: Final[dict[str, tuple[str, int]]] = {
    "int8": ("b", 1), "int16": ("h", 2), "int32": ("i", 4), "int64": ("q", 8),
    "uint16": ("H", 2), "uint32": ("I", 4), "float64": ("d", 8), "bool": ("?", 1),
    "uuid": ("16s", 16),
}
BYTES_LIKE: Final = frozenset({"bytes", "records"})


@attrs.frozen
class Compiled:
    """A compiled pair for one (struct class, version, flexible)."""

    encode: Callable[[Any, list[p.Buffer]], None]
    decode: Callable[[bytes | memoryview, int], tuple[Any, int]]
    min_size: int  # a lower bound of the encoded size, for array-count checks
    source: str
    # whether decoded values may be memoryview slices of the input (BYTES/RECORDS
    # fields): without any, a decoder may read ``bytes`` input as it is
    views: bool = True


Resolver = Callable[[type], Compiled]


@attrs.frozen
class EncodedArray:
    """The elements of an array of structs, encoded beforehand (``codec.ArrayEncoder``).

    Given as the value of such a field, the generated encoder writes the
    count and then these chunks as they are: a large message is encoded a
    slice of elements at a time and assembled afterwards. Only for a field
    that is not tagged at that version: a tagged field is written when it
    differs from its default, which an ``EncodedArray`` always does.
    """

    count: int
    chunks: tuple[bytes, ...]

    def __len__(self) -> int:
        return self.count


@attrs.frozen
class FieldPlan:
    name: str
    alias: str  # the attrs __init__ keyword
    spec: FieldSpec
    default: Any
    nullable: bool  # at this version
    tag: int | None  # set when the field is tagged at this version


def plan_struct(
    cls: type, version: int, flexible: bool
) -> tuple[list[FieldPlan], list[FieldPlan], list[FieldPlan]]:
    """(absent, regular, tagged-in-tag-order) fields of ``cls`` at ``version``."""
    aliases = {a.name: a.alias for a in attrs.fields(cls)}
    absent: list[FieldPlan] = []
    regular: list[FieldPlan] = []
    tagged: list[FieldPlan] = []
    for name, spec, default in field_specs(cls):
        tag = spec.tag if spec.tag is not None and version in spec.tagged else None
        plan = FieldPlan(name, aliases[name], spec, default, version in spec.nullable, tag)
        if version not in spec.versions:
            absent.append(plan)
        elif tag is None:
            regular.append(plan)
        elif not flexible:
            raise TypeError(f"{cls.__name__}.{name} is tagged at v{version}, which is not flexible")
        else:
            tagged.append(plan)
    tagged.sort(key=lambda f: f.tag or 0)
    tags = [f.tag for f in tagged]
    if len(set(tags)) != len(tags):
        raise TypeError(f"{cls.__name__} declares one tag twice at v{version}: {tags}")
    return absent, regular, tagged


class Source:
    """Lines of generated code plus the namespace (constants, helpers) they use."""

    def __init__(
        self, cls: type, version: int, flexible: bool, resolve: Resolver, plain: bool
    ) -> None:
        self.cls, self.version, self.flexible, self.resolve = cls, version, flexible, resolve
        self.plain = plain
        self.uses_size = False  # the decoder reads len(mv) once, into size_of_mv
        self.lines: list[str] = []
        self.ns: dict[str, Any] = {
            "p": p, "_EE": WireEncodeError, "_DE": WireDecodeError, "_UUID": uuid.UUID,
            "_I8": p.INT8_STRUCT, "_I16": p.INT16_STRUCT, "_I32": p.INT32_STRUCT,
            "_pack": struct.pack, "_unpack_from": struct.unpack_from, "_UV": p.SMALL_UVARINTS,
            "_uvb": p.unsigned_varint_bytes, "_flat": p.flat_bytes, "_uuid": uuid_from_bytes,
            "_cached": cached_uuid,
            "_new": object.__new__,
        }
        self._counter = 0

    def const(self, value: Any, prefix: str = "K") -> str:
        name = f"{prefix}{self._counter}"
        self._counter += 1
        self.ns[name] = value
        return name

    def var(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def where(self, f: FieldPlan) -> str:
        return f"{self.cls.__name__}.{f.name} v{self.version}"


def min_size(src: Source, t: Any, nullable: bool) -> int:
    """A lower bound of the encoded size of a value of wire type ``t``."""
    if isinstance(t, Primitive):
        if t.name in FIXED_CODES:
            return FIXED_CODES[t.name][1]
        if t.name == "string":
            return 1 if src.flexible else 2
        return 1 if src.flexible else 4
    if isinstance(t, ArrayType):
        return 1 if src.flexible else 4
    return 1 if nullable else src.resolve(t.cls).min_size


def fixed_runs(regular: list[FieldPlan]) -> list[list[FieldPlan]]:
    """Split regular fields into runs: consecutive fixed-size fields form one run."""
    runs: list[list[FieldPlan]] = []
    for f in regular:
        fixed = isinstance(f.spec.type, Primitive) and f.spec.type.name in FIXED_CODES
        if fixed and runs and is_fixed_run(runs[-1]):
            runs[-1].append(f)
        else:
            runs.append([f])
    return runs


def is_fixed_run(run: list[FieldPlan]) -> bool:
    t = run[0].spec.type
    return isinstance(t, Primitive) and t.name in FIXED_CODES


def run_struct(src: Source, run: list[FieldPlan]) -> tuple[str, int]:
    fmt = ">" + "".join(FIXED_CODES[f.spec.type.name][0] for f in run)  # type: ignore[union-attr]
    s = struct.Struct(fmt)
    return src.const(s, "S"), s.size

