"""The fixed 61-byte header of a v2 record batch, read and patched in place.

This is the part of the record-batch format that the log and the replication
hot path need: find batch boundaries, check the CRC, and rewrite the base
offset and partition leader epoch without touching (or re-encoding) records.
Record encoding and decoding live in ``quorum.wire.records``.

Layout (offsets from the start of the batch)::

    0  baseOffset            int64
    8  batchLength           int32   bytes after this field
    12 partitionLeaderEpoch  int32
    16 magic                 int8    (2)
    17 crc                   uint32  CRC-32C of bytes [21, end)
    21 attributes            int16
    23 lastOffsetDelta       int32
    27 baseTimestamp         int64
    35 maxTimestamp          int64
    43 producerId            int64
    51 producerEpoch         int16
    53 baseSequence          int32
    57 recordCount           int32
    61 records ...
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Final

import attrs
import crc32c

from quorum.wire.errors import CorruptRecordError

__all__ = [
    "BATCH_HEADER_SIZE",
    "LOG_OVERHEAD",
    "BatchHeader",
    "batch_base_offset_at",
    "batch_size_at",
    "iter_batch_headers",
    "set_base_offset",
    "set_partition_leader_epoch",
]

# baseOffset + batchLength: the bytes not counted by batchLength.
LOG_OVERHEAD: Final = 12
BATCH_HEADER_SIZE: Final = 61
MAGIC_V2: Final = 2
CRC_START: Final = 21

ATTR_COMPRESSION_MASK: Final = 0x07
ATTR_TIMESTAMP_TYPE: Final = 0x08
ATTR_TRANSACTIONAL: Final = 0x10
ATTR_CONTROL: Final = 0x20
ATTR_DELETE_HORIZON: Final = 0x40

_HEADER: Final = struct.Struct(">qiibIhiqqqhii")
_OFFSET_LENGTH: Final = struct.Struct(">qi")
_INT64: Final = struct.Struct(">q")
_INT32: Final = struct.Struct(">i")


@attrs.frozen(kw_only=True)
class BatchHeader:
    """The decoded fixed header of one batch (``size`` is its whole length)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & ATTR_COMPRESSION_MASK

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @classmethod
    def parse(cls, buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
        """Decode the header at ``pos``; raises CorruptRecordError if it is short or bad."""
        if len(buf) - pos < BATCH_HEADER_SIZE:
            raise CorruptRecordError(
                f"record batch header at byte {pos} is truncated "
                f"({len(buf) - pos} of {BATCH_HEADER_SIZE} bytes)"
            )
        fields = _HEADER.unpack_from(buf, pos)
        header = cls(
            base_offset=fields[0],
            batch_length=fields[1],
            partition_leader_epoch=fields[2],
            magic=fields[3],
            crc=fields[4],
            attributes=fields[5],
            last_offset_delta=fields[6],
            base_timestamp=fields[7],
            max_timestamp=fields[8],
            producer_id=fields[9],
            producer_epoch=fields[10],
            base_sequence=fields[11],
            record_count=fields[12],
        )
        if header.magic != MAGIC_V2:
            raise CorruptRecordError(
                f"record batch at byte {pos} has magic {header.magic}; only v2 batches are supported"
            )
        if header.batch_length < BATCH_HEADER_SIZE - LOG_OVERHEAD:
            raise CorruptRecordError(
                f"record batch at byte {pos} has length {header.batch_length}, "
                f"shorter than its own header"
            )
        return header

    def crc_matches(self, buf: bytes | bytearray | memoryview, pos: int = 0) -> bool:
        """True iff the stored CRC-32C covers bytes [pos+21, pos+size) of ``buf``."""
        end = pos + self.size
        if end > len(buf):
            return False
        view = memoryview(buf)[pos + CRC_START : end]
        return bool(crc32c.crc32c(view) == self.crc)


def batch_size_at(buf: bytes | bytearray | memoryview, pos: int) -> int | None:
    """Total size of the batch starting at ``pos``, or None if fewer than 12 bytes remain."""
    if len(buf) - pos < LOG_OVERHEAD:
        return None
    _, length = _OFFSET_LENGTH.unpack_from(buf, pos)
    return int(LOG_OVERHEAD + length)


def batch_base_offset_at(buf: bytes | bytearray | memoryview, pos: int) -> int:
    """The base offset of the batch starting at ``pos`` (its first 8 bytes)."""
    base_offset, _ = _OFFSET_LENGTH.unpack_from(buf, pos)
    return int(base_offset)


def iter_batch_headers(
    buf: bytes | bytearray | memoryview, *, check_crc: bool = True
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) for each whole batch in ``buf``.

    Stops silently at a trailing partial batch (as fetch data may end with
    one); raises CorruptRecordError for a batch whose header or CRC is bad.
    """
    pos = 0
    end = len(buf)
    while pos < end:
        size = batch_size_at(buf, pos)
        if size is None or pos + size > end:
            return
        header = BatchHeader.parse(buf, pos)
        if check_crc and not header.crc_matches(buf, pos):
            raise CorruptRecordError(f"record batch at byte {pos} fails its CRC-32C check")
        yield pos, header
        pos += size


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Rewrite the base offset in place; the CRC does not cover it."""
    _INT64.pack_into(buf, pos, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    """Rewrite the partition leader epoch in place; the CRC does not cover it."""
    _INT32.pack_into(buf, pos + 12, epoch)
