"""DeleteRecords (21) on a partition leader, and the wait for its replicas (Kafka's
ReplicaManager.deleteRecords with DelayedDeleteRecords).

For each partition the leader moves its own log start offset up to the asked
offset (-1: the high watermark); whole segments below it go at once. An
offset above the high watermark is OFFSET_OUT_OF_RANGE, a partition this
broker does not lead NOT_LEADER_OR_FOLLOWER (UNKNOWN_TOPIC_OR_PARTITION if the
image has no such partition). Then the answer waits, in a purgatory, until
each moved partition's *low watermark* reached the offset: the smallest log
start offset among the leader and its followers on live brokers, which each
follower reports in its fetches after it learnt the leader's new start from
an answer (Kafka's lowWatermarkIfLeader). A partition still short of it at
``timeout_ms`` answers REQUEST_TIMED_OUT; one that stops being led here
answers NOT_LEADER_OR_FOLLOWER.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import attrs

from broker.replica.manager import PartitionKey
from broker.replica.output import DeleteRecordsAnswer, Outbox, by_topic
from broker.replica.partition import Partition
from broker.replica.purgatory import Purgatory
from quorum.controller.image import MetadataImage
from quorum.log import OffsetOutOfRangeError
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsResponsePartition,
    DeleteRecordsResponseTopic,
)

__all__ = ["HIGH_WATERMARK", "Deleting"]

HIGH_WATERMARK = -1
PartitionLookup = Callable[[str, int], Partition | None]


@attrs.define
class _Status:
    topic: str
    index: int
    key: PartitionKey | None
    target: int = -1
    error: Errors = Errors.NONE
    low_watermark: int = -1
    pending: bool = False


@attrs.frozen
class DelayedDeleteRecords:
    handle: Hashable
    statuses: list[_Status]


def _answer(handle: Hashable, statuses: list[_Status]) -> DeleteRecordsAnswer:
    topics = by_topic(
        (status.topic, DeleteRecordsResponsePartition(
            partition_index=status.index,
            low_watermark=status.low_watermark if status.error == Errors.NONE else -1,
            error_code=status.error,
        ))
        for status in statuses
    )
    return DeleteRecordsAnswer(handle, DeleteRecordsResponse(topics=tuple(
        DeleteRecordsResponseTopic(name=name, partitions=parts) for name, parts in topics.items()
    )))


class Deleting:
    def __init__(
        self,
        lookup: PartitionLookup,
        by_key: Callable[[PartitionKey], Partition | None],
        image: Callable[[], MetadataImage],
    ) -> None:
        self._lookup = lookup
        self._by_key = by_key
        self._image = image
        self.purgatory: Purgatory[DelayedDeleteRecords] = Purgatory()

    def delete_records(
        self, handle: Hashable, request: DeleteRecordsRequest, now_ms: int, outbox: Outbox
    ) -> None:
        statuses = [
            self._delete_one(topic.name, asked.partition_index, asked.offset, outbox)
            for topic in request.topics
            for asked in topic.partitions
        ]
        op = DelayedDeleteRecords(handle, statuses)
        waiting = [s.key for s in statuses if s.pending and s.key is not None]
        if not waiting:
            outbox.delete_records_answers.append(_answer(handle, statuses))
            return
        op_id = self.purgatory.watch(op, waiting, now_ms + request.timeout_ms)
        self._try_complete(op_id, op, outbox)

    def _delete_one(self, topic: str, index: int, offset: int, outbox: Outbox) -> _Status:
        partition = self._lookup(topic, index)
        status = _Status(topic, index, None if partition is None else partition.key)
        if partition is None or not partition.is_leader:
            found = self._image().topic(topic)
            known = found is not None and index in found.partitions
            status.error = (
                Errors.NOT_LEADER_OR_FOLLOWER if known else Errors.UNKNOWN_TOPIC_OR_PARTITION
            )
            return status
        high_watermark = partition.high_watermark
        target = high_watermark if offset == HIGH_WATERMARK else offset
        if target < 0:
            status.error = Errors.OFFSET_OUT_OF_RANGE
            return status
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
            status.error = Errors.OFFSET_OUT_OF_RANGE
            return status
        outbox.touched.add(partition.key)  # followers hear of the new start at once
        status.target = target
        status.pending = True
        status.error = Errors.REQUEST_TIMED_OUT  # unless the replicas follow in time
        return status

    def _try_complete(self, op_id: int, op: DelayedDeleteRecords, outbox: Outbox) -> None:
        for status in op.statuses:
            if not status.pending:
                continue
            assert status.key is not None
            partition = self._by_key(status.key)
            if partition is None or not partition.is_leader:
                status.pending, status.error = False, Errors.NOT_LEADER_OR_FOLLOWER
                continue
            low = partition.low_watermark()
            status.low_watermark = low
            if low >= status.target:
                status.pending, status.error = False, Errors.NONE
        if any(s.pending for s in op.statuses):
            return
        self.purgatory.complete(op_id)
        outbox.delete_records_answers.append(_answer(op.handle, op.statuses))

    def check(self, key: PartitionKey, outbox: Outbox) -> None:
        for op_id, op in self.purgatory.watchers(key):
            self._try_complete(op_id, op, outbox)

    def expire(self, now_ms: int, outbox: Outbox) -> None:
        for op in self.purgatory.expire(now_ms):
            outbox.delete_records_answers.append(_answer(op.handle, op.statuses))
