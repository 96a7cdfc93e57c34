"""A data partition's log: time index, ListOffsets by time, roll by time, retention by
time and size, the flush policy, recovery of the time index, the open-file bound."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from quorum.log import (
    FileLog,
    FlushReason,
    LogConfig,
    MemoryLog,
    OpenFiles,
    OpenMode,
    TimestampAndOffset,
)
from quorum.log.protocol import ReplicatedLog

from .batches import make_timed_batch

NOW = 1_700_000_000_000
# an index entry after every batch, so each batch's max timestamp can be indexed
DATA = LogConfig(
    segment_bytes=10_000,
    index_interval_bytes=0,
    segment_ms=60_000,
    retention_ms=600_000,
    verify_closed_segments_on_open=False,
)


class Clock:
    def __init__(self, now: int = NOW) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def data_log(
    directory: Path,
    config: LogConfig = DATA,
    *,
    clock: Clock | None = None,
    recovery_point: int = 0,
    clean_shutdown: bool = False,
    files: OpenFiles | None = None,
) -> FileLog:
    mode = OpenMode.for_data_partition(
        log_start_offset=None, recovery_point=recovery_point, clean_shutdown=clean_shutdown
    )
    return FileLog(
        directory,
        config,
        mode=mode,
        clock_ms=clock or Clock(),
        files=files or OpenFiles(max_open=16),
        lazy=True,
    )


@pytest.fixture(params=["file", "memory"])
def both(request: pytest.FixtureRequest, tmp_path: Path) -> ReplicatedLog:
    if request.param == "file":
        return data_log(tmp_path / "t-0")
    return MemoryLog(DATA, clock_ms=Clock())


def append_timed(log: ReplicatedLog, *batches: list[int], epoch: int = 1) -> None:
    for timestamps in batches:
        log.append(make_timed_batch(timestamps), epoch=epoch)


def time_index_entries(path: Path) -> list[tuple[int, int]]:
    raw = path.read_bytes()
    assert len(raw) % 12 == 0, "whole 12-byte entries only"
    return [struct.unpack_from(">qi", raw, at) for at in range(0, len(raw), 12)]


# -- ListOffsets by timestamp and MAX_TIMESTAMP -------------------------------------


def test_offset_for_timestamp_finds_the_first_record_at_or_after_the_target(
    both: ReplicatedLog,
) -> None:
    # offsets 0-2 in one batch whose records go back and forth in time, then 3, then 4-5
    append_timed(both, [NOW + 10, NOW + 50, NOW + 30], [NOW + 60], [NOW + 20, NOW + 70])
    lookup = both.offset_for_timestamp  # type: ignore[attr-defined]
    assert lookup(NOW) == TimestampAndOffset(timestamp=NOW + 10, offset=0, leader_epoch=1)
    assert lookup(NOW + 11) == TimestampAndOffset(timestamp=NOW + 50, offset=1, leader_epoch=1)
    assert lookup(NOW + 50) == TimestampAndOffset(timestamp=NOW + 50, offset=1, leader_epoch=1)
    assert lookup(NOW + 55) == TimestampAndOffset(timestamp=NOW + 60, offset=3, leader_epoch=1)
    assert lookup(NOW + 61) == TimestampAndOffset(timestamp=NOW + 70, offset=5, leader_epoch=1)
    assert lookup(NOW + 71) is None


def test_max_timestamp_is_the_first_record_with_the_largest_timestamp(
    both: ReplicatedLog,
) -> None:
    assert both.max_timestamp() is None  # type: ignore[attr-defined]
    append_timed(both, [NOW + 10, NOW + 90, NOW + 30], [NOW + 90], [NOW + 20])
    found = both.max_timestamp()  # type: ignore[attr-defined]
    assert (found.timestamp, found.offset) == (NOW + 90, 1)


def test_timestamps_below_the_log_start_offset_are_not_found(both: ReplicatedLog) -> None:
    append_timed(both, [NOW + 10], [NOW + 20], [NOW + 30])
    both.advance_log_start_offset(2)  # type: ignore[attr-defined]
    found = both.offset_for_timestamp(NOW)  # type: ignore[attr-defined]
    assert (found.timestamp, found.offset) == (NOW + 30, 2)


# -- the .timeindex file -------------------------------------------------------------


def test_the_time_index_holds_kafkas_entries_when_max_timestamps_grow(tmp_path: Path) -> None:
    log = data_log(tmp_path / "t-0")
    append_timed(log, [NOW + 100], [NOW + 300, NOW + 50], [NOW + 200], [NOW + 400])
    log.close()
    entries = time_index_entries(tmp_path / "t-0" / "00000000000000000000.timeindex")
    # (timestamp, relative offset of the last offset of the batch that reached it); as in
    # Kafka's LogSegment.append an entry is due once bytes were appended since the last
    # one, checked before a batch's own bytes count: none for the first batch
    assert entries == [(NOW + 300, 2), (NOW + 400, 4)]


def test_a_torn_or_missing_time_index_is_rebuilt_by_recovery(tmp_path: Path) -> None:
    log = data_log(tmp_path / "t-0")
    append_timed(log, [NOW + 100], [NOW + 300], [NOW + 200, NOW + 500])
    log.flush()
    log.close()
    index = tmp_path / "t-0" / "00000000000000000000.timeindex"
    expected = time_index_entries(index)
    index.write_bytes(index.read_bytes()[:17])
    reopened = data_log(tmp_path / "t-0")
    found = reopened.offset_for_timestamp(NOW + 400)
    assert found is not None and found.offset == 3
    reopened.close()
    assert time_index_entries(index) == expected

    index.unlink()
    again = data_log(tmp_path / "t-0")
    assert again.max_timestamp() == found
    again.close()
    assert time_index_entries(index) == expected


def test_truncation_cuts_the_time_index(tmp_path: Path) -> None:
    log = data_log(tmp_path / "t-0")
    append_timed(log, [NOW + 100], [NOW + 300], [NOW + 500])
    log.truncate_to(2)
    assert log.max_timestamp() == TimestampAndOffset(timestamp=NOW + 300, offset=1, leader_epoch=1)
    assert log.offset_for_timestamp(NOW + 301) is None
    log.close()
    index = tmp_path / "t-0" / "00000000000000000000.timeindex"
    assert time_index_entries(index) == [(NOW + 300, 1)]


# -- roll by time ---------------------------------------------------------------------


def test_a_segment_rolls_once_its_batches_span_more_than_segment_ms(both: ReplicatedLog) -> None:
    # Kafka's shouldRoll: the incoming max timestamp minus the first batch's exceeds it
    append_timed(both, [NOW], [NOW + 60_000])
    append_timed(both, [NOW + 60_001])
    if isinstance(both, FileLog):
        assert [s.base_offset for s in both.segments] == [0, 2]
    else:
        assert [row[0] for row in both.segment_summary()] == [0, 2]


# -- retention ------------------------------------------------------------------------


def test_retention_by_time_deletes_an_idle_partitions_segments(tmp_path: Path) -> None:
    clock = Clock()
    log = data_log(tmp_path / "t-0", clock=clock)
    append_timed(log, [NOW - 700_000], [NOW - 650_000])
    log.roll()
    append_timed(log, [NOW - 100])
    clock.now += 10
    # the old segment is past retention.ms by its largest timestamp; the new one is not
    assert log.delete_old_segments(clock.now, high_watermark=3) == 1
    assert log.log_start_offset == 2
    # an idle partition: time passes, no appends; the active segment goes too, and the
    # log is empty at its end
    clock.now += 600_000
    assert log.delete_old_segments(clock.now, high_watermark=3) == 1
    assert (log.log_start_offset, log.log_end_offset) == (3, 3)
    append_timed(log, [clock.now])
    assert log.read(3, 1000).next_offset == 4


def test_retention_never_deletes_above_the_high_watermark(tmp_path: Path) -> None:
    clock = Clock(NOW + 10_000_000)
    log = data_log(tmp_path / "t-0", clock=clock)
    append_timed(log, [NOW], [NOW])
    log.roll()
    append_timed(log, [NOW])
    assert log.delete_old_segments(clock.now, high_watermark=1) == 0
    assert log.delete_old_segments(clock.now, high_watermark=2) == 1
    assert log.log_start_offset == 2


def test_retention_by_size_deletes_the_oldest_segments(tmp_path: Path) -> None:
    config = LogConfig(
        segment_bytes=10_000, retention_bytes=200, verify_closed_segments_on_open=False
    )
    log = data_log(tmp_path / "t-0", config)
    for i in range(4):
        append_timed(log, [NOW + i])
        log.roll()
    sizes = [s.size for s in log.segments]
    assert sum(sizes) > 200
    # Kafka's deleteRetentionSizeBreachedSegments: only while deleting a whole segment
    # keeps the log at or above retention.bytes
    before = log.size_in_bytes
    deleted = log.delete_old_segments(NOW, high_watermark=log.log_end_offset)
    assert deleted == 1
    assert log.size_in_bytes == before - sizes[0]
    assert log.size_in_bytes - log.segments[0].size < 200
    assert log.log_start_offset == log.segments[0].base_offset


def test_delete_records_moves_the_log_start_but_never_past_the_high_watermark(
    tmp_path: Path,
) -> None:
    log = data_log(tmp_path / "t-0")
    append_timed(log, [NOW], [NOW], [NOW])
    assert log.maybe_increment_log_start_offset(2, high_watermark=2)
    assert log.log_start_offset == 2
    assert not log.maybe_increment_log_start_offset(1, high_watermark=2)
    with pytest.raises(Exception, match="above the high watermark"):
        log.maybe_increment_log_start_offset(3, high_watermark=2)


# -- the flush policy and the recovery point ----------------------------------------


def test_flush_is_due_after_flush_messages_records(tmp_path: Path) -> None:
    config = LogConfig(flush_messages=3, verify_closed_segments_on_open=False)
    log = data_log(tmp_path / "t-0", config)
    append_timed(log, [NOW, NOW])
    assert log.flush_due(NOW) is None
    append_timed(log, [NOW])
    assert log.flush_due(NOW) is FlushReason.MESSAGES
    assert log.flush() == 3
    assert log.recovery_point == 3
    assert log.flush_due(NOW) is None


def test_flush_is_due_flush_ms_after_the_last_flush(tmp_path: Path) -> None:
    clock = Clock()
    config = LogConfig(flush_ms=1_000, verify_closed_segments_on_open=False)
    log = data_log(tmp_path / "t-0", config, clock=clock)
    assert log.next_flush_deadline_ms() is None, "nothing unflushed"
    append_timed(log, [NOW])
    deadline = log.next_flush_deadline_ms()
    assert deadline is not None
    assert log.flush_due(deadline - 1) is None
    assert log.flush_due(deadline) is FlushReason.INTERVAL


def test_by_default_a_data_log_is_never_due_a_flush_but_a_roll_is(tmp_path: Path) -> None:
    log = data_log(tmp_path / "t-0", LogConfig(verify_closed_segments_on_open=False))
    append_timed(log, [NOW] * 50)
    assert log.flush_due(NOW + 10**9) is None
    log.roll()
    append_timed(log, [NOW])
    assert log.flush_due(NOW) is FlushReason.ROLLED


def test_only_what_is_past_the_recovery_point_is_recovered(tmp_path: Path) -> None:
    log = data_log(tmp_path / "t-0")
    append_timed(log, [NOW], [NOW])
    log.flush()
    append_timed(log, [NOW])
    recovery_point = log.recovery_point
    log.abandon()
    with open(tmp_path / "t-0" / "00000000000000000000.log", "ab") as file:
        file.write(b"\x00" * 7)
    reopened = data_log(tmp_path / "t-0", recovery_point=recovery_point)
    assert reopened.needs_recovery
    assert reopened.log_end_offset == 3
    # as in Kafka's LogLoader: what recovery kept past the recovery point is still
    # not known to be on disk
    assert reopened.recovery_point == 2


# -- many partitions, few open files --------------------------------------------------


def test_many_logs_share_a_bound_on_open_files(tmp_path: Path) -> None:
    files = OpenFiles(max_open=3)
    logs = [data_log(tmp_path / f"t-{i}", files=files) for i in range(10)]
    assert files.open_count == 0, "nothing is opened before first use"
    for i, log in enumerate(logs):
        append_timed(log, [NOW + i], [NOW + i])
        log.roll()
        append_timed(log, [NOW + i])
        assert files.open_count <= 3
    for log in logs:
        assert log.read(0, 10_000).next_offset == 2
        assert log.read(2, 10_000).next_offset == 3
        assert files.open_count <= 3
    for log in logs:
        log.close()
    assert files.open_count == 0
