"""The memory log's simulated crash: the unflushed tail is lost, the rest stays."""

from __future__ import annotations

from quorum.log import MemoryLog, OffsetAndEpoch

from .batches import batch_offsets, make_batch


def test_a_crash_drops_what_was_appended_after_the_last_flush() -> None:
    log = MemoryLog()
    log.append(make_batch(3), epoch=1)
    assert log.flush() == 3
    log.append(make_batch(2), epoch=2)
    log.crash()
    assert (log.log_end_offset, log.flushed_offset) == (3, 3)
    assert log.last_fetched_epoch == 1
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(-1, -1)
    assert batch_offsets(log.read(0, 1 << 20).records) == [(0, 2, 1)]


def test_a_crash_after_a_flush_loses_nothing() -> None:
    log = MemoryLog()
    log.append(make_batch(3), epoch=1)
    log.flush()
    log.crash()
    assert log.log_end_offset == 3


def test_truncation_is_durable_at_once() -> None:
    log = MemoryLog()
    log.append(make_batch(3), epoch=1)
    log.append(make_batch(3), epoch=1)
    log.truncate_to(3)
    log.crash()
    assert log.log_end_offset == 3


def test_a_crash_after_moving_the_start_past_unflushed_data_empties_the_log() -> None:
    log = MemoryLog()
    log.append(make_batch(3), epoch=1)
    log.advance_log_start_offset(2)
    log.crash()
    assert (log.log_start_offset, log.log_end_offset) == (2, 2)


def test_appends_continue_after_a_crash() -> None:
    log = MemoryLog()
    log.append(make_batch(3), epoch=1)
    log.flush()
    log.append(make_batch(3), epoch=1)
    log.crash()
    assert log.append(make_batch(1), epoch=2).first_offset == 3
