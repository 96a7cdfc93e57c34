"""Produce requests on the leader: appends now, acks=all answers when the HW passes them.

Kafka's ReplicaManager.appendRecords with DelayedProduce:

* acks other than 0, 1 and -1: every partition answers INVALID_REQUIRED_ACKS,
  nothing is appended;
* each partition appends (``broker.replica.append``); an unknown partition
  answers UNKNOWN_TOPIC_OR_PARTITION, one this broker does not lead
  NOT_LEADER_OR_FOLLOWER; a client's produce to an internal topic
  (``__consumer_offsets``) INVALID_TOPIC_EXCEPTION: only the broker's own
  group coordinator appends there (``internal=True``);
* acks=1 answers at once; acks=0 gets no answer at all (a stray answer would
  desynchronise the client's correlation ids);
* acks=all with at least one partition appended waits in the purgatory until
  each appended partition says, through ``check_enough_replicas_reach_offset``,
  that its high watermark passed the batch (NONE, or
  NOT_ENOUGH_REPLICAS_AFTER_APPEND when the maximal ISR fell below min ISR),
  that it no longer leads (NOT_LEADER_OR_FOLLOWER), or until ``timeout_ms``
  (REQUEST_TIMED_OUT).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import attrs

from broker.replica.append import ACKS_ALL, AppendResult, append_to_leader
from broker.replica.manager import PartitionKey
from broker.replica.output import Outbox, ProduceAnswer, by_topic
from broker.replica.partition import Partition
from broker.replica.purgatory import Purgatory
from quorum.controller.topic_names import INTERNAL_TOPICS
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    ProduceRequest,
    ProduceResponse,
    ProduceResponsePartition,
    ProduceResponseTopic,
)

__all__ = ["DelayedProduce", "Producing"]

_VALID_ACKS = frozenset({0, 1, ACKS_ALL})

PartitionLookup = Callable[[str, int], Partition | None]


@attrs.define
class _Status:
    topic: str
    index: int
    key: PartitionKey | None
    result: AppendResult
    # acks=all: waiting for the high watermark to pass ``required_offset``
    pending: bool = False
    required_offset: int = -1


@attrs.define
class DelayedProduce:
    handle: Hashable
    statuses: list[_Status]


def _answer(handle: Hashable, statuses: list[_Status]) -> ProduceAnswer:
    topics = by_topic(
        (status.topic, ProduceResponsePartition(
            index=status.index,
            error_code=status.result.error,
            base_offset=status.result.base_offset,
            log_append_time_ms=status.result.log_append_time_ms,
            log_start_offset=status.result.log_start_offset,
            record_errors=status.result.record_errors,
            error_message=status.result.error_message,
        ))
        for status in statuses
    )
    return ProduceAnswer(handle, ProduceResponse(responses=tuple(
        ProduceResponseTopic(name=name, partition_responses=parts) for name, parts in topics.items()
    )))


class Producing:
    def __init__(self, lookup: PartitionLookup, by_key: Callable[[PartitionKey], Partition | None]):
        self._lookup = lookup
        self._by_key = by_key
        self.purgatory: Purgatory[DelayedProduce] = Purgatory()

    def produce(
        self,
        handle: Hashable,
        request: ProduceRequest,
        now_ms: int,
        outbox: Outbox,
        *,
        internal: bool = False,
    ) -> None:
        statuses = []
        for topic in request.topic_data:
            for data in topic.partition_data:
                if topic.name in INTERNAL_TOPICS and not internal:
                    statuses.append(_Status(topic.name, data.index, None, AppendResult(
                        error=Errors.INVALID_TOPIC_EXCEPTION,
                        error_message=f"Cannot append to internal topic {topic.name}",
                    )))
                    continue
                statuses.append(self._append_one(topic.name, data.index, data.records,
                                                 request.acks, now_ms, outbox))
        if request.acks == 0:
            return
        waiting = [s for s in statuses if s.pending]
        if not waiting:
            outbox.produce_answers.append(_answer(handle, statuses))
            return
        op = DelayedProduce(handle, statuses)
        op_id = self.purgatory.watch(
            op, [s.key for s in waiting if s.key is not None], now_ms + request.timeout_ms
        )
        # the high watermark may already be past the batch (an ISR of one)
        self._try_complete(op_id, op, outbox)

    def _append_one(
        self,
        topic: str,
        index: int,
        records: bytes | None,
        acks: int,
        now_ms: int,
        outbox: Outbox,
    ) -> _Status:
        if acks not in _VALID_ACKS:
            return _Status(topic, index, None, AppendResult(error=Errors.INVALID_REQUIRED_ACKS))
        partition = self._lookup(topic, index)
        if partition is None:
            return _Status(topic, index, None,
                           AppendResult(error=Errors.UNKNOWN_TOPIC_OR_PARTITION))
        result = append_to_leader(partition, records, acks, now_ms)
        status = _Status(topic, index, partition.key, result)
        if result.error == Errors.NONE:
            outbox.touched.add(partition.key)
            if result.high_watermark_moved:
                outbox.moved(partition.key)
            if acks == ACKS_ALL:
                # answers REQUEST_TIMED_OUT unless the high watermark passes the batch in time
                status.pending = True
                status.required_offset = result.last_offset + 1
                status.result = attrs.evolve(result, error=Errors.REQUEST_TIMED_OUT)
        return status

    def _try_complete(self, op_id: int, op: DelayedProduce, outbox: Outbox) -> bool:
        for status in op.statuses:
            if not status.pending:
                continue
            assert status.key is not None
            partition = self._by_key(status.key)
            if partition is None:
                done, error = False, Errors.NOT_LEADER_OR_FOLLOWER
            else:
                done, error = partition.check_enough_replicas_reach_offset(status.required_offset)
            if done or error != Errors.NONE:
                status.pending = False
                status.result = attrs.evolve(status.result, error=error)
        if any(s.pending for s in op.statuses):
            return False
        self.purgatory.complete(op_id)
        outbox.produce_answers.append(_answer(op.handle, op.statuses))
        return True

    def check(self, key: PartitionKey, outbox: Outbox) -> None:
        """Complete the produces waiting on ``key`` whose condition now holds."""
        for op_id, op in self.purgatory.watchers(key):
            self._try_complete(op_id, op, outbox)

    def expire(self, now_ms: int, outbox: Outbox) -> None:
        for op in self.purgatory.expire(now_ms):
            outbox.produce_answers.append(_answer(op.handle, op.statuses))
