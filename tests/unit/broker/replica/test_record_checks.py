"""Record-level produce checks: keyless records in compacted topics, timestamp bounds."""

from __future__ import annotations

from broker.replica.append import append_to_leader
from broker.replica.config import TopicConfig
from broker.replica.output import Outbox
from broker.replica.partition import Partition
from broker.replica.producing import Producing
from quorum.wire.compression import Compression
from quorum.wire.error_codes import Errors
from quorum.wire.messages import ProduceRequest
from quorum.wire.messages.produce import ProduceRequestPartition, ProduceRequestTopic
from quorum.wire.records import Record, build_batch, build_batch_from_values

from .helpers import TOPIC, assignment, new_partition

COMPACTED = TopicConfig(min_insync_replicas=1, compacted=True)


def _leader(config: TopicConfig) -> Partition:
    partition = new_partition(config=config)
    partition.apply_assignment(assignment(isr=(1,)), now_ms=0)
    return partition


def test_a_batch_with_keyless_records_to_a_compacted_topic_is_refused_whole() -> None:
    partition = _leader(COMPACTED)
    records = build_batch_from_values([b"a", b"b", b"c"], keys=[b"k", None, None])
    result = append_to_leader(partition, records, acks=1, now_ms=1)
    assert result.error == Errors.INVALID_RECORD
    assert [e.batch_index for e in result.record_errors] == [1, 2]
    assert all(
        e.batch_index_error_message
        == f"Compacted topic cannot accept message without key in topic partition {TOPIC}-0"
        for e in result.record_errors
    )
    assert result.error_message is not None
    assert "rejected due to 2 record errors in total" in result.error_message
    assert partition.log.log_end_offset == 0, "nothing of the batch is appended"


def test_keyed_batches_to_a_compacted_topic_are_appended_compressed_or_not() -> None:
    partition = _leader(COMPACTED)
    for codec in (Compression.NONE, Compression.GZIP):
        records = build_batch_from_values([b"a", b"b"], keys=[b"k", b"l"], compression=codec)
        result = append_to_leader(partition, records, acks=1, now_ms=1)
        assert result.error == Errors.NONE and result.record_errors == ()
    assert partition.log.log_end_offset == 4


def test_a_compressed_keyless_record_is_found_too() -> None:
    partition = _leader(COMPACTED)
    records = build_batch_from_values([b"a"], keys=[None], compression=Compression.GZIP)
    result = append_to_leader(partition, records, acks=1, now_ms=1)
    assert result.error == Errors.INVALID_RECORD
    assert [e.batch_index for e in result.record_errors] == [0]


def test_keyless_records_are_fine_in_a_topic_that_is_not_compacted() -> None:
    partition = _leader(TopicConfig(min_insync_replicas=1))
    result = append_to_leader(partition, build_batch_from_values([b"a"]), acks=1, now_ms=1)
    assert result.error == Errors.NONE


def test_timestamps_outside_the_topics_bounds_are_refused_with_invalid_timestamp() -> None:
    config = TopicConfig(
        min_insync_replicas=1, timestamp_before_max_ms=1_000, timestamp_after_max_ms=100
    )
    partition = _leader(config)
    now = 10_000
    for timestamp, error in ((8_999, Errors.INVALID_TIMESTAMP), (9_000, Errors.NONE),
                             (10_100, Errors.NONE), (10_101, Errors.INVALID_TIMESTAMP)):
        records = build_batch_from_values([b"a"], timestamp=timestamp)
        result = append_to_leader(partition, records, acks=1, now_ms=now)
        assert result.error == error, timestamp
        if error != Errors.NONE:
            assert [e.batch_index for e in result.record_errors] == [0]
            assert result.error_message == (
                "One or more records have been rejected due to invalid timestamp"
            )
    assert partition.log.log_end_offset == 2


def test_log_append_time_topics_ignore_the_timestamp_bounds() -> None:
    config = TopicConfig(
        min_insync_replicas=1, log_append_time=True, timestamp_before_max_ms=0,
        timestamp_after_max_ms=0,
    )
    partition = _leader(config)
    result = append_to_leader(partition, build_batch_from_values([b"a"], timestamp=5), acks=1,
                              now_ms=10_000)
    assert result.error == Errors.NONE


def test_the_produce_answer_carries_the_record_errors_and_the_message() -> None:
    partition = _leader(COMPACTED)
    producing = Producing(
        lambda topic, index: partition if (topic, index) == partition.name else None,
        lambda key: partition if key == partition.key else None,
    )
    request = ProduceRequest(acks=1, timeout_ms=1_000, topic_data=(ProduceRequestTopic(
        name=TOPIC, partition_data=(ProduceRequestPartition(
            index=0, records=build_batch_from_values([b"a", b"b"], keys=[None, b"k"]),
        ),),
    ),))
    outbox = Outbox()
    producing.produce("handle", request, 1, outbox)
    (answer,) = outbox.produce_answers
    (topic,) = answer.response.responses
    (part,) = topic.partition_responses
    assert part.error_code == Errors.INVALID_RECORD
    assert [e.batch_index for e in part.record_errors] == [0]
    assert part.error_message is not None and "record errors" in part.error_message


HOUR_MS = 3_600_000


def test_kafka_4_4s_default_refuses_records_more_than_an_hour_ahead() -> None:
    # the broker's defaults (message.timestamp.after.max.ms one hour, no before bound)
    partition = _leader(TopicConfig(min_insync_replicas=1, timestamp_after_max_ms=HOUR_MS))
    now = 10 * HOUR_MS
    fine = build_batch_from_values([b"a", b"b"], timestamp=now + HOUR_MS)
    assert append_to_leader(partition, fine, acks=1, now_ms=now).error == Errors.NONE
    ahead = build_batch([Record(offset_delta=0, timestamp_delta=0, value=b"now"),
                         Record(offset_delta=1, timestamp_delta=HOUR_MS + 1, value=b"later")],
                        base_timestamp=now)
    result = append_to_leader(partition, ahead, acks=1, now_ms=now)
    assert result.error == Errors.INVALID_TIMESTAMP
    assert [e.batch_index for e in result.record_errors] == [1]
    assert partition.log.log_end_offset == 2, "nothing of the refused batch is appended"
