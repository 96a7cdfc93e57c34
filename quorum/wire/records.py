"""Records inside a v2 record batch: build, decode, iterate.

The fixed 61-byte batch header is ``quorum.wire.batch``; validation and
in-place rewrites of encoded batches are ``quorum.wire.batch_checks``.  Each
record is laid out as::

    length          varint   bytes after this field
    attributes      int8     unused, 0
    timestampDelta  varlong  from the batch's baseTimestamp
    offsetDelta     varint   from the batch's baseOffset
    keyLength       varint   -1 = null key
    key             bytes
    valueLength     varint   -1 = null value
    value           bytes
    headerCount     varint
    headers         keyLength varint, key (UTF-8, never null),
                    valueLength varint (-1 = null), value

Record-level varints are ZigZag-signed (-1 is ``0x01``), unlike the unsigned
varints of flexible protocol versions; the tight helpers here are ZigZag only
and never used for protocol fields.  They live here rather than in
``quorum.wire.primitives`` because the per-record loop is the hot path and
wants table lookups for the one- and two-byte cases.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import Final

import attrs
import crc32c

from quorum.wire.batch import (
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    BatchHeader,
    batch_size_at,
)
from quorum.wire.batch_checks import validate_batch
from quorum.wire.compression import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    Compression,
    compress,
    decompress,
)
from quorum.wire.errors import CorruptRecordError, WireEncodeError

__all__ = [
    "NO_TIMESTAMP",
    "DecodedBatch",
    "Header",
    "Record",
    "TimestampType",
    "build_batch",
    "build_batch_from_values",
    "decode_batch",
    "decode_records",
    "encode_records",
    "encode_varint",
    "iter_batches",
    "read_header_pairs",
    "read_varint",
]

NO_TIMESTAMP: Final = -1
_INT32_MAX: Final = 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# Everything after crc in the fixed header, i.e. the CRC-covered part of it.
_HEADER_TAIL: Final = struct.Struct(">hiqqqhii")
_HEADER_HEAD: Final = struct.Struct(">qiibI")
# zigzag value -> encoded bytes, for everything that fits in two bytes
_VARINT_TABLE: Final = tuple(
    bytes((z,)) if z < 0x80 else bytes(((z & 0x7F) | 0x80, z >> 7)) for z in range(1 << 14)
)
_NULL: Final = _VARINT_TABLE[1]  # zigzag(-1)


class TimestampType(enum.IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


@attrs.frozen
class Header:
    key: str
    value: bytes | None


@attrs.frozen(kw_only=True)
class Record:
    """One record; offsets and timestamps are deltas from the batch header."""

    offset_delta: int
    timestamp_delta: int = 0
    key: bytes | None = None
    value: bytes | None = None
    headers: tuple[Header, ...] = ()


@attrs.frozen
class DecodedBatch:
    header: BatchHeader
    records: tuple[Record, ...]

    def offset_of(self, record: Record) -> int:
        return self.header.base_offset + record.offset_delta

    def timestamp_of(self, record: Record) -> int:
        """The record's timestamp; with LogAppendTime every record has the batch's."""
        if self.header.attributes & ATTR_TIMESTAMP_TYPE:
            return self.header.max_timestamp
        return self.header.base_timestamp + record.timestamp_delta


# -- varints -----------------------------------------------------------------------------


def encode_varint(value: int) -> bytes:
    """ZigZag varint/varlong bytes of ``value`` (callers check the int32/int64 range)."""
    zigzag = (value << 1) ^ (value >> 63)
    if zigzag < 1 << 14:
        return _VARINT_TABLE[zigzag]
    out = bytearray()
    while zigzag >= 0x80:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def read_varint(buf: bytes, pos: int, max_bytes: int = 10) -> tuple[int, int]:
    """Decode a ZigZag varint (``max_bytes`` 5) or varlong (10) at ``pos``; (value, next pos)."""
    try:
        byte = buf[pos]
        if byte < 0x80:
            return (byte >> 1) ^ -(byte & 1), pos + 1
        zigzag, index, shift = byte & 0x7F, pos + 1, 7
        while index < pos + max_bytes:
            byte = buf[index]
            zigzag |= (byte & 0x7F) << shift
            index += 1
            if byte < 0x80:
                return (zigzag >> 1) ^ -(zigzag & 1), index
            shift += 7
    except IndexError:
        raise CorruptRecordError(f"varint at byte {pos} runs past the end of the records") from None
    raise CorruptRecordError(f"varint at byte {pos} is longer than {max_bytes} bytes")


# -- encoding ------------------------------------------------------------------------------


def _check(value: int, low: int, high: int, what: str) -> None:
    if not low <= value <= high:
        raise WireEncodeError(f"{what} {value} is outside [{low}, {high}]")


def _encode_bytes(parts: list[bytes], data: bytes | None, what: str) -> None:
    if data is None:
        parts.append(_NULL)
    else:
        _check(len(data), 0, _INT32_MAX, f"{what} length")
        parts += (encode_varint(len(data)), data)


def _encode_record(record: Record) -> bytes:
    _check(record.timestamp_delta, _INT64_MIN, _INT64_MAX, "timestamp delta")
    parts = [b"\x00", encode_varint(record.timestamp_delta), encode_varint(record.offset_delta)]
    _encode_bytes(parts, record.key, "key")
    _encode_bytes(parts, record.value, "value")
    parts.append(encode_varint(len(record.headers)))
    for header in record.headers:
        try:
            key = header.key.encode()
        except UnicodeEncodeError as exc:
            raise WireEncodeError(f"header key {header.key!r} is not encodable as UTF-8") from exc
        _encode_bytes(parts, key, "header key")
        _encode_bytes(parts, header.value, "header value")
    body = b"".join(parts)
    return encode_varint(len(body)) + body


def encode_records(records: Iterable[Record]) -> bytes:
    """The concatenated record bytes (what a batch compresses as one block)."""
    return b"".join([_encode_record(record) for record in records])


def _offset_deltas_checked(records: Sequence[Record]) -> None:
    previous = -1
    for record in records:
        if record.offset_delta <= previous:
            raise WireEncodeError(
                f"offset deltas must increase: {record.offset_delta} follows {previous}"
            )
        previous = record.offset_delta
    _check(previous, -1, _INT32_MAX, "offset delta")


def _attributes(
    compression: int, timestamp_type: int, is_transactional: bool, is_control: bool
) -> int:
    _check(compression, 0, 4, "compression codec id")
    return (
        compression
        | (ATTR_TIMESTAMP_TYPE if timestamp_type == TimestampType.LOG_APPEND_TIME else 0)
        | (ATTR_TRANSACTIONAL if is_transactional else 0)
        | (ATTR_CONTROL if is_control else 0)
    )


def build_batch(
    records: Sequence[Record],
    *,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
    compression: int = Compression.NONE,
    compression_level: int | None = None,
    timestamp_type: int = TimestampType.CREATE_TIME,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
) -> bytes:
    """Encode one v2 batch, computing lastOffsetDelta, maxTimestamp, count and CRC-32C.

    ``base_timestamp`` is what the records' timestamp deltas count from; None
    means NO_TIMESTAMP (-1) for an empty batch and 0 otherwise.
    ``max_timestamp`` defaults to base plus the largest delta (LogAppendTime
    callers pass the append time).
    """
    _offset_deltas_checked(records)
    if base_timestamp is None:
        base_timestamp = 0 if records else NO_TIMESTAMP
    if max_timestamp is None:
        max_timestamp = (
            base_timestamp + max(r.timestamp_delta for r in records) if records else NO_TIMESTAMP
        )
    body = encode_records(records)
    attributes = _attributes(compression, timestamp_type, is_transactional, is_control)
    if compression != Compression.NONE:
        body = compress(compression, body, level=compression_level)
    try:
        tail = _HEADER_TAIL.pack(
            attributes,
            records[-1].offset_delta if records else -1,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
        crc = crc32c.crc32c(body, crc32c.crc32c(tail))
        batch_length = BATCH_HEADER_SIZE - LOG_OVERHEAD + len(body)
        head = _HEADER_HEAD.pack(base_offset, batch_length, partition_leader_epoch, MAGIC_V2, crc)
    except struct.error as exc:
        raise WireEncodeError(f"a batch header field is out of range: {exc}") from exc
    return b"".join((head, tail, body))


def build_batch_from_values(
    values: Sequence[bytes | None],
    keys: Sequence[bytes | None] | None = None,
    *,
    timestamp: int = 0,
    headers: tuple[Header, ...] = (),
    base_offset: int = 0,
    compression: int = Compression.NONE,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A batch of plain records with offset deltas 0..n-1, all at ``timestamp`` (tests, benches)."""
    if keys is not None and len(keys) != len(values):
        raise WireEncodeError(f"{len(keys)} keys for {len(values)} values")
    records = [
        Record(offset_delta=i, key=None if keys is None else keys[i], value=v, headers=headers)
        for i, v in enumerate(values)
    ]
    return build_batch(
        records,
        base_offset=base_offset,
        compression=compression,
        partition_leader_epoch=partition_leader_epoch,
        base_timestamp=timestamp,
    )


# -- decoding ------------------------------------------------------------------------------


def read_header_pairs(
    data: bytes, pos: int, end: int
) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    """A record's headers at ``pos`` as (key, value) pairs, and the position after them."""
    count, pos = read_varint(data, pos, 5)
    if count < 0 or count > end - pos:
        raise CorruptRecordError(f"header count {count} at byte {pos} is impossible")
    if not count:
        return (), pos
    pairs = []
    for _ in range(count):
        size, pos = read_varint(data, pos, 5)
        if size < 0 or pos + size > end:
            raise CorruptRecordError(f"record header key of {size} bytes at byte {pos} is bad")
        try:
            key = data[pos : pos + size].decode()
        except UnicodeDecodeError as exc:
            raise CorruptRecordError(f"record header key at byte {pos} is not UTF-8") from exc
        size, pos = read_varint(data, pos + size, 5)
        if pos + size > end:
            raise CorruptRecordError(f"record header value of {size} bytes at byte {pos} overruns")
        pairs.append((key, None if size < 0 else data[pos : pos + size]))
        pos += max(size, 0)
    return tuple(pairs), pos


def _read_headers(data: bytes, pos: int, end: int) -> tuple[tuple[Header, ...], int]:
    pairs, pos = read_header_pairs(data, pos, end)
    return tuple(Header(key, value) for key, value in pairs), pos


# Decoding builds Records through their slot descriptors: the same object as
# Record(...) (no validators or converters to skip) at under half the cost of the
# frozen __init__, which dominates the per-record loop otherwise.
_RECORD_FIELDS: Final = ("offset_delta", "timestamp_delta", "key", "value", "headers")
assert tuple(f.name for f in attrs.fields(Record)) == _RECORD_FIELDS
_SET_OFFSET, _SET_TIMESTAMP, _SET_KEY, _SET_VALUE, _SET_HEADERS = (
    getattr(Record, name).__set__ for name in _RECORD_FIELDS
)


def decode_records(data: bytes, count: int) -> tuple[Record, ...]:
    """Decode exactly ``count`` records filling ``data`` (positions in messages are within it).

    One flat loop with the one-byte varint cases inlined, and the two-byte ones
    where they are common (a metadata record's length and value length, offset
    deltas from 64 on): this is the hot path of every metadata replay.
    """
    records: list[Record] = []
    new, size = object.__new__, len(data)
    pos = 0
    try:
        for _ in range(count):
            if pos >= size:  # more records declared than present: read_varint's words
                raise CorruptRecordError(f"varint at byte {pos} runs past the end of the records")
            byte = data[pos]
            if byte < 0x80:
                length, pos = (byte >> 1) ^ -(byte & 1), pos + 1
            elif data[pos + 1] < 0x80:
                zigzag = (byte & 0x7F) | data[pos + 1] << 7
                length, pos = (zigzag >> 1) ^ -(zigzag & 1), pos + 2
            else:
                length, pos = read_varint(data, pos, 5)
            end = pos + length
            if length < 6 or end > size:
                raise CorruptRecordError(f"record length {length} is impossible")
            byte = data[pos + 1]  # + 1: attributes, unused
            if byte < 0x80:
                timestamp_delta, pos = (byte >> 1) ^ -(byte & 1), pos + 2
            else:
                timestamp_delta, pos = read_varint(data, pos + 1, 10)
            byte = data[pos]
            if byte < 0x80:
                offset_delta, pos = (byte >> 1) ^ -(byte & 1), pos + 1
            elif data[pos + 1] < 0x80:
                zigzag = (byte & 0x7F) | data[pos + 1] << 7
                offset_delta, pos = (zigzag >> 1) ^ -(zigzag & 1), pos + 2
            else:
                offset_delta, pos = read_varint(data, pos, 5)
            byte = data[pos]
            if byte < 0x80:
                n, pos = (byte >> 1) ^ -(byte & 1), pos + 1
            else:
                n, pos = read_varint(data, pos, 5)
            if n < 0:
                key = None
            elif pos + n <= end:
                key, pos = data[pos : pos + n], pos + n
            else:
                raise CorruptRecordError(f"key of {n} bytes at byte {pos} overruns its record")
            byte = data[pos]
            if byte < 0x80:
                n, pos = (byte >> 1) ^ -(byte & 1), pos + 1
            elif data[pos + 1] < 0x80:
                zigzag = (byte & 0x7F) | data[pos + 1] << 7
                n, pos = (zigzag >> 1) ^ -(zigzag & 1), pos + 2
            else:
                n, pos = read_varint(data, pos, 5)
            if n < 0:
                value = None
            elif pos + n <= end:
                value, pos = data[pos : pos + n], pos + n
            else:
                raise CorruptRecordError(f"value of {n} bytes at byte {pos} overruns its record")
            if data[pos] == 0:  # no headers: the common case
                headers: tuple[Header, ...] = ()
                pos += 1
            else:
                headers, pos = _read_headers(data, pos, end)
            if pos != end:
                raise CorruptRecordError(
                    f"its fields end at byte {pos} but its length says byte {end}"
                )
            record = new(Record)
            _SET_OFFSET(record, offset_delta)
            _SET_TIMESTAMP(record, timestamp_delta)
            _SET_KEY(record, key)
            _SET_VALUE(record, value)
            _SET_HEADERS(record, headers)
            records.append(record)
    except IndexError as exc:  # a one-byte read past the end
        raise CorruptRecordError(
            f"record {len(records)} of {count} at byte {pos} runs past the end of the records"
        ) from exc
    except CorruptRecordError as exc:
        raise CorruptRecordError(f"record {len(records)} of {count}: {exc}") from exc
    if pos != size:
        raise CorruptRecordError(
            f"{size - pos} bytes follow the {count} declared records (at byte {pos})"
        )
    return tuple(records)


def decode_batch(
    buf: bytes | bytearray | memoryview,
    pos: int = 0,
    *,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> DecodedBatch:
    """Validate (CRC included) and decode the batch at ``pos``, decompressing if needed."""
    header = validate_batch(buf, pos, allow_compacted=True)
    data = bytes(memoryview(buf)[pos + BATCH_HEADER_SIZE : pos + header.size])
    if header.compression != Compression.NONE:
        data = decompress(header.compression, data, max_bytes=max_decompressed_bytes)
    try:
        records = decode_records(data, header.record_count)
    except CorruptRecordError as exc:
        raise CorruptRecordError(f"record batch at byte {pos}: {exc}") from exc
    return DecodedBatch(header, records)


def iter_batches(
    buf: bytes | bytearray | memoryview,
    *,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> Iterator[DecodedBatch]:
    """Decode each whole batch in ``buf``; a trailing partial batch (fetch data) is ignored."""
    pos = 0
    while (size := batch_size_at(buf, pos)) is not None and pos + size <= len(buf):
        yield decode_batch(buf, pos, max_decompressed_bytes=max_decompressed_bytes)
        pos += size
