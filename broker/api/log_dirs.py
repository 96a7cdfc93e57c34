"""DescribeLogDirs (35): a broker's partition logs, as its tools see them.

DescribeLogDirs (what ``kafka-log-dirs --describe`` prints) lists this
broker's one log directory with the size of each partition log it hosts,
leader or follower (all topics for a null topic list; the asked ones
otherwise, partitions it does not host left out, as Kafka does), and from v4
the directory's file system's total and usable bytes.

DeleteRecords (21) waits for the replicas: ``broker.replica.deleting``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from broker.replica import Partition
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeLogDirsResponsePartition,
    DescribeLogDirsResponseResult,
    DescribeLogDirsResponseTopic,
)

__all__ = ["describe_log_dirs"]



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
