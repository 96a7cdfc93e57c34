"""Following a leader: DivergingEpoch truncation (KIP-279), appends, the learned HW."""

from __future__ import annotations

from broker.replica.epochs import leader_end_offset_for_epoch
from broker.replica.follower import (
    apply_fetched,
    fetch_position,
    truncate_to_diverging_epoch,
    truncation_offset,
)
from broker.replica.leader_fetch import read_for_consumer, read_for_follower
from broker.replica.partition import Partition
from quorum.log import MemoryLog, OffsetAndEpoch
from quorum.wire.batch import iter_batch_headers
from quorum.wire.error_codes import Errors

from .helpers import assignment, batch, fetch, new_partition


def _log(*epochs: int) -> MemoryLog:
    """A log with one single-record batch per entry, written in that epoch."""
    log = MemoryLog()
    for epoch in epochs:
        log.append(batch(f"e{epoch}".encode()), epoch=epoch)
    return log


def _leader(log: MemoryLog, leader_epoch: int) -> Partition:
    partition = new_partition(log=log)
    partition.apply_assignment(assignment(isr=(1, 2, 3), leader_epoch=leader_epoch), now_ms=0)
    return partition


def _follower(log: MemoryLog, leader_epoch: int) -> Partition:
    partition = new_partition(broker_id=2, log=log)
    partition.apply_assignment(
        assignment(broker_id=2, leader=1, leader_epoch=leader_epoch), now_ms=0
    )
    return partition


def _fetch_once(leader: Partition, follower: Partition, now_ms: int = 1) -> bool:
    """One fetch round trip; True if the follower had to truncate."""
    position = fetch_position(follower)
    read, _ = read_for_follower(
        leader, 2,
        fetch_offset=position.fetch_offset,
        last_fetched_epoch=position.last_fetched_epoch,
        current_leader_epoch=leader.leader_epoch,
        follower_log_start_offset=position.log_start_offset,
        max_bytes=1 << 20, min_one=True, now_ms=now_ms,
    )
    assert read.error == Errors.NONE, read
    if read.diverging_epoch is not None:
        truncate_to_diverging_epoch(follower, read.diverging_epoch)
        return True
    apply_fetched(follower, records=read.records, leader_high_watermark=read.high_watermark,
                  leader_log_start_offset=read.log_start_offset)
    return False


def _entries(log: MemoryLog) -> list[tuple[int, int]]:
    found = log.read(0, 1 << 20)
    return [(h.base_offset, h.partition_leader_epoch)
            for _, h in iter_batch_headers(bytes(found.records), check_crc=False)]


def test_a_diverged_follower_cuts_where_its_epoch_ends_on_the_leader_and_catches_up() -> None:
    leader = _leader(_log(1, 1, 1, 3, 3, 3), leader_epoch=3)
    follower = _follower(_log(1, 1, 1, 2, 2), leader_epoch=3)
    assert _fetch_once(leader, follower)
    assert follower.log_end_offset == 3  # epoch 2's records never reached the leader
    assert not _fetch_once(leader, follower)
    assert _entries(follower.log) == _entries(leader.log)


def test_a_follower_keeps_its_records_above_its_hw_that_the_leader_has() -> None:
    # KIP-101: truncating to the HW would drop committed records it may be elected with
    leader = _leader(_log(1, 1, 1, 1, 1), leader_epoch=2)
    follower = _follower(_log(1, 1, 1, 1, 1), leader_epoch=2)
    follower.high_watermark = 2
    assert not _fetch_once(leader, follower)
    assert follower.log_end_offset == 5


def test_a_new_leader_that_has_not_appended_tells_where_its_log_ends() -> None:
    leader_log = _log(1, 1, 1)
    assert leader_end_offset_for_epoch(
        leader_log, 2, leader_epoch=3, epoch_start_offset=3
    ) == OffsetAndEpoch(3, 1)
    assert leader_end_offset_for_epoch(
        leader_log, 3, leader_epoch=3, epoch_start_offset=3
    ) == OffsetAndEpoch(3, 3)
    assert leader_end_offset_for_epoch(
        leader_log, 4, leader_epoch=3, epoch_start_offset=3
    ).offset == -1
    leader = _leader(leader_log, leader_epoch=3)
    follower = _follower(_log(1, 1, 1, 2, 2), leader_epoch=3)
    assert _fetch_once(leader, follower)
    assert follower.log_end_offset == 3


def test_a_follower_that_does_not_know_the_leaders_epoch_cuts_to_its_own_older_epoch() -> None:
    follower = _follower(_log(1, 1, 3, 3), leader_epoch=4)
    # the leader says epoch 2 ends at 3; this log has no epoch 2: cut to where epoch 1 ends
    assert truncation_offset(follower, OffsetAndEpoch(3, 2)) == 2
    assert truncation_offset(follower, OffsetAndEpoch(-1, -1)) == 4


def test_the_follower_hw_is_the_leaders_capped_by_its_log_end() -> None:
    leader = _leader(_log(1, 1, 1, 1), leader_epoch=1)
    follower = _follower(MemoryLog(), leader_epoch=1)
    fetch(leader, 3, 4, now_ms=1)
    _fetch_once(leader, follower)
    assert follower.log_end_offset == 4 and follower.high_watermark == 0
    # the fetch at 4 moves the leader's HW after its answer was read, as Kafka's
    _fetch_once(leader, follower, now_ms=2)
    assert leader.high_watermark == 4 and follower.high_watermark == 0
    _fetch_once(leader, follower, now_ms=3)
    assert follower.high_watermark == 4


def test_a_follower_of_an_older_or_newer_epoch_is_refused() -> None:
    leader = _leader(_log(1, 1), leader_epoch=2)
    for epoch, error in ((1, Errors.FENCED_LEADER_EPOCH), (3, Errors.UNKNOWN_LEADER_EPOCH)):
        read, _ = read_for_follower(
            leader, 2, fetch_offset=0, last_fetched_epoch=-1, current_leader_epoch=epoch,
            follower_log_start_offset=0, max_bytes=100, min_one=True, now_ms=0,
        )
        assert read.error == error


def test_consumers_read_below_the_hw_only() -> None:
    leader = _leader(_log(1, 1, 1, 1), leader_epoch=1)
    fetch(leader, 2, 2, now_ms=1)
    fetch(leader, 3, 2, now_ms=1)
    assert leader.high_watermark == 2

    def read(offset: int, epoch: int = -1) -> tuple[Errors, list[int]]:
        found = read_for_consumer(leader, fetch_offset=offset, current_leader_epoch=epoch,
                                  max_bytes=1 << 20, min_one=True)
        offsets = [h.base_offset for _, h in iter_batch_headers(bytes(found.records),
                                                                check_crc=False)]
        return found.error, offsets

    assert read(0) == (Errors.NONE, [0, 1])
    assert read(3) == (Errors.NONE, [])  # between the HW and the log end: nothing yet
    assert read(4) == (Errors.NONE, [])
    assert read(5)[0] == Errors.OFFSET_OUT_OF_RANGE
    assert read(0, epoch=0)[0] == Errors.FENCED_LEADER_EPOCH
    assert read(0, epoch=2)[0] == Errors.UNKNOWN_LEADER_EPOCH


def test_a_diverged_follower_cuts_at_the_divergence_not_at_its_high_watermark() -> None:
    # KIP-101: cutting to the HW would drop offset 2, which the leader committed; should this
    # follower be elected before fetching it again, an acknowledged record would be gone
    leader = _leader(_log(1, 1, 1, 3, 3), leader_epoch=3)
    follower = _follower(_log(1, 1, 1, 2), leader_epoch=3)
    follower.high_watermark = 2
    diverging = leader.end_offset_for_epoch(2)
    assert diverging == OffsetAndEpoch(3, 1)
    assert truncate_to_diverging_epoch(follower, diverging) == 3
    assert follower.high_watermark == 2
