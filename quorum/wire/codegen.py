"""Generates the Python source of one encoder and one decoder per (struct, version, flexible).

The generated functions are straight-line code over the fields present at that
version: runs of fixed-size fields become one precompiled ``struct.Struct``,
everything else is a call to a small reader or writer from
``quorum.wire.primitives``.  ``quorum.wire.codec`` caches the result, so each
pair is generated and ``exec``-ed once per process.

Encoders have the signature ``enc(msg, w)`` and append byte chunks to the list
``w`` (values of BYTES/RECORDS fields are appended as they are, uncopied).
Decoders have the signature ``dec(mv, pos) -> (msg, pos)`` over a read-only
byte ``memoryview``.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any, Final

import attrs

from quorum.wire import primitives as p
from quorum.wire.errors import WireDecodeError, WireEncodeError
from quorum.wire.schema import ArrayType, FieldSpec, Primitive, StructType, field_specs

__all__ = ["FIXED_CODES", "Compiled", "FieldPlan", "Resolver", "generate", "plan_struct"]

# wire type name -> (struct code, size)
FIXED_CODES: Final[dict[str, tuple[str, int]]] = {
    "int8": ("b", 1), "int16": ("h", 2), "int32": ("i", 4), "int64": ("q", 8),
    "uint16": ("H", 2), "uint32": ("I", 4), "float64": ("d", 8), "bool": ("?", 1),
    "uuid": ("16s", 16),
}
_BYTES_LIKE: Final = frozenset({"bytes", "records"})


@attrs.frozen
class Compiled:
    """A compiled pair for one (struct class, version, flexible)."""

    encode: Callable[[Any, list[p.Buffer]], None]
    decode: Callable[[memoryview, int], tuple[Any, int]]
    min_size: int  # a lower bound of the encoded size, for array-count checks
    source: str


Resolver = Callable[[type], Compiled]


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


class _Source:
    """Lines of generated code plus the namespace (constants, helpers) they use."""

    def __init__(self, cls: type, version: int, flexible: bool, resolve: Resolver) -> None:
        self.cls, self.version, self.flexible, self.resolve = cls, version, flexible, resolve
        self.lines: list[str] = []
        self.ns: dict[str, Any] = {
            "p": p, "_EE": WireEncodeError, "_DE": WireDecodeError, "_UUID": uuid.UUID,
            "_I8": p.INT8_STRUCT, "_I16": p.INT16_STRUCT, "_I32": p.INT32_STRUCT,
            "_pack": struct.pack, "_unpack_from": struct.unpack_from, "_UV": p.SMALL_UVARINTS,
            "_uvb": p.unsigned_varint_bytes, "_flat": p.flat_bytes,
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


def _min_size(src: _Source, t: Any, nullable: bool) -> int:
    if isinstance(t, Primitive):
        if t.name in FIXED_CODES:
            return FIXED_CODES[t.name][1]
        if t.name == "string":
            return 1 if src.flexible else 2
        return 1 if src.flexible else 4
    if isinstance(t, ArrayType):
        return 1 if src.flexible else 4
    return 1 if nullable else src.resolve(t.cls).min_size


# -- encoding ----------------------------------------------------------------


def _enc_null_check(src: _Source, ind: int, expr: str, f: FieldPlan) -> None:
    msg = f"{src.where(f)} is None but null is not allowed at this version"
    src.emit(ind, f"if {expr} is None: raise _EE({msg!r})")


def _enc_value(src: _Source, ind: int, expr: str, f: FieldPlan, w: str) -> None:
    """Append the encoding of local ``expr`` (field ``f``) to the list named ``w``."""
    a = "a" if w == "w" else f"{w}.append"
    t, flex = f.spec.type, src.flexible
    if isinstance(t, Primitive):
        if t.name in FIXED_CODES:
            if t.name == "uuid":
                src.emit(ind, f"{a}({expr}.bytes)")
            else:
                s = src.const(struct.Struct(">" + FIXED_CODES[t.name][0]), "S")
                src.emit(ind, f"{a}({s}.pack({expr}))")
            return
        if not f.nullable:
            _enc_null_check(src, ind, expr, f)
        if t.name == "string":
            fn = "nullable_compact_string_bytes" if flex else "nullable_string_bytes"
            src.emit(ind, f"{a}(p.{fn}({expr}))")
        elif t.name in _BYTES_LIKE:
            _enc_bytes(src, ind, expr, f, a)
        else:
            raise TypeError(f"{src.where(f)}: unknown wire type {t.name}")
    elif isinstance(t, StructType):
        enc = src.const(src.resolve(t.cls).encode, "E")
        if f.nullable:
            src.emit(ind, f"if {expr} is None: {a}(b'\\xff')")
            src.emit(ind, f"else: {a}(b'\\x01'); {enc}({expr}, {w})")
        else:
            _enc_null_check(src, ind, expr, f)
            src.emit(ind, f"{enc}({expr}, {w})")
    else:
        _enc_array(src, ind, expr, f, w, a)


def _enc_length(src: _Source, ind: int, length: str, a: str) -> None:
    """Append a length or count (compact: length + 1, one-byte varints from a table)."""
    if src.flexible:
        src.emit(ind, f"n = {length} + 1")
        src.emit(ind, f"{a}(_UV[n] if n < 128 else _uvb(n))")
    else:
        src.emit(ind, f"{a}(_I32.pack({length}))")


def _enc_bytes(src: _Source, ind: int, expr: str, f: FieldPlan, a: str) -> None:
    """Append the length and the value itself: the value is not copied here."""
    if f.nullable:
        src.emit(ind, f"if {expr} is None: {a}({'p.NULL_COMPACT' if src.flexible else 'p.NULL_ARRAY'})")
        src.emit(ind, "else:")
        ind += 1
    src.emit(ind, f"if type({expr}) is not bytes: {expr} = _flat({expr})")
    _enc_length(src, ind, f"len({expr})", a)
    src.emit(ind, f"{a}({expr})")


def _enc_array(src: _Source, ind: int, expr: str, f: FieldPlan, w: str, a: str) -> None:
    assert isinstance(f.spec.type, ArrayType)
    elem, flex = f.spec.type.element, src.flexible
    if f.nullable:
        src.emit(ind, f"if {expr} is None: {a}({'p.NULL_COMPACT' if flex else 'p.NULL_ARRAY'})")
        src.emit(ind, "else:")
        ind += 1
    else:
        _enc_null_check(src, ind, expr, f)
    _enc_length(src, ind, f"len({expr})", a)
    e = src.var("e")
    if isinstance(elem, StructType):
        enc = src.const(src.resolve(elem.cls).encode, "E")
        src.emit(ind, f"for {e} in {expr}: {enc}({e}, {w})")
    elif elem.name == "uuid":
        src.emit(ind, f"{a}(b''.join([{e}.bytes for {e} in {expr}]))")
    elif elem.name in FIXED_CODES:
        code = FIXED_CODES[elem.name][0]
        src.emit(ind, f"{a}(_pack('>%d{code}' % len({expr}), *{expr}))")
    elif elem.name == "string":
        fn = "compact_string_bytes" if flex else "string_bytes"
        src.emit(ind, f"for {e} in {expr}: {a}(p.{fn}({e}))")
    else:
        src.emit(ind, f"for {e} in {expr}: p.{'put_compact_bytes' if flex else 'put_bytes'}({w}, {e})")


def _fixed_runs(regular: list[FieldPlan]) -> list[list[FieldPlan]]:
    """Split regular fields into runs: consecutive fixed-size fields form one run."""
    runs: list[list[FieldPlan]] = []
    for f in regular:
        fixed = isinstance(f.spec.type, Primitive) and f.spec.type.name in FIXED_CODES
        if fixed and runs and _is_fixed_run(runs[-1]):
            runs[-1].append(f)
        else:
            runs.append([f])
    return runs


def _is_fixed_run(run: list[FieldPlan]) -> bool:
    t = run[0].spec.type
    return isinstance(t, Primitive) and t.name in FIXED_CODES


def _run_struct(src: _Source, run: list[FieldPlan]) -> tuple[str, int]:
    fmt = ">" + "".join(FIXED_CODES[f.spec.type.name][0] for f in run)  # type: ignore[union-attr]
    s = struct.Struct(fmt)
    return src.const(s, "S"), s.size


def _gen_encoder(src: _Source, absent: list[FieldPlan], regular: list[FieldPlan],
                 tagged: list[FieldPlan]) -> None:
    src.emit(0, "def enc(msg, w):")
    src.emit(1, "a = w.append")
    for f in absent:
        if not f.spec.ignorable:
            d = src.const(f.default, "D")
            msg = f"{src.where(f)}: the field is not in this version and must keep its default"
            # `not ==`: attrs' generated __eq__ is much cheaper than its generic __ne__
            src.emit(1, f"if not (msg.{f.name} == {d}): raise _EE({msg!r} + ', got ' + repr(msg.{f.name})[:80])")
    for run in _fixed_runs(regular):
        if _is_fixed_run(run):
            s, _ = _run_struct(src, run)
            args = ", ".join(
                f"msg.{f.name}.bytes" if f.spec.type.name == "uuid" else f"msg.{f.name}"  # type: ignore[union-attr]
                for f in run
            )
            src.emit(1, f"a({s}.pack({args}))")
        else:
            v = src.var("v")
            src.emit(1, f"{v} = msg.{run[0].name}")
            _enc_value(src, 1, v, run[0], "w")
    if src.flexible:
        _gen_tag_encoder(src, tagged)


def _gen_tag_encoder(src: _Source, tagged: list[FieldPlan]) -> None:
    if not tagged:
        src.emit(1, "a(p.EMPTY_TAGGED_FIELDS)")
        return
    src.emit(1, "nt = 0")
    flags = []
    for f in tagged:
        d, v, k = src.const(f.default, "D"), src.var("t"), src.var("k")
        src.emit(1, f"{v} = msg.{f.name}")
        src.emit(1, f"{k} = {v} is not {d} and not ({v} == {d})")
        src.emit(1, f"if {k}: nt += 1")
        flags.append((f, v, k))
    src.emit(1, "a(_UV[nt])")
    for f, v, k in flags:
        src.emit(1, f"if {k}:")
        src.emit(2, "ws = []")
        _enc_value(src, 2, v, f, "ws")
        src.emit(2, f"a(_uvb({f.tag})); a(_uvb(sum(map(len, ws))))")
        src.emit(2, "w.extend(ws)")


# -- decoding ----------------------------------------------------------------


def _dec_length(src: _Source, ind: int, var: str, width: str) -> None:
    """Read a length or count into ``var``: -1 for null, else >= 0 (other negatives raise).

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
    msg = "negative length {" + var + "} at offset {pos}"
    src.emit(ind, f"if {var} < -1: raise _DE(f{msg!r})")


def _dec_null(src: _Source, ind: int, var: str, f: FieldPlan) -> None:
    """The branch taken when the length read is -1."""
    if f.nullable:
        src.emit(ind, f"{var} = None")
    else:
        msg = f"{src.where(f)}: null where null is not allowed at this version"
        src.emit(ind, f"raise _DE({msg!r})")


def _dec_sized(src: _Source, ind: int, var: str, f: FieldPlan, kind: str) -> None:
    """A string or bytes value: length, bounds check, then a slice (zero copy for bytes)."""
    _dec_length(src, ind, "n", "int16" if kind == "string" else "int32")
    src.emit(ind, "if n < 0:")
    _dec_null(src, ind + 1, var, f)
    src.emit(ind, "else:")
    src.emit(ind + 1, "end = pos + n")
    msg = f"{src.where(f)}: " + "{n} bytes at offset {pos} run past the end ({len(mv)})"
    src.emit(ind + 1, f"if end > len(mv): raise _DE(f{msg!r})")
    value = "str(mv[pos:end], 'utf-8')" if kind == "string" else "mv[pos:end]"
    src.emit(ind + 1, f"{var} = {value}; pos = end")


def _dec_value(src: _Source, ind: int, var: str, f: FieldPlan) -> None:
    """Decode field ``f`` into local ``var``, advancing ``pos``."""
    t = f.spec.type
    if isinstance(t, Primitive):
        if t.name in FIXED_CODES:
            s = src.const(struct.Struct(">" + FIXED_CODES[t.name][0]), "S")
            src.emit(ind, f"({var},) = {s}.unpack_from(mv, pos); pos += {FIXED_CODES[t.name][1]}")
            if t.name == "uuid":
                src.emit(ind, f"{var} = _UUID(bytes={var})")
            return
        _dec_sized(src, ind, var, f, "string" if t.name == "string" else "bytes")
    elif isinstance(t, StructType):
        dec = src.const(src.resolve(t.cls).decode, "F")
        if f.nullable:
            src.emit(ind, "(m,) = _I8.unpack_from(mv, pos); pos += 1")
            src.emit(ind, f"if m < 0: {var} = None")
            src.emit(ind, f"else: {var}, pos = {dec}(mv, pos)")
        else:
            src.emit(ind, f"{var}, pos = {dec}(mv, pos)")
    else:
        _dec_array(src, ind, var, f)


def _dec_array(src: _Source, ind: int, var: str, f: FieldPlan) -> None:
    assert isinstance(f.spec.type, ArrayType)
    elem, flex = f.spec.type.element, src.flexible
    if isinstance(elem, StructType):
        elem_min = src.resolve(elem.cls).min_size
    else:
        elem_min = _min_size(src, elem, False)
    _dec_length(src, ind, "n", "int32")
    src.emit(ind, "if n < 0:")
    _dec_null(src, ind + 1, var, f)
    # Kafka's rule: refuse a count the remaining bytes cannot hold, so a hostile
    # count can never make the decoder loop or allocate for long.
    msg = f"{src.where(f)}: " + "{n} elements cannot fit in the {len(mv) - pos} bytes left"
    src.emit(ind, f"elif n * {max(elem_min, 1)} > len(mv) - pos: raise _DE(f{msg!r})")
    src.emit(ind, "else:")
    ind += 1
    if isinstance(elem, Primitive) and elem.name in FIXED_CODES and elem.name != "uuid":
        code, size = FIXED_CODES[elem.name]
        src.emit(ind, f"{var} = _unpack_from('>%d{code}' % n, mv, pos); pos += n * {size}")
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


def _gen_decoder(src: _Source, absent: list[FieldPlan], regular: list[FieldPlan],
                 tagged: list[FieldPlan]) -> None:
    src.emit(0, "def dec(mv, pos):")
    kwargs = [f"{f.alias}={src.const(f.default, 'D')}" for f in absent
              if _shared_default(f.default)]
    for run in _fixed_runs(regular):
        if _is_fixed_run(run):
            s, size = _run_struct(src, run)
            names = [src.var("f") for _ in run]
            src.emit(1, f"({', '.join(names)},) = {s}.unpack_from(mv, pos); pos += {size}")
            for f, n in zip(run, names, strict=True):
                if f.spec.type.name == "uuid":  # type: ignore[union-attr]
                    src.emit(1, f"{n} = _UUID(bytes={n})")
                kwargs.append(f"{f.alias}={n}")
        else:
            n = src.var("f")
            _dec_value(src, 1, n, run[0])
            kwargs.append(f"{run[0].alias}={n}")
    if src.flexible:
        kwargs += _gen_tag_decoder(src, tagged)
    src.emit(1, f"return CLS({', '.join(kwargs)}), pos")
    src.ns["CLS"] = src.cls


def _gen_tag_decoder(src: _Source, tagged: list[FieldPlan]) -> list[str]:
    if not tagged:
        src.emit(1, "if mv[pos] == 0: pos += 1")
        src.emit(1, "else: pos = p.skip_tagged_fields(mv, pos)")
        return []
    kwargs = []
    names = []
    for f in tagged:
        n = src.var("f")
        src.emit(1, f"{n} = {src.const(f.default, 'D')}")
        kwargs.append(f"{f.alias}={n}")
        names.append(n)
    src.emit(1, "if mv[pos] == 0: pos += 1")  # no tagged field set: the common case
    src.emit(1, "else:")
    src.emit(2, "nt, pos = p.decode_unsigned_varint(mv, pos)")
    src.emit(2, "for _ in range(nt):")
    src.emit(3, "tag, pos = p.decode_unsigned_varint(mv, pos)")
    src.emit(3, "size, pos = p.decode_unsigned_varint(mv, pos)")
    src.emit(3, "tend = pos + size")
    src.emit(3, "if tend > len(mv): raise _DE(f'tagged field {tag} of {size} bytes runs past the end')")
    for i, (f, n) in enumerate(zip(tagged, names, strict=True)):
        src.emit(3, f"{'if' if i == 0 else 'elif'} tag == {f.tag}:")
        _dec_value(src, 4, n, f)
        msg = f"{src.where(f)}: tagged value size does not match its contents"
        src.emit(4, f"if pos != tend: raise _DE({msg!r})")
    src.emit(3, "pos = tend")
    return kwargs


def generate(cls: type, version: int, flexible: bool, resolve: Resolver) -> Compiled:
    """Generate, compile and return the encoder/decoder pair for one struct at one version."""
    absent, regular, tagged = plan_struct(cls, version, flexible)
    src = _Source(cls, version, flexible, resolve)
    _gen_encoder(src, absent, regular, tagged)
    _gen_decoder(src, absent, regular, tagged)
    text = "\n".join(src.lines) + "\n"
    flag = "flexible" if flexible else "classic"
    code = compile(text, f"<codec {cls.__qualname__} v{version} {flag}>", "exec")
    exec(code, src.ns)
    min_size = sum(_min_size(src, f.spec.type, f.nullable) for f in regular) + int(flexible)
    return Compiled(src.ns["enc"], src.ns["dec"], min_size, text)
