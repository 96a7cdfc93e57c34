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

One difference, for a follower's incremental session (which may hold
100,000 partitions): Kafka reads every partition of the session at every
fetch; here only its *dirty* partitions are read: those that changed on this
leader since they were last read for the follower (log end, high watermark,
log start, role, epoch or ISR: ``mark_changed``), those the request names,
and those whose follower is not caught up or not in the ISR. Every other
partition of the session is *idle*: the follower fetched it at the leader's
log end and nothing changed since, so each fetch would only have set its
caught-up time to the fetch's time. The session keeps that time
(``last_fetch_ms``) and ``mark_changed`` writes it into the follower's state
(``Partition.note_idle_fetch``) before the partition changes and is read
again, so every caught-up time, high watermark and ISR decision is Kafka's.
A parked follower fetch of a session is watched under the session, not
under each of its partitions.
"""

from __future__ import annotations

import itertools
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
from broker.replica.manager import PartitionKey
from broker.replica.output import FetchAnswer, Outbox
from broker.replica.partition import Partition
from broker.replica.purgatory import Purgatory
from broker.replica.session_cache import (
    ContextKind,
    FetchContext,
    FetchSession,
    FetchSessionCache,
    PartitionFetchData,
)
from quorum.log import UNDEFINED_EPOCH, UNDEFINED_OFFSET
from quorum.wire.error_codes import Errors
from quorum.wire.file_region import FileRegion
from quorum.wire.messages import (
    FetchRequest,
    FetchResponseEpochEndOffset,
    FetchResponsePartition,
)

__all__ = ["SESSION_READ_SLICE", "DelayedFetch", "Serving", "replica_id_of"]

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
    # (checked one touched partition at a time: a session may hold 100,000 partitions);
    # a follower session's fetch finds what it asked in the session instead
    requested: dict[PartitionKey, PartitionFetchData] = attrs.field(factory=dict)
    available: dict[PartitionKey, int] = attrs.field(factory=dict)
    # the partitions the last read looked at (their news is in the answer built from it)
    read: list[TopicPartitionName] = attrs.field(factory=list)

    @property
    def follower_session(self) -> FetchSession | None:
        """The follower's incremental session this fetch reads the dirty part of."""
        context = self.context
        if context.kind is ContextKind.INCREMENTAL and self.replica_id != CONSUMER:
            return context.session
        return None


# a partition this broker does not host: Kafka's KafkaApis answers it before any read, with
# FetchResponse.partitionResponse (offsets -1 and, the generated default, an empty list of
# aborted transactions where an answer that was read has none: null)
_UNKNOWN_PARTITION = PartitionRead(error=Errors.UNKNOWN_TOPIC_OR_PARTITION)


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
        aborted_transactions=() if read is _UNKNOWN_PARTITION else None,
        preferred_read_replica=-1,
        # the log's read as it is, not copied: the codec writes a RECORDS value through the
        # buffer protocol (decoded ones are memoryviews too), and the buffer is this read's own
        records=cast(bytes, read.records),
    )


# a follower session's dirty partitions one fetch reads at most (the rest, at once, in the
# next fetches): after leaderships move, 30,000 of them would make one step of seconds on
# each side (Kafka reads them all); at 100-200 us a partition, 1,000 made steps of 230 ms
# after a full restart at 100,000 partitions, 250 keep them near 50 ms
SESSION_READ_SLICE = 250


def _session_key(session: FetchSession) -> tuple[str, int]:
    """The purgatory key a follower session's parked fetch waits under."""
    return ("fetch-session", session.session_id)


class Serving:
    def __init__(
        self,
        lookup: PartitionLookup,
        sessions: FetchSessionCache,
        by_key: Callable[[PartitionKey], Partition | None],
    ) -> None:
        self._lookup = lookup
        self._by_key = by_key
        self.sessions = sessions
        self.purgatory: Purgatory[DelayedFetch] = Purgatory()

    # -- reading ---------------------------------------------------------------------------

    def _read_all(
        self, op: DelayedFetch, now_ms: int, outbox: Outbox, *, first_time: bool
    ) -> dict[TopicPartitionName, FetchResponsePartition]:
        answers: dict[TopicPartitionName, FetchResponsePartition] = {}
        limit = op.max_bytes
        min_one = True
        session = op.follower_session
        if session is not None:
            cached = session.partitions
            dirty = session.dirty
            partitions: list[tuple[TopicPartitionName, PartitionFetchData]] = [
                (name, cached[name]) for name in itertools.islice(dirty, SESSION_READ_SLICE)
            ]
        else:
            partitions = op.context.partitions
        op.read.clear()
        for name, data in partitions:
            op.read.append(name)
            read = self._read_one(op, name, data, limit, min_one, now_ms, outbox, first_time)
            if read.records:
                min_one = False
                limit = max(0, limit - len(read.records))
            answers[name] = _answer(name[1], read)
        return answers

    def _answered(self, op: DelayedFetch) -> None:
        """The answer went out: in a follower's session, the partitions it read that are now
        idle and caught up are no longer read at each fetch."""
        session = op.context.session
        if session is None or not session.privileged:
            return
        dirty = session.dirty
        for name in op.read:
            if name in dirty:
                del dirty[name]
                if not self._is_idle(session, name):
                    dirty[name] = None  # still to read: behind the ones not read yet

    def _is_idle(self, session: FetchSession, name: TopicPartitionName) -> bool:
        """The follower fetched ``name`` at this leader's log end, in its epoch, is in the
        ISR, and was last sent the current high watermark and log start."""
        partition = self._lookup(*name)
        cached = session.partitions.get(name)
        if partition is None or cached is None or not partition.is_leader:
            return False
        state = partition.followers.get(session.replica_id)
        end = partition.log_end_offset
        return (
            state is not None
            and state.log_end_offset == end
            and cached.fetch_offset == end
            and cached.current_leader_epoch in (-1, partition.leader_epoch)
            and session.replica_id in partition.isr_state.isr
            and cached.sent_high_watermark == partition.high_watermark
            and cached.sent_log_start_offset == partition.log_start_offset
        )

    def mark_changed(self, partition: Partition) -> list[FetchSession]:
        """A partition's log end, high watermark, log start, role or ISR changed (or is about
        to go): each follower session holding it reads it at its next fetch. Where it was
        idle, the follower's state first takes the caught-up time of the session's last
        fetch, as Kafka's read of it then would have set. The sessions holding it."""
        name = partition.name
        holding = []
        for session in self.sessions.follower_sessions():
            if name not in session.partitions:
                continue
            holding.append(session)
            if name in session.dirty:
                continue
            if partition.is_leader:
                partition.note_idle_fetch(session.replica_id, session.last_fetch_ms)
            session.dirty[name] = None
        return holding

    def _read_one(
        self,
        op: DelayedFetch,
        name: TopicPartitionName,
        data: PartitionFetchData,
        limit: int,
        min_one: bool,
        now_ms: int,
        outbox: Outbox,
        first_time: bool,
    ) -> PartitionRead:
        partition = self._lookup(*name)
        if partition is None:
            return _UNKNOWN_PARTITION
        max_bytes = min(data.partition_max_bytes, limit)
        if op.replica_id == CONSUMER:
            return read_for_consumer(
                partition,
                fetch_offset=data.fetch_offset,
                current_leader_epoch=data.current_leader_epoch,
                max_bytes=max_bytes,
                min_one=min_one,
            )
        state = partition.followers.get(op.replica_id)
        reported_start = None if state is None else state.log_start_offset
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
        elif first_time:
            if read.log_end_offset != data.fetch_offset:
                outbox.lagging.add(partition.key)  # a follower behind: the ISR check watches it
            if reported_start is not None and 0 <= reported_start != data.log_start_offset:
                outbox.touched.add(partition.key)  # a DeleteRecords may wait for its log start
        if effects.isr_change is not None:
            outbox.isr_changes.append((partition.key, effects.isr_change))
        return read

    # -- requests --------------------------------------------------------------------------

    def fetch(
        self, handle: Hashable, request: FetchRequest, version: int, now_ms: int, outbox: Outbox
    ) -> None:
        replica_id = replica_id_of(request, version)
        context = self.sessions.new_context(request, replica_id=replica_id, now_ms=now_ms)
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
        session = op.follower_session
        answers = self._read_all(op, now_ms, outbox, first_time=True)
        if session is not None:
            # what it did not read is idle: caught up as of this fetch
            session.last_fetch_ms = now_ms
        readable = sum(len(a.records or b"") for a in answers.values())
        respond_now = (
            request.max_wait_ms <= 0
            # more dirty partitions than one read takes: the rest go in the next fetches
            or (session is not None and len(session.dirty) > len(op.read))
            or (session is None and not context.partitions)
            # partitions joining a session: answered at once, so a session of 30,000 fills
            # in a few round trips instead of a long poll each
            or context.joined > 0
            or readable >= request.min_bytes
            or any(a.error_code != Errors.NONE or a.diverging_epoch.epoch != -1
                   for a in answers.values())
        )
        if respond_now:
            self._respond(op, answers, now_ms, outbox)
            return
        deadline = now_ms + request.max_wait_ms
        if session is not None:
            self.purgatory.watch(op, [_session_key(session)], deadline)
            return
        for name, data in context.partitions:
            partition = self._lookup(*name)
            if partition is not None:
                op.requested[partition.key] = data
        self.purgatory.watch(op, list(op.requested), deadline)

    def _respond(
        self,
        op: DelayedFetch,
        answers: dict[TopicPartitionName, FetchResponsePartition],
        now_ms: int,
        outbox: Outbox,
    ) -> None:
        response = op.context.build_response(answers, now_ms)
        outbox.fetch_answers.append(FetchAnswer(op.handle, response))
        self._answered(op)

    def _satisfied_by(
        self, op: DelayedFetch, key: PartitionKey, data: PartitionFetchData | None
    ) -> bool:
        """Kafka's DelayedFetch.tryComplete for the one partition that changed (with
        offsets instead of segment positions); the bytes the others had are remembered."""
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
            found = partition.log.read_records(data.fetch_offset, max(max_bytes, 1), max_offset=end)
            op.available[key] = min(len(found), max_bytes)
            if isinstance(found, FileRegion):
                found.close()  # measured, not sent: the answer reads again when complete
        return sum(op.available.values()) >= max(op.min_bytes, 1)

    def _complete(self, op: DelayedFetch, now_ms: int, outbox: Outbox) -> None:
        answers = self._read_all(op, now_ms, outbox, first_time=False)
        self._respond(op, answers, now_ms, outbox)

    def check(self, key: PartitionKey, now_ms: int, outbox: Outbox) -> None:
        """Something changed at ``key``: wake the fetches it satisfies."""
        partition = self._by_key(key)
        if partition is None:
            for op_id, op in self.purgatory.watchers(key):
                self.purgatory.complete(op_id)
                self._complete(op, now_ms, outbox)
            return
        for session in self.mark_changed(partition):
            watching = self.purgatory.watchers(_session_key(session))
            if not watching:
                continue
            cached = session.partitions[partition.name]
            for op_id, op in watching:
                if self._satisfied_by(op, key, cached):
                    self.purgatory.complete(op_id)
                    self._complete(op, now_ms, outbox)
        for op_id, op in self.purgatory.watchers(key):
            if self._satisfied_by(op, key, op.requested.get(key)):
                self.purgatory.complete(op_id)
                self._complete(op, now_ms, outbox)

    def stop_hosting(self, partition: Partition) -> None:
        """``partition`` is about to leave this broker: follower sessions read it (and
        answer its error) at their next fetch."""
        self.mark_changed(partition)

    def expire(self, now_ms: int, outbox: Outbox) -> None:
        for op in self.purgatory.expire(now_ms):
            self._complete(op, now_ms, outbox)
