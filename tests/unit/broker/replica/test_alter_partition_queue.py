"""The AlterPartition queue sends the waiting ISR changes a bounded number per request."""

from __future__ import annotations

import uuid

from broker.replica.alter_partition import MAX_PARTITIONS_PER_REQUEST, AlterPartitionQueue
from broker.replica.isr import IsrChange
from broker.replica.manager import PartitionKey
from quorum.wire.messages import (
    AlterPartitionResponse,
    AlterPartitionResponsePartition,
    AlterPartitionResponseTopic,
)

TOPIC_ID = uuid.UUID(int=3)


def _answer(request_partitions: list[int]) -> AlterPartitionResponse:
    return AlterPartitionResponse(topics=(AlterPartitionResponseTopic(
        topic_id=TOPIC_ID,
        partitions=tuple(
            AlterPartitionResponsePartition(
                partition_index=index, leader_id=1, leader_epoch=0, isr=(1, 2), partition_epoch=1
            )
            for index in request_partitions
        ),
    ),))


def test_thousands_of_changes_go_a_bounded_number_per_request_oldest_first() -> None:
    queue = AlterPartitionQueue(broker_id=1, retry_backoff_ms=50)
    total = 2 * MAX_PARTITIONS_PER_REQUEST + 500
    for index in range(total):
        assert queue.submit(
            PartitionKey(TOPIC_ID, index),
            IsrChange(leader_epoch=0, partition_epoch=0, isr=(1, 2)),
        )
    sent: list[int] = []
    for now in range(10):
        built = queue.poll(now, broker_epoch=5)
        if built is None:
            break
        request_id, request = built
        indexes = [p.partition_index for t in request.topics for p in t.partitions]
        assert len(indexes) <= MAX_PARTITIONS_PER_REQUEST
        assert queue.poll(now, broker_epoch=5) is None  # one request in flight at a time
        # the controller leaves the last partition out of its answer: it goes again, first
        answered = indexes[:-1] if len(indexes) > 1 else indexes
        results = queue.handle_response(request_id, _answer(answered), now)
        assert [r.key.partition for r in results] == answered
        sent += answered
    assert sorted(sent) == list(range(total)) and len(queue) == 0
