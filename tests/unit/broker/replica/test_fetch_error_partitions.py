"""A consumer's Fetch partitions answered with an error carry Kafka's -1 offsets.

Found by the differential tests (tests/kafka/differential): Kafka 4.4 answers a partition
whose read failed (``ReplicaManager.createLogReadResult``: OFFSET_OUT_OF_RANGE here) with
-1 for the high watermark, last stable and log start offsets and no aborted transactions
(null), and a partition its metadata lacks (``FetchResponse.partitionResponse``) with -1 and
an empty list; pykraft sent the partition's offsets and a null list.
"""

from __future__ import annotations

from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    FetchResponsePartition,
)

from .test_core import Pair, _pair, _produce


def _consume(pair: Pair, topic: str, partition: int, offset: int) -> FetchResponsePartition:
    request = FetchRequest(replica_id=-1, max_wait_ms=0, max_bytes=1 << 20, topics=(
        FetchRequestTopic(topic=topic, partitions=(FetchRequestPartition(
            partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20,
        ),)),
    ))
    served = pair.leader.fetch("c", request, 12, pair.now_ms)
    (answer,) = served.fetch_answers
    (topic_answer,) = answer.response.responses
    (found,) = topic_answer.partitions
    return found


def _committed_pair() -> Pair:
    pair = _pair()
    pair.leader.produce("p", _produce(1, b"a", b"b"), pair.now_ms)
    for _ in range(3):
        pair.fetch_round()
    return pair


def test_an_offset_out_of_range_answers_minus_one_offsets() -> None:
    pair = _committed_pair()
    good = _consume(pair, "events", 0, 0)
    assert (good.error_code, good.high_watermark, good.log_start_offset) == (Errors.NONE, 2, 0)
    out = _consume(pair, "events", 0, 1_000_000)
    assert out.error_code == Errors.OFFSET_OUT_OF_RANGE
    assert (out.high_watermark, out.last_stable_offset, out.log_start_offset) == (-1, -1, -1)
    assert out.aborted_transactions is None
    assert out.records in (b"", None)


def test_an_unknown_partition_answers_minus_one_offsets_and_no_aborted_transactions() -> None:
    pair = _committed_pair()
    for topic, partition in (("events", 42), ("no-such-topic", 0)):
        found = _consume(pair, topic, partition, 0)
        assert found.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
        assert (found.high_watermark, found.last_stable_offset, found.log_start_offset) == (
            -1, -1, -1
        )
        assert found.aborted_transactions == ()
