"""Retention policy: which prefix of old segments goes, by time and by size."""

from __future__ import annotations

import attrs

from quorum.log.retention import expired_by_size, expired_by_time


@attrs.frozen
class FakeSegment:
    size: int
    next_offset: int
    newest_ms: int

    def largest_timestamp_ms(self) -> int:
        return self.newest_ms


SEGMENTS = [FakeSegment(100, 10, 1_000), FakeSegment(100, 20, 5_000), FakeSegment(100, 30, 2_000)]
ACTIVE = FakeSegment(50, 35, 9_000)


def test_time_retention_stops_at_the_first_segment_it_keeps() -> None:
    segments = [*SEGMENTS, ACTIVE]
    assert expired_by_time(segments, now_ms=7_000, retention_ms=3_000, limit=100) == 1
    assert expired_by_time(segments, now_ms=9_000, retention_ms=3_000, limit=100) == 3


def test_size_retention_keeps_at_least_the_retained_bytes() -> None:
    segments = [*SEGMENTS, ACTIVE]
    assert expired_by_size(segments, retention_bytes=200, limit=100) == 1
    assert expired_by_size(segments, retention_bytes=150, limit=100) == 2
    assert expired_by_size(segments, retention_bytes=10, limit=100) == 3


def test_nothing_at_or_above_the_limit_and_never_the_active_segment_is_picked() -> None:
    segments = [*SEGMENTS, ACTIVE]
    assert expired_by_size(segments, retention_bytes=10, limit=20) == 2
    assert expired_by_size(segments, retention_bytes=10, limit=19) == 1
    assert expired_by_time([ACTIVE], now_ms=10**12, retention_ms=1, limit=100) == 0


def test_unlimited_retention_picks_nothing() -> None:
    segments = [*SEGMENTS, ACTIVE]
    assert expired_by_time(segments, now_ms=10**12, retention_ms=-1, limit=100) == 0
    assert expired_by_size(segments, retention_bytes=-1, limit=100) == 0
