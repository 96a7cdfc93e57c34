"""The log protocol's semantics, checked on both the file log and the memory log."""

from __future__ import annotations

import pytest

from quorum.log import (
    InvalidAppendError,
    LogConfig,
    OffsetAndEpoch,
    OffsetOutOfRangeError,
    SnapshotNotFoundError,
    metadata_end_offset_for_epoch,
)
from quorum.log.protocol import ReplicatedLog

from .batches import batch_offsets, make_batch, run_of_batches
from .conftest import LogFactory


def fill(log: ReplicatedLog, epochs: list[int], records_per_batch: int = 3) -> None:
    for i, epoch in enumerate(epochs):
        log.append(make_batch(records_per_batch, tag=i), epoch=epoch)


def read_all(log: ReplicatedLog, start: int) -> list[tuple[int, int, int]]:
    found: list[tuple[int, int, int]] = []
    while start < log.log_end_offset:
        result = log.read(start, 1 << 20)
        found.extend(batch_offsets(result.records))
        start = result.next_offset
    return found


def test_an_empty_log_starts_at_zero_with_epoch_zero(log: ReplicatedLog) -> None:
    assert (log.log_start_offset, log.log_end_offset, log.flushed_offset) == (0, 0, 0)
    assert log.last_fetched_epoch == 0
    assert log.read(0, 100).is_empty
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(-1, -1)


def test_leader_append_assigns_offsets_from_the_log_end_and_stamps_the_epoch(
    log: ReplicatedLog,
) -> None:
    first = log.append(make_batch(2, base_offset=77, epoch=-1), epoch=4)
    second = log.append(make_batch(3) + make_batch(1), epoch=4)
    assert (first.first_offset, first.last_offset, first.last_epoch) == (0, 1, 4)
    assert (second.first_offset, second.last_offset, second.batch_count) == (2, 5, 2)
    assert log.log_end_offset == 6
    assert read_all(log, 0) == [(0, 1, 4), (2, 4, 4), (5, 5, 4)]


def test_leader_append_rewrites_a_writable_buffer_in_place(log: ReplicatedLog) -> None:
    log.append(make_batch(2), epoch=1)
    buffer = bytearray(make_batch(1))
    log.append(buffer, epoch=1)
    assert batch_offsets(buffer) == [(2, 2, 1)]


def test_leader_append_with_an_older_epoch_is_rejected(log: ReplicatedLog) -> None:
    log.append(make_batch(), epoch=5)
    with pytest.raises(InvalidAppendError, match=r"epoch 4.*already holds epoch 5"):
        log.append(make_batch(), epoch=4)
    assert log.log_end_offset == 1


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "no record batches"),
        (make_batch(2)[:-5], "partial batch at byte 0"),
        (make_batch(2)[:-1] + b"!", "CRC-32C"),
        (make_batch(1) + b"\x00" * 70, "record batch at byte"),
    ],
)
def test_malformed_input_is_rejected_with_the_reason(
    log: ReplicatedLog, data: bytes, message: str
) -> None:
    with pytest.raises(InvalidAppendError, match=message):
        log.append(data, epoch=1)
    assert log.log_end_offset == 0


def test_a_batch_above_max_message_bytes_is_rejected(make_log: LogFactory) -> None:
    log = make_log(LogConfig(max_message_bytes=200))
    log.append(make_batch(1, value_size=50), epoch=1)
    with pytest.raises(InvalidAppendError, match=r"above max\.message\.bytes 200"):
        log.append(make_batch(1, value_size=500), epoch=1)


def test_follower_append_keeps_offsets_and_epochs(log: ReplicatedLog) -> None:
    info = log.append_as_follower(run_of_batches([2, 3], epochs=[1, 3]))
    assert (info.first_offset, info.last_offset, info.last_epoch) == (0, 4, 3)
    assert read_all(log, 0) == [(0, 1, 1), (2, 4, 3)]
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(2, 1)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(2, 1)
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(5, 3)


def test_follower_append_must_start_at_the_log_end(log: ReplicatedLog) -> None:
    log.append_as_follower(run_of_batches([2]))
    with pytest.raises(InvalidAppendError, match="base offset 3 where offset 2 was expected"):
        log.append_as_follower(run_of_batches([1], start_offset=3))
    with pytest.raises(InvalidAppendError, match="base offset 4 where offset 3"):
        log.append_as_follower(run_of_batches([1], start_offset=2) + make_batch(1, base_offset=4))


def test_follower_append_rejects_an_epoch_going_down(log: ReplicatedLog) -> None:
    log.append_as_follower(run_of_batches([2], epochs=[3]))
    with pytest.raises(InvalidAppendError, match="epoch 2, below the preceding epoch 3"):
        log.append_as_follower(run_of_batches([1], start_offset=2, epochs=[2]))


def test_read_returns_whole_batches_from_the_one_containing_the_offset(
    log: ReplicatedLog,
) -> None:
    fill(log, [1, 1, 1])
    result = log.read(4, 1 << 20)
    assert result.base_offset == 3
    assert batch_offsets(result.records)[0] == (3, 5, 1)


def test_read_returns_one_batch_even_when_it_exceeds_max_bytes(log: ReplicatedLog) -> None:
    fill(log, [1, 1])
    result = log.read(0, 1)
    assert batch_offsets(result.records) == [(0, 2, 1)]
    assert result.next_offset == 3


def test_read_stops_before_max_bytes_at_a_batch_boundary(log: ReplicatedLog) -> None:
    fill(log, [1, 1, 1])
    one = len(bytes(log.read(0, 1).records))
    result = log.read(0, 2 * one + one // 2)
    assert [base for base, _, _ in batch_offsets(result.records)] == [0, 3]
    assert len(result.records) == 2 * one


def test_read_leaves_out_batches_at_or_above_max_offset(log: ReplicatedLog) -> None:
    fill(log, [1, 1, 1])
    assert [b for b, _, _ in batch_offsets(log.read(0, 1 << 20, max_offset=6).records)] == [0, 3]
    assert batch_offsets(log.read(0, 1 << 20, max_offset=5).records) == [(0, 2, 1)]
    empty = log.read(3, 1 << 20, max_offset=5)
    assert empty.is_empty and empty.next_offset == 3


def test_read_outside_the_log_is_out_of_range(log: ReplicatedLog) -> None:
    fill(log, [1])
    with pytest.raises(OffsetOutOfRangeError, match=r"offset 4.*\[0, 3\)"):
        log.read(4, 100)
    assert log.read(3, 100).is_empty


def test_truncating_inside_a_batch_drops_the_whole_batch(log: ReplicatedLog) -> None:
    fill(log, [1, 2, 2])
    log.truncate_to(4)
    assert log.log_end_offset == 3
    assert log.flushed_offset == 3
    assert read_all(log, 0) == [(0, 2, 1)]
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(-1, -1)
    assert log.last_fetched_epoch == 1


def test_truncating_at_or_past_the_end_changes_nothing(log: ReplicatedLog) -> None:
    fill(log, [1, 1])
    log.truncate_to(6)
    log.truncate_to(60)
    assert log.log_end_offset == 6


def test_appends_continue_after_a_truncation(log: ReplicatedLog) -> None:
    fill(log, [1] * 10)
    log.truncate_to(9)
    log.append(make_batch(2), epoch=2)
    assert read_all(log, 6) == [(6, 8, 1), (9, 10, 2)]
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(9, 1)


def test_end_offset_for_epoch_follows_kafkas_offset_for_leader_epoch(log: ReplicatedLog) -> None:
    log.append_as_follower(run_of_batches([2, 2, 2], start_offset=0, epochs=[2, 4, 7]))
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(0, 1)  # below every epoch
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(2, 2)
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(2, 2)  # largest epoch <= 3
    assert log.end_offset_for_epoch(5) == OffsetAndEpoch(4, 4)
    assert log.end_offset_for_epoch(7) == OffsetAndEpoch(6, 7)  # the latest: the log end
    assert log.end_offset_for_epoch(8) == OffsetAndEpoch(-1, -1)
    assert log.end_offset_for_epoch(-1) == OffsetAndEpoch(-1, -1)


def test_flush_returns_the_log_end_offset(log: ReplicatedLog) -> None:
    fill(log, [1, 1])
    assert log.flush() == 6
    assert log.flushed_offset == 6


def test_advancing_the_log_start_hides_earlier_offsets(log: ReplicatedLog) -> None:
    fill(log, [1, 1, 2, 2])
    log.advance_log_start_offset(7)
    assert log.log_start_offset == 7
    with pytest.raises(OffsetOutOfRangeError):
        log.read(5, 100)
    assert log.read(7, 100).base_offset == 6
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(7, 1)  # below every remaining epoch
    with pytest.raises(OffsetOutOfRangeError, match="past the log end"):
        log.advance_log_start_offset(13)


def test_truncate_fully_and_start_at_empties_the_log(log: ReplicatedLog) -> None:
    fill(log, [1, 2])
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset, log.last_fetched_epoch) == (100, 100, 0)
    assert log.append(make_batch(1), epoch=1).first_offset == 100


def test_snapshots_round_trip_and_are_listed_oldest_first(log: ReplicatedLog) -> None:
    assert log.latest_snapshot_id is None
    assert log.create_snapshot(OffsetAndEpoch(10, 2), b"later")
    assert log.create_snapshot(OffsetAndEpoch(5, 1), b"earlier")
    assert not log.create_snapshot(OffsetAndEpoch(5, 1), b"ignored")
    assert log.snapshot_ids() == [OffsetAndEpoch(5, 1), OffsetAndEpoch(10, 2)]
    assert log.latest_snapshot_id == OffsetAndEpoch(10, 2)
    assert log.earliest_snapshot_id == OffsetAndEpoch(5, 1)
    assert log.read_snapshot(OffsetAndEpoch(5, 1)) == b"earlier"
    assert log.read_snapshot(OffsetAndEpoch(10, 2), 1, 3) == b"ate"
    assert log.snapshot_size(OffsetAndEpoch(10, 2)) == 5
    with pytest.raises(SnapshotNotFoundError, match="no snapshot"):
        log.read_snapshot(OffsetAndEpoch(7, 1))


def test_last_fetched_epoch_of_an_empty_log_is_the_snapshot_epoch(log: ReplicatedLog) -> None:
    log.create_snapshot(OffsetAndEpoch(20, 3), b"state")
    assert log.truncate_to_latest_snapshot()
    assert (log.log_start_offset, log.log_end_offset) == (20, 20)
    assert log.last_fetched_epoch == 3
    assert not log.truncate_to_latest_snapshot()


def test_truncate_to_latest_snapshot_leaves_a_log_that_is_ahead(log: ReplicatedLog) -> None:
    fill(log, [2, 2])
    log.create_snapshot(OffsetAndEpoch(3, 2), b"state")
    assert not log.truncate_to_latest_snapshot()
    assert log.log_end_offset == 6


def test_delete_before_moves_the_log_start_to_the_snapshot(log: ReplicatedLog) -> None:
    fill(log, [1, 1, 2, 2])
    log.create_snapshot(OffsetAndEpoch(3, 1), b"a")
    log.create_snapshot(OffsetAndEpoch(9, 2), b"b")
    assert not log.delete_before(OffsetAndEpoch(4, 1))  # no such snapshot
    assert log.delete_before(OffsetAndEpoch(9, 2))
    assert log.log_start_offset == 9
    assert log.snapshot_ids() == [OffsetAndEpoch(9, 2)]
    assert not log.delete_before(OffsetAndEpoch(9, 2))  # not above the log start


def test_metadata_end_offset_for_epoch_answers_from_the_snapshot_or_the_end(
    log: ReplicatedLog,
) -> None:
    assert metadata_end_offset_for_epoch(log, 3) == OffsetAndEpoch(0, 0)
    log.create_snapshot(OffsetAndEpoch(6, 2), b"s")
    log.truncate_to_latest_snapshot()
    log.append(make_batch(2), epoch=4)
    assert metadata_end_offset_for_epoch(log, 1) == OffsetAndEpoch(6, 2)
    assert metadata_end_offset_for_epoch(log, 4) == OffsetAndEpoch(8, 4)
