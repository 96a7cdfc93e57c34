"""The producer's decisions around the accumulator (sans-I/O).

* ``choose_partition``: an explicit partition (checked against the topic's
  partition count), murmur2 of the key, or the sticky partition for
  records without a key (``partitioner.ignore.keys`` makes every record
  keyless for this choice);
* ``build_produce_request``: one ProduceRequest per broker, one batch per
  partition, transactional id null (an idempotent producer's batches carry
  its id, epoch and sequences in their headers);
* ``partition_results``: a ProduceResponse read back per batch;
* ``decide``: what a batch's answer means: delivered, retried (after a
  backoff, while ``retries`` and ``delivery.timeout.ms`` allow), split in
  two (MESSAGE_TOO_LARGE for a batch of several records, as Kafka's
  producer does), or failed. For an idempotent producer the
  ``IdempotenceManager`` decides UNKNOWN_PRODUCER_ID and
  OUT_OF_ORDER_SEQUENCE_NUMBER (retried, with an epoch bump when the gap is
  real), and DUPLICATE_SEQUENCE_NUMBER is a delivery whose offset the
  broker no longer knows (Kafka's Sender: "return success to the user").

Retriable are the errors Kafka marks retriable (NOT_LEADER_OR_FOLLOWER,
NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT,
UNKNOWN_TOPIC_OR_PARTITION while metadata catches up, a broken connection
as NETWORK_EXCEPTION...) except CORRUPT_MESSAGE: Kafka's producer retries
it, but our batches are built by ``build_batch`` and a broker that finds
one corrupt will find the same bytes corrupt again, so the records fail at
once. Without idempotence a retry after NOT_ENOUGH_REPLICAS_AFTER_APPEND or
a lost response may write a record twice, as in Kafka; with it the broker
answers the retry as a duplicate of what it appended.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from typing import Final

import attrs

from broker.client.accumulator import ProducerBatch
from broker.client.cluster import ClusterView
from broker.client.errors import KafkaError
from broker.client.idempotence import IdempotenceManager
from broker.client.partitioner import StickyPartitioner, partition_for_key
from broker.client.types import TopicPartition
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    ProduceRequest,
    ProduceRequestPartition,
    ProduceRequestTopic,
    ProduceResponse,
)

__all__ = [
    "BatchResult",
    "Decision",
    "build_produce_request",
    "choose_partition",
    "decide",
    "partition_results",
]

_NOT_RETRIED: Final = frozenset({Errors.CORRUPT_MESSAGE})


class Decision(enum.Enum):
    DELIVERED = "delivered"
    RETRY = "retry"
    SPLIT = "split"
    FAIL = "fail"


@attrs.frozen(kw_only=True)
class BatchResult:
    """One partition's answer to a Produce request."""

    error: Errors
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    message: str | None = None


def choose_partition(
    view: ClusterView,
    topic: str,
    key: bytes | None,
    partition: int | None,
    partitioner: StickyPartitioner,
    *,
    ignore_keys: bool = False,
) -> int:
    """The partition a record goes to; raises KafkaError for a partition that does not exist."""
    count = view.partition_count(topic)
    assert count is not None, f"choose_partition needs metadata for {topic}"
    if partition is not None:
        if not 0 <= partition < count:
            raise KafkaError(
                Errors.UNKNOWN_TOPIC_OR_PARTITION,
                f"Partition {partition} of topic {topic} with partition count {count} "
                "is not present in metadata",
            )
        return partition
    if key is not None and not ignore_keys:
        return partition_for_key(key, count)
    return partitioner.partition(topic, view.available_partitions(topic), count)


def build_produce_request(
    batches: Sequence[ProducerBatch], *, acks: int, timeout_ms: int
) -> ProduceRequest:
    """One request carrying one batch per partition (the accumulator drains that way).

    The batches were encoded (and compressed) by the accumulator when drained;
    a retry resends those same bytes.
    """
    by_topic: dict[str, list[ProduceRequestPartition]] = {}
    for batch in batches:
        assert batch.payload is not None, "batches are encoded when the accumulator drains them"
        by_topic.setdefault(batch.tp.topic, []).append(
            ProduceRequestPartition(index=batch.tp.partition, records=batch.payload)
        )
    return ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout_ms=timeout_ms,
        topic_data=tuple(
            ProduceRequestTopic(name=topic, partition_data=tuple(parts))
            for topic, parts in by_topic.items()
        ),
    )


def partition_results(
    response: ProduceResponse, batches: Iterable[ProducerBatch]
) -> dict[TopicPartition, BatchResult]:
    """Each sent batch's answer; a partition the broker left out is an error."""
    answered: dict[TopicPartition, BatchResult] = {}
    for topic in response.responses:
        for part in topic.partition_responses:
            message = part.error_message
            if part.record_errors and not message:
                message = "; ".join(
                    f"record {e.batch_index}: {e.batch_index_error_message}"
                    for e in part.record_errors
                )
            answered[TopicPartition(topic.name, part.index)] = BatchResult(
                error=Errors.from_code(part.error_code),
                base_offset=part.base_offset,
                log_append_time_ms=part.log_append_time_ms,
                log_start_offset=part.log_start_offset,
                message=message,
            )
    missing = BatchResult(
        error=Errors.UNKNOWN_SERVER_ERROR, message="the broker's answer left this partition out"
    )
    return {batch.tp: answered.get(batch.tp, missing) for batch in batches}


def decide(
    error: Errors,
    batch: ProducerBatch,
    *,
    retries: int,
    delivery_expired: bool,
    idempotence: IdempotenceManager | None = None,
    log_start_offset: int = -1,
) -> Decision:
    """What to do with a batch after its answer (or a broken connection's NETWORK_EXCEPTION).

    ``idempotence`` may note an epoch bump for the batch's partition (Kafka's
    ``canRetry``, asked only while the batch has retries and time left).
    """
    if error is Errors.NONE:
        return Decision.DELIVERED
    if error is Errors.MESSAGE_TOO_LARGE and batch.record_count > 1 and not delivery_expired:
        return Decision.SPLIT
    if batch.attempts < retries and not delivery_expired:
        retriable = error.retriable and error not in _NOT_RETRIED
        if idempotence is not None:
            retriable = idempotence.can_retry(
                error, batch, log_start_offset, otherwise=retriable
            )
        if retriable:
            return Decision.RETRY
    if error is Errors.DUPLICATE_SEQUENCE_NUMBER:
        return Decision.DELIVERED
    return Decision.FAIL
