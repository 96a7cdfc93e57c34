"""Which offsets the cleaner may clean and when a log is due (pure functions)."""

from __future__ import annotations

import attrs
import pytest

from quorum.log.cleaner_plan import (
    CleanerConfig,
    CleaningCandidate,
    OffsetMap,
    choose_log,
    cleanable_offsets,
    group_segments,
    judge_log,
)

NOW = 1_000_000


@attrs.frozen
class FakeSegment:
    base_offset: int
    size: int
    newest_ms: int = 0
    first_ms: int = 0

    def largest_timestamp_ms(self) -> int:
        return self.newest_ms

    def first_batch_timestamp(self) -> int:
        return self.first_ms


# four closed segments of 100 offsets and 1,000 bytes, then the active one
SEGMENTS = [
    FakeSegment(0, 1_000, newest_ms=NOW - 4_000, first_ms=NOW - 5_000),
    FakeSegment(100, 1_000, newest_ms=NOW - 3_000, first_ms=NOW - 4_000),
    FakeSegment(200, 1_000, newest_ms=NOW - 2_000, first_ms=NOW - 3_000),
    FakeSegment(300, 1_000, newest_ms=NOW - 1_000, first_ms=NOW - 2_000),
    FakeSegment(400, 500, newest_ms=NOW, first_ms=NOW - 1_000),
]
CONFIG = CleanerConfig()


def _offsets(
    *, checkpoint: int | None = None, hw: int = 450, config: CleanerConfig = CONFIG
) -> tuple[int, int]:
    found = cleanable_offsets(
        SEGMENTS,
        checkpoint=checkpoint,
        log_start_offset=0,
        log_end_offset=450,
        high_watermark=hw,
        now_ms=NOW,
        config=config,
    )
    return found.first_dirty_offset, found.first_uncleanable_offset


def _judge(
    *, checkpoint: int | None = None, hw: int = 450, config: CleanerConfig = CONFIG
) -> CleaningCandidate:
    return judge_log(
        SEGMENTS,
        checkpoint=checkpoint,
        log_start_offset=0,
        log_end_offset=450,
        high_watermark=hw,
        now_ms=NOW,
        config=config,
    )


def test_the_range_ends_at_the_active_segment_or_the_high_watermark() -> None:
    assert _offsets() == (0, 400)
    assert _offsets(hw=250) == (0, 250)
    assert _offsets(checkpoint=200) == (200, 400)


def test_an_invalid_checkpoint_restarts_from_the_log_start() -> None:
    found = cleanable_offsets(
        SEGMENTS,
        checkpoint=900,
        log_start_offset=0,
        log_end_offset=450,
        high_watermark=450,
        now_ms=NOW,
        config=CONFIG,
    )
    assert (found.first_dirty_offset, found.reset_checkpoint) == (0, True)


def test_min_compaction_lag_stops_the_range_at_the_first_recent_segment() -> None:
    config = CleanerConfig(min_compaction_lag_ms=2_500)
    # segment 200 holds a batch 2,000 ms old: younger than the lag
    assert _offsets(config=config) == (0, 200)
    assert _offsets(config=CleanerConfig(min_compaction_lag_ms=500)) == (0, 400)


def test_cleanable_bytes_stop_at_the_segment_holding_the_uncleanable_offset() -> None:
    candidate = _judge(hw=250)
    assert candidate.first_uncleanable_offset == 200
    assert candidate.cleanable_bytes == 2_000
    assert candidate.clean_bytes == 0


def test_the_dirty_ratio_decides_unless_max_compaction_lag_forces_a_clean() -> None:
    candidate = _judge(checkpoint=300)
    assert candidate.dirty_ratio == pytest.approx(1_000 / 4_000)
    assert not candidate.is_due(CleanerConfig(min_cleanable_dirty_ratio=0.5))
    assert candidate.is_due(CleanerConfig(min_cleanable_dirty_ratio=0.2))
    # Kafka compares with >: a ratio equal to the minimum is not enough
    assert not candidate.is_due(CleanerConfig(min_cleanable_dirty_ratio=0.25))
    forced = CleanerConfig(min_cleanable_dirty_ratio=0.5, max_compaction_lag_ms=1_500)
    assert _judge(checkpoint=300, config=forced).is_due(forced)
    lazy = CleanerConfig(min_cleanable_dirty_ratio=0.5, max_compaction_lag_ms=2_500)
    assert not _judge(checkpoint=300, config=lazy).is_due(lazy)


def test_nothing_dirty_is_never_due_even_past_max_compaction_lag() -> None:
    config = CleanerConfig(min_cleanable_dirty_ratio=0.0, max_compaction_lag_ms=1)
    candidate = _judge(checkpoint=400, config=config)
    assert candidate.cleanable_bytes == 0
    assert not candidate.is_due(config)


def test_the_filthiest_due_log_is_chosen_and_a_non_compacted_one_never() -> None:
    low, high = _judge(checkpoint=300), _judge(checkpoint=100)
    config = CleanerConfig(min_cleanable_dirty_ratio=0.1)
    assert choose_log([("low", low, config), ("high", high, config)]) == ("high", high)
    off = attrs.evolve(config, compact=False)
    assert choose_log([("low", low, config), ("high", high, off)]) == ("low", low)
    assert choose_log([("high", high, off)]) is None


def test_small_segments_are_grouped_up_to_segment_bytes() -> None:
    segments = [FakeSegment(i * 10, size) for i, size in enumerate([300, 300, 300, 900, 50, 50])]
    groups = group_segments(segments, max_bytes=1_000, upper_offset=60)
    assert [list(g) for g in groups] == [[0, 1, 2], [3, 4, 5]]
    assert [list(g) for g in group_segments(segments, max_bytes=100, upper_offset=60)] == [
        [0], [1], [2], [3], [4, 5],
    ]


def test_a_group_never_spans_more_offsets_than_an_int32_delta() -> None:
    segments = [FakeSegment(0, 10), FakeSegment(2**31, 10), FakeSegment(2**31 + 10, 10)]
    groups = group_segments(segments, max_bytes=1_000, upper_offset=2**31 + 20)
    assert [list(g) for g in groups] == [[0], [1, 2]]


def test_the_offset_map_keeps_the_latest_offset_and_refuses_new_keys_when_full() -> None:
    offsets = OffsetMap(2)
    assert offsets.put(b"a", 1) and offsets.put(b"b", 2) and offsets.put(b"a", 3)
    assert not offsets.put(b"c", 4)
    assert (offsets.get(b"a"), offsets.get(b"b"), offsets.get(b"c")) == (3, 2, -1)
    offsets.update_latest_offset(9)
    offsets.update_latest_offset(5)
    assert offsets.latest_offset == 9
