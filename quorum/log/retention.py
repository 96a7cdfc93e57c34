"""Which old segments retention deletes: Kafka's ``UnifiedLog.deleteOldSegments``.

Pure policy over segment facts; the file log and the memory log's segment
model do the deleting.  Each rule picks a prefix of the segments (oldest
first, Kafka's ``deletableSegments``) and stops at the first segment it keeps:

* a segment whose offsets reach past the high watermark is kept (the log
  start offset never passes the high watermark);
* the active (last) segment is kept when it is empty, and, for the metadata
  log (``include_active=False``), always;
* ``start_breached``: the next segment starts at or below the log start offset;
* ``size_breached``: while the log is larger than ``retention.bytes``, a
  segment goes if the rest still holds at least ``retention.bytes``;
* ``time_breached``: the segment's largest timestamp is more than
  ``retention.ms`` before now.

Kafka applies the three in that order; the caller deletes each prefix before
asking the next rule.  When a rule takes every segment, the caller first rolls
a new empty active segment at the log end (so a partition that stays idle
past ``retention.ms`` ends up empty, its log start at its log end).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

__all__ = [
    "RetainedSegment",
    "expired_by_size",
    "expired_by_time",
    "size_breached",
    "start_breached",
    "time_breached",
]


class RetainedSegment(Protocol):
    @property
    def next_offset(self) -> int: ...

    @property
    def size(self) -> int: ...

    def largest_timestamp_ms(self) -> int: ...


Doomed = Callable[[RetainedSegment, "RetainedSegment | None"], bool]


def _deletable(
    segments: Sequence[RetainedSegment],
    *,
    high_watermark: int,
    include_active: bool,
    doomed: Doomed,
) -> int:
    count = 0
    while count < len(segments):
        segment = segments[count]
        following = segments[count + 1] if count + 1 < len(segments) else None
        if following is None and (not include_active or segment.size == 0):
            break
        # the next segment's base offset, or the log end for the active one
        if high_watermark < segment.next_offset or not doomed(segment, following):
            break
        count += 1
    return count


def start_breached(
    segments: Sequence[RetainedSegment],
    *,
    log_start_offset: int,
    high_watermark: int,
    include_active: bool = True,
) -> int:
    """How many oldest segments lie wholly below the log start offset."""

    def below_start(segment: RetainedSegment, following: RetainedSegment | None) -> bool:
        return following is not None and segment.next_offset <= log_start_offset

    return _deletable(
        segments,
        high_watermark=high_watermark,
        include_active=include_active,
        doomed=below_start,
    )


def size_breached(
    segments: Sequence[RetainedSegment],
    *,
    retention_bytes: int,
    high_watermark: int,
    include_active: bool = True,
) -> int:
    """How many oldest segments can go while the rest still hold ``retention_bytes``."""
    total = sum(segment.size for segment in segments)
    if retention_bytes < 0 or total < retention_bytes:
        return 0
    excess = total - retention_bytes

    def over_size(segment: RetainedSegment, _: RetainedSegment | None) -> bool:
        nonlocal excess
        if excess - segment.size < 0:
            return False
        excess -= segment.size
        return True

    return _deletable(
        segments,
        high_watermark=high_watermark,
        include_active=include_active,
        doomed=over_size,
    )


def time_breached(
    segments: Sequence[RetainedSegment],
    *,
    now_ms: int,
    retention_ms: int,
    high_watermark: int,
    include_active: bool = True,
) -> int:
    """How many oldest segments have no batch newer than ``retention_ms`` before ``now_ms``."""
    if retention_ms < 0:
        return 0

    def expired(segment: RetainedSegment, _: RetainedSegment | None) -> bool:
        return now_ms - segment.largest_timestamp_ms() > retention_ms

    return _deletable(
        segments,
        high_watermark=high_watermark,
        include_active=include_active,
        doomed=expired,
    )


def expired_by_time(
    segments: Sequence[RetainedSegment], *, now_ms: int, retention_ms: int, limit: int
) -> int:
    """``time_breached`` for the metadata log: never the active segment, nothing past ``limit``."""
    return time_breached(
        segments, now_ms=now_ms, retention_ms=retention_ms, high_watermark=limit, include_active=False
    )


def expired_by_size(
    segments: Sequence[RetainedSegment], *, retention_bytes: int, limit: int
) -> int:
    """``size_breached`` for the metadata log: never the active segment, nothing past ``limit``."""
    return size_breached(
        segments, retention_bytes=retention_bytes, high_watermark=limit, include_active=False
    )
