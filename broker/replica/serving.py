"""Fetch requests served by this broker: followers' and consumers', with long polls.

Kafka's ReplicaManager.fetchMessages with DelayedFetch:

* the request goes through the fetch session cache (``session_cache``);
  a session error answers at once with no partitions;
* every partition of the context is read in order, the response byte limit
  shrinking as records are read; only the first partition with records may
  exceed a limit (KIP-74); a follower's read updates what the leader knows
  of it (``leader_fetch.read_for_follower``), a consumer reads below the
  high watermark (``read_for_consumer``);
* the answer goes at once if the request does not wait (max wait 0), names
  no partition, found ``min_bytes``, hit an error or a diverging epoch;
  otherwise it waits in the purgatory until, for some partition, the log end
  (a follower) or the high watermark (a consumer) passes the fetch offset by
  ``min_bytes`` in all, the partition stops being led here, its epoch is
  fenced or a diverging epoch appears, or ``max_wait_ms`` passes. Then every
  partition is read again (without updating follower state again) and the
  session builds the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import cast

import attrs

from broker.replica.fetch_session import TopicPartitionName
from broker.replica.leader_fetch import (
    PartitionRead,
    check_leader_epoch,
    read_for_consumer,
    read_for_follower,
)
from broker.replica.output import FetchAnswer, Outbox
from broker.replica.partition import Partition
from broker.replica.purgatory import Purgatory
from broker.replica.session_cache import ContextKind, FetchContext, FetchSessionCache
from broker.replica_manager import PartitionKey
from quorum.log import UNDEFINED_EPOCH, UNDEFINED_OFFSET
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    FetchRequest,
    FetchRequestPartition,
    FetchResponseEpochEndOffset,
    FetchResponsePartition,
)

__all__ = ["DelayedFetch", "Serving", "replica_id_of"]

CONSUMER = -1
PartitionLookup = Callable[[str, int], Partition | None]


def replica_id_of(request: FetchRequest, version: int) -> int:
    """The fetching replica's id (-1: a consumer); version 15 moved it into ReplicaState."""
    return request.replica_state.replica_id if version >= 15 else request.replica_id


@attrs.frozen(kw_only=True)
class DelayedFetch:
    handle: Hashable
    context: FetchContext
    replica_id: int
    min_bytes: int
    max_bytes: int


def _answer(partition_index: int, read: PartitionRead) -> FetchResponsePartition:
    diverging = FetchResponseEpochEndOffset()
    if read.diverging_epoch is not None:
        diverging = FetchResponseEpochEndOffset(
            epoch=read.diverging_epoch.epoch, end_offset=read.diverging_epoch.offset
        )
    return FetchResponsePartition(
        partition_index=partition_index,
        error_code=read.error,
        high_watermark=read.high_watermark,
        # no transactions yet: everything below the high watermark is stable
        last_stable_offset=read.high_watermark,
        log_start_offset=read.log_start_offset,
        diverging_epoch=diverging,
        aborted_transactions=None,
        preferred_read_replica=-1,
        # the log's read as it is, not copied: the codec writes a RECORDS value through the
        # buffer protocol (decoded ones are memoryviews too), and the buffer is this read's own
        records=cast(bytes, read.records),
    )


class Serving:
    def __init__(self, lookup: PartitionLookup, sessions: FetchSessionCache) -> None:
        self._lookup = lookup
        self.sessions = sessions
        self.purgatory: Purgatory[DelayedFetch] = Purgatory()

    # -- reading ---------------------------------------------------------------------------

    def _read_all(
        self, op: DelayedFetch, now_ms: int, outbox: Outbox, *, first_time: bool
    ) -> dict[TopicPartitionName, FetchResponsePartition]:
        answers: dict[TopicPartitionName, FetchResponsePartition] = {}
        limit = op.max_bytes
        min_one = True
        for name, data in op.context.partitions:
            read = self._read_one(op, name, data, limit, min_one, now_ms, outbox, first_time)
            if read.records:
                min_one = False
                limit = max(0, limit - len(read.records))
            answers[name] = _answer(name[1], read)
        return answers

    def _read_one(
        self,
        op: DelayedFetch,
        name: TopicPartitionName,
        data: FetchRequestPartition,
        limit: int,
        min_one: bool,
        now_ms: int,
        outbox: Outbox,
        first_time: bool,
    ) -> PartitionRead:
        partition = self._lookup(*name)
        if partition is None:
            return PartitionRead(error=Errors.UNKNOWN_TOPIC_OR_PARTITION)
        max_bytes = min(data.partition_max_bytes, limit)
        if op.replica_id == CONSUMER:
            return read_for_consumer(
                partition,
                fetch_offset=data.fetch_offset,
                current_leader_epoch=data.current_leader_epoch,
                max_bytes=max_bytes,
                min_one=min_one,
            )
        read, effects = read_for_follower(
            partition,
            op.replica_id,
            fetch_offset=data.fetch_offset,
            last_fetched_epoch=data.last_fetched_epoch,
            current_leader_epoch=data.current_leader_epoch,
            follower_log_start_offset=data.log_start_offset,
            max_bytes=max_bytes,
            min_one=min_one,
            now_ms=now_ms,
            update_state=first_time,
        )
        if effects.high_watermark_moved:
            outbox.moved(partition.key)
        if effects.isr_change is not None:
            outbox.isr_changes.append((partition.key, effects.isr_change))
        return read

    # -- requests --------------------------------------------------------------------------

    def fetch(
        self, handle: Hashable, request: FetchRequest, version: int, now_ms: int, outbox: Outbox
    ) -> None:
        replica_id = replica_id_of(request, version)
        context = self.sessions.new_context(
            request, is_follower=replica_id != CONSUMER, now_ms=now_ms
        )
        op = DelayedFetch(
            handle=handle,
            context=context,
            replica_id=replica_id,
            min_bytes=request.min_bytes,
            max_bytes=request.max_bytes,
        )
        if context.kind is ContextKind.ERROR:
            outbox.fetch_answers.append(FetchAnswer(handle, context.build_response({}, now_ms)))
            return
        answers = self._read_all(op, now_ms, outbox, first_time=True)
        readable = sum(len(a.records or b"") for a in answers.values())
        respond_now = (
            request.max_wait_ms <= 0
            or not context.partitions
            or readable >= request.min_bytes
            or any(a.error_code != Errors.NONE or a.diverging_epoch.epoch != -1
                   for a in answers.values())
        )
        if respond_now:
            outbox.fetch_answers.append(FetchAnswer(handle, context.build_response(answers, now_ms)))
            return
        keys = []
        for name, _ in context.partitions:
            partition = self._lookup(*name)
            if partition is not None:
                keys.append(partition.key)
        self.purgatory.watch(op, keys, now_ms + request.max_wait_ms)

    def _satisfied(self, op: DelayedFetch) -> bool:
        """Kafka's DelayedFetch.tryComplete, with offsets instead of segment positions."""
        available = 0
        for (topic, index), data in op.context.partitions:
            partition = self._lookup(topic, index)
            if partition is None or not partition.is_leader:
                return True
            if check_leader_epoch(partition, data.current_leader_epoch) != Errors.NONE:
                return True
            end = (
                partition.high_watermark if op.replica_id == CONSUMER
                else partition.log_end_offset
            )
            if data.fetch_offset > end:
                return True  # the log was cut under the fetcher
            if op.replica_id != CONSUMER and data.last_fetched_epoch != UNDEFINED_EPOCH:
                ends = partition.end_offset_for_epoch(data.last_fetched_epoch)
                if ends.offset == UNDEFINED_OFFSET or ends.epoch < data.last_fetched_epoch:
                    return True
                if ends.offset < data.fetch_offset:
                    return True
            if data.fetch_offset < end:
                if available + 1 >= op.min_bytes:
                    # a record is there and a batch is never under a byte: no need to read
                    # what a follower (min bytes 1) is about to be sent anyway
                    return True
                max_bytes = data.partition_max_bytes
                found = partition.log.read(data.fetch_offset, max(max_bytes, 1), max_offset=end)
                available += min(len(found.records), max_bytes)
        return available >= max(op.min_bytes, 1)

    def _complete(self, op: DelayedFetch, now_ms: int, outbox: Outbox) -> None:
        answers = self._read_all(op, now_ms, outbox, first_time=False)
        outbox.fetch_answers.append(FetchAnswer(op.handle, op.context.build_response(answers, now_ms)))

    def check(self, key: PartitionKey, now_ms: int, outbox: Outbox) -> None:
        for op_id, op in self.purgatory.watchers(key):
            if self._satisfied(op):
                self.purgatory.complete(op_id)
                self._complete(op, now_ms, outbox)

    def expire(self, now_ms: int, outbox: Outbox) -> None:
        for op in self.purgatory.expire(now_ms):
            self._complete(op, now_ms, outbox)
