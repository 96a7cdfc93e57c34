"""The codec compiler on small message classes declared here: layouts, versions, nulls, tags."""

from __future__ import annotations

import re
import uuid

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quorum.wire import codec
from quorum.wire.errors import WireDecodeError, WireEncodeError
from quorum.wire.primitives import Buffer
from quorum.wire.schema import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    UINT16,
    UINT32,
    UUID,
    array,
    field,
    message,
    struct,
)
from tests.unit.wire.strategies import message_strategy

ZERO = uuid.UUID(int=0)


@message(api_key=None, versions=(0, 1), flexible="1+")
@attrs.frozen(kw_only=True)
class Tiny:
    id: int = field(INT16, default=0)
    name: str | None = field(STRING, nullable="0+", default=None)
    items: tuple[int, ...] = field(array(INT32), default=())
    extra: int = field(INT32, versions="1+", tag=0, tagged="1+", default=0)


@message(api_key=None, versions=(0, 0), flexible="0+")
@attrs.frozen
class TagOrder:
    b: int = field(INT8, tag=3, tagged="0+", default=0)
    a: int = field(INT8, tag=1, tagged="0+", default=0)


@attrs.frozen(kw_only=True)
class Leaf:
    id: int = field(INT32, default=0)
    label: str | None = field(STRING, nullable="1+", default="")


@attrs.frozen(kw_only=True)
class Node:
    name: str = field(STRING, default="")
    weight: int = field(UINT16, versions="1+", default=0)
    leaves: tuple[Leaf, ...] = field(array(Leaf), default=())
    payload: Buffer | None = field(BYTES, versions="2+", nullable="2+", default=None)


@message(api_key=None, versions=(0, 3), flexible="2+")
@attrs.frozen(kw_only=True)
class Sample:
    a8: int = field(INT8, default=0)
    a16: int = field(INT16, default=0)
    a32: int = field(INT32, default=0)
    a64: int = field(INT64, default=0)
    flag: bool = field(BOOL, default=False)
    ratio: float = field(FLOAT64, versions="1+", default=0.0)
    ident: uuid.UUID = field(UUID, versions="1+", default=ZERO)
    u32: int = field(UINT32, versions="1+", default=0)
    name: str = field(STRING, default="")
    note: str | None = field(STRING, versions="1+", nullable="1+", default=None)
    ids: tuple[int, ...] = field(array(INT32), default=())
    names: tuple[str, ...] | None = field(array(STRING), nullable="1+", default=())
    nodes: tuple[Node, ...] = field(array(Node), default=())
    old_only: int = field(INT32, versions="0", default=-1)
    dropped: int = field(INT64, versions="0-1", ignorable=True, default=-1)
    records: Buffer | None = field(RECORDS, nullable="0+", default=None)
    head: Leaf | None = field(struct(Leaf), versions="3+", nullable="3+", factory=Leaf)
    uuids: tuple[uuid.UUID, ...] = field(array(UUID), versions="3+", default=())
    blobs: tuple[Buffer, ...] = field(array(BYTES), versions="3+", default=())
    tag_count: int = field(INT32, versions="2+", tag=0, tagged="2+", default=-1)
    tag_name: str | None = field(STRING, versions="2+", nullable="2+", tag=5, tagged="2+",
                                 default=None)
    tag_leaves: tuple[Leaf, ...] = field(array(Leaf), versions="3+", tag=1, tagged="3+",
                                         default=())


ALL_MESSAGES = [(Tiny, v) for v in (0, 1)] + [(TagOrder, 0)] + [(Sample, v) for v in range(4)]


# -- layouts ------------------------------------------------------------------


def test_non_flexible_version_uses_int16_strings_and_int32_array_lengths() -> None:
    msg = Tiny(id=1, name="ab", items=(7,))
    assert codec.encode(msg, 0).hex() == "0001" "0002" "6162" "00000001" "00000007"


def test_flexible_version_uses_compact_lengths_and_ends_with_a_tag_block() -> None:
    msg = Tiny(id=1, name="ab", items=(7,))
    assert codec.encode(msg, 1).hex() == "0001" "03" "6162" "02" "00000007" "00"


def test_null_string_and_empty_array_layouts() -> None:
    assert codec.encode(Tiny(), 0).hex() == "0000" "ffff" "00000000"
    assert codec.encode(Tiny(), 1).hex() == "0000" "00" "01" "00"


def test_tagged_field_is_written_only_when_it_differs_from_its_default() -> None:
    assert codec.encode(Tiny(extra=0), 1).endswith(b"\x00")
    encoded = codec.encode(Tiny(extra=5), 1)
    assert encoded.hex().endswith("01" "00" "04" "00000005")
    assert codec.decode(Tiny, 1, encoded) == Tiny(extra=5)


def test_tagged_fields_are_written_in_tag_order() -> None:
    assert codec.encode(TagOrder(b=2, a=1), 0).hex() == "02" "010101" "030102"
    assert codec.encode(TagOrder(b=2), 0).hex() == "01" "030102"


def test_unknown_tags_are_skipped_on_decode() -> None:
    body = bytes.fromhex("0001" "03" "6162" "02" "00000007")
    tags = bytes.fromhex("03" "00" "04" "00000005" "09" "02" "aabb" "7f" "00")
    assert codec.decode(Tiny, 1, body + tags) == Tiny(id=1, name="ab", items=(7,), extra=5)


def test_tagged_value_whose_size_disagrees_with_its_contents_is_refused() -> None:
    body = bytes.fromhex("0001" "03" "6162" "02" "00000007")
    with pytest.raises(WireDecodeError, match=r"Tiny.extra"):
        codec.decode(Tiny, 1, body + bytes.fromhex("01" "00" "05" "0000000500"))


def test_nullable_struct_uses_a_presence_byte() -> None:
    with_head = codec.encode(Sample(head=Leaf(id=9, label=None)), 3)
    without = codec.encode(Sample(head=None), 3)
    assert len(with_head) - len(without) == 4 + 1 + 1  # id, null compact label, tag block
    assert codec.decode(Sample, 3, with_head).head == Leaf(id=9, label=None)
    assert codec.decode(Sample, 3, without).head is None


def test_runs_of_fixed_size_fields_share_one_precompiled_struct() -> None:
    source = codec.codec_source(Sample, 1)
    decoder = source[source.index("def dec") :]
    # a8, a16, a32, a64, flag, ratio, ident, u32: one unpack for eight fields
    assert re.search(r"\((\w+, ){7}\w+,\) = S\d+\.unpack_from", decoder)


# -- versions and nulls -------------------------------------------------------


def test_field_outside_its_versions_must_keep_its_default() -> None:
    assert codec.decode(Sample, 0, codec.encode(Sample(old_only=4), 0)).old_only == 4
    with pytest.raises(WireEncodeError, match=r"Sample.old_only v1"):
        codec.encode(Sample(old_only=4), 1)
    with pytest.raises(WireEncodeError, match=r"Node.weight v0"):
        codec.encode(Sample(nodes=(Node(weight=3),)), 0)


def test_ignorable_field_outside_its_versions_is_silently_dropped() -> None:
    encoded = codec.encode(Sample(dropped=77), 2)
    assert codec.decode(Sample, 2, encoded).dropped == -1
    assert codec.decode(Sample, 1, codec.encode(Sample(dropped=77), 1)).dropped == 77


def test_null_is_encoded_only_in_nullable_versions() -> None:
    assert codec.decode(Sample, 1, codec.encode(Sample(names=None), 1)).names is None
    with pytest.raises(WireEncodeError, match=r"Sample.names v0 is None"):
        codec.encode(Sample(names=None), 0)
    with pytest.raises(WireEncodeError, match=r"Sample.name v2 is None"):
        codec.encode(Sample(name=None), 2)  # type: ignore[arg-type]
    with pytest.raises(WireEncodeError, match=r"Leaf.label v0 is None"):
        codec.encode(Sample(nodes=(Node(leaves=(Leaf(label=None),)),)), 0)


def test_null_where_the_version_forbids_it_is_a_decode_error() -> None:
    # Tiny v0 with a null array (-1) where items is not nullable
    with pytest.raises(WireDecodeError, match=r"Tiny.items v0: null where null is not allowed"):
        codec.decode(Tiny, 0, bytes.fromhex("0001" "ffff" "ffffffff"))
    encoded = bytearray(codec.encode(Sample(name="x"), 0))
    encoded[16:18] = b"\xff\xff"  # the int16 length of name, after 16 bytes of fixed fields
    with pytest.raises(WireDecodeError, match=r"Sample.name v0: null"):
        codec.decode(Sample, 0, bytes(encoded))


def test_versions_outside_the_message_range_are_refused_both_ways() -> None:
    with pytest.raises(WireEncodeError, match=r"versions 0..1, not 2"):
        codec.encode(Tiny(), 2)
    with pytest.raises(WireDecodeError, match=r"versions 0..3, not -1"):
        codec.decode(Sample, -1, b"")


def test_tagged_field_in_a_non_flexible_version_is_a_declaration_error() -> None:
    @message(api_key=None, versions=(0, 0), flexible="none")
    @attrs.frozen
    class Broken:
        x: int = field(INT32, tag=0, tagged="0+", default=0)

    with pytest.raises(TypeError, match=r"not flexible"):
        codec.encode(Broken(), 0)


# -- buffers, copies, equality --------------------------------------------------


def test_trailing_bytes_are_refused_but_decode_from_returns_the_end() -> None:
    encoded = codec.encode(Tiny(id=3), 1)
    with pytest.raises(WireDecodeError, match=r"2 unexpected bytes"):
        codec.decode(Tiny, 1, encoded + b"\x01\x02")
    msg, end = codec.decode_from(Tiny, 1, b"\xaa" + encoded + b"\x01\x02", 1)
    assert (msg, end) == (Tiny(id=3), 1 + len(encoded))


def test_every_truncation_of_a_valid_message_is_a_wire_decode_error() -> None:
    msg = Sample(name="n", note="x", ids=(1, 2), nodes=(Node(leaves=(Leaf(id=1),)),),
                 records=b"rec", tag_count=4, tag_leaves=(Leaf(),), uuids=(ZERO,), blobs=(b"b",))
    encoded = codec.encode(msg, 3)
    for cut in range(len(encoded)):
        with pytest.raises(WireDecodeError):
            codec.decode(Sample, 3, encoded[:cut])


def test_records_decode_as_zero_copy_read_only_views_of_the_input() -> None:
    frame = codec.encode(Sample(records=b"x" * 100, nodes=(Node(payload=b"pp"),)), 2)
    decoded = codec.decode(Sample, 2, frame)
    assert isinstance(decoded.records, memoryview)
    assert decoded.records.obj is frame
    assert decoded.records.readonly
    assert decoded.nodes[0].payload.obj is frame  # type: ignore[union-attr]
    from_bytearray = codec.decode(Sample, 2, bytearray(frame))
    assert from_bytearray.records.readonly  # type: ignore[union-attr]


def test_decoded_message_equals_and_hashes_like_the_original() -> None:
    original = Sample(records=b"batch", name="t", ids=(1,))
    decoded = codec.decode(Sample, 1, codec.encode(original, 1))
    assert decoded == original
    assert hash(decoded) == hash(original)
    assert decoded != Sample(records=b"other", name="t", ids=(1,))


def test_bytes_values_may_be_bytes_bytearray_or_memoryview() -> None:
    as_bytes = codec.encode(Sample(records=b"abcd"), 2)
    assert codec.encode(Sample(records=bytearray(b"abcd")), 2) == as_bytes
    assert codec.encode(Sample(records=memoryview(b"zabcd")[1:]), 2) == as_bytes
    wide = memoryview(bytearray(b"abcd")).cast("I")  # one 4-byte item: still 4 bytes
    assert codec.encode(Sample(records=wide), 2) == as_bytes


def test_encode_into_appends_to_an_existing_buffer() -> None:
    out = bytearray(b"head")
    codec.encode_into(Tiny(id=2), 1, out)
    assert bytes(out) == b"head" + codec.encode(Tiny(id=2), 1)


@pytest.mark.parametrize(
    ("msg", "words"),
    [
        (Sample(a16=40000), r"Sample\.a16: int16 needs an int in -32768\.\.32767"),
        (Sample(name=5), r"Sample\.name: string needs a str"),  # type: ignore[arg-type]
        (Sample(nodes=(Node(weight=-1),)), r"Sample\.nodes\[0\]\.weight: uint16"),
        (Sample(ident="x"), r"Sample\.ident: uuid needs a uuid\.UUID"),  # type: ignore[arg-type]
        (Sample(records="text"), r"Sample\.records: records needs bytes"),  # type: ignore[arg-type]
    ],
)
def test_values_that_do_not_fit_their_type_name_the_field(msg: Sample, words: str) -> None:
    with pytest.raises(WireEncodeError, match=words):
        codec.encode(msg, 3)


def test_each_class_and_version_is_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    @message(api_key=None, versions=(0, 1), flexible="1+")
    @attrs.frozen
    class Fresh:
        leaves: tuple[Leaf, ...] = field(array(Leaf), default=())

    calls: list[tuple[str, int, bool]] = []
    real = codec.generate  # type: ignore[attr-defined]

    def counting(cls, version, flexible, resolve):  # type: ignore[no-untyped-def]
        calls.append((cls.__name__, version, flexible))
        return real(cls, version, flexible, resolve)

    monkeypatch.setattr(codec, "generate", counting)
    for _ in range(3):
        codec.decode(Fresh, 1, codec.encode(Fresh(leaves=(Leaf(),)), 1))
    codec.encode(Fresh(), 0)
    assert sorted(calls) == [("Fresh", 0, False), ("Fresh", 1, True), ("Leaf", 1, True)]


# -- round trips ----------------------------------------------------------------


@pytest.mark.parametrize(("cls", "version"), ALL_MESSAGES)
@settings(max_examples=60)
@given(data=st.data())
def test_random_valid_messages_round_trip(cls: type, version: int, data: st.DataObject) -> None:
    msg = data.draw(message_strategy(cls, version))
    encoded = codec.encode(msg, version)
    assert codec.decode(cls, version, encoded) == msg
    assert codec.encode(codec.decode(cls, version, encoded), version) == encoded
