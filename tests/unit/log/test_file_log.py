"""The file log's on-disk layout, rolling, reopening, log start and retention."""

from __future__ import annotations

from pathlib import Path

import pytest

from quorum.log import FileLog, LogConfig, OffsetAndEpoch, partition_dir
from quorum.log.segment import Segment

from .batches import batch_offsets, make_batch, run_of_batches

SMALL = LogConfig(segment_bytes=600, index_interval_bytes=128)


def fill(log: FileLog, batches: int, *, epoch: int = 1, records: int = 3) -> None:
    for i in range(batches):
        log.append(make_batch(records, tag=i), epoch=epoch)


def read_all(log: FileLog, start: int | None = None) -> bytes:
    offset = log.log_start_offset if start is None else start
    chunks = []
    while offset < log.log_end_offset:
        result = log.read(offset, 1 << 20)
        chunks.append(bytes(result.records))
        offset = result.next_offset
    return b"".join(chunks)


def names(directory: Path, suffix: str) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(suffix))


def test_the_directory_has_kafkas_layout(tmp_path: Path) -> None:
    directory = partition_dir(tmp_path, "orders", 3)
    log = FileLog(directory, SMALL)
    log.append_as_follower(run_of_batches([3, 3], epochs=[1, 4]))
    log.close()
    assert directory == tmp_path / "orders-3"
    assert names(directory, ".log") == ["00000000000000000000.log"]
    assert names(directory, ".index") == ["00000000000000000000.index"]
    assert (directory / "leader-epoch-checkpoint").read_text() == "0\n2\n1 0\n4 3\n"
    assert (directory / "log-start-offset-checkpoint").read_text() == "0\n1\n0\n"


def test_segments_roll_by_size_and_are_named_by_base_offset(tmp_path: Path) -> None:
    log = FileLog(tmp_path / "t-0", SMALL)
    fill(log, 12)
    bases = [segment.base_offset for segment in log.segments]
    assert len(bases) > 2
    assert names(tmp_path / "t-0", ".log") == [f"{base:020d}.log" for base in bases]
    assert all(segment.size <= SMALL.segment_bytes for segment in log.segments)
    for before, after in zip(log.segments, log.segments[1:], strict=False):
        assert before.next_offset == after.base_offset
    log.close()


def test_rolling_syncs_the_old_segment_so_flushed_offset_moves(tmp_path: Path) -> None:
    log = FileLog(tmp_path / "t-0", SMALL)
    fill(log, 12)
    assert log.flushed_offset == log.segments[-1].base_offset > 0
    log.close()


def test_a_read_stops_at_the_end_of_a_segment(tmp_path: Path) -> None:
    log = FileLog(tmp_path / "t-0", SMALL)
    fill(log, 12)
    first = log.segments[0]
    result = log.read(0, 1 << 20)
    assert result.next_offset == first.next_offset
    assert len(result.records) == first.size
    log.close()


def test_every_offset_reads_from_the_batch_that_contains_it(tmp_path: Path) -> None:
    log = FileLog(tmp_path / "t-0", LogConfig(segment_bytes=2000, index_interval_bytes=100))
    for i in range(30):
        log.append(make_batch(1 + i % 4, tag=i), epoch=1)
    assert any(len(segment.index) > 2 for segment in log.segments)
    for offset in range(log.log_end_offset):
        base, last, _ = batch_offsets(log.read(offset, 1).records)[0]
        assert base <= offset <= last
    log.close()


def _scanned_batch(segment: Segment, offset: int) -> tuple[int, int, int]:
    """(position, size, base offset) of ``offset``'s batch, by reading every header."""
    for position, base, size, last in segment.iter_headers():
        if base <= offset <= last:
            return position, size, base
    raise AssertionError(f"offset {offset} is not in {segment}")


def _assert_locate_agrees_with_a_scan(log: FileLog) -> None:
    for segment in log.segments:
        for offset in range(segment.base_offset, segment.next_offset):
            assert segment.locate(offset) == _scanned_batch(segment, offset), offset


@pytest.mark.parametrize("index_interval_bytes", [200, 100_000])
def test_locating_a_batch_agrees_with_a_header_scan_through_truncations_and_reopens(
    tmp_path: Path, index_interval_bytes: int
) -> None:
    config = LogConfig(segment_bytes=1500, index_interval_bytes=index_interval_bytes)
    log = FileLog(tmp_path / "t-0", config)
    for round_ in range(6):
        for i in range(9):
            log.append(make_batch(1 + (i + round_) % 4, tag=i), epoch=round_ + 1)
            _assert_locate_agrees_with_a_scan(log)
        # cut inside the active segment, then at a segment's first offset
        log.truncate_to(log.log_end_offset - 5)
        _assert_locate_agrees_with_a_scan(log)
        log.truncate_to(log.segments[-1].base_offset)
        _assert_locate_agrees_with_a_scan(log)
    log.close()
    reopened = FileLog(tmp_path / "t-0", config)
    _assert_locate_agrees_with_a_scan(reopened)
    reopened.append(make_batch(3), epoch=9)
    _assert_locate_agrees_with_a_scan(reopened)
    reopened.close()


def test_a_read_near_the_end_reads_no_batch_headers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = FileLog(tmp_path / "t-0", LogConfig(index_interval_bytes=4096))
    fill(log, 40)  # about 3 KiB: all after the first index entry would be
    header_reads: list[int] = []
    real = Segment._header_at

    def counting(segment: Segment, position: int) -> tuple[int, int, int]:
        header_reads.append(position)
        return real(segment, position)

    monkeypatch.setattr(Segment, "_header_at", counting)
    last_batch = log.read(log.log_end_offset - 1, 1 << 20)
    assert (last_batch.base_offset, last_batch.next_offset) == (117, 120)
    assert header_reads == []
    log.close()


def test_reopening_restores_offsets_epochs_and_data(tmp_path: Path) -> None:
    log = FileLog(tmp_path / "t-0", SMALL)
    fill(log, 5, epoch=1)
    fill(log, 5, epoch=3)
    before = read_all(log)
    epochs = [log.end_offset_for_epoch(e) for e in range(5)]
    log.close()
    reopened = FileLog(tmp_path / "t-0", SMALL)
    assert reopened.log_end_offset == 30
    assert reopened.flushed_offset == 30
    assert read_all(reopened) == before
    assert [reopened.end_offset_for_epoch(e) for e in range(5)] == epochs
    reopened.close()


def test_reopening_without_verifying_closed_segments_trusts_their_index(tmp_path: Path) -> None:
    trusting = LogConfig(
        segment_bytes=600, index_interval_bytes=128, verify_closed_segments_on_open=False
    )
    log = FileLog(tmp_path / "t-0", trusting)
    fill(log, 12, epoch=2)
    before = read_all(log)
    log.close()
    reopened = FileLog(tmp_path / "t-0", trusting)
    assert read_all(reopened) == before
    assert reopened.end_offset_for_epoch(2) == OffsetAndEpoch(36, 2)
    reopened.close()


def test_truncation_across_segments_deletes_the_later_files(tmp_path: Path) -> None:
    log = FileLog(tmp_path / "t-0", SMALL)
    fill(log, 12)
    second = log.segments[1]
    log.truncate_to(second.base_offset + 1)
    assert log.log_end_offset == second.base_offset
    assert len(log.segments) == 2 and log.segments[1].size == 0
    assert len(names(tmp_path / "t-0", ".log")) == 2
    log.append(make_batch(2), epoch=2)
    log.close()
    reopened = FileLog(tmp_path / "t-0", SMALL)
    assert reopened.log_end_offset == second.base_offset + 2
    assert reopened.end_offset_for_epoch(1) == OffsetAndEpoch(second.base_offset, 1)
    reopened.close()


def test_the_log_start_offset_survives_a_reopen(tmp_path: Path) -> None:
    log = FileLog(tmp_path / "t-0", SMALL)
    fill(log, 12)
    log.advance_log_start_offset(20)
    assert log.segments[0].base_offset <= 20 < log.segments[0].next_offset
    log.close()
    reopened = FileLog(tmp_path / "t-0", SMALL)
    assert reopened.log_start_offset == 20
    assert reopened.end_offset_for_epoch(0) == OffsetAndEpoch(20, 0)
    reopened.close()


def test_truncate_fully_survives_a_reopen(tmp_path: Path) -> None:
    log = FileLog(tmp_path / "t-0", SMALL)
    fill(log, 12)
    log.truncate_fully_and_start_at(500)
    log.close()
    assert names(tmp_path / "t-0", ".log") == [f"{500:020d}.log"]
    reopened = FileLog(tmp_path / "t-0", SMALL)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (500, 500)
    assert reopened.last_fetched_epoch == 0
    reopened.close()


def test_a_log_start_past_the_recovered_end_restarts_the_log_there(tmp_path: Path) -> None:
    log = FileLog(tmp_path / "t-0", SMALL)
    fill(log, 2)
    log.close()
    (tmp_path / "t-0" / "log-start-offset-checkpoint").write_text("0\n1\n40\n")
    reopened = FileLog(tmp_path / "t-0", SMALL)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (40, 40)
    reopened.close()


def test_retention_by_bytes_deletes_the_oldest_segments(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=600, retention_bytes=1200, retention_ms=-1)
    log = FileLog(tmp_path / "t-0", config)
    fill(log, 20)
    deleted = log.maybe_apply_retention(0, max_deletable_offset=log.log_end_offset)
    assert deleted > 0
    assert log.size_in_bytes >= 1200
    assert log.size_in_bytes - log.segments[0].size < 1200
    assert log.log_start_offset == log.segments[0].base_offset
    log.close()


def test_retention_never_deletes_past_the_callers_limit(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=600, retention_bytes=100, retention_ms=-1)
    log = FileLog(tmp_path / "t-0", config)
    fill(log, 20)
    limit = log.segments[2].next_offset
    log.maybe_apply_retention(0, max_deletable_offset=limit)
    assert log.segments[0].next_offset > limit - 1
    assert log.log_start_offset <= limit
    log.close()


def test_retention_by_time_uses_the_largest_batch_timestamp(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=600, retention_ms=1000)
    log = FileLog(tmp_path / "t-0", config)
    for i in range(12):
        log.append(make_batch(3, timestamp=10_000 + i * 1000, tag=i), epoch=1)
    first_end = log.segments[0].next_offset
    kept_from = log.segments[1].base_offset
    newest_in_first = 10_000 + (first_end // 3 - 1) * 1000
    assert log.maybe_apply_retention(newest_in_first + 1000, max_deletable_offset=10**9) == 0
    assert log.maybe_apply_retention(newest_in_first + 1001, max_deletable_offset=10**9) == 1
    assert log.log_start_offset == kept_from
    log.close()


def test_retention_never_deletes_the_active_segment(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=600, retention_ms=1)
    log = FileLog(tmp_path / "t-0", config)
    fill(log, 12)
    log.maybe_apply_retention(10**15, max_deletable_offset=10**9)
    assert len(log.segments) == 1
    assert log.log_start_offset == log.segments[0].base_offset
    log.close()


def test_operations_after_close_are_refused(tmp_path: Path) -> None:
    log = FileLog(tmp_path / "t-0", SMALL)
    log.close()
    with pytest.raises(AssertionError, match="closed"):
        log.append(make_batch(1), epoch=1)


def test_flush_syncs_the_active_segment_only_when_it_has_new_data(
    tmp_path: Path, fsyncs: list[str]
) -> None:
    log = FileLog(tmp_path / "t-0", SMALL)
    log.append(make_batch(2), epoch=1)
    fsyncs.clear()
    assert log.flush() == 2
    assert fsyncs == [str(log.segments[-1].log_path)]
    fsyncs.clear()
    log.flush()
    assert fsyncs == []
    log.close()


def test_a_roll_syncs_the_old_segment_then_the_directory(tmp_path: Path, fsyncs: list[str]) -> None:
    log = FileLog(tmp_path / "t-0", SMALL)
    log.append(make_batch(2), epoch=1)
    old = log.segments[-1].log_path
    fsyncs.clear()
    log.roll()
    assert fsyncs == [str(old), str(tmp_path / "t-0")]
    log.close()


def test_a_new_epoch_is_checkpointed_before_its_batches_are_written(
    tmp_path: Path, fsyncs: list[str]
) -> None:
    log = FileLog(tmp_path / "t-0", SMALL)
    log.append(make_batch(2), epoch=1)
    fsyncs.clear()
    log.append(make_batch(2), epoch=2)
    checkpoint = tmp_path / "t-0" / "leader-epoch-checkpoint"
    assert fsyncs[:2] == [str(checkpoint) + ".tmp", str(tmp_path / "t-0")]
    assert checkpoint.read_text().endswith("2 2\n")
    log.close()


def test_opening_syncs_the_tail_before_calling_it_flushed(
    tmp_path: Path, fsyncs: list[str]
) -> None:
    log = FileLog(tmp_path / "t-0", SMALL)
    log.append(make_batch(2), epoch=1)
    log.abandon()  # as after kill -9: written, never synced
    fsyncs.clear()
    reopened = FileLog(tmp_path / "t-0", SMALL)
    assert reopened.flushed_offset == 2
    assert str(reopened.segments[-1].log_path) in fsyncs
    reopened.close()
