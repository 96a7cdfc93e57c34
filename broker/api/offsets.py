"""ListOffsets (2) and OffsetForLeaderEpoch (23), answered from the partitions this broker leads.

Kafka's rules (``ReplicaManager.fetchOffset``, ``Partition.fetchOffsetForTimestamp``,
``Partition.lastOffsetForLeaderEpoch``):

* a partition this broker does not host answers UNKNOWN_TOPIC_OR_PARTITION
  if the image has no such topic or partition, else NOT_LEADER_OR_FOLLOWER;
  a follower answers NOT_LEADER_OR_FOLLOWER unless the request comes from
  the debugging replica id -2; ``current_leader_epoch`` (-1: unchecked)
  older than ours gives FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH;
* ListOffsets reads up to what the asker may fetch: the high watermark for a
  consumer (read_committed too: without transactions the last stable offset
  is the high watermark), the log end for a replica. -2 (EARLIEST) and -4
  (EARLIEST_LOCAL) give the log start offset, -1 (LATEST) that limit with
  the current leader epoch, -3 (MAX_TIMESTAMP) the first record with the
  largest timestamp, any other timestamp the first record at or after it;
  none below the limit answers offset -1, timestamp -1; EARLIEST carries the
  epoch of the log start offset (``UnifiedLog.fetchOffsetByTimestamp``: the
  leader epoch cache's earliest entry, which covers the log start, or the
  leader's own entry when the log is empty); while a new leader's
  high watermark is below the start of its epoch, a consumer's latest and
  by-time questions answer OFFSET_NOT_AVAILABLE (KIP-207);
* OffsetForLeaderEpoch answers where the asked epoch ends in the leader's
  log: the largest epoch at or below it and the first offset after it (the
  log end for the current epoch); an epoch older than the log answers -1/-1.

The core's partitions are read synchronously in the listener's task: trio
runs one task at a time, so a read never sees a half-applied step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import attrs

from broker.replica import Partition
from broker.replica.leader_fetch import check_leader_epoch
from quorum.controller.image import MetadataImage
from quorum.log import UNDEFINED_EPOCH, UNDEFINED_OFFSET
from quorum.wire.batch import BatchHeader
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsResponse,
    ListOffsetsResponsePartition,
    ListOffsetsResponseTopic,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochRequestPartition,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderEpochResponsePartition,
    OffsetForLeaderEpochResponseTopic,
)

__all__ = ["list_offsets", "offsets_for_leader_epochs"]

CONSUMER_REPLICA_ID: Final = -1
DEBUGGING_REPLICA_ID: Final = -2
LATEST: Final = -1
EARLIEST: Final = -2
MAX_TIMESTAMP: Final = -3
EARLIEST_LOCAL: Final = -4
NO_TIMESTAMP: Final = -1

PartitionLookup = Callable[[str, int], Partition | None]


def _hosted_error(image: MetadataImage, topic: str, index: int) -> Errors:
    """Why this broker cannot answer for a partition it does not host."""
    found = image.topic(topic)
    if found is None or index not in found.partitions:
        return Errors.UNKNOWN_TOPIC_OR_PARTITION
    return Errors.NOT_LEADER_OR_FOLLOWER


def _check(
    partition: Partition | None,
    image: MetadataImage,
    topic: str,
    index: int,
    current_leader_epoch: int,
    replica_id: int,
) -> Errors:
    if partition is None:
        return _hosted_error(image, topic, index)
    error = check_leader_epoch(partition, current_leader_epoch)
    if error == Errors.NOT_LEADER_OR_FOLLOWER and replica_id == DEBUGGING_REPLICA_ID:
        return Errors.NONE
    return error


def _log_start_epoch(partition: Partition) -> int:
    """The leader epoch of the log start offset, as Kafka's leader epoch cache tells it.

    The cache's earliest entry covers the log start (it is cut there when the start moves),
    and its epoch is that of the batch holding the start offset: the log's protocol has no
    cache lookup, so the batch is read (one batch: ``max_bytes`` 1 still returns it). An
    empty log has only the entry a leader writes when its epoch starts (Kafka's
    ``maybeAssignEpochStartOffset``), at the log end; a follower's empty log has none.
    """
    log = partition.log
    start = log.log_start_offset
    if start < log.log_end_offset:
        first = log.read(start, 1)
        if first.is_empty:
            return UNDEFINED_EPOCH
        return BatchHeader.parse(first.records).partition_leader_epoch
    epoch_start = partition.epoch_start_offset
    if partition.is_leader and epoch_start is not None and epoch_start <= start:
        return partition.leader_epoch
    return UNDEFINED_EPOCH


def _list_one(
    partition: Partition, asked: ListOffsetsRequestPartition, replica_id: int
) -> ListOffsetsResponsePartition:
    limit = partition.log_end_offset if replica_id >= 0 else partition.high_watermark
    timestamp = asked.timestamp

    def answer(offset: int, found_timestamp: int, epoch: int) -> ListOffsetsResponsePartition:
        return ListOffsetsResponsePartition(
            partition_index=asked.partition_index,
            timestamp=found_timestamp,
            offset=offset,
            leader_epoch=epoch,
        )

    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return answer(partition.log_start_offset, NO_TIMESTAMP, _log_start_epoch(partition))
    # KIP-207: a new leader's high watermark may still be below where its epoch starts;
    # a consumer asking for the latest or by time then waits (retriable)
    epoch_start = partition.epoch_start_offset
    if replica_id < 0 and epoch_start is not None and epoch_start > partition.high_watermark:
        return ListOffsetsResponsePartition(
            partition_index=asked.partition_index, error_code=Errors.OFFSET_NOT_AVAILABLE
        )
    if timestamp == LATEST:
        return answer(limit, NO_TIMESTAMP, partition.leader_epoch)
    log = partition.log
    search = getattr(log, "max_timestamp", None) if timestamp == MAX_TIMESTAMP else getattr(
        log, "offset_for_timestamp", None
    )
    if search is None:  # a log that keeps no timestamps: nothing is found
        return answer(UNDEFINED_OFFSET, NO_TIMESTAMP, UNDEFINED_EPOCH)
    found = search() if timestamp == MAX_TIMESTAMP else search(timestamp)
    if found is None or found.offset >= limit:
        return answer(UNDEFINED_OFFSET, NO_TIMESTAMP, UNDEFINED_EPOCH)
    return answer(found.offset, found.timestamp, found.leader_epoch)


def _led(
    lookup: PartitionLookup, image: MetadataImage, topic: str, index: int,
    current_leader_epoch: int, replica_id: int,
) -> Partition | Errors:
    """The partition to answer from, or why this broker cannot answer for it."""
    partition = lookup(topic, index)
    error = _check(partition, image, topic, index, current_leader_epoch, replica_id)
    return error if error != Errors.NONE or partition is None else partition


# the first ListOffsets version whose answer carries a leader epoch
_LEADER_EPOCH_SINCE: Final = 4


def list_offsets(
    lookup: PartitionLookup, image: MetadataImage, request: ListOffsetsRequest,
    version: int = _LEADER_EPOCH_SINCE,
) -> ListOffsetsResponse:
    """The answer at ``version``: before v4 it has no leader epoch (left at -1, else the
    answer could not be encoded and the connection would close)."""
    def one(topic: str, asked: ListOffsetsRequestPartition) -> ListOffsetsResponsePartition:
        led = _led(lookup, image, topic, asked.partition_index, asked.current_leader_epoch,
                   request.replica_id)
        if isinstance(led, Errors):
            return ListOffsetsResponsePartition(partition_index=asked.partition_index,
                                                error_code=led)
        found = _list_one(led, asked, request.replica_id)
        if version < _LEADER_EPOCH_SINCE:
            found = attrs.evolve(found, leader_epoch=UNDEFINED_EPOCH)
        return found

    return ListOffsetsResponse(topics=tuple(
        ListOffsetsResponseTopic(
            name=topic.name, partitions=tuple(one(topic.name, p) for p in topic.partitions)
        )
        for topic in request.topics
    ))


def offsets_for_leader_epochs(
    lookup: PartitionLookup, image: MetadataImage, request: OffsetForLeaderEpochRequest
) -> OffsetForLeaderEpochResponse:
    def one(
        topic: str, asked: OffsetForLeaderEpochRequestPartition
    ) -> OffsetForLeaderEpochResponsePartition:
        led = _led(lookup, image, topic, asked.partition, asked.current_leader_epoch,
                   request.replica_id)
        if isinstance(led, Errors):
            return OffsetForLeaderEpochResponsePartition(
                partition=asked.partition, error_code=led,
                leader_epoch=UNDEFINED_EPOCH, end_offset=UNDEFINED_OFFSET,
            )
        ends = led.end_offset_for_epoch(asked.leader_epoch)
        return OffsetForLeaderEpochResponsePartition(
            partition=asked.partition, leader_epoch=ends.epoch, end_offset=ends.offset
        )

    return OffsetForLeaderEpochResponse(topics=tuple(
        OffsetForLeaderEpochResponseTopic(
            topic=topic.topic, partitions=tuple(one(topic.topic, p) for p in topic.partitions)
        )
        for topic in request.topics
    ))
