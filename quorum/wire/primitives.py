"""Kafka's primitive wire types: fixed-size integers, varints, strings, bytes, arrays, tags.

Readers take ``(buf, pos)`` and return ``(value, new_pos)``; pass a
``memoryview`` so that byte fields come back as zero-copy slices.  Writers
either return ``bytes`` (small values) or append to a ``bytearray``.

Every failure to read raises :class:`WireDecodeError` with the offset and the
reason: a short buffer, null where null is not allowed, a varint longer than
5 (or 10) bytes, or a count larger than the bytes that remain.  Lengths are
checked explicitly because slicing a memoryview past its end silently
truncates.

Readers accept what Kafka's generated readers accept: any negative int16 or
int32 length means null (Kafka tests ``length < 0``, not ``== -1``), and
UTF-8 that does not decode is read with U+FFFD in place of the bad bytes, as
Java's ``new String(bytes, UTF_8)`` does.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Mapping
from typing import Final, cast

from quorum.wire.errors import WireDecodeError, WireEncodeError
from quorum.wire.file_region import FileRegion

__all__ = [
    "EMPTY_TAGGED_FIELDS",
    "FLOAT64_STRUCT",
    "INT8_STRUCT",
    "INT16_STRUCT",
    "INT32_STRUCT",
    "INT64_STRUCT",
    "NULL_ARRAY",
    "NULL_COMPACT",
    "SMALL_UVARINTS",
    "UINT16_STRUCT",
    "UINT32_STRUCT",
    "ZERO_UUID",
    "Buffer",
    "array_length_bytes",
    "compact_array_length_bytes",
    "compact_string_bytes",
    "decode_tagged_fields",
    "decode_unsigned_varint",
    "decode_varint",
    "decode_varlong",
    "encode_tagged_fields",
    "encode_unsigned_varint",
    "encode_varint",
    "encode_varlong",
    "flat_bytes",
    "nullable_compact_string_bytes",
    "nullable_string_bytes",
    "put_bytes",
    "put_compact_bytes",
    "read_array_length",
    "read_bytes",
    "read_compact_array_length",
    "read_compact_bytes",
    "read_compact_string",
    "read_nullable_bytes",
    "read_nullable_compact_bytes",
    "read_nullable_compact_string",
    "read_nullable_string",
    "read_string",
    "read_uuid",
    "size_of_unsigned_varint",
    "size_of_varint",
    "size_of_varlong",
    "skip_tagged_fields",
    "string_bytes",
    "unsigned_varint_bytes",
]

Buffer = bytes | bytearray | memoryview

INT8_STRUCT: Final = struct.Struct(">b")
INT16_STRUCT: Final = struct.Struct(">h")
INT32_STRUCT: Final = struct.Struct(">i")
INT64_STRUCT: Final = struct.Struct(">q")
UINT16_STRUCT: Final = struct.Struct(">H")
UINT32_STRUCT: Final = struct.Struct(">I")
FLOAT64_STRUCT: Final = struct.Struct(">d")

ZERO_UUID: Final = uuid.UUID(int=0)
NULL_ARRAY: Final = b"\xff\xff\xff\xff"
NULL_COMPACT: Final = b"\x00"
EMPTY_TAGGED_FIELDS: Final = b"\x00"
_NULL_STRING: Final = b"\xff\xff"
_INT16_MAX: Final = 0x7FFF
_INT32_MAX: Final = 0x7FFFFFFF
_UINT32_MAX: Final = 0xFFFFFFFF
_UINT64_MAX: Final = 0xFFFFFFFFFFFFFFFF


def _short(what: str, pos: int, need: int, buf: Buffer) -> WireDecodeError:
    return WireDecodeError(
        f"{what} at offset {pos} needs {need} bytes but the buffer ends at {len(buf)}"
    )


# -- varints ---------------------------------------------------------------


def _read_raw_varint(buf: Buffer, pos: int, max_bytes: int, what: str) -> tuple[int, int]:
    result = 0
    shift = 0
    end = len(buf)
    start = pos
    while True:
        if pos >= end:
            raise WireDecodeError(f"{what} at offset {start} runs past the end of the buffer")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if pos - start >= max_bytes:
            raise WireDecodeError(f"{what} at offset {start} is longer than {max_bytes} bytes")


def decode_unsigned_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """An unsigned 32-bit varint (at most 5 bytes)."""
    # Unrolled: lengths and counts of 128 bytes or more are common (record sets).
    try:
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
        value = b & 0x7F
        b = buf[pos + 1]
        if b < 0x80:
            return value | b << 7, pos + 2
        value |= (b & 0x7F) << 7
        b = buf[pos + 2]
        if b < 0x80:
            return value | b << 14, pos + 3
        value |= (b & 0x7F) << 14
        b = buf[pos + 3]
        if b < 0x80:
            return value | b << 21, pos + 4
        value |= (b & 0x7F) << 21
        b = buf[pos + 4]
    except IndexError:
        raise WireDecodeError(
            f"unsigned varint at offset {pos} runs past the end of the buffer"
        ) from None
    if b >= 0x80:
        raise WireDecodeError(f"unsigned varint at offset {pos} is longer than 5 bytes")
    if b > 0x0F:
        raise WireDecodeError(f"unsigned varint at offset {pos} does not fit in 32 bits")
    return value | b << 28, pos + 5


def decode_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed 32-bit varint (at most 5 bytes), as in records."""
    raw, new_pos = _read_raw_varint(buf, pos, 5, "varint")
    if raw > _UINT32_MAX:
        raise WireDecodeError(f"varint at offset {pos} does not fit in 32 bits")
    return (raw >> 1) ^ -(raw & 1), new_pos


def decode_varlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed 64-bit varint (at most 10 bytes)."""
    raw, new_pos = _read_raw_varint(buf, pos, 10, "varlong")
    if raw > _UINT64_MAX:
        raise WireDecodeError(f"varlong at offset {pos} does not fit in 64 bits")
    return (raw >> 1) ^ -(raw & 1), new_pos


def _raw_varint_bytes(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# One-byte varints are by far the most common (lengths, counts, tags).
SMALL_UVARINTS: Final = tuple(bytes((i,)) for i in range(0x80))


def unsigned_varint_bytes(value: int) -> bytes:
    if 0 <= value < 0x80:
        return SMALL_UVARINTS[value]
    if value < 0 or value > _UINT32_MAX:
        raise WireEncodeError(f"unsigned varint {value} is outside 0..{_UINT32_MAX}")
    return _raw_varint_bytes(value)


def encode_unsigned_varint(value: int, out: bytearray) -> None:
    """Append ``value`` (0 <= value < 2**32) to ``out``."""
    out += unsigned_varint_bytes(value)


def encode_varint(value: int, out: bytearray) -> None:
    """Append a zigzag varint; ``value`` must fit in a signed 32-bit integer."""
    if not -0x80000000 <= value <= _INT32_MAX:
        raise WireEncodeError(f"varint {value} does not fit in 32 bits")
    out += _raw_varint_bytes(((value << 1) ^ (value >> 31)) & _UINT32_MAX)


def encode_varlong(value: int, out: bytearray) -> None:
    """Append a zigzag varlong; ``value`` must fit in a signed 64-bit integer."""
    if not -0x8000000000000000 <= value <= 0x7FFFFFFFFFFFFFFF:
        raise WireEncodeError(f"varlong {value} does not fit in 64 bits")
    out += _raw_varint_bytes(((value << 1) ^ (value >> 63)) & _UINT64_MAX)


def size_of_unsigned_varint(value: int) -> int:
    return max(1, (value.bit_length() + 6) // 7)


def size_of_varint(value: int) -> int:
    return size_of_unsigned_varint(((value << 1) ^ (value >> 31)) & _UINT32_MAX)


def size_of_varlong(value: int) -> int:
    return size_of_unsigned_varint(((value << 1) ^ (value >> 63)) & _UINT64_MAX)


# -- uuid --------------------------------------------------------------------


def read_uuid(buf: Buffer, pos: int) -> tuple[uuid.UUID, int]:
    end = pos + 16
    if end > len(buf):
        raise _short("uuid", pos, 16, buf)
    return uuid.UUID(bytes=bytes(buf[pos:end])), end


# -- strings -----------------------------------------------------------------


def _utf8(buf: Buffer, start: int, end: int) -> str:
    if end > len(buf):
        raise _short("string", start, end - start, buf)
    return str(buf[start:end], "utf-8", "replace")


def read_nullable_string(buf: Buffer, pos: int) -> tuple[str | None, int]:
    """int16 length (negative is null) then UTF-8."""
    if pos + 2 > len(buf):
        raise _short("string length", pos, 2, buf)
    (n,) = INT16_STRUCT.unpack_from(buf, pos)
    pos += 2
    if n < 0:
        return None, pos
    return _utf8(buf, pos, pos + n), pos + n


def read_nullable_compact_string(buf: Buffer, pos: int) -> tuple[str | None, int]:
    """unsigned varint length + 1 (0 is null) then UTF-8."""
    n, pos = decode_unsigned_varint(buf, pos)
    if n == 0:
        return None, pos
    n -= 1
    return _utf8(buf, pos, pos + n), pos + n


def _non_null(
    reader: Callable[[Buffer, int], tuple[str | None, int]], buf: Buffer, pos: int
) -> tuple[str, int]:
    value, new_pos = reader(buf, pos)
    if value is None:
        raise WireDecodeError(f"null string at offset {pos} where null is not allowed")
    return value, new_pos


def read_string(buf: Buffer, pos: int) -> tuple[str, int]:
    return _non_null(read_nullable_string, buf, pos)


def read_compact_string(buf: Buffer, pos: int) -> tuple[str, int]:
    return _non_null(read_nullable_compact_string, buf, pos)


def string_bytes(value: str) -> bytes:
    data = value.encode("utf-8")
    if len(data) > _INT16_MAX:
        raise WireEncodeError(f"string of {len(data)} UTF-8 bytes exceeds the int16 length limit")
    return INT16_STRUCT.pack(len(data)) + data


def nullable_string_bytes(value: str | None) -> bytes:
    return _NULL_STRING if value is None else string_bytes(value)


def compact_string_bytes(value: str) -> bytes:
    data = value.encode("utf-8")
    return unsigned_varint_bytes(len(data) + 1) + data


def nullable_compact_string_bytes(value: str | None) -> bytes:
    return NULL_COMPACT if value is None else compact_string_bytes(value)


# -- bytes -------------------------------------------------------------------


def _slice(buf: Buffer, start: int, n: int, what: str) -> memoryview | bytes:
    end = start + n
    if end > len(buf):
        raise _short(what, start, n, buf)
    return buf[start:end] if not isinstance(buf, bytearray) else bytes(buf[start:end])


def read_nullable_bytes(buf: Buffer, pos: int) -> tuple[memoryview | bytes | None, int]:
    """int32 length (negative is null) then raw bytes (a slice of ``buf``: zero copy for memoryview)."""
    if pos + 4 > len(buf):
        raise _short("bytes length", pos, 4, buf)
    (n,) = INT32_STRUCT.unpack_from(buf, pos)
    pos += 4
    if n < 0:
        return None, pos
    return _slice(buf, pos, n, "bytes"), pos + n


def read_nullable_compact_bytes(buf: Buffer, pos: int) -> tuple[memoryview | bytes | None, int]:
    n, pos = decode_unsigned_varint(buf, pos)
    if n == 0:
        return None, pos
    return _slice(buf, pos, n - 1, "bytes"), pos + n - 1


def read_bytes(buf: Buffer, pos: int) -> tuple[memoryview | bytes, int]:
    value, new_pos = read_nullable_bytes(buf, pos)
    if value is None:
        raise WireDecodeError(f"null bytes at offset {pos} where null is not allowed")
    return value, new_pos


def read_compact_bytes(buf: Buffer, pos: int) -> tuple[memoryview | bytes, int]:
    value, new_pos = read_nullable_compact_bytes(buf, pos)
    if value is None:
        raise WireDecodeError(f"null bytes at offset {pos} where null is not allowed")
    return value, new_pos


def flat_bytes(value: Buffer) -> Buffer:
    """``value`` as a buffer whose len() is its byte count (1-D unsigned-byte memoryviews pass)."""
    if type(value) is bytes:
        return value
    if isinstance(value, memoryview):
        return value if value.format == "B" and value.ndim == 1 else value.tobytes()
    if isinstance(value, bytes | bytearray):
        return value
    if isinstance(value, FileRegion):
        # records sent from their file (quorum.wire.file_region): an encoded part whose
        # len() is its byte count, which only the join and the send ever read
        return cast(Buffer, value)
    raise TypeError(f"expected bytes, bytearray or memoryview, got {type(value).__name__}")


def put_bytes(parts: list[Buffer], value: Buffer | None) -> None:
    """Append an int32 length (-1 for None) and the value itself, without copying it."""
    if value is None:
        parts.append(NULL_ARRAY)
        return
    value = flat_bytes(value)
    parts.append(INT32_STRUCT.pack(len(value)))
    parts.append(value)


def put_compact_bytes(parts: list[Buffer], value: Buffer | None) -> None:
    if value is None:
        parts.append(NULL_COMPACT)
        return
    value = flat_bytes(value)
    parts.append(unsigned_varint_bytes(len(value) + 1))
    parts.append(value)


# -- arrays ------------------------------------------------------------------


def _check_count(buf: Buffer, pos: int, count: int, min_element_bytes: int) -> None:
    # Kafka's rule: refuse a count the remaining bytes cannot possibly hold, so
    # a hostile count can never make the decoder loop or allocate for long.
    if count * max(min_element_bytes, 1) > len(buf) - pos:
        raise WireDecodeError(
            f"array at offset {pos} claims {count} elements but only "
            f"{len(buf) - pos} bytes remain"
        )


def read_array_length(buf: Buffer, pos: int, min_element_bytes: int = 1) -> tuple[int, int]:
    """int32 element count; any negative count (null) is returned as -1."""
    if pos + 4 > len(buf):
        raise _short("array length", pos, 4, buf)
    (n,) = INT32_STRUCT.unpack_from(buf, pos)
    pos += 4
    if n < 0:
        return -1, pos
    _check_count(buf, pos, n, min_element_bytes)
    return n, pos


def read_compact_array_length(
    buf: Buffer, pos: int, min_element_bytes: int = 1
) -> tuple[int, int]:
    """unsigned varint count + 1; 0 (null) is returned as -1."""
    n, pos = decode_unsigned_varint(buf, pos)
    n -= 1
    if n >= 0:
        _check_count(buf, pos, n, min_element_bytes)
    return n, pos


def array_length_bytes(count: int) -> bytes:
    return INT32_STRUCT.pack(count)


def compact_array_length_bytes(count: int) -> bytes:
    return unsigned_varint_bytes(count + 1)


# -- tagged fields -----------------------------------------------------------


def decode_tagged_fields(buf: Buffer, pos: int) -> tuple[dict[int, memoryview | bytes], int]:
    """A tag block as {tag: raw value bytes}; a repeated tag is an error."""
    count, pos = decode_unsigned_varint(buf, pos)
    fields: dict[int, memoryview | bytes] = {}
    for _ in range(count):
        tag, pos = decode_unsigned_varint(buf, pos)
        size, pos = decode_unsigned_varint(buf, pos)
        if tag in fields:
            raise WireDecodeError(f"tag {tag} appears twice in one tag block")
        fields[tag] = _slice(buf, pos, size, f"tagged field {tag}")
        pos += size
    return fields, pos


def skip_tagged_fields(buf: Buffer, pos: int) -> int:
    """Skip a tag block whose fields are all unknown to the reader."""
    count, pos = decode_unsigned_varint(buf, pos)
    end = len(buf)
    for _ in range(count):
        _tag, pos = decode_unsigned_varint(buf, pos)
        size, pos = decode_unsigned_varint(buf, pos)
        if pos + size > end:
            raise _short("tagged field", pos, size, buf)
        pos += size
    return pos


def encode_tagged_fields(fields: Mapping[int, Buffer]) -> bytes:
    """A tag block from {tag: raw value bytes}, written in ascending tag order."""
    out = bytearray(unsigned_varint_bytes(len(fields)))
    for tag in sorted(fields):
        value = flat_bytes(fields[tag])
        out += unsigned_varint_bytes(tag)
        out += unsigned_varint_bytes(len(value))
        out += value
    return bytes(out)
