"""Record-level answers of ListOffsets by timestamp, from the bytes of one batch.

Batch headers carry a max timestamp; the records carry their own.  The logs
find the one batch that matters from headers (and the time index) and decode
only that batch here.  With LogAppendTime every record has the batch's max
timestamp (``DecodedBatch.timestamp_of``).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from quorum.log.errors import LogCorruptionError
from quorum.wire.errors import CorruptRecordError
from quorum.wire.records import DecodedBatch, decode_batch

__all__ = [
    "HeldBatch",
    "TimestampAndOffset",
    "first_at_or_after",
    "max_of_batch",
    "scan_for_max_timestamp",
    "scan_for_timestamp",
]


@attrs.frozen(kw_only=True)
class TimestampAndOffset:
    """A record's offset and timestamp, and the leader epoch of its batch (-1 if none)."""

    timestamp: int
    offset: int
    leader_epoch: int


def _decoded(batch: bytes | memoryview, where: str) -> DecodedBatch:
    try:
        return decode_batch(batch)
    except CorruptRecordError as exc:
        raise LogCorruptionError(f"{where}: the batch cannot be decoded: {exc}") from exc


def _epoch(decoded: DecodedBatch) -> int:
    epoch = decoded.header.partition_leader_epoch
    return epoch if epoch >= 0 else -1


def first_at_or_after(
    batch: bytes | memoryview, *, target: int, start_offset: int, where: str
) -> TimestampAndOffset | None:
    """The first record at or after ``start_offset`` whose timestamp is at least ``target``."""
    decoded = _decoded(batch, where)
    for record in decoded.records:
        offset = decoded.offset_of(record)
        timestamp = decoded.timestamp_of(record)
        if offset >= start_offset and timestamp >= target:
            return TimestampAndOffset(timestamp=timestamp, offset=offset, leader_epoch=_epoch(decoded))
    return None


def max_of_batch(
    batch: bytes | memoryview, *, start_offset: int, where: str
) -> TimestampAndOffset | None:
    """The first record at or after ``start_offset`` with the largest timestamp among them."""
    decoded = _decoded(batch, where)
    best: TimestampAndOffset | None = None
    for record in decoded.records:
        offset = decoded.offset_of(record)
        timestamp = decoded.timestamp_of(record)
        if offset >= start_offset and (best is None or timestamp > best.timestamp):
            best = TimestampAndOffset(timestamp=timestamp, offset=offset, leader_epoch=_epoch(decoded))
    return best


# (last offset, max timestamp of the header, the batch's bytes) of a batch held in memory
HeldBatch = tuple[int, int, bytes]


def scan_for_timestamp(
    batches: Iterable[HeldBatch], *, target: int, start_offset: int
) -> TimestampAndOffset | None:
    """``offset_for_timestamp`` over batches in offset order, without indexes."""
    for last, batch_max, data in batches:
        if last < start_offset or batch_max < target:
            continue
        found = first_at_or_after(data, target=target, start_offset=start_offset, where="memory")
        if found is not None:
            return found
    return None


def scan_for_max_timestamp(
    batches: Iterable[HeldBatch], *, start_offset: int
) -> TimestampAndOffset | None:
    """``max_timestamp`` over batches in offset order: every record decoded."""
    best: TimestampAndOffset | None = None
    for last, _, data in batches:
        if last < start_offset:
            continue
        found = max_of_batch(data, start_offset=start_offset, where="memory")
        if found is not None and (best is None or found.timestamp > best.timestamp):
            best = found
    return best if best is not None and best.timestamp >= 0 else None
