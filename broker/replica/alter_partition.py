"""ISR changes on their way to the controller (Kafka's DefaultAlterPartitionManager).

At most one change per partition waits or is in flight, and one
AlterPartition request at a time carries the waiting changes, at most
``MAX_PARTITIONS_PER_REQUEST`` of them (oldest first; Kafka sends every one:
after a broker's restart 60,000 expansions in one request cost both sides a
step of seconds, long enough to miss heartbeats). Each
partition's answer goes back to its partition with the change it answers;
a partition missing from the answer is sent again. A whole-request error
(STALE_BROKER_EPOCH, NOT_CONTROLLER, a lost connection) sends everything
again after ``retry_backoff_ms``; AlterPartition requests are never given up
on (a new assignment makes their answer stale instead).

Requests are version 3: topic ids, and the new ISR with broker epochs (this
broker's own epoch; -1 for followers, whose fetches below version 15 carry
no epoch, so the controller checks only that they are active).
"""

from __future__ import annotations

import itertools
import uuid

import attrs

from broker.replica.isr import IsrChange
from broker.replica.manager import PartitionKey
from broker.replica.partition import AcceptedIsr
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    AlterPartitionRequest,
    AlterPartitionRequestBrokerState,
    AlterPartitionRequestPartition,
    AlterPartitionRequestTopic,
    AlterPartitionResponse,
)

__all__ = [
    "ALTER_PARTITION_VERSION",
    "MAX_PARTITIONS_PER_REQUEST",
    "AlterPartitionQueue",
    "IsrChangeResult",
]

ALTER_PARTITION_VERSION = 3
MAX_PARTITIONS_PER_REQUEST = 1_000


@attrs.frozen(kw_only=True)
class IsrChangeResult:
    key: PartitionKey
    sent: IsrChange
    result: AcceptedIsr | Errors


@attrs.frozen(kw_only=True)
class _Item:
    key: PartitionKey
    change: IsrChange


class AlterPartitionQueue:
    def __init__(self, broker_id: int, retry_backoff_ms: int) -> None:
        self._broker_id = broker_id
        self._backoff_ms = retry_backoff_ms
        self._unsent: dict[PartitionKey, _Item] = {}
        self._in_flight: tuple[int, tuple[_Item, ...]] | None = None
        self._retry_at_ms = 0
        self._request_ids = itertools.count(1)

    def __len__(self) -> int:
        return len(self._unsent)

    def submit(self, key: PartitionKey, change: IsrChange) -> bool:
        """Queue ``change``; False if a change of this partition is still waiting."""
        if key in self._unsent:
            return False
        self._unsent[key] = _Item(key=key, change=change)
        return True

    def poll(self, now_ms: int, broker_epoch: int) -> tuple[int, AlterPartitionRequest] | None:
        """The request to send now (with its id), if one may go."""
        if self._in_flight is not None or not self._unsent or now_ms < self._retry_at_ms:
            return None
        items = tuple(itertools.islice(self._unsent.values(), MAX_PARTITIONS_PER_REQUEST))
        request_id = next(self._request_ids)
        self._in_flight = (request_id, items)
        return request_id, self._build(items, broker_epoch)

    def _build(self, items: tuple[_Item, ...], broker_epoch: int) -> AlterPartitionRequest:
        by_topic: dict[uuid.UUID, list[AlterPartitionRequestPartition]] = {}
        for item in items:
            isr = tuple(
                AlterPartitionRequestBrokerState(
                    broker_id=replica, broker_epoch=broker_epoch if replica == self._broker_id else -1
                )
                for replica in item.change.isr
            )
            by_topic.setdefault(item.key.topic_id, []).append(
                AlterPartitionRequestPartition(
                    partition_index=item.key.partition,
                    leader_epoch=item.change.leader_epoch,
                    new_isr_with_epochs=isr,
                    leader_recovery_state=item.change.leader_recovery_state,
                    partition_epoch=item.change.partition_epoch,
                )
            )
        return AlterPartitionRequest(
            broker_id=self._broker_id,
            broker_epoch=broker_epoch,
            topics=tuple(
                AlterPartitionRequestTopic(topic_id=topic_id, partitions=tuple(partitions))
                for topic_id, partitions in by_topic.items()
            ),
        )

    def _take(self, request_id: int) -> tuple[_Item, ...] | None:
        if self._in_flight is None or self._in_flight[0] != request_id:
            return None  # an answer to a request we no longer wait for
        items = self._in_flight[1]
        self._in_flight = None
        return items

    def handle_response(
        self, request_id: int, response: AlterPartitionResponse, now_ms: int
    ) -> list[IsrChangeResult]:
        items = self._take(request_id)
        if items is None:
            return []
        if response.error_code != Errors.NONE:
            self._retry_at_ms = now_ms + self._backoff_ms
            return []
        answers = {
            PartitionKey(topic.topic_id, part.partition_index): part
            for topic in response.topics
            for part in topic.partitions
        }
        results = []
        for item in items:
            answer = answers.get(item.key)
            if answer is None:
                continue  # left out of the answer: sent again
            if self._unsent.get(item.key) == item:
                del self._unsent[item.key]
            error = Errors.from_code(answer.error_code)
            result: AcceptedIsr | Errors = error if error != Errors.NONE else AcceptedIsr(
                leader_id=answer.leader_id,
                leader_epoch=answer.leader_epoch,
                isr=tuple(answer.isr),
                partition_epoch=answer.partition_epoch,
            )
            results.append(IsrChangeResult(key=item.key, sent=item.change, result=result))
        return results

    def request_failed(self, request_id: int, now_ms: int) -> None:
        """The request got no answer (connection lost, timed out): send again later."""
        if self._take(request_id) is not None:
            self._retry_at_ms = now_ms + self._backoff_ms

    def next_deadline_ms(self) -> int | None:
        if self._in_flight is None and self._unsent:
            return self._retry_at_ms
        return None
