"""Generates the Python source of one encoder and one decoder per (struct, version, flexible).

The generated functions are straight-line code over the fields present at that
version: runs of fixed-size fields become one precompiled ``struct.Struct``,
everything else is a call to a small reader or writer from
``quorum.wire.primitives``.  ``quorum.wire.codec`` caches the result, so each
pair is generated and ``exec``-ed once per process.  Encoders are generated
here, decoders in ``quorum.wire.codegen_decode``, both over the field plans of
``quorum.wire.codegen_plan``.

Encoders have the signature ``enc(msg, w)`` and append byte chunks to the list
``w`` (values of BYTES/RECORDS fields are appended as they are, uncopied).
Decoders have the signature ``dec(mv, pos) -> (msg, pos)`` over a read-only
byte ``memoryview`` (or ``bytes``, when ``Compiled.views`` is False: then no
decoded value refers to the input).

Fast paths (``plain=False``, what the codec uses): arrays of fixed-size
elements whose count fits a table use precompiled structs (count byte included
on encode); one-byte varints of tag blocks are read inline; UUIDs come from
``uuid_from_bytes``; a struct whose attrs ``__init__`` only stores its slots is
built by storing them through the slot descriptors (``quorum.wire.fast_build``).
``plain=True`` generates the straightforward code the fast paths replace: every
value through its constructor and the primitives. Tests check the two agree,
bytes and objects, so the plain code is the reference for the fast one.
"""

from __future__ import annotations

import struct

from quorum.wire import primitives as p
from quorum.wire.codegen_decode import gen_decoder, has_views
from quorum.wire.codegen_plan import (
    BYTES_LIKE,
    FIXED_CODES,
    Compiled,
    EncodedArray,
    FieldPlan,
    Resolver,
    Source,
    fixed_runs,
    is_fixed_run,
    min_size,
    plan_struct,
    run_struct,
)
from quorum.wire.fast_build import ARRAY_TABLE_SIZE, array_structs
from quorum.wire.schema import ArrayType, Primitive, StructType

__all__ = ["FIXED_CODES", "Compiled", "FieldPlan", "Resolver", "generate", "plan_struct"]


def _enc_null_check(src: Source, ind: int, expr: str, f: FieldPlan) -> None:
    msg = f"{src.where(f)} is None but null is not allowed at this version"
    src.emit(ind, f"if {expr} is None: raise _EE({msg!r})")


def _enc_value(src: Source, ind: int, expr: str, f: FieldPlan, w: str) -> None:
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
        elif t.name in BYTES_LIKE:
            _enc_bytes(src, ind, expr, f, a)
        else:
            raise TypeError(f"{src.where(f)}: unknown wire type {t.name}")
    elif isinstance(t, StructType):
        enc = src.const(src.resolve(t.cls).encode, "E")
        if f.nullable:
            # the null marker: an int8 -1, or in a tagged field Kafka's unsigned varint 0
            null = "b'\\x00'" if f.tag is not None else "b'\\xff'"
            src.emit(ind, f"if {expr} is None: {a}({null})")
            src.emit(ind, f"else: {a}(b'\\x01'); {enc}({expr}, {w})")
        else:
            _enc_null_check(src, ind, expr, f)
            src.emit(ind, f"{enc}({expr}, {w})")
    else:
        _enc_array(src, ind, expr, f, w, a)


def _enc_length(src: Source, ind: int, length: str, a: str) -> None:
    """Append a length or count (compact: length + 1, one-byte varints from a table)."""
    if src.flexible:
        src.emit(ind, f"n = {length} + 1")
        src.emit(ind, f"{a}(_UV[n] if n < 128 else _uvb(n))")
    else:
        src.emit(ind, f"{a}(_I32.pack({length}))")


def _enc_bytes(src: Source, ind: int, expr: str, f: FieldPlan, a: str) -> None:
    """Append the length and the value itself: the value is not copied here."""
    if f.nullable:
        src.emit(ind, f"if {expr} is None: {a}({'p.NULL_COMPACT' if src.flexible else 'p.NULL_ARRAY'})")
        src.emit(ind, "else:")
        ind += 1
    src.emit(ind, f"if type({expr}) is not bytes: {expr} = _flat({expr})")
    _enc_length(src, ind, f"len({expr})", a)
    src.emit(ind, f"{a}({expr})")


def _enc_array(src: Source, ind: int, expr: str, f: FieldPlan, w: str, a: str) -> None:
    assert isinstance(f.spec.type, ArrayType)
    elem, flex = f.spec.type.element, src.flexible
    if f.nullable:
        src.emit(ind, f"if {expr} is None: {a}({'p.NULL_COMPACT' if flex else 'p.NULL_ARRAY'})")
        src.emit(ind, "else:")
        ind += 1
    else:
        _enc_null_check(src, ind, expr, f)
    if isinstance(elem, Primitive) and elem.name in FIXED_CODES and elem.name != "uuid":
        _enc_fixed_array(src, ind, expr, FIXED_CODES[elem.name][0], a)
        return
    _enc_length(src, ind, f"len({expr})", a)
    e = src.var("e")
    if isinstance(elem, StructType):
        enc = src.const(src.resolve(elem.cls).encode, "E")
        # elements encoded beforehand (in slices) go in as they are
        encoded = src.const(EncodedArray, "P")
        src.emit(ind, f"if type({expr}) is {encoded}: {w}.extend({expr}.chunks)")
        src.emit(ind, "else:")
        src.emit(ind + 1, f"for {e} in {expr}: {enc}({e}, {w})")
    elif elem.name == "uuid":
        src.emit(ind, f"{a}(b''.join([{e}.bytes for {e} in {expr}]))")
    elif elem.name == "string":
        fn = "compact_string_bytes" if flex else "string_bytes"
        src.emit(ind, f"for {e} in {expr}: {a}(p.{fn}({e}))")
    else:
        src.emit(ind, f"for {e} in {expr}: p.{'put_compact_bytes' if flex else 'put_bytes'}({w}, {e})")


def _enc_fixed_array(src: Source, ind: int, expr: str, code: str, a: str) -> None:
    """The count and the elements; unless plain, one precompiled struct for both."""
    generic = f"_pack('>%d{code}' % len({expr}), *{expr})"
    if src.plain:
        _enc_length(src, ind, f"len({expr})", a)
        src.emit(ind, f"{a}({generic})")
        return
    n = src.var("n")
    src.emit(ind, f"{n} = len({expr})")
    table = src.const(array_structs(code, "B" if src.flexible else "i"), "A")
    count = f"{n} + 1" if src.flexible else n
    src.emit(ind, f"if {n} < {ARRAY_TABLE_SIZE}: {a}({table}[{n}].pack({count}, *{expr}))")
    src.emit(ind, "else:")
    _enc_length(src, ind + 1, n, a)
    src.emit(ind + 1, f"{a}({generic})")


def _gen_encoder(src: Source, absent: list[FieldPlan], regular: list[FieldPlan],
                 tagged: list[FieldPlan]) -> None:
    src.emit(0, "def enc(msg, w):")
    src.emit(1, "a = w.append")
    for f in absent:
        if not f.spec.ignorable:
            d = src.const(f.default, "D")
            msg = f"{src.where(f)}: the field is not in this version and must keep its default"
            # `not ==`: attrs' generated __eq__ is much cheaper than its generic __ne__;
            # the default object itself (the usual case) needs no comparison
            same = f"msg.{f.name} == {d}" if src.plain else f"msg.{f.name} is {d} or msg.{f.name} == {d}"
            src.emit(1, f"if not ({same}): raise _EE({msg!r} + ', got ' + repr(msg.{f.name})[:80])")
    for run in fixed_runs(regular):
        if is_fixed_run(run):
            s, _ = run_struct(src, run)
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


def _gen_tag_encoder(src: Source, tagged: list[FieldPlan]) -> None:
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
        t = f.spec.type
        if not src.plain and isinstance(t, Primitive) and t.name in FIXED_CODES:
            # a fixed-size value: tag and size are one constant
            head = p.unsigned_varint_bytes(f.tag or 0) + p.unsigned_varint_bytes(FIXED_CODES[t.name][1])
            src.emit(2, f"a({src.const(head, 'H')})")
            _enc_value(src, 2, v, f, "w")
            continue
        src.emit(2, "ws = []")
        _enc_value(src, 2, v, f, "ws")
        if src.plain:
            src.emit(2, f"a(_uvb({f.tag})); a(_uvb(sum(map(len, ws))))")
        else:
            src.emit(2, f"a({src.const(p.unsigned_varint_bytes(f.tag or 0), 'H')}); "
                        "size = sum(map(len, ws)); a(_UV[size] if size < 128 else _uvb(size))")
        src.emit(2, "w.extend(ws)")


def generate(
    cls: type, version: int, flexible: bool, resolve: Resolver, *, plain: bool = False
) -> Compiled:
    """Generate, compile and return the encoder/decoder pair for one struct at one version.

    ``resolve`` gives the pairs of nested structs (generated alike: plain or not).
    """
    absent, regular, tagged = plan_struct(cls, version, flexible)
    src = Source(cls, version, flexible, resolve, plain)
    _gen_encoder(src, absent, regular, tagged)
    gen_decoder(src, absent, regular, tagged)
    text = "\n".join(src.lines) + "\n"
    flag = "flexible" if flexible else "classic"
    code = compile(text, f"<codec {cls.__qualname__} v{version} {flag}>", "exec")
    exec(code, src.ns)
    least = sum(min_size(src, f.spec.type, f.nullable) for f in regular) + int(flexible)
    views = any(has_views(src, f.spec.type) for f in (*regular, *tagged))
    return Compiled(src.ns["enc"], src.ns["dec"], least, text, views)
