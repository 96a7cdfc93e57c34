"""DescribeLogDirs (35) and DeleteRecords (21): a broker's partition logs, as its tools see them.

DescribeLogDirs (what ``kafka-log-dirs --describe`` prints) lists this
broker's one log directory with the size of each partition log it hosts,
leader or follower (all topics for a null topic list; the asked ones
otherwise, partitions it does not host left out, as Kafka does), and from v4
the directory's file system's total and usable bytes.

DeleteRecords moves a partition's log start offset up to the given offset
(-1: the high watermark) on the partition's leader; whole segments below it
go at once (``maybe_increment_log_start_offset``), followers learn the new
start from their next fetch and move theirs. An offset above the high
watermark is OFFSET_OUT_OF_RANGE, a partition this broker does not lead
NOT_LEADER_OR_FOLLOWER (UNKNOWN_TOPIC_OR_PARTITION if the image has no such
partition). The answer's low watermark is the leader's new log start offset:
Kafka waits (a purgatory) until every replica's log start has moved; pykraft
answers once the leader's has (a follower's moves on its next fetch).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from broker.replica import Partition
from quorum.controller.image import MetadataImage
from quorum.log import OffsetOutOfRangeError
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsResponsePartition,
    DeleteRecordsResponseTopic,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeLogDirsResponsePartition,
    DescribeLogDirsResponseResult,
    DescribeLogDirsResponseTopic,
)

__all__ = ["delete_records", "describe_log_dirs"]

HIGH_WATERMARK = -1
PartitionLookup = Callable[[str, int], Partition | None]


def _size(partition: Partition) -> int:
    size = getattr(partition.log, "size_in_bytes", 0)
    return size if isinstance(size, int) else 0


def describe_log_dirs(
    partitions: Iterable[Partition], log_dir: Path, request: DescribeLogDirsRequest
) -> DescribeLogDirsResponse:
    asked: dict[str, set[int]] | None = None
    if request.topics is not None:
        asked = {}
        for topic in request.topics:
            asked.setdefault(topic.topic, set()).update(topic.partitions)
    by_topic: dict[str, list[DescribeLogDirsResponsePartition]] = {}
    for partition in partitions:
        if asked is not None and partition.index not in asked.get(partition.topic, ()):
            continue
        by_topic.setdefault(partition.topic, []).append(DescribeLogDirsResponsePartition(
            partition_index=partition.index, partition_size=_size(partition)
        ))
    try:
        stats = os.statvfs(log_dir)
        total, usable = stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize
        error = Errors.NONE
    except OSError:
        total = usable = -1
        error = Errors.KAFKA_STORAGE_ERROR
    result = DescribeLogDirsResponseResult(
        error_code=error,
        log_dir=str(log_dir.resolve()),
        topics=tuple(
            DescribeLogDirsResponseTopic(
                name=name, partitions=tuple(sorted(parts, key=lambda p: p.partition_index))
            )
            for name, parts in sorted(by_topic.items())
        ),
        total_bytes=total,
        usable_bytes=usable,
    )
    return DescribeLogDirsResponse(results=(result,))


def _delete_one(
    lookup: PartitionLookup, image: MetadataImage, topic: str, index: int, offset: int
) -> DeleteRecordsResponsePartition:
    def refused(error: Errors) -> DeleteRecordsResponsePartition:
        return DeleteRecordsResponsePartition(
            partition_index=index, low_watermark=-1, error_code=error
        )

    partition = lookup(topic, index)
    if partition is None:
        found = image.topic(topic)
        if found is None or index not in found.partitions:
            return refused(Errors.UNKNOWN_TOPIC_OR_PARTITION)
        return refused(Errors.NOT_LEADER_OR_FOLLOWER)
    if not partition.is_leader:
        return refused(Errors.NOT_LEADER_OR_FOLLOWER)
    high_watermark = partition.high_watermark
    target = high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0:
        return refused(Errors.OFFSET_OUT_OF_RANGE)
    log = partition.log
    try:
        move = getattr(log, "maybe_increment_log_start_offset", None)
        if move is not None:
            move(target, high_watermark=high_watermark)
        elif target > high_watermark:
            raise OffsetOutOfRangeError(f"{target} is above the high watermark {high_watermark}")
        else:
            log.advance_log_start_offset(max(target, log.log_start_offset))
    except OffsetOutOfRangeError:
        return refused(Errors.OFFSET_OUT_OF_RANGE)
    return DeleteRecordsResponsePartition(
        partition_index=index, low_watermark=partition.log_start_offset
    )


def delete_records(
    lookup: PartitionLookup, image: MetadataImage, request: DeleteRecordsRequest
) -> DeleteRecordsResponse:
    return DeleteRecordsResponse(topics=tuple(
        DeleteRecordsResponseTopic(name=topic.name, partitions=tuple(
            _delete_one(lookup, image, topic.name, p.partition_index, p.offset)
            for p in topic.partitions
        ))
        for topic in request.topics
    ))
