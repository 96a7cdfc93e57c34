"""Idempotent producers on a partition's replicas: the leader's answers, the follower's
state from fetched batches, truncation, log-start moves, a restart, a roll's snapshot."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import cast

import pytest

from broker.replica.append import append_to_leader
from broker.replica.follower import apply_fetched
from broker.replica.partition import Partition
from quorum.log import (
    FileLog,
    LogConfig,
    MemoryLog,
    OpenMode,
    ProducerBatch,
    ProducerEntry,
)
from quorum.wire.error_codes import Errors
from quorum.wire.records import Record, build_batch

from .helpers import assignment, new_partition

PID = 4_000


def idempotent(seq: int, *values: bytes, epoch: int = 0, pid: int = PID, ts: int = 10) -> bytes:
    records = [Record(offset_delta=i, value=v) for i, v in enumerate(values or (b"v",))]
    return build_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                       base_timestamp=ts)


def leader_of(log: MemoryLog, *, broker_id: int = 1, leader_epoch: int = 1) -> Partition:
    partition = new_partition(broker_id=broker_id, log=log)
    partition.apply_assignment(
        assignment(broker_id=broker_id, leader=broker_id, leader_epoch=leader_epoch), now_ms=0
    )
    return partition


def follower_of(log: MemoryLog, *, leader_epoch: int = 1) -> Partition:
    partition = new_partition(broker_id=2, log=log)
    partition.apply_assignment(
        assignment(broker_id=2, leader=1, leader_epoch=leader_epoch), now_ms=0
    )
    return partition


def produce(partition: Partition, data: bytes, now_ms: int = 20) -> tuple[Errors, int]:
    result = append_to_leader(partition, data, acks=1, now_ms=now_ms)
    return result.error, result.base_offset


def replicate(leader: Partition, follower: Partition) -> None:
    """The follower fetches everything the leader has."""
    read = leader.log.read(follower.log_end_offset, 1 << 20)
    apply_fetched(follower, records=read.records, leader_high_watermark=0,
                  leader_log_start_offset=leader.log_start_offset, now_ms=20)


def test_a_retried_batch_is_answered_with_its_original_offsets_and_not_appended() -> None:
    partition = leader_of(MemoryLog())
    assert produce(partition, idempotent(0, b"a", b"b")) == (Errors.NONE, 0)
    assert produce(partition, idempotent(2, b"c")) == (Errors.NONE, 2)
    result = append_to_leader(partition, idempotent(0, b"a", b"b"), acks=1, now_ms=30)
    assert (result.error, result.base_offset, result.last_offset) == (Errors.NONE, 0, 1)
    assert result.log_append_time_ms == 10  # Kafka answers a duplicate with its timestamp
    assert partition.log_end_offset == 3


def test_a_gap_and_a_fenced_epoch_are_refused_and_nothing_is_appended() -> None:
    partition = leader_of(MemoryLog())
    assert produce(partition, idempotent(0, b"a", epoch=2)) == (Errors.NONE, 0)
    gap = append_to_leader(partition, idempotent(2, b"c", epoch=2), acks=1, now_ms=20)
    assert gap.error == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER and gap.error_message
    assert produce(partition, idempotent(1, b"b", epoch=1))[0] == Errors.INVALID_PRODUCER_EPOCH
    assert produce(partition, idempotent(5, b"b", epoch=3))[0] == (
        Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    )
    assert partition.log_end_offset == 1
    assert produce(partition, idempotent(0, b"b", epoch=3)) == (Errors.NONE, 1)


def test_a_new_leader_deduplicates_with_the_state_it_built_from_fetched_batches() -> None:
    leader = leader_of(MemoryLog())
    follower = follower_of(MemoryLog())
    assert produce(leader, idempotent(0, b"a")) == (Errors.NONE, 0)
    assert produce(leader, idempotent(1, b"b", b"c")) == (Errors.NONE, 1)
    follower.producer_state(now_ms=20)  # built before the fetch: the fetch updates it
    replicate(leader, follower)
    assert follower.producers is not None and follower.producers.end_offset == 3
    follower.apply_assignment(assignment(broker_id=2, leader=2, leader_epoch=2), now_ms=30)
    assert produce(follower, idempotent(1, b"b", b"c")) == (Errors.NONE, 1)
    assert produce(follower, idempotent(3, b"d")) == (Errors.NONE, 3)
    assert follower.log_end_offset == 4


def test_a_follower_whose_state_was_never_built_builds_it_from_its_log() -> None:
    leader = leader_of(MemoryLog())
    follower = follower_of(MemoryLog())
    assert produce(leader, idempotent(0, b"a")) == (Errors.NONE, 0)
    replicate(leader, follower)
    assert follower.producers is None  # nothing needed it yet
    follower.apply_assignment(assignment(broker_id=2, leader=2, leader_epoch=2), now_ms=30)
    assert produce(follower, idempotent(0, b"a")) == (Errors.NONE, 0)
    assert follower.log_end_offset == 1


def test_after_a_truncation_a_retry_of_a_cut_batch_is_appended_again() -> None:
    leader = leader_of(MemoryLog())
    follower = follower_of(MemoryLog())
    for seq in range(3):
        assert produce(leader, idempotent(seq, b"x")) == (Errors.NONE, seq)
    follower.producer_state(now_ms=20)
    replicate(leader, follower)
    follower.log.truncate_to(1)  # its divergent tail: seq 1 and 2 never got committed
    follower.after_truncation()
    follower.apply_assignment(assignment(broker_id=2, leader=2, leader_epoch=2), now_ms=30)
    assert produce(follower, idempotent(0, b"x")) == (Errors.NONE, 0)  # kept: a duplicate
    assert produce(follower, idempotent(2, b"x"))[0] == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produce(follower, idempotent(1, b"x")) == (Errors.NONE, 1)
    assert follower.log_end_offset == 2


def test_a_roll_snapshots_the_state_below_the_new_segment_and_a_restart_reads_it() -> None:
    log = MemoryLog(LogConfig(segment_bytes=300))
    partition = leader_of(log)
    offsets = [produce(partition, idempotent(seq, b"x" * 60))[1] for seq in range(8)]
    assert offsets == list(range(8))
    snapshots = log.producer_snapshot_offsets()
    assert snapshots and all(0 < offset < 8 for offset in snapshots)
    latest = log.load_producer_snapshot(8)
    assert latest is not None
    (entry,) = latest.entries
    assert entry.batches[-1].last_offset == latest.offset - 1  # the state below the roll
    # a restart: a new replica over the same log builds its state from snapshot and log
    again = leader_of(log, leader_epoch=2)
    for seq in range(3, 8):
        assert produce(again, idempotent(seq, b"x" * 60)) == (Errors.NONE, seq)
    assert produce(again, idempotent(2, b"x" * 60))[0] == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.log_end_offset == 8


def test_a_rebuild_starts_from_the_latest_snapshot_at_or_below_the_log_end() -> None:
    log = MemoryLog()
    partition = leader_of(log)
    assert produce(partition, idempotent(0, b"a")) == (Errors.NONE, 0)
    # a snapshot that names a producer the log does not hold: only a rebuild that reads
    # the snapshot knows it
    log.write_producer_snapshot(1, [ProducerEntry(producer_id=9, producer_epoch=0, batches=(
        ProducerBatch(first_seq=0, last_seq=0, first_offset=0, last_offset=0, timestamp=10),
    ))])
    assert produce(partition, idempotent(1, b"b")) == (Errors.NONE, 1)
    rebuilt = leader_of(log, leader_epoch=2)
    state = rebuilt.producer_state(now_ms=20)
    assert 9 in state and PID in state
    assert produce(rebuilt, idempotent(1, b"b")) == (Errors.NONE, 1)


def test_a_corrupt_snapshot_is_skipped_and_the_state_is_rebuilt_from_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = MemoryLog()
    partition = leader_of(log)
    assert produce(partition, idempotent(0, b"a")) == (Errors.NONE, 0)
    log.write_producer_snapshot(1, partition.producer_state(20).entries())
    data = bytearray(log.producer_snapshots.files[1])
    data[-1] ^= 0xFF
    log.producer_snapshots.files[1] = bytes(data)
    with caplog.at_level(logging.WARNING, logger="quorum.log"):
        rebuilt = leader_of(log, leader_epoch=2)
        assert produce(rebuilt, idempotent(0, b"a")) == (Errors.NONE, 0)
    assert "cannot be read" in caplog.text
    assert log.producer_snapshot_offsets() == []


def test_producers_wholly_below_a_new_log_start_are_dropped() -> None:
    log = MemoryLog()
    partition = leader_of(log)
    assert produce(partition, idempotent(0, b"a", pid=1)) == (Errors.NONE, 0)
    assert produce(partition, idempotent(0, b"b", b"c", pid=2)) == (Errors.NONE, 1)
    partition.producer_state(20)
    partition.high_watermark = 3
    log.advance_log_start_offset(2)  # DeleteRecords: inside producer 2's batch [1, 2]
    state = partition.producer_state(20)
    assert 1 not in state and 2 in state
    # producer 1 is unknown now: any sequence is admitted (Kafka's KIP-360 rule)
    assert produce(partition, idempotent(7, b"d", pid=1)) == (Errors.NONE, 3)
    assert produce(partition, idempotent(0, b"b", b"c", pid=2)) == (Errors.NONE, 1)


def test_on_files_a_restart_reads_the_roll_snapshots_and_a_crash_drops_those_it_lost(
    tmp_path: Path,
) -> None:
    config = LogConfig(segment_bytes=300)
    unclean = OpenMode.for_data_partition(log_start_offset=None, recovery_point=0,
                                          clean_shutdown=False)
    log = FileLog(tmp_path / "events-0", config, mode=unclean)
    partition = leader_of(cast(MemoryLog, log))
    for seq in range(6):
        assert produce(partition, idempotent(seq, b"x" * 60)) == (Errors.NONE, seq)
    assert log.producer_snapshot_offsets() == [2, 4]
    log.flush()
    log.close()
    reopened = FileLog(tmp_path / "events-0", config, mode=unclean)
    again = leader_of(cast(MemoryLog, reopened), leader_epoch=2)
    assert produce(again, idempotent(5, b"x" * 60)) == (Errors.NONE, 5)
    assert produce(again, idempotent(6, b"x" * 60)) == (Errors.NONE, 6)
    assert reopened.producer_snapshot_offsets() == [2, 4, 6]
    reopened.abandon()
    # a crash lost the tail from offset 5: the segment at 6 (its only batch, 6) is empty,
    # the one at 4 keeps batch 4 of its two; the snapshot at 6 describes batches now gone
    for segment in sorted((tmp_path / "events-0").glob("*.log")):
        if segment.name.startswith(f"{6:020d}"):
            segment.write_bytes(b"")
        elif segment.name.startswith(f"{4:020d}"):
            data = segment.read_bytes()
            segment.write_bytes(data[: len(data) // 2])
    recovered = FileLog(tmp_path / "events-0", config, mode=unclean)
    assert recovered.log_end_offset == 5
    assert recovered.producer_snapshot_offsets() == [2, 4]
    third = leader_of(cast(MemoryLog, recovered), leader_epoch=3)
    assert produce(third, idempotent(4, b"x" * 60)) == (Errors.NONE, 4)  # kept: a duplicate
    assert produce(third, idempotent(5, b"x" * 60)) == (Errors.NONE, 5)  # lost: appended again
    assert recovered.log_end_offset == 6
    recovered.close()
