"""Generated decoders: ``dec(mv, pos) -> (struct, pos)`` for one struct at one version.

See ``quorum.wire.codegen`` for what the generated code looks like and which
fast paths it takes unless ``plain``.
"""

from __future__ import annotations

import struct
from typing import Any

import attrs

from quorum.wire.codegen_plan import (
    BYTES_LIKE,
    FIXED_CODES,
    FieldPlan,
    Source,
    fixed_runs,
    is_fixed_run,
    min_size,
    run_struct,
)
from quorum.wire.fast_build import ARRAY_TABLE_SIZE, array_structs, factory_of, slot_setters
from quorum.wire.schema import ArrayType, Primitive, StructType

__all__ = ["gen_decoder", "has_views"]


def _dec_length(src: Source, ind: int, var: str, width: str) -> None:
    """Read a length or count into ``var``: negative for null, else the length.

    Any negative int16/int32 length is null, as in Kafka's generated readers
    (``if (length < 0)``); callers test ``< 0``.

    Compact lengths take the one-byte varint path inline; the slow path and
    every bounds failure go through ``primitives`` (IndexError at the very end
    of the input is turned into a WireDecodeError by ``codec``).
    """
    if src.flexible:
        src.emit(ind, f"{var} = mv[pos]")
        src.emit(ind, f"if {var} < 128: pos += 1")
        src.emit(ind, f"else: {var}, pos = p.decode_unsigned_varint(mv, pos)")
        src.emit(ind, f"{var} -= 1")
        return
    s = "_I16" if width == "int16" else "_I32"
    src.emit(ind, f"({var},) = {s}.unpack_from(mv, pos); pos += {2 if width == 'int16' else 4}")


def _dec_null(src: Source, ind: int, var: str, f: FieldPlan) -> None:
    """The branch taken when the length read is -1."""
    if f.nullable:
        src.emit(ind, f"{var} = None")
    else:
        msg = f"{src.where(f)}: null where null is not allowed at this version"
        src.emit(ind, f"raise _DE({msg!r})")


def _dec_sized(src: Source, ind: int, var: str, f: FieldPlan, kind: str) -> None:
    """A string or bytes value: length, bounds check, then a slice (zero copy for bytes)."""
    _dec_length(src, ind, "n", "int16" if kind == "string" else "int32")
    src.emit(ind, "if n < 0:")
    _dec_null(src, ind + 1, var, f)
    src.emit(ind, "else:")
    src.emit(ind + 1, "end = pos + n")
    msg = f"{src.where(f)}: " + "{n} bytes at offset {pos} run past the end ({len(mv)})"
    src.emit(ind + 1, f"if end > len(mv): raise _DE(f{msg!r})")
    # bad UTF-8 reads as U+FFFD, as Java's new String(bytes, UTF_8) reads it
    value = "str(mv[pos:end], 'utf-8', 'replace')" if kind == "string" else "mv[pos:end]"
    src.emit(ind + 1, f"{var} = {value}; pos = end")


def _dec_uuid(src: Source, ind: int, var: str) -> None:
    """Turn the 16 bytes in local ``var`` into a UUID (a UUID is never false, so ``or`` works)."""
    if src.plain:
        src.emit(ind, f"{var} = _UUID(bytes={var})")
    else:
        src.emit(ind, f"{var} = _cached({var}) or _uuid({var})")


def _dec_uvarint(src: Source, ind: int, var: str) -> None:
    """An unsigned varint of a tag block; the one-byte case inline unless plain."""
    if src.plain:
        src.emit(ind, f"{var}, pos = p.decode_unsigned_varint(mv, pos)")
        return
    src.emit(ind, f"{var} = mv[pos]")
    src.emit(ind, f"if {var} < 128: pos += 1")
    src.emit(ind, f"else: {var}, pos = p.decode_unsigned_varint(mv, pos)")


def _dec_value(src: Source, ind: int, var: str, f: FieldPlan) -> None:
    """Decode field ``f`` into local ``var``, advancing ``pos``."""
    t = f.spec.type
    if isinstance(t, Primitive):
        if t.name in FIXED_CODES:
            s = src.const(struct.Struct(">" + FIXED_CODES[t.name][0]), "S")
            src.emit(ind, f"({var},) = {s}.unpack_from(mv, pos); pos += {FIXED_CODES[t.name][1]}")
            if t.name == "uuid":
                _dec_uuid(src, ind, var)
            return
        _dec_sized(src, ind, var, f, "string" if t.name == "string" else "bytes")
    elif isinstance(t, StructType):
        dec = src.const(src.resolve(t.cls).decode, "F")
        if f.nullable and f.tag is not None:
            # Kafka's marker of a tagged struct is an unsigned varint: 0 is null
            _dec_uvarint(src, ind, "m")
            src.emit(ind, f"if m == 0: {var} = None")
            src.emit(ind, f"else: {var}, pos = {dec}(mv, pos)")
        elif f.nullable:
            src.emit(ind, "(m,) = _I8.unpack_from(mv, pos); pos += 1")
            src.emit(ind, f"if m < 0: {var} = None")
            src.emit(ind, f"else: {var}, pos = {dec}(mv, pos)")
        else:
            src.emit(ind, f"{var}, pos = {dec}(mv, pos)")
    else:
        _dec_array(src, ind, var, f)


def _dec_array(src: Source, ind: int, var: str, f: FieldPlan) -> None:
    assert isinstance(f.spec.type, ArrayType)
    elem, flex = f.spec.type.element, src.flexible
    if isinstance(elem, StructType):
        elem_min = src.resolve(elem.cls).min_size
    else:
        elem_min = min_size(src, elem, False)
    fixed = isinstance(elem, Primitive) and elem.name in FIXED_CODES and elem.name != "uuid"
    if fixed and flex and not src.plain:
        # a one-byte count whose elements fit: one table lookup and one unpack;
        # null, long or overlong arrays take the checked path below
        code, size = FIXED_CODES[elem.name]  # type: ignore[union-attr]
        table = src.const(array_structs(code), "A")
        src.uses_size = True
        src.emit(ind, "n = mv[pos] - 1")
        src.emit(ind, f"if 0 <= n < {ARRAY_TABLE_SIZE} and n * {size} < size_of_mv - pos:")
        src.emit(ind + 1, f"{var} = {table}[n].unpack_from(mv, pos + 1) if n else (); "
                          f"pos += 1 + n * {size}")
        src.emit(ind, "else:")
        ind += 1
    _dec_length(src, ind, "n", "int32")
    src.emit(ind, "if n < 0:")
    _dec_null(src, ind + 1, var, f)
    # Kafka's rule: refuse a count the remaining bytes cannot hold, so a hostile
    # count can never make the decoder loop or allocate for long.
    msg = f"{src.where(f)}: " + "{n} elements cannot fit in the {len(mv) - pos} bytes left"
    src.emit(ind, f"elif n * {max(elem_min, 1)} > len(mv) - pos: raise _DE(f{msg!r})")
    src.emit(ind, "else:")
    ind += 1
    if fixed:
        code, size = FIXED_CODES[elem.name]  # type: ignore[union-attr]
        generic = f"_unpack_from('>%d{code}' % n, mv, pos)"
        if src.plain:
            src.emit(ind, f"{var} = {generic}; pos += n * {size}")
        else:
            table = src.const(array_structs(code), "A")
            src.emit(ind, f"if n < {ARRAY_TABLE_SIZE}: {var} = {table}[n].unpack_from(mv, pos)")
            src.emit(ind, f"else: {var} = {generic}")
            src.emit(ind, f"pos += n * {size}")
        return
    if isinstance(elem, Primitive) and elem.name == "uuid" and not src.plain:
        # the count check above keeps every 16-byte slice inside the input
        src.emit(ind, f"{var} = tuple([_uuid(bytes(mv[i:i + 16])) "
                      f"for i in range(pos, pos + 16 * n, 16)])")
        src.emit(ind, "pos += 16 * n")
        return
    if isinstance(elem, StructType):
        call = f"{src.const(src.resolve(elem.cls).decode, 'F')}(mv, pos)"
    elif elem.name == "uuid":
        call = "p.read_uuid(mv, pos)"
    elif elem.name == "string":
        call = f"p.{'read_compact_string' if flex else 'read_string'}(mv, pos)"
    else:
        call = f"p.{'read_compact_bytes' if flex else 'read_bytes'}(mv, pos)"
    lst = src.var("l")
    src.emit(ind, f"{lst} = []")
    src.emit(ind, "for _ in range(n):")
    src.emit(ind + 1, f"e, pos = {call}; {lst}.append(e)")
    src.emit(ind, f"{var} = tuple({lst})")


def _shared_default(default: Any) -> bool:
    """Whether an absent field may get one shared default instance instead of a factory call.

    Declared structs are frozen attrs classes and arrays are tuples, so sharing is
    safe and saves constructing default structs for every decoded element.
    """
    return isinstance(default, tuple) or attrs.has(type(default))


def gen_decoder(src: Source, absent: list[FieldPlan], regular: list[FieldPlan],
                tagged: list[FieldPlan]) -> None:
    src.emit(0, "def dec(mv, pos):")
    start = len(src.lines)
    values: list[tuple[FieldPlan, str]] = []  # (field, expression of its value)
    for run in fixed_runs(regular):
        if is_fixed_run(run):
            s, size = run_struct(src, run)
            names = [src.var("f") for _ in run]
            src.emit(1, f"({', '.join(names)},) = {s}.unpack_from(mv, pos); pos += {size}")
            for f, n in zip(run, names, strict=True):
                if f.spec.type.name == "uuid":  # type: ignore[union-attr]
                    _dec_uuid(src, 1, n)
                values.append((f, n))
        else:
            n = src.var("f")
            _dec_value(src, 1, n, run[0])
            values.append((run[0], n))
    if src.flexible:
        values += _gen_tag_decoder(src, tagged)
    _gen_construct(src, absent, values)
    if src.uses_size:
        src.lines.insert(start, "    size_of_mv = len(mv)")


def _gen_construct(src: Source, absent: list[FieldPlan], values: list[tuple[FieldPlan, str]]) -> None:
    """Return the struct built from the decoded ``values`` and the defaults of ``absent`` fields."""
    src.ns["CLS"] = src.cls
    setters = None if src.plain else slot_setters(src.cls)
    if setters is None:
        kwargs = [f"{f.alias}={src.const(f.default, 'D')}" for f in absent
                  if _shared_default(f.default)]
        kwargs += [f"{f.alias}={expr}" for f, expr in values]
        src.emit(1, f"return CLS({', '.join(kwargs)}), pos")
        return
    exprs = {f.name: expr for f, expr in values}
    for f in absent:
        factory = factory_of(src.cls, f.name)
        if _shared_default(f.default) or factory is None:
            exprs[f.name] = src.const(f.default, "D")  # what __init__ stores: the same object
        else:
            exprs[f.name] = f"{src.const(factory, 'M')}()"
    src.emit(1, "o = _new(CLS)")
    for name, setter in setters.items():
        src.emit(1, f"{src.const(setter, 'T')}(o, {exprs[name]})")
    src.emit(1, "return o, pos")


def _gen_tag_decoder(src: Source, tagged: list[FieldPlan]) -> list[tuple[FieldPlan, str]]:
    if not tagged:
        src.emit(1, "if mv[pos] == 0: pos += 1")
        src.emit(1, "else: pos = p.skip_tagged_fields(mv, pos)")
        return []
    values = []
    names = []
    for f in tagged:
        n = src.var("f")
        src.emit(1, f"{n} = {src.const(f.default, 'D')}")
        values.append((f, n))
        names.append(n)
    src.emit(1, "if mv[pos] == 0: pos += 1")  # no tagged field set: the common case
    src.emit(1, "else:")
    _dec_uvarint(src, 2, "nt")
    src.emit(2, "for _ in range(nt):")
    _dec_uvarint(src, 3, "tag")
    _dec_uvarint(src, 3, "size")
    src.emit(3, "tend = pos + size")
    src.emit(3, "if tend > len(mv): raise _DE(f'tagged field {tag} of {size} bytes runs past the end')")
    for i, (f, n) in enumerate(zip(tagged, names, strict=True)):
        src.emit(3, f"{'if' if i == 0 else 'elif'} tag == {f.tag}:")
        _dec_value(src, 4, n, f)
        msg = f"{src.where(f)}: tagged value size does not match its contents"
        src.emit(4, f"if pos != tend: raise _DE({msg!r})")
    src.emit(3, "pos = tend")
    return values


def has_views(src: Source, t: Any) -> bool:
    """Whether decoded values of wire type ``t`` may be memoryview slices of the input."""
    if isinstance(t, Primitive):
        return t.name in BYTES_LIKE
    if isinstance(t, ArrayType):
        return has_views(src, t.element)
    return src.resolve(t.cls).views
