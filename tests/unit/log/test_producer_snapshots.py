"""Producer-state snapshots beside the segments: the file format, which snapshots a
truncation, a log-start move and recovery keep, and a corrupt file skipped."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from quorum.log import (
    FileLog,
    LogCorruptionError,
    OpenMode,
    ProducerBatch,
    ProducerEntry,
)
from quorum.log.producer_snapshots import (
    decode_producer_snapshot,
    encode_producer_snapshot,
    producer_snapshot_name,
)
from quorum.log.protocol import ReplicatedLog

from .batches import make_batch


def entry(producer_id: int, *last_offsets: int, epoch: int = 0) -> ProducerEntry:
    return ProducerEntry(producer_id=producer_id, producer_epoch=epoch, batches=tuple(
        ProducerBatch(first_seq=i, last_seq=i, first_offset=o, last_offset=o, timestamp=7 + i)
        for i, o in enumerate(last_offsets)
    ))


def fill(log: ReplicatedLog, count: int) -> None:
    for i in range(count):
        log.append(make_batch(tag=i), epoch=1)


def test_a_snapshot_round_trips_and_a_damaged_one_is_refused() -> None:
    entries = (entry(1, 0, 1, 2), entry(2**40, 5, epoch=3))
    data = encode_producer_snapshot(entries)
    assert decode_producer_snapshot(data) == entries
    for broken in (data[:-1], data[:6] + bytes([data[6] ^ 1]) + data[7:], b"\x00\x64"):
        with pytest.raises(LogCorruptionError):
            decode_producer_snapshot(broken)


def test_a_snapshot_is_read_back_at_or_below_an_offset(log: ReplicatedLog) -> None:
    fill(log, 6)
    log.write_producer_snapshot(2, [entry(1, 1)])
    log.write_producer_snapshot(5, [entry(1, 4)])
    assert log.producer_snapshot_offsets() == [2, 5]
    found = log.load_producer_snapshot(4)
    assert found is not None and found.offset == 2 and found.entries == (entry(1, 1),)
    assert log.load_producer_snapshot(1) is None
    with pytest.raises(Exception, match="cannot snapshot producers at offset 7"):
        log.write_producer_snapshot(7, [])


def test_a_truncation_deletes_the_snapshots_above_the_new_end(log: ReplicatedLog) -> None:
    fill(log, 6)
    for offset in (2, 4, 6):
        log.write_producer_snapshot(offset, [entry(1, offset - 1)])
    log.truncate_to(4)
    assert log.producer_snapshot_offsets() == [2, 4]
    log.truncate_fully_and_start_at(10)
    assert log.producer_snapshot_offsets() == []


def test_a_new_log_start_deletes_the_snapshots_below_it(log: ReplicatedLog) -> None:
    fill(log, 6)
    for offset in (2, 4, 6):
        log.write_producer_snapshot(offset, [entry(1, offset - 1)])
    log.advance_log_start_offset(3)
    assert log.producer_snapshot_offsets() == [4, 6]


def test_a_corrupt_snapshot_file_is_logged_deleted_and_an_older_one_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = FileLog(tmp_path / "t-0")
    fill(log, 4)
    log.write_producer_snapshot(2, [entry(1, 1)])
    log.write_producer_snapshot(4, [entry(1, 3)])
    path = tmp_path / "t-0" / producer_snapshot_name(4)
    assert path.exists()
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x10
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="quorum.log"):
        found = log.load_producer_snapshot(4)
    assert found is not None and found.offset == 2
    assert "cannot be read" in caplog.text and str(path) in caplog.text
    assert not path.exists() and log.producer_snapshot_offsets() == [2]
    log.close()


def test_recovery_deletes_a_snapshot_of_a_tail_the_crash_lost(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = FileLog(directory, mode=OpenMode.for_data_partition(
        log_start_offset=None, recovery_point=0, clean_shutdown=False
    ))
    fill(log, 4)
    log.write_producer_snapshot(2, [entry(1, 1)])
    log.write_producer_snapshot(4, [entry(1, 3)])
    log.flush()
    log.abandon()
    # the last batch never reached the disk: cut it from the segment file
    (segment,) = sorted(directory.glob("*.log"))
    size = segment.stat().st_size
    with segment.open("r+b") as handle:
        handle.truncate(size - len(make_batch(tag=3)))
    reopened = FileLog(directory, mode=OpenMode.for_data_partition(
        log_start_offset=None, recovery_point=0, clean_shutdown=False
    ))
    assert reopened.log_end_offset == 3
    assert reopened.producer_snapshot_offsets() == [2]
    assert not (directory / producer_snapshot_name(4)).exists()
    reopened.close()
