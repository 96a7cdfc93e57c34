"""Which old segments retention deletes (Kafka's ``retention.ms`` / ``retention.bytes``).

Pure policy over segment facts; ``FileLog.maybe_apply_retention`` does the
deleting.  Each rule picks a prefix of the segments (oldest first) and stops at
the first segment it would keep.  The active (last) segment is never picked,
nor a segment holding any offset at or above the caller's limit (its high
watermark or latest snapshot).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

__all__ = ["RetainedSegment", "expired_by_size", "expired_by_time"]


class RetainedSegment(Protocol):
    @property
    def size(self) -> int: ...

    @property
    def next_offset(self) -> int: ...

    def largest_timestamp_ms(self) -> int: ...


def _prefix(
    segments: Sequence[RetainedSegment], limit: int, doomed: Callable[[RetainedSegment], bool]
) -> int:
    count = 0
    while count < len(segments) - 1:
        segment = segments[count]
        if segment.next_offset > limit or not doomed(segment):
            break
        count += 1
    return count


def expired_by_time(
    segments: Sequence[RetainedSegment], *, now_ms: int, retention_ms: int, limit: int
) -> int:
    """How many oldest segments have no batch newer than ``retention_ms`` before ``now_ms``."""
    if retention_ms == -1:
        return 0
    return _prefix(segments, limit, lambda s: now_ms - s.largest_timestamp_ms() > retention_ms)


def expired_by_size(
    segments: Sequence[RetainedSegment], *, retention_bytes: int, limit: int
) -> int:
    """How many oldest segments can go while the rest still hold ``retention_bytes``."""
    if retention_bytes == -1:
        return 0
    excess = sum(segment.size for segment in segments) - retention_bytes

    def over_size(segment: RetainedSegment) -> bool:
        nonlocal excess
        if excess - segment.size < 0:
            return False
        excess -= segment.size
        return True

    return _prefix(segments, limit, over_size)
