"""The log cleaner on a file log: what survives a clean, and what reads see after it."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from quorum.log import CLEANER_OFFSET_CHECKPOINT, CleanerConfig, FileLog, LogCleaner
from quorum.wire.batch import ATTR_DELETE_HORIZON
from quorum.wire.compression import Compression
from quorum.wire.records import iter_batches

from .compaction import (
    CLEANER,
    COMPACTED,
    T0,
    clean,
    keyed_batch,
    latest_by_key,
    open_log,
    read_batches,
    read_entries,
)

KEYS = [f"k{i}".encode() for i in range(4)]


def _rounds(log: FileLog, rounds: int, *, start: int = 0, timestamp: int = T0) -> None:
    """``rounds`` batches, each writing every key once (value ``v<round>``)."""
    for r in range(start, start + rounds):
        pairs = [(key, f"v{r}".encode()) for key in KEYS]
        log.append(keyed_batch(pairs, timestamp=timestamp + r), epoch=1)


@pytest.fixture
def log(tmp_path: Path) -> Iterator[FileLog]:
    opened = open_log(tmp_path / "topic-0")
    yield opened
    opened.close()


def _unique(log: FileLog, batches: int, *, start: int = 0) -> None:
    """``batches`` batches of two keys never written before."""
    for b in range(start, start + batches):
        log.append(keyed_batch([(f"u{b}a".encode(), b"x"), (f"u{b}b".encode(), b"y")]), epoch=1)


def _closed_end(log: FileLog) -> int:
    return log.segments[-1].base_offset


def test_the_latest_value_of_each_key_survives_and_older_ones_go(log: FileLog) -> None:
    _rounds(log, 12)
    before = read_entries(log)
    end = _closed_end(log)
    assert len(log.segments) > 3

    result = clean(LogCleaner(), log, now_ms=T0 + 100)

    assert result.end_offset == end
    after = read_entries(log)
    cleaned = [e for e in after if e.offset < end]
    # below the active segment: one record per key, the latest one written there
    latest_below = latest_by_key([e for e in before if e.offset < end])
    assert sorted(cleaned, key=lambda e: e.offset) == sorted(
        latest_below.values(), key=lambda e: e.offset
    )
    # the whole log still reads the latest value of every key
    assert latest_by_key(after) == latest_by_key(before)
    assert log.log_end_offset == before[-1].offset + 1


def test_offsets_are_kept_and_a_fetch_of_a_removed_offset_returns_the_next_record(
    log: FileLog,
) -> None:
    _rounds(log, 12)
    before = {e.offset: e for e in read_entries(log)}
    clean(LogCleaner(), log, now_ms=T0 + 100)
    after = read_entries(log)
    offsets = [e.offset for e in after]

    assert offsets == sorted(set(offsets))
    assert all(before[e.offset] == e for e in after)
    removed = sorted(set(before) - set(offsets))
    assert removed
    for offset in removed:
        result = log.read(offset, 1)
        first = next(iter_batches(result.records))
        # the first batch returned holds the offset asked for or starts after it
        assert first.header.last_offset >= offset
        at_or_after = [first.offset_of(r) for r in first.records if first.offset_of(r) >= offset]
        # ... and its first record from there is the next one the log has (an empty
        # batch, kept for its producer or its place, has none)
        if at_or_after:
            assert at_or_after[0] == min(o for o in offsets if o > offset)


def test_the_active_segment_is_left_as_it_was(log: FileLog) -> None:
    _rounds(log, 12)
    active = log.segments[-1]
    raw = active.log_path.read_bytes()
    active_entries = [e for e in read_entries(log) if e.offset >= active.base_offset]
    assert active_entries

    clean(LogCleaner(), log, now_ms=T0 + 100)

    assert log.segments[-1] is active
    assert active.log_path.read_bytes() == raw
    assert [e for e in read_entries(log) if e.offset >= active.base_offset] == active_entries
    # older values that only the active segment supersedes are still below it: the map
    # never looks at the active segment
    below = [e for e in read_entries(log) if e.offset < active.base_offset]
    assert {e.key for e in below} == set(KEYS)


def test_the_high_watermark_bounds_what_is_cleaned(log: FileLog) -> None:
    _rounds(log, 12)
    third = log.segments[2].base_offset
    assert len(log.segments) > 3  # the third is a closed segment
    before = read_entries(log)

    result = clean(LogCleaner(), log, now_ms=T0 + 100, high_watermark=third + 1)

    assert result.end_offset == third
    assert [e for e in read_entries(log) if e.offset >= third] == [
        e for e in before if e.offset >= third
    ]


def test_tombstones_stay_until_delete_retention_ms_after_the_clean_that_kept_them(
    log: FileLog,
) -> None:
    cleaner = LogCleaner()
    log.append(keyed_batch([(b"gone", b"v1"), (b"kept", b"v1")]), epoch=1)
    log.append(keyed_batch([(b"gone", None)]), epoch=1)
    _rounds(log, 6)
    first_clean = T0 + 10_000
    clean(cleaner, log, now_ms=first_clean)
    tombstones = [e for e in read_entries(log) if e.key == b"gone"]
    assert [e.value for e in tombstones] == [None]
    horizon_batch = next(h for h, es in read_batches(log) if any(e.key == b"gone" for e in es))
    assert horizon_batch.attributes & ATTR_DELETE_HORIZON
    assert horizon_batch.base_timestamp == first_clean + CLEANER.delete_retention_ms

    # a later clean before the horizon keeps it; one at the horizon drops it
    _rounds(log, 6, start=6)
    clean(cleaner, log, now_ms=first_clean + CLEANER.delete_retention_ms - 1)
    assert [e.value for e in read_entries(log) if e.key == b"gone"] == [None]
    _rounds(log, 6, start=12)
    clean(cleaner, log, now_ms=first_clean + CLEANER.delete_retention_ms)
    assert [e for e in read_entries(log) if e.key == b"gone"] == []
    assert [e.value for e in read_entries(log) if e.key == b"kept"] == [b"v1"]


def test_a_tombstone_keeps_its_records_timestamps_when_the_horizon_is_set(log: FileLog) -> None:
    log.append(keyed_batch([(b"a", b"1"), (b"b", None), (b"c", b"3")], timestamp=T0), epoch=1)
    _rounds(log, 6)
    before = {e.offset: e.timestamp for e in read_entries(log)}
    clean(LogCleaner(), log, now_ms=T0 + 5_000)
    after = read_entries(log)
    assert [e.key for e in after[:3]] == [b"a", b"b", b"c"]
    assert all(before[e.offset] == e.timestamp for e in after)


def test_min_compaction_lag_keeps_recent_segments_dirty(log: FileLog) -> None:
    _rounds(log, 6, timestamp=T0)
    recent = log.log_end_offset
    _rounds(log, 6, start=6, timestamp=T0 + 60_000)
    config = attrs.evolve(CLEANER, min_compaction_lag_ms=30_000)
    before = read_entries(log)
    now = T0 + 70_000

    result = clean(LogCleaner(), log, now_ms=now, config=config)

    assert result.end_offset is not None and result.end_offset <= recent
    kept_recent = [e for e in read_entries(log) if e.offset >= result.end_offset]
    assert kept_recent == [e for e in before if e.offset >= result.end_offset]
    assert len({e.key for e in kept_recent}) < len(kept_recent)  # duplicates stay there


def test_a_log_below_the_dirty_ratio_is_not_due_and_one_above_is(log: FileLog) -> None:
    cleaner = LogCleaner()
    _unique(log, 40)
    clean(cleaner, log, now_ms=T0 + 100)  # nothing to remove: all of it stays, clean
    _unique(log, 6, start=40)
    config = attrs.evolve(CLEANER, min_cleanable_dirty_ratio=0.5)
    candidate = cleaner.judge(
        log, high_watermark=log.log_end_offset, now_ms=T0 + 100, config=config
    )
    assert 0 < candidate.dirty_ratio < 0.5
    assert not candidate.is_due(config)

    _unique(log, 80, start=46)
    candidate = cleaner.judge(
        log, high_watermark=log.log_end_offset, now_ms=T0 + 100, config=config
    )
    assert candidate.dirty_ratio > 0.5
    assert candidate.is_due(config)


def test_a_producers_last_batch_is_kept_even_when_every_record_in_it_is_superseded(
    log: FileLog,
) -> None:
    log.append(keyed_batch([(b"a", b"p0")], producer_id=7, base_sequence=0), epoch=1)
    log.append(keyed_batch([(b"a", b"p1"), (b"b", b"p1")], producer_id=7, base_sequence=1), epoch=1)
    last_of_7 = log.log_end_offset - 1
    for r in range(8):  # supersede a and b (not idempotent)
        log.append(keyed_batch([(b"a", f"n{r}".encode()), (b"b", b"n")]), epoch=1)

    clean(LogCleaner(), log, now_ms=T0 + 100)

    batches = read_batches(log)
    of_7 = [(h, es) for h, es in batches if h.producer_id == 7]
    assert len(of_7) == 1  # the earlier batch of producer 7 went
    header, entries = of_7[0]
    assert entries == [] and header.record_count == 0
    assert header.last_offset == last_of_7
    assert header.base_sequence == 1 and header.producer_epoch == 0


def test_compressed_batches_stay_compressed(log: FileLog) -> None:
    for r in range(8):
        # each batch keeps its own key and loses the others: cleaning re-encodes it
        pairs = [*((key, f"v{r}".encode() * 10) for key in KEYS), (f"own{r}".encode(), b"x")]
        log.append(keyed_batch(pairs, compression=Compression.GZIP), epoch=1)
    before = read_entries(log)
    clean(LogCleaner(), log, now_ms=T0 + 100)
    headers = [h for h, es in read_batches(log) if es]
    assert any(h.record_count < 5 for h in headers)  # some were re-encoded
    assert headers and all(h.compression == Compression.GZIP for h in headers)
    assert latest_by_key(read_entries(log)) == latest_by_key(before)


def test_the_checkpoint_is_kafkas_file_and_a_new_cleaner_goes_on_from_it(
    log: FileLog, tmp_path: Path
) -> None:
    cleaner = LogCleaner()
    _rounds(log, 12)
    result = clean(cleaner, log, now_ms=T0 + 100)
    cleaner.write_checkpoint(tmp_path)

    text = (tmp_path / CLEANER_OFFSET_CHECKPOINT).read_text()
    assert text == f"0\n1\ntopic 0 {result.end_offset}\n"
    again = LogCleaner()
    assert again.checkpoint_of(log) == result.end_offset
    candidate = again.judge(
        log, high_watermark=log.log_end_offset, now_ms=T0 + 100, config=CLEANER
    )
    assert candidate.first_dirty_offset == result.end_offset
    assert candidate.cleanable_bytes == 0


def test_a_second_clean_of_a_clean_log_changes_nothing(log: FileLog) -> None:
    cleaner = LogCleaner()
    _rounds(log, 12)
    clean(cleaner, log, now_ms=T0 + 100)
    before = [(h, es) for h, es in read_batches(log)]
    result = clean(cleaner, log, now_ms=T0 + 100)
    assert result.end_offset is None
    assert read_batches(log) == before


def test_a_cleaned_log_reopens_after_an_unclean_shutdown(log: FileLog) -> None:
    _rounds(log, 12)
    clean(LogCleaner(), log, now_ms=T0 + 100)
    entries = read_entries(log)
    end = log.log_end_offset
    log.abandon()
    reopened = open_log(log.directory)
    try:
        assert read_entries(reopened) == entries
        assert reopened.log_end_offset == end
        reopened.append(keyed_batch([(b"k0", b"new")]), epoch=1)
        assert read_entries(reopened)[-1].offset == end
    finally:
        reopened.close()


def test_truncation_into_a_cleaned_gap_ends_the_log_after_the_batch_before_it(
    log: FileLog,
) -> None:
    _unique(log, 1)
    _rounds(log, 12)
    clean(LogCleaner(), log, now_ms=T0 + 100)
    headers = [h for h, _ in read_batches(log)]
    # a whole batch removed: the offsets between two batches that are kept
    before_gap = next(a for a, b in itertools.pairwise(headers) if a.next_offset + 1 < b.base_offset)
    kept_before = [e for e in read_entries(log) if e.offset < before_gap.next_offset]
    log.truncate_to(before_gap.next_offset + 1)
    assert log.log_end_offset == before_gap.next_offset
    assert read_entries(log) == kept_before
    assert [h for h, _ in read_batches(log)][-1] == before_gap


def test_keys_past_a_full_offset_map_are_cleaned_in_the_next_round(log: FileLog) -> None:
    cleaner = LogCleaner()
    _unique(log, 6)
    _rounds(log, 12)
    before = read_entries(log)
    small = CleanerConfig(min_cleanable_dirty_ratio=0.0, offset_map_entries=5)
    first = clean(cleaner, log, now_ms=T0 + 100, config=small)
    assert first.end_offset is not None and first.end_offset < _closed_end(log)
    for _ in range(20):
        if clean(cleaner, log, now_ms=T0 + 100, config=small).end_offset is None:
            break
    assert cleaner.checkpoint_of(log) == _closed_end(log)
    assert latest_by_key(read_entries(log)) == latest_by_key(before)



def test_each_cleaned_segment_ends_where_the_next_begins(log: FileLog) -> None:
    _rounds(log, 12)
    # groups of one segment each: every group's last batch is superseded by a later one
    config = attrs.evolve(CLEANER, segment_bytes=COMPACTED.segment_bytes)
    clean(LogCleaner(), log, now_ms=T0 + 100, config=config)
    entries = read_entries(log)
    assert len(log.segments) >= 3
    for segment, following in itertools.pairwise(log.segments):
        assert segment.iter_headers()[-1][3] + 1 == following.base_offset
    # so recovery, which takes a segment ending early for a torn one, keeps everything
    end = log.log_end_offset
    log.abandon()
    reopened = open_log(log.directory)
    try:
        assert read_entries(reopened) == entries
        assert reopened.log_end_offset == end
    finally:
        reopened.close()
