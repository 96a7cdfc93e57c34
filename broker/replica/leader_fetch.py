"""Reads a leader serves: to its followers and to consumers (Kafka's Partition.fetchRecords).

A follower (``read_for_follower``):

1. ``current_leader_epoch`` older than ours: FENCED_LEADER_EPOCH; newer:
   UNKNOWN_LEADER_EPOCH; this broker does not lead: NOT_LEADER_OR_FOLLOWER;
   the fetcher is not a replica: UNKNOWN_LEADER_EPOCH (it may know a
   reassignment we have not seen yet);
2. with a last fetched epoch: its end offset here is undefined, or the fetch
   offset is below the log start: OFFSET_OUT_OF_RANGE; the follower's epoch
   is not ours at that offset (our end offset for it is an older epoch, or
   lower than the fetch offset): a DivergingEpoch answer, nothing read;
3. otherwise records from the fetch offset up to the log end (uncommitted
   ones included), and the follower's state is updated from its fetch offset
   (maybe moving the high watermark, maybe proposing to add it to the ISR).

A consumer (``read_for_consumer``) reads below the high watermark only: an
offset between the high watermark and the log end answers with no records;
OFFSET_OUT_OF_RANGE only below the log start or above the log end, with -1
for the high watermark and log start (Kafka's ``createLogReadResult`` for a
read that failed). A follower's OFFSET_OUT_OF_RANGE carries this leader's
offsets: pykraft's follower starts over at the answer's log start (Kafka's
asks ListOffsets), so it needs them.

Both return at least one whole batch, even over the byte limit, when
``min_one`` is set (KIP-74: the first partition with data in a response).
"""

from __future__ import annotations

from typing import TypeAlias

import attrs

from broker.replica.isr import IsrChange
from broker.replica.partition import Partition
from quorum.log import UNDEFINED_EPOCH, UNDEFINED_OFFSET, OffsetAndEpoch, OffsetOutOfRangeError
from quorum.wire.error_codes import Errors
from quorum.wire.file_region import FileRegion

__all__ = ["FollowerReadEffects", "PartitionRead", "check_leader_epoch", "read_for_consumer",
           "read_for_follower"]

_EMPTY = b""
# a read's batches: bytes from a log in memory, else a region of the segment file
Records: TypeAlias = bytes | memoryview | FileRegion


@attrs.frozen(kw_only=True)
class PartitionRead:
    error: Errors = Errors.NONE
    high_watermark: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1
    records: Records = _EMPTY
    diverging_epoch: OffsetAndEpoch | None = None


@attrs.frozen(kw_only=True)
class FollowerReadEffects:
    """What a follower's fetch changed on the leader."""

    high_watermark_moved: bool = False
    isr_change: IsrChange | None = None


_NO_EFFECTS = FollowerReadEffects()


def check_leader_epoch(partition: Partition, current_leader_epoch: int) -> Errors:
    """Kafka's checkCurrentLeaderEpoch then the leader check (-1: not checked)."""
    if current_leader_epoch != -1:
        if current_leader_epoch < partition.leader_epoch:
            return Errors.FENCED_LEADER_EPOCH
        if current_leader_epoch > partition.leader_epoch:
            return Errors.UNKNOWN_LEADER_EPOCH
    if not partition.is_leader:
        return Errors.NOT_LEADER_OR_FOLLOWER
    return Errors.NONE


def _offsets(partition: Partition, **changes: object) -> PartitionRead:
    return PartitionRead(
        high_watermark=partition.high_watermark,
        log_start_offset=partition.log_start_offset,
        log_end_offset=partition.log_end_offset,
        **changes,  # type: ignore[arg-type]
    )


def _read(
    partition: Partition, fetch_offset: int, max_bytes: int, min_one: bool, max_offset: int | None
) -> Records:
    # a region of the segment file: the response sends it from the page cache
    records = partition.log.read_records(fetch_offset, max(max_bytes, 1), max_offset=max_offset)
    if not min_one and len(records) > max_bytes:
        if isinstance(records, FileRegion):
            records.close()
        return _EMPTY  # a single batch over the limit: only the first partition may exceed it
    return records


def read_for_follower(
    partition: Partition,
    replica_id: int,
    *,
    fetch_offset: int,
    last_fetched_epoch: int,
    current_leader_epoch: int,
    follower_log_start_offset: int,
    max_bytes: int,
    min_one: bool,
    now_ms: int,
    update_state: bool = True,
) -> tuple[PartitionRead, FollowerReadEffects]:
    error = check_leader_epoch(partition, current_leader_epoch)
    if error == Errors.NONE and replica_id not in partition.followers:
        error = (
            Errors.UNKNOWN_LEADER_EPOCH
            if current_leader_epoch != -1
            else Errors.NOT_LEADER_OR_FOLLOWER
        )
    if error != Errors.NONE:
        return PartitionRead(error=error), _NO_EFFECTS
    # the end offset before the read: appends after it must not keep a follower out of sync
    leader_end = partition.log_end_offset
    if last_fetched_epoch != UNDEFINED_EPOCH:
        ends = partition.end_offset_for_epoch(last_fetched_epoch)
        if ends.offset == UNDEFINED_OFFSET or ends.epoch == UNDEFINED_EPOCH:
            return _offsets(partition, error=Errors.OFFSET_OUT_OF_RANGE), _NO_EFFECTS
        if fetch_offset < partition.log_start_offset:
            return _offsets(partition, error=Errors.OFFSET_OUT_OF_RANGE), _NO_EFFECTS
        if ends.epoch < last_fetched_epoch or ends.offset < fetch_offset:
            return _offsets(partition, diverging_epoch=ends), _NO_EFFECTS
    try:
        records = _read(partition, fetch_offset, max_bytes, min_one, None)
    except OffsetOutOfRangeError:
        return _offsets(partition, error=Errors.OFFSET_OUT_OF_RANGE), _NO_EFFECTS
    read = _offsets(partition, records=records)
    if not update_state:
        return read, _NO_EFFECTS
    moved, change = partition.update_follower_fetch_state(
        replica_id,
        fetch_offset=fetch_offset,
        log_start_offset=follower_log_start_offset,
        now_ms=now_ms,
        leader_end_offset=leader_end,
    )
    # the answer carries the high watermark from before this fetch moved it, as Kafka's
    # (the follower learns a move it caused on its next fetch)
    return read, FollowerReadEffects(high_watermark_moved=moved, isr_change=change)


def read_for_consumer(
    partition: Partition,
    *,
    fetch_offset: int,
    current_leader_epoch: int,
    max_bytes: int,
    min_one: bool,
) -> PartitionRead:
    error = check_leader_epoch(partition, current_leader_epoch)
    if error != Errors.NONE:
        return PartitionRead(error=error)
    if not partition.log_start_offset <= fetch_offset <= partition.log_end_offset:
        return PartitionRead(error=Errors.OFFSET_OUT_OF_RANGE)
    hw = partition.high_watermark
    if fetch_offset >= hw:
        return _offsets(partition)  # between the HW and the log end: nothing yet
    records = _read(partition, fetch_offset, max_bytes, min_one, hw)
    return _offsets(partition, records=records)
