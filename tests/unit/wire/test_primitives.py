"""Kafka's primitive wire types against known byte vectors, and their decode failures."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quorum.wire import primitives as p
from quorum.wire.errors import WireDecodeError, WireEncodeError

UNSIGNED_VARINTS = [
    (0, "00"),
    (1, "01"),
    (127, "7f"),
    (128, "8001"),
    (300, "ac02"),
    (16383, "ff7f"),
    (16384, "808001"),
    (2**31 - 1, "ffffffff07"),
    (2**32 - 1, "ffffffff0f"),
]
ZIGZAG_VARINTS = [
    (0, "00"),
    (-1, "01"),
    (1, "02"),
    (-2, "03"),
    (63, "7e"),
    (-64, "7f"),
    (64, "8001"),
    (2**31 - 1, "feffffff0f"),
    (-(2**31), "ffffffff0f"),
]
ZIGZAG_VARLONGS = [
    (0, "00"),
    (-1, "01"),
    (300, "d804"),
    (2**63 - 1, "feffffffffffffffff01"),
    (-(2**63), "ffffffffffffffffff01"),
]


@pytest.mark.parametrize(("value", "hex_"), UNSIGNED_VARINTS)
def test_unsigned_varint_matches_kafka_bytes(value: int, hex_: str) -> None:
    out = bytearray()
    p.encode_unsigned_varint(value, out)
    assert out.hex() == hex_
    assert p.unsigned_varint_bytes(value).hex() == hex_
    assert p.decode_unsigned_varint(memoryview(bytes.fromhex(hex_ + "aa")), 0) == (value, len(out))
    assert p.size_of_unsigned_varint(value) == len(out)


@pytest.mark.parametrize(("value", "hex_"), ZIGZAG_VARINTS)
def test_zigzag_varint_matches_kafka_bytes(value: int, hex_: str) -> None:
    out = bytearray(b"\x99")
    p.encode_varint(value, out)
    assert out[1:].hex() == hex_
    assert p.decode_varint(out, 1) == (value, len(out))
    assert p.size_of_varint(value) == len(out) - 1


@pytest.mark.parametrize(("value", "hex_"), ZIGZAG_VARLONGS)
def test_zigzag_varlong_matches_kafka_bytes(value: int, hex_: str) -> None:
    out = bytearray()
    p.encode_varlong(value, out)
    assert out.hex() == hex_
    assert p.decode_varlong(memoryview(out), 0) == (value, len(out))
    assert p.size_of_varlong(value) == len(out)


@pytest.mark.parametrize(
    ("decoder", "hex_", "words"),
    [
        (p.decode_unsigned_varint, "", "past the end"),
        (p.decode_unsigned_varint, "8080", "past the end"),
        (p.decode_unsigned_varint, "ffffffffff01", "longer than 5"),
        (p.decode_unsigned_varint, "ffffffff1f", "32 bits"),
        (p.decode_varint, "ffffffffff01", "longer than 5"),
        (p.decode_varlong, "ffffffffffffffffffff01", "longer than 10"),
        (p.decode_varlong, "ffffffffffffffffff7f", "64 bits"),
    ],
)
def test_bad_varints_raise_wire_decode_errors(decoder, hex_: str, words: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(WireDecodeError, match=words):
        decoder(bytes.fromhex(hex_), 0)


def test_varint_encoders_refuse_values_outside_their_width() -> None:
    with pytest.raises(WireEncodeError):
        p.encode_varint(2**31, bytearray())
    with pytest.raises(WireEncodeError):
        p.encode_varlong(-(2**63) - 1, bytearray())
    with pytest.raises(WireEncodeError):
        p.unsigned_varint_bytes(-1)


@settings(max_examples=200)
@given(st.integers(-(2**63), 2**63 - 1), st.integers(0, 2**32 - 1))
def test_varints_round_trip_and_size_of_agrees(value: int, unsigned: int) -> None:
    out = bytearray()
    p.encode_varlong(value, out)
    assert p.decode_varlong(out, 0) == (value, p.size_of_varlong(value))
    out = bytearray()
    p.encode_unsigned_varint(unsigned, out)
    assert p.decode_unsigned_varint(out, 0) == (unsigned, p.size_of_unsigned_varint(unsigned))


def test_strings_match_kafka_bytes() -> None:
    assert p.string_bytes("abc").hex() == "0003616263"
    assert p.nullable_string_bytes(None).hex() == "ffff"
    assert p.compact_string_bytes("abc").hex() == "04616263"
    assert p.nullable_compact_string_bytes(None).hex() == "00"
    assert p.compact_string_bytes("é").hex() == "03c3a9"
    assert p.read_string(bytes.fromhex("0003616263"), 0) == ("abc", 5)
    assert p.read_compact_string(bytes.fromhex("04616263"), 0) == ("abc", 4)
    assert p.read_nullable_string(bytes.fromhex("ffff"), 0) == (None, 2)
    assert p.read_nullable_compact_string(b"\x00", 0) == (None, 1)


@pytest.mark.parametrize(
    ("reader", "hex_", "words"),
    [
        (p.read_string, "ffff", "null"),
        (p.read_compact_string, "00", "null"),
        (p.read_string, "fffe", "null"),
        (p.read_nullable_string, "000561", "needs 5 bytes"),
        (p.read_nullable_string, "00", "needs 2 bytes"),
        (p.read_nullable_compact_string, "0561", "needs 4 bytes"),
        (p.read_bytes, "fffffffe", "null"),
        (p.read_nullable_bytes, "0000000a00", "needs 10 bytes"),
        (p.read_bytes, "ffffffff", "null"),
        (p.read_compact_bytes, "00", "null"),
        (p.read_uuid, "00" * 15, "needs 16 bytes"),
    ],
)
def test_bad_strings_and_bytes_raise_wire_decode_errors(reader, hex_: str, words: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(WireDecodeError, match=words):
        reader(memoryview(bytes.fromhex(hex_)), 0)


def test_string_longer_than_int16_cannot_be_encoded_non_compact() -> None:
    with pytest.raises(WireEncodeError, match=r"int16"):
        p.string_bytes("x" * 40000)
    assert len(p.compact_string_bytes("x" * 40000)) == 40000 + 3


def test_bytes_decode_as_zero_copy_slices_of_a_memoryview() -> None:
    frame = bytes.fromhex("00000003616263") + b"\x04xyz"
    view = memoryview(frame)
    value, pos = p.read_bytes(view, 0)
    assert isinstance(value, memoryview)
    assert value.obj is frame
    assert bytes(value) == b"abc"
    compact, end = p.read_compact_bytes(view, pos)
    assert (bytes(compact), end) == (b"xyz", len(frame))


def test_put_bytes_appends_the_value_itself_without_copying() -> None:
    value = bytearray(b"payload")
    parts: list[p.Buffer] = []
    p.put_bytes(parts, value)
    p.put_compact_bytes(parts, None)
    p.put_bytes(parts, None)
    assert parts[1] is value
    assert b"".join(parts).hex() == "00000007" + b"payload".hex() + "00" + "ffffffff"


def test_array_lengths_and_null_arrays() -> None:
    assert p.array_length_bytes(2).hex() == "00000002"
    assert p.compact_array_length_bytes(2).hex() == "03"
    assert p.read_array_length(p.NULL_ARRAY, 0) == (-1, 4)
    assert p.read_compact_array_length(p.NULL_COMPACT, 0) == (-1, 1)
    assert p.read_compact_array_length(bytes.fromhex("03aabb"), 0) == (2, 1)


def test_array_count_larger_than_the_remaining_bytes_is_refused() -> None:
    with pytest.raises(WireDecodeError, match=r"claims 3 elements"):
        p.read_compact_array_length(bytes.fromhex("04aabb"), 0)
    with pytest.raises(WireDecodeError, match=r"claims 2 elements"):
        p.read_array_length(bytes.fromhex("00000002") + b"\x00" * 7, 0, 4)


def test_any_negative_length_is_null_as_in_kafkas_readers() -> None:
    # Kafka's generated readers test `length < 0`, not `length == -1`
    assert p.read_nullable_string(bytes.fromhex("fffe"), 0) == (None, 2)
    assert p.read_nullable_string(bytes.fromhex("8000"), 0) == (None, 2)
    assert p.read_nullable_bytes(bytes.fromhex("fffffffe"), 0) == (None, 4)
    assert p.read_array_length(bytes.fromhex("fffffffb"), 0) == (-1, 4)
    assert p.read_array_length(bytes.fromhex("80000000"), 0) == (-1, 4)


def test_bad_utf8_reads_as_replacement_characters_as_java_reads_it() -> None:
    # c3 28: a lead byte without its continuation; Java's new String(bytes, UTF_8)
    # gives U+FFFD for it, and Kafka serves the request
    assert p.read_nullable_string(bytes.fromhex("0002c328"), 0) == ("\ufffd(", 4)
    assert p.read_compact_string(bytes.fromhex("03c328"), 0) == ("\ufffd(", 3)
    assert p.read_string(bytes.fromhex("0001ff"), 0) == ("\ufffd", 3)


def test_tag_blocks_are_written_in_tag_order_and_read_back() -> None:
    block = p.encode_tagged_fields({1: b"x", 0: b"ab"})
    assert block.hex() == "02" + "0002" + "6162" + "0101" + "78"
    fields, end = p.decode_tagged_fields(memoryview(block + b"\xee"), 0)
    assert {tag: bytes(v) for tag, v in fields.items()} == {0: b"ab", 1: b"x"}
    assert end == len(block)
    assert p.skip_tagged_fields(block, 0) == len(block)
    assert p.encode_tagged_fields({}) == p.EMPTY_TAGGED_FIELDS


def test_tag_block_errors_are_wire_decode_errors() -> None:
    with pytest.raises(WireDecodeError, match=r"twice"):
        p.decode_tagged_fields(bytes.fromhex("02" "0001aa" "0001bb"), 0)
    with pytest.raises(WireDecodeError, match=r"needs 5 bytes"):
        p.skip_tagged_fields(bytes.fromhex("01" "0705aabb"), 0)
    with pytest.raises(WireDecodeError, match=r"past the end"):
        p.decode_tagged_fields(bytes.fromhex("02" "0001aa"), 0)


def test_uuid_reads_sixteen_bytes() -> None:
    u = uuid.UUID("01234567-89ab-cdef-0123-456789abcdef")
    assert p.read_uuid(b"\x00" + u.bytes, 1) == (u, 17)
    assert uuid.UUID(int=0) == p.ZERO_UUID
