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
from broker.replica.session_cache import (
    ContextKind,
    FetchContext,
    FetchSession,
    FetchSessionCache,
)
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
    # while it waits: what it asked of each watched partition, and the bytes each has for it
    # (checked one touched partition at a time: a session may hold 100,000 partitions)
    requested: dict[PartitionKey, FetchRequestPartition] = attrs.field(factory=dict)
    available: dict[PartitionKey, int] = attrs.field(factory=dict)
    # the partitions the last read looked at (their news is in the answer built from it)
    read: list[TopicPartitionName] = attrs.field(factory=list)

    def answered(self) -> None:
        """The answer went out: what it read is no longer news for a follower's session."""
        session = self.context.session
        if session is not None and session.dirty:
            session.dirty.difference_update(self.read)


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
    def __init__(
        self,
        lookup: PartitionLookup,
        sessions: FetchSessionCache,
        by_key: Callable[[PartitionKey], Partition | None],
        *,
        sweep_interval_ms: int = 1_000,
    ) -> None:
        self._lookup = lookup
        self._by_key = by_key
        # how often a follower's idle partitions are read anyway (their caught-up time)
        self._sweep_interval_ms = sweep_interval_ms
        self.sessions = sessions
        self.purgatory: Purgatory[DelayedFetch] = Purgatory()

    # -- reading ---------------------------------------------------------------------------

    def _read_all(
        self, op: DelayedFetch, now_ms: int, outbox: Outbox, *, first_time: bool
    ) -> dict[TopicPartitionName, FetchResponsePartition]:
        answers: dict[TopicPartitionName, FetchResponsePartition] = {}
        limit = op.max_bytes
        min_one = True
        session = op.context.session
        idle_ok = session is not None and op.replica_id != CONSUMER
        partitions = op.context.partitions
        if idle_ok and session is not None:
            partitions = self._worth_reading(op, session, now_ms, first_time)
        op.read.clear()
        for name, data in partitions:
            op.read.append(name)
            if idle_ok and self._idle(op, name, data, now_ms, outbox, first_time):
                continue  # nothing new for this follower: left out of the incremental answer
            read = self._read_one(op, name, data, limit, min_one, now_ms, outbox, first_time)
            if read.records:
                min_one = False
                limit = max(0, limit - len(read.records))
            answers[name] = _answer(name[1], read)
        return answers

    def _worth_reading(
        self, op: DelayedFetch, session: FetchSession, now_ms: int, first_time: bool
    ) -> list[tuple[TopicPartitionName, FetchRequestPartition]]:
        """The partitions of a follower's incremental fetch that may have news: those it
        named, those that changed here since they were last read for it (``mark_changed``),
        and all of them once per sweep interval, which also tells the leader that the idle
        ones are still caught up. A follower's idle partitions thus cost nothing between
        sweeps: 100,000 of them would otherwise be walked at every fetch."""
        if first_time and now_ms - session.last_sweep_ms >= self._sweep_interval_ms:
            session.last_sweep_ms = now_ms
            return op.context.partitions
        cached = session.partitions
        # sorted: the same inputs read in the same order (the simulator replays seeds)
        wanted = sorted(session.dirty | op.context.listed)
        return [(name, cached[name].data) for name in wanted if name in cached]

    def mark_changed(self, partition: Partition) -> None:
        """A partition's log end, high watermark, log start or role changed: each follower
        session holding it reads it at its next fetch."""
        name = (partition.topic, partition.index)
        for session in self.sessions.follower_sessions():
            if name in session.partitions:
                session.dirty.add(name)

    def _idle(
        self,
        op: DelayedFetch,
        name: TopicPartitionName,
        data: FetchRequestPartition,
        now_ms: int,
        outbox: Outbox,
        first_time: bool,
    ) -> bool:
        """A caught-up follower's partition in an incremental session with no news: its
        fetch state is updated as a read would, and no answer is built (what a full read
        of 100,000 idle partitions per fetch would cost). False: read it as usual."""
        session = op.context.session
        assert session is not None
        cached = session.partitions.get(name)
        partition = self._lookup(*name)
        if cached is None or partition is None or not partition.is_leader:
            return False
        if data.current_leader_epoch not in (-1, partition.leader_epoch):
            return False
        end = partition.log_end_offset
        if data.fetch_offset != end or op.replica_id not in partition.followers:
            return False
        # same end offset and same last epoch as the leader's log: nothing diverged
        # (no last epoch: no divergence check, as read_for_follower)
        last = data.last_fetched_epoch
        if last != UNDEFINED_EPOCH and last != partition.log.last_fetched_epoch:
            return False
        if (cached.high_watermark, cached.log_start_offset) != (
            partition.high_watermark, partition.log_start_offset
        ):
            return False
        if first_time:
            moved, change = partition.update_follower_fetch_state(
                op.replica_id,
                fetch_offset=data.fetch_offset,
                log_start_offset=data.log_start_offset,
                now_ms=now_ms,
                leader_end_offset=end,
            )
            if moved:
                outbox.moved(partition.key)
            if change is not None:
                outbox.isr_changes.append((partition.key, change))
        return True

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
            # partitions joining a session: answered at once, so a session of 30,000 fills
            # in a few round trips instead of a long poll each
            or context.joined > 0
            or readable >= request.min_bytes
            or any(a.error_code != Errors.NONE or a.diverging_epoch.epoch != -1
                   for a in answers.values())
        )
        if respond_now:
            outbox.fetch_answers.append(FetchAnswer(handle, context.build_response(answers, now_ms)))
            op.answered()
            return
        for name, data in context.partitions:
            partition = self._lookup(*name)
            if partition is not None:
                op.requested[partition.key] = data
        self.purgatory.watch(op, list(op.requested), now_ms + request.max_wait_ms)

    def _satisfied_by(self, op: DelayedFetch, key: PartitionKey) -> bool:
        """Kafka's DelayedFetch.tryComplete for the one partition that changed (with
        offsets instead of segment positions); the bytes the others had are remembered."""
        data = op.requested.get(key)
        if data is None:
            return False
        partition = self._by_key(key)
        if partition is None or not partition.is_leader:
            return True
        if check_leader_epoch(partition, data.current_leader_epoch) != Errors.NONE:
            return True
        end = partition.high_watermark if op.replica_id == CONSUMER else partition.log_end_offset
        if data.fetch_offset > end:
            return True  # the log was cut under the fetcher
        if op.replica_id != CONSUMER and data.last_fetched_epoch != UNDEFINED_EPOCH:
            ends = partition.end_offset_for_epoch(data.last_fetched_epoch)
            if ends.offset == UNDEFINED_OFFSET or ends.epoch < data.last_fetched_epoch:
                return True
            if ends.offset < data.fetch_offset:
                return True
        if data.fetch_offset < end:
            others = sum(v for k, v in op.available.items() if k != key)
            if others + 1 >= op.min_bytes:
                # a record is there and a batch is never under a byte: no need to read
                # what a follower (min bytes 1) is about to be sent anyway
                return True
            max_bytes = data.partition_max_bytes
            found = partition.log.read(data.fetch_offset, max(max_bytes, 1), max_offset=end)
            op.available[key] = min(len(found.records), max_bytes)
        return sum(op.available.values()) >= max(op.min_bytes, 1)

    def _complete(self, op: DelayedFetch, now_ms: int, outbox: Outbox) -> None:
        answers = self._read_all(op, now_ms, outbox, first_time=False)
        outbox.fetch_answers.append(FetchAnswer(op.handle, op.context.build_response(answers, now_ms)))
        op.answered()

    def check(self, key: PartitionKey, now_ms: int, outbox: Outbox) -> None:
        partition = self._by_key(key)
        if partition is not None:
            self.mark_changed(partition)
        for op_id, op in self.purgatory.watchers(key):
            if self._satisfied_by(op, key):
                self.purgatory.complete(op_id)
                self._complete(op, now_ms, outbox)

    def expire(self, now_ms: int, outbox: Outbox) -> None:
        for op in self.purgatory.expire(now_ms):
            self._complete(op, now_ms, outbox)
