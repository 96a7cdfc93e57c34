"""The producer's decisions: partition choice, request building per broker, retry or fail."""

from __future__ import annotations

import random

import pytest

from broker.client import (
    Decision,
    KafkaError,
    ProducerBatch,
    RecordAccumulator,
    StickyPartitioner,
    TopicPartition,
    build_produce_request,
    choose_partition,
    cluster_view_from_metadata,
    decide,
    partition_for_key,
)
from broker.client.produce_core import partition_results
from quorum.wire.compression import Compression
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    ProduceResponse,
    ProduceResponsePartition,
    ProduceResponseTopic,
)
from quorum.wire.records import iter_batches

from .metadata_helpers import metadata

VIEW = cluster_view_from_metadata(metadata({"t": [(1, 0), (2, 0), (-1, 0), (1, 0)], "u": [(2, 0)]}))


T0 = TopicPartition("t", 0)


def batch(records: int = 1, attempts: int = 0, tp: TopicPartition = T0) -> ProducerBatch:
    made = ProducerBatch(tp=tp, created_ms=0, base_timestamp=0, attempts=attempts)
    made.values = [b"v"] * records
    made.keys = [None] * records
    made.headers = [()] * records
    made.timestamps = [0] * records
    return made


def test_an_explicit_partition_wins_and_must_exist() -> None:
    sticky = StickyPartitioner(random.Random(1))
    assert choose_partition(VIEW, "t", b"k", 2, sticky) == 2
    with pytest.raises(KafkaError, match="Partition 4 of topic t with partition count 4"):
        choose_partition(VIEW, "t", None, 4, sticky)


def test_a_keyed_record_goes_where_murmur2_says_even_to_a_partition_without_leader() -> None:
    sticky = StickyPartitioner(random.Random(1))
    for key in (b"a", b"b", b"c", b"order-17"):
        assert choose_partition(VIEW, "t", key, None, sticky) == partition_for_key(key, 4)


def test_keyless_records_stick_to_one_available_partition() -> None:
    sticky = StickyPartitioner(random.Random(3))
    chosen = {choose_partition(VIEW, "t", None, None, sticky) for _ in range(20)}
    assert len(chosen) == 1 and chosen <= {0, 1, 3}
    ignored = {choose_partition(VIEW, "t", b"k", None, sticky, ignore_keys=True) for _ in range(5)}
    assert ignored == chosen


def test_one_request_per_broker_carries_one_batch_per_partition_with_the_acks() -> None:
    acc = RecordAccumulator(batch_size=1 << 14, linger_ms=0, max_request_size=1 << 20,
                            delivery_timeout_ms=60_000, compression=Compression.GZIP)
    for tp in (TopicPartition("t", 0), TopicPartition("t", 3), TopicPartition("u", 0)):
        acc.append(tp, None, b"%s" % str(tp).encode(), (), 5, None, 0)
    drained = acc.drain(VIEW, [1, 2], 0)
    request = build_produce_request(drained[1], acks=1, timeout_ms=3000)
    assert request.acks == 1 and request.timeout_ms == 3000 and request.transactional_id is None
    [topic] = request.topic_data
    assert topic.name == "t" and sorted(p.index for p in topic.partition_data) == [0, 3]
    part = topic.partition_data[0]
    assert part.records is not None
    [decoded] = list(iter_batches(part.records))
    assert decoded.header.compression == Compression.GZIP
    other = build_produce_request(drained[2], acks=-1, timeout_ms=1)
    assert [t.name for t in other.topic_data] == ["u"]


def test_answers_are_read_per_batch_and_a_left_out_partition_is_an_error() -> None:
    sent = [batch(tp=TopicPartition("t", 0)), batch(tp=TopicPartition("t", 1))]
    response = ProduceResponse(responses=(ProduceResponseTopic(name="t", partition_responses=(
        ProduceResponsePartition(index=0, error_code=0, base_offset=12, log_append_time_ms=99),
    )),))
    results = partition_results(response, sent)
    assert (results[TopicPartition("t", 0)].base_offset,
            results[TopicPartition("t", 0)].log_append_time_ms) == (12, 99)
    assert results[TopicPartition("t", 1)].error is Errors.UNKNOWN_SERVER_ERROR


@pytest.mark.parametrize("error", [
    Errors.NOT_LEADER_OR_FOLLOWER, Errors.NOT_ENOUGH_REPLICAS,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND, Errors.REQUEST_TIMED_OUT,
    Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NETWORK_EXCEPTION,
])
def test_retriable_errors_are_retried_while_retries_and_delivery_timeout_allow(
    error: Errors,
) -> None:
    assert decide(error, batch(), retries=3, delivery_expired=False) is Decision.RETRY
    assert decide(error, batch(attempts=3), retries=3, delivery_expired=False) is Decision.FAIL
    assert decide(error, batch(), retries=3, delivery_expired=True) is Decision.FAIL


@pytest.mark.parametrize("error", [
    Errors.CORRUPT_MESSAGE, Errors.INVALID_RECORD, Errors.INVALID_REQUIRED_ACKS,
    Errors.RECORD_LIST_TOO_LARGE, Errors.TOPIC_AUTHORIZATION_FAILED,
])
def test_non_retriable_errors_fail_the_batch_at_once(error: Errors) -> None:
    assert decide(error, batch(), retries=100, delivery_expired=False) is Decision.FAIL


def test_message_too_large_splits_a_batch_of_several_records_and_fails_a_lone_one() -> None:
    assert decide(Errors.MESSAGE_TOO_LARGE, batch(records=2), retries=0,
                  delivery_expired=False) is Decision.SPLIT
    assert decide(Errors.MESSAGE_TOO_LARGE, batch(records=1), retries=9,
                  delivery_expired=False) is Decision.FAIL


def test_no_error_is_delivered() -> None:
    assert decide(Errors.NONE, batch(), retries=0, delivery_expired=True) is Decision.DELIVERED
