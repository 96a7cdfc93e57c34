"""Validation and in-place rewrites of encoded v2 record batches.

This is the broker's and the log's hot path: a produced batch is checked
(``validate_batch``), given its offsets and leader epoch by patching the header
(``assign_offsets``), and stored byte for byte.  Records are never re-encoded:
baseOffset and partitionLeaderEpoch lie outside the CRC-32C span [21, end), so
patching them keeps the CRC valid.  Only LogAppendTime changes CRC-covered bytes
(attributes and maxTimestamp), so ``set_log_append_time`` recomputes the CRC.

Every rejection of untrusted bytes raises a ``WireError`` subclass whose message
names the problem and the byte position of the batch.
"""

from __future__ import annotations

import struct
from typing import Final

import crc32c

from quorum.wire.batch import (
    ATTR_TIMESTAMP_TYPE,
    BATCH_HEADER_SIZE,
    CRC_START,
    LOG_OVERHEAD,
    BatchHeader,
    batch_size_at,
    set_base_offset,
    set_partition_leader_epoch,
)
from quorum.wire.compression import DEFAULT_MAX_DECOMPRESSED_BYTES, Compression, decompress
from quorum.wire.errors import CorruptRecordError

__all__ = [
    "MIN_RECORD_BYTES",
    "RecordBatchTooLargeError",
    "assign_offsets",
    "assign_offsets_to_batches",
    "set_log_append_time",
    "validate_batch",
    "validate_batches",
]

# length, attributes, timestampDelta, offsetDelta, key, value, headerCount: one byte each at least
MIN_RECORD_BYTES: Final = 7
_ATTRIBUTES: Final = struct.Struct(">h")
_INT32: Final = struct.Struct(">i")
_INT64: Final = struct.Struct(">q")
_UINT32: Final = struct.Struct(">I")
_KNOWN_CODECS: Final = frozenset(int(c) for c in Compression)


class RecordBatchTooLargeError(CorruptRecordError):
    """A well-formed batch larger than the configured limit (MESSAGE_TOO_LARGE, 10)."""


def _check_extent(
    buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader, max_batch_bytes: int | None
) -> None:
    if pos + header.size > len(buf):
        raise CorruptRecordError(
            f"record batch at byte {pos} declares {header.size} bytes "
            f"but only {len(buf) - pos} remain in the buffer"
        )
    if max_batch_bytes is not None and header.size > max_batch_bytes:
        raise RecordBatchTooLargeError(
            f"record batch at byte {pos} is {header.size} bytes, "
            f"over the limit of {max_batch_bytes} bytes"
        )


def _check_crc(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> None:
    computed = crc32c.crc32c(memoryview(buf)[pos + CRC_START : pos + header.size])
    if computed != header.crc:
        raise CorruptRecordError(
            f"record batch at byte {pos} fails its CRC-32C check "
            f"(stored 0x{header.crc:08x}, computed 0x{computed:08x})"
        )


def _check_counts(header: BatchHeader, pos: int, allow_compacted: bool) -> None:
    count, last = header.record_count, header.last_offset_delta
    if count < 0:
        raise CorruptRecordError(f"record batch at byte {pos} has negative record count {count}")
    if last < -1:
        raise CorruptRecordError(
            f"record batch at byte {pos} has negative lastOffsetDelta {last}"
        )
    # Compaction removes records but keeps lastOffsetDelta, so only fresh batches are dense.
    if count > 0 and (count > last + 1 if allow_compacted else count != last + 1):
        raise CorruptRecordError(
            f"record batch at byte {pos} has recordCount {count} "
            f"but lastOffsetDelta {last} (expected {count - 1})"
        )
    if header.compression not in _KNOWN_CODECS:
        raise CorruptRecordError(
            f"record batch at byte {pos} uses unknown compression codec id "
            f"{header.compression} (attributes at byte {pos + CRC_START})"
        )
    records_bytes = header.size - BATCH_HEADER_SIZE
    if header.compression == Compression.NONE and records_bytes < count * MIN_RECORD_BYTES:
        raise CorruptRecordError(
            f"record batch at byte {pos} declares {count} records in only {records_bytes} bytes"
        )


def _check_records(
    buf: bytes | bytearray | memoryview,
    pos: int,
    header: BatchHeader,
    allow_compacted: bool,
    max_decompressed_bytes: int,
) -> None:
    from quorum.wire.records import decode_records  # records imports this module

    data = bytes(memoryview(buf)[pos + BATCH_HEADER_SIZE : pos + header.size])
    if header.compression != Compression.NONE:
        data = decompress(header.compression, data, max_bytes=max_decompressed_bytes)
    try:
        records = decode_records(data, header.record_count)
    except CorruptRecordError as exc:
        raise CorruptRecordError(f"record batch at byte {pos}: {exc}") from exc
    previous = -1
    for index, record in enumerate(records):
        delta = record.offset_delta
        if delta <= previous or (not allow_compacted and delta != index):
            raise CorruptRecordError(
                f"record batch at byte {pos}: record {index} has offset delta {delta} "
                f"after {previous}"
            )
        previous = delta
    if records and previous > header.last_offset_delta:
        raise CorruptRecordError(
            f"record batch at byte {pos}: last record has offset delta {previous}, "
            f"past lastOffsetDelta {header.last_offset_delta}"
        )


def validate_batch(
    buf: bytes | bytearray | memoryview,
    pos: int = 0,
    *,
    max_batch_bytes: int | None = None,
    allow_compacted: bool = False,
    deep: bool = False,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> BatchHeader:
    """Check the batch at ``pos`` and return its header, or raise CorruptRecordError.

    Always checked: header length, magic, declared length against the buffer and
    ``max_batch_bytes`` (RecordBatchTooLargeError), CRC-32C, record count against
    lastOffsetDelta (dense unless ``allow_compacted``), the codec id.  With
    ``deep`` the records are decoded too (decompressing, within
    ``max_decompressed_bytes``) and must fill the batch exactly with increasing
    offset deltas.  A codec whose package is missing raises
    UnsupportedCompressionError only in the deep check: storing such a batch
    needs no decompression.
    """
    header = BatchHeader.parse(buf, pos)
    _check_extent(buf, pos, header, max_batch_bytes)
    _check_crc(buf, pos, header)
    _check_counts(header, pos, allow_compacted)
    if deep:
        _check_records(buf, pos, header, allow_compacted, max_decompressed_bytes)
    return header


def validate_batches(
    buf: bytes | bytearray | memoryview,
    *,
    max_batch_bytes: int | None = None,
    deep: bool = False,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> list[tuple[int, BatchHeader]]:
    """Validate every batch of a produced records blob: (position, header) of each.

    Unlike fetch data, a produced blob must end exactly at a batch boundary.
    """
    found: list[tuple[int, BatchHeader]] = []
    pos = 0
    while pos < len(buf):
        header = validate_batch(
            buf, pos, max_batch_bytes=max_batch_bytes, deep=deep,
            max_decompressed_bytes=max_decompressed_bytes,
        )
        found.append((pos, header))
        pos += header.size
    return found


def assign_offsets(
    buf: bytearray | memoryview, pos: int, base_offset: int, partition_leader_epoch: int
) -> int:
    """Give the batch at ``pos`` its base offset and leader epoch; returns the next offset.

    The CRC stays valid (neither field is covered); the caller validated the batch.
    """
    set_base_offset(buf, pos, base_offset)
    set_partition_leader_epoch(buf, pos, partition_leader_epoch)
    (last_offset_delta,) = _INT32.unpack_from(buf, pos + 23)
    return int(base_offset + last_offset_delta + 1)


def assign_offsets_to_batches(
    buf: bytearray | memoryview, base_offset: int, partition_leader_epoch: int
) -> int:
    """Assign consecutive offsets to every whole batch in ``buf``; returns the next offset.

    Reads only each batch's length (the caller validated the batches), so it
    costs a few struct calls per batch.  A trailing partial batch is left alone.
    """
    next_offset, pos, end = base_offset, 0, len(buf)
    while end - pos >= BATCH_HEADER_SIZE:
        size = LOG_OVERHEAD + _INT32.unpack_from(buf, pos + 8)[0]
        if size < BATCH_HEADER_SIZE:
            raise CorruptRecordError(f"record batch at byte {pos} has a bad length {size - 12}")
        if pos + size > end:
            break
        next_offset = assign_offsets(buf, pos, next_offset, partition_leader_epoch)
        pos += size
    return next_offset


def set_log_append_time(buf: bytearray | memoryview, pos: int, timestamp: int) -> None:
    """Mark the batch LogAppendTime with maxTimestamp ``timestamp`` and recompute its CRC.

    Attributes and maxTimestamp are inside the CRC span, so unlike offset
    assignment this rewrite has to recompute the CRC (still without touching records).
    """
    size = batch_size_at(buf, pos)
    assert size is not None and pos + size <= len(buf), "validate the batch first"
    (attributes,) = _ATTRIBUTES.unpack_from(buf, pos + CRC_START)
    _ATTRIBUTES.pack_into(buf, pos + CRC_START, attributes | ATTR_TIMESTAMP_TYPE)
    _INT64.pack_into(buf, pos + 35, timestamp)
    crc = crc32c.crc32c(memoryview(buf)[pos + CRC_START : pos + size])
    _UINT32.pack_into(buf, pos + 17, crc)
