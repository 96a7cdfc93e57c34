"""ListOffsets by timestamp over a file log's segments.

``offset_for_timestamp``: the segments whose max timestamp reaches the target
are searched in order; in one, the time index gives the last entry at or below
the target, the offset index the position of its batch, and the batch headers
from there the first batch whose max timestamp reaches the target.  Only that
batch is decoded (records carry their own timestamps).  Kafka stops in the
first segment whose largest timestamp reaches the target; this goes on to the
next segments when every such record there lies below the log start offset.

``max_timestamp``: the segment with the largest max timestamp (the first on a
tie), its time index's last entry (the last offset of the first batch that
reached it), and that batch decoded for its first record with that timestamp.
Records below the log start offset are never answered (the first segment may
still hold some): a batch that straddles the log start is decoded to learn the
largest timestamp of its records at or above it.
"""

from __future__ import annotations

from collections.abc import Sequence

from quorum.log.segment import Segment
from quorum.log.timestamps import TimestampAndOffset, first_at_or_after, max_of_batch

__all__ = ["max_timestamp", "offset_for_timestamp"]


def _where(segment: Segment, position: int) -> str:
    return f"{segment.log_path} at byte {position}"


def _search_segment(segment: Segment, target: int, start_offset: int) -> TimestampAndOffset | None:
    entry = segment.time_index.lookup(target)
    position = segment.index.lookup(max(entry.offset, start_offset))
    for at, _, size, last, batch_max in segment.headers_from(position):
        if last < start_offset or batch_max < target:
            continue
        found = first_at_or_after(
            segment.pread(size, at),
            target=target,
            start_offset=start_offset,
            where=_where(segment, at),
        )
        if found is not None:
            return found
    return None


def _holds_records_from(segment: Segment, start_offset: int) -> bool:
    return segment.size > 0 and segment.next_offset > start_offset


def offset_for_timestamp(
    segments: Sequence[Segment], target: int, *, start_offset: int
) -> TimestampAndOffset | None:
    """The first record at or after ``start_offset`` whose timestamp is at least ``target``."""
    for segment in segments:
        if not _holds_records_from(segment, start_offset):
            continue
        if segment.max_timestamp_so_far.timestamp < target:
            continue
        found = _search_segment(segment, target, start_offset)
        if found is not None:
            return found
    return None


def _max_of_whole_segment(segment: Segment, start_offset: int) -> TimestampAndOffset | None:
    top = segment.max_timestamp_so_far
    for at, _, size, _, batch_max in segment.headers_from(segment.index.lookup(top.offset)):
        if batch_max == top.timestamp:
            return max_of_batch(
                segment.pread(size, at), start_offset=start_offset, where=_where(segment, at)
            )
    return None


def _max_from_start(segment: Segment, start_offset: int) -> TimestampAndOffset | None:
    """The segment that holds the log start: only its records at or above it count."""
    best_at, best_size, best_timestamp = -1, 0, 0
    for at, base, size, last, batch_max in segment.headers_from(segment.index.lookup(start_offset)):
        if last < start_offset:
            continue
        timestamp: int | None = batch_max
        if base < start_offset:
            found = max_of_batch(
                segment.pread(size, at), start_offset=start_offset, where=_where(segment, at)
            )
            timestamp = None if found is None else found.timestamp
        if timestamp is not None and (best_at < 0 or timestamp > best_timestamp):
            best_at, best_size, best_timestamp = at, size, timestamp
    if best_at < 0:
        return None
    return max_of_batch(
        segment.pread(best_size, best_at), start_offset=start_offset, where=_where(segment, best_at)
    )


def max_timestamp(
    segments: Sequence[Segment], *, start_offset: int
) -> TimestampAndOffset | None:
    """The first record at or after ``start_offset`` with the largest timestamp; None if
    there is no record or none has a timestamp."""
    best: TimestampAndOffset | None = None
    for segment in segments:
        if not _holds_records_from(segment, start_offset):
            continue
        if best is not None and segment.max_timestamp_so_far.timestamp <= best.timestamp:
            continue
        if start_offset <= segment.base_offset:
            found = _max_of_whole_segment(segment, start_offset)
        else:
            found = _max_from_start(segment, start_offset)
        if found is not None and (best is None or found.timestamp > best.timestamp):
            best = found
    return best if best is not None and best.timestamp >= 0 else None
