"""The cleaner's work on one record batch: map its keys, or filter and rewrite it.

Bytes in, bytes out, no I/O (Kafka's ``Cleaner.buildOffsetMapForSegment`` and
``cleanInto`` with ``MemoryRecords.filterTo``).  Rules of a round whose offset
map covers offsets up to ``OffsetMap.latest_offset``:

* a record past the map's latest offset is kept (it was not looked at);
* a keyless record goes (a compacted topic refuses them; older ones are junk);
* a record is kept if it is the latest of its key, and then a tombstone (null
  value) only while its batch's delete horizon is unset or still ahead;
* a batch that keeps a tombstone and has no delete horizon gets one: now +
  ``delete.retention.ms``, written as Kafka writes it (KIP-534): the
  base timestamp holds the horizon, attribute bit 6 says so, and the record
  timestamp deltas count from it, so every record keeps its timestamp;
* a batch keeps its base offset, last offset delta (a producer's sequence
  numbers stay right), leader epoch, producer fields and compression codec;
  the records keep their offset deltas, and their bytes as they are unless a
  new horizon makes their timestamp deltas count from it; the CRC is computed
  again.  A batch with nothing removed and no horizon to set is copied whole;
* a batch left with no record is dropped, except the last batch of a producer
  id (its sequence and epoch are the producer's state) and the last batch of
  each rewritten group of segments: those stay as an empty header (Kafka's
  ``writeEmptyHeader``: no compression, base timestamp -1).  Kafka keeps the
  last batch of the round only; keeping each group's makes a cleaned segment
  end exactly where the next begins, so reads and recovery never meet a gap
  between segments and an interrupted swap knows which old segments it
  replaces (``quorum.log.cleaner_swap``);
* control batches are copied (pykraft writes no transaction markers).
"""

from __future__ import annotations

import struct
from typing import Final

import attrs
import crc32c

from quorum.log.cleaner_plan import OffsetMap
from quorum.wire.batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_DELETE_HORIZON,
    ATTR_TIMESTAMP_TYPE,
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    BatchHeader,
)
from quorum.wire.batch_checks import validate_batch
from quorum.wire.compression import Compression, compress, decompress
from quorum.wire.errors import CorruptRecordError
from quorum.wire.records import NO_TIMESTAMP, decode_batch, encode_records, read_varint

__all__ = ["BatchFate", "CleanedBatch", "clean_batch", "empty_batch", "map_batch"]

_HEAD: Final = struct.Struct(">qiibI")
_TAIL: Final = struct.Struct(">hiqqqhii")


@attrs.frozen(kw_only=True)
class BatchFate:
    """What the round knows about a batch beyond its bytes."""

    # the last batch of its producer id in the log (producer id >= 0)
    producer_last: bool
    # the last batch of a rewritten group of segments (see ``quorum.log.cleaner_swap``)
    group_last: bool


@attrs.frozen(kw_only=True)
class CleanedBatch:
    """The bytes to write for one batch (None: it goes), and what they hold."""

    data: bytes | None
    records_read: int
    records_kept: int
    max_timestamp: int
    # the batch's record bytes, decompressed: the work it cost (slices are bounded by it)
    records_bytes: int


class _Span:
    """One record of a batch as the cleaner needs it: where its bytes are, its offset
    delta, timestamp delta and key, and whether it is a tombstone."""

    __slots__ = ("end", "key", "offset_delta", "start", "timestamp_delta", "tombstone")

    def __init__(
        self,
        start: int,
        end: int,
        offset_delta: int,
        timestamp_delta: int,
        key: bytes | None,
        tombstone: bool,
    ) -> None:
        self.start, self.end = start, end
        self.offset_delta, self.timestamp_delta = offset_delta, timestamp_delta
        self.key, self.tombstone = key, tombstone


def _spans(buf: bytes | memoryview) -> tuple[BatchHeader, bytes, list[_Span]]:
    """The batch's header (CRC checked), its record bytes (decompressed) and its records,
    read without building ``Record`` objects: the values and headers are skipped (most
    of a record's decoding cost; the cleaner keeps a record's bytes as they are)."""
    header = validate_batch(buf, 0, allow_compacted=True)
    data = bytes(buf[BATCH_HEADER_SIZE : header.size])
    if header.compression != Compression.NONE:
        data = decompress(header.compression, data)
    spans: list[_Span] = []
    size, position = len(data), 0
    try:
        # one-byte varints (ZigZag) inline: most deltas and key lengths are
        for _ in range(header.record_count):
            length, at = read_varint(data, position, 5)
            end = at + length
            if length < 6 or end > size:
                raise CorruptRecordError(f"record length {length} at byte {position} is impossible")
            byte = data[at + 1]  # + 1: attributes
            if byte < 0x80:
                timestamp_delta, at = (byte >> 1) ^ -(byte & 1), at + 2
            else:
                timestamp_delta, at = read_varint(data, at + 1, 10)
            byte = data[at]
            if byte < 0x80:
                offset_delta, at = (byte >> 1) ^ -(byte & 1), at + 1
            else:
                offset_delta, at = read_varint(data, at, 5)
            byte = data[at]
            if byte < 0x80:
                key_length, at = (byte >> 1) ^ -(byte & 1), at + 1
            else:
                key_length, at = read_varint(data, at, 5)
            key = None
            if key_length >= 0:
                key, at = data[at : at + key_length], at + key_length
            byte = data[at]
            if byte == 1:  # ZigZag -1: a null value
                value_length, at = -1, at + 1
            else:
                value_length, at = read_varint(data, at, 5)
            if at > end or at + max(value_length, 0) > end:
                raise CorruptRecordError(f"the record at byte {position} overruns its length")
            spans.append(_Span(position, end, offset_delta, timestamp_delta, key, value_length < 0))
            position = end
    except IndexError as exc:  # a one-byte read past the end
        raise CorruptRecordError(
            f"record batch at offset {header.base_offset}: a record runs past the end"
        ) from exc
    except CorruptRecordError as exc:
        raise CorruptRecordError(f"record batch at offset {header.base_offset}: {exc}") from exc
    if position != size:
        raise CorruptRecordError(
            f"record batch at offset {header.base_offset}: {size - position} bytes follow "
            f"its {header.record_count} records"
        )
    return header, data, spans


def map_batch(
    buf: bytes | memoryview, offset_map: OffsetMap, *, start_offset: int
) -> int | None:
    """Put the keys of the batch in ``buf`` (offsets at or past ``start_offset``) into the
    map; the batch's record bytes (decompressed), or None if the map filled up part-way
    (the batch then does not count as mapped)."""
    header, data, spans = _spans(buf)
    if not header.is_control:
        base = header.base_offset
        for span in spans:
            offset = base + span.offset_delta
            if (
                span.key is not None
                and offset >= start_offset
                and not offset_map.put(span.key, offset)
            ):
                return None
    if header.last_offset >= start_offset:
        offset_map.update_latest_offset(header.last_offset)
    return len(data)


def _horizon(header: BatchHeader) -> int | None:
    return header.base_timestamp if header.attributes & ATTR_DELETE_HORIZON else None


def _keep(
    span: _Span, offset: int, offset_map: OffsetMap, horizon: int | None, now_ms: int
) -> bool:
    if offset > offset_map.latest_offset:
        return True
    if span.key is None:
        return False
    if offset < offset_map.get(span.key):
        return False
    return not span.tombstone or horizon is None or now_ms < horizon


def clean_batch(
    buf: bytes | memoryview,
    offset_map: OffsetMap,
    *,
    fate: BatchFate,
    now_ms: int,
    delete_retention_ms: int,
) -> CleanedBatch:
    """The cleaned form of the batch in ``buf`` (module docstring)."""
    header, data, spans = _spans(buf)
    count = len(spans)
    if header.is_control:
        return _as_is(buf, header, data, count)
    horizon = _horizon(header)
    base = header.base_offset
    kept = [s for s in spans if _keep(s, base + s.offset_delta, offset_map, horizon, now_ms)]
    has_tombstone = any(s.tombstone for s in kept)
    new_horizon = horizon is None and has_tombstone
    if kept and len(kept) == count and not new_horizon:
        return _as_is(buf, header, data, count)
    if not kept:
        keep_empty = fate.producer_last or fate.group_last
        return CleanedBatch(
            data=empty_batch(header) if keep_empty else None,
            records_read=count,
            records_kept=0,
            max_timestamp=header.max_timestamp,
            records_bytes=len(data),
        )
    if new_horizon:
        # the records' timestamp deltas must count from the horizon: encode them again
        data_out, max_timestamp = _rebased(buf, header, kept, now_ms + delete_retention_ms)
    else:
        data_out, max_timestamp = _copied(header, data, kept)
    return CleanedBatch(
        data=data_out,
        records_read=count,
        records_kept=len(kept),
        max_timestamp=max_timestamp,
        records_bytes=len(data),
    )


def _as_is(
    buf: bytes | memoryview, header: BatchHeader, data: bytes, count: int
) -> CleanedBatch:
    return CleanedBatch(
        data=bytes(buf[: header.size]),
        records_read=count,
        records_kept=count,
        max_timestamp=header.max_timestamp,
        records_bytes=len(data),
    )


def _max_timestamp(header: BatchHeader, base_timestamp: int, deltas: list[int]) -> int:
    if header.attributes & ATTR_TIMESTAMP_TYPE:  # LogAppendTime: the batch's, for all
        return header.max_timestamp
    return base_timestamp + max(deltas)


def _copied(header: BatchHeader, data: bytes, kept: list[_Span]) -> tuple[bytes, int]:
    """The kept records' bytes as they are (same base timestamp, same deltas)."""
    body = b"".join([data[s.start : s.end] for s in kept])
    codec = header.attributes & ATTR_COMPRESSION_MASK
    if codec != Compression.NONE:
        body = compress(codec, body)
    base_timestamp = header.base_timestamp
    max_timestamp = _max_timestamp(header, base_timestamp, [s.timestamp_delta for s in kept])
    assembled = _assemble(header, header.attributes, base_timestamp, max_timestamp, len(kept), body)
    return assembled, max_timestamp


def _rebased(
    buf: bytes | memoryview, header: BatchHeader, kept: list[_Span], horizon: int
) -> tuple[bytes, int]:
    """The kept records encoded again with ``horizon`` as the base timestamp."""
    wanted = {s.offset_delta for s in kept}
    records = [r for r in decode_batch(buf).records if r.offset_delta in wanted]
    old_base = header.base_timestamp
    records = [
        attrs.evolve(r, timestamp_delta=old_base + r.timestamp_delta - horizon) for r in records
    ]
    max_timestamp = _max_timestamp(header, horizon, [r.timestamp_delta for r in records])
    body = encode_records(records)
    codec = header.attributes & ATTR_COMPRESSION_MASK
    if codec != Compression.NONE:
        body = compress(codec, body)
    attributes = header.attributes | ATTR_DELETE_HORIZON
    assembled = _assemble(header, attributes, horizon, max_timestamp, len(records), body)
    return assembled, max_timestamp


def empty_batch(header: BatchHeader) -> bytes:
    """Kafka's ``writeEmptyHeader``: the batch's offsets and producer fields, no records."""
    attributes = header.attributes & ~(ATTR_COMPRESSION_MASK | ATTR_DELETE_HORIZON)
    return _assemble(header, attributes, NO_TIMESTAMP, header.max_timestamp, 0, b"")


def _assemble(
    header: BatchHeader,
    attributes: int,
    base_timestamp: int,
    max_timestamp: int,
    count: int,
    body: bytes,
) -> bytes:
    tail = _TAIL.pack(
        attributes,
        header.last_offset_delta,
        base_timestamp,
        max_timestamp,
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
        count,
    )
    crc = crc32c.crc32c(body, crc32c.crc32c(tail))
    length = BATCH_HEADER_SIZE - LOG_OVERHEAD + len(body)
    head = _HEAD.pack(header.base_offset, length, header.partition_leader_epoch, MAGIC_V2, crc)
    return b"".join((head, tail, body))
