"""ListOffsets and OffsetForLeaderEpoch answered from the partitions a broker leads."""

from __future__ import annotations

from broker.api.offsets import list_offsets, offsets_for_leader_epochs
from broker.replica.partition import Partition
from quorum.controller.image import EMPTY_IMAGE
from quorum.wire.codec import encode
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochRequestPartition,
    OffsetForLeaderEpochRequestTopic,
)
from quorum.wire.records import build_batch_from_values
from tests.unit.broker.replica.helpers import TOPIC, fetch, leader


def _led(records_at: list[int]) -> Partition:
    """A leader (epoch 1) with one single-record batch per timestamp, all committed."""
    partition = leader(isr=(1, 2, 3))
    for timestamp in records_at:
        partition.log.append(build_batch_from_values([b"v"], timestamp=timestamp), epoch=1)
    end = partition.log_end_offset
    for follower in (2, 3):
        fetch(partition, follower, end, now_ms=1)
    assert partition.high_watermark == end
    return partition


def _ask(partition: Partition | None, *timestamps: int, replica_id: int = -1,
         current_leader_epoch: int = -1) -> list[tuple[int, int, int]]:
    request = ListOffsetsRequest(replica_id=replica_id, topics=(ListOffsetsRequestTopic(
        name=TOPIC, partitions=tuple(
            ListOffsetsRequestPartition(
                partition_index=0, timestamp=t, current_leader_epoch=current_leader_epoch
            ) for t in timestamps
        ),
    ),))
    answer = list_offsets(lambda topic, index: partition, EMPTY_IMAGE, request)
    return [(p.error_code, p.offset, p.timestamp) for p in answer.topics[0].partitions]


def test_earliest_latest_by_time_and_max_timestamp() -> None:
    partition = _led([100, 300, 200, 400])
    assert _ask(partition, -2, -1, 250, 401, -3) == [
        (Errors.NONE, 0, -1),
        (Errors.NONE, 4, -1),
        (Errors.NONE, 1, 300),  # the first record at or after 250
        (Errors.NONE, -1, -1),  # none that late
        (Errors.NONE, 3, 400),
    ]


def test_a_consumer_never_learns_offsets_at_or_above_the_high_watermark() -> None:
    partition = _led([100, 200])
    partition.log.append(build_batch_from_values([b"late"], timestamp=900), epoch=1)
    assert _ask(partition, -1, 900) == [(Errors.NONE, 2, -1), (Errors.NONE, -1, -1)]
    # a replica asks up to the log end
    assert _ask(partition, -1, replica_id=2) == [(Errors.NONE, 3, -1)]


def test_epochs_and_leadership_are_checked() -> None:
    partition = _led([100])
    assert _ask(partition, -1, current_leader_epoch=0)[0][0] == Errors.FENCED_LEADER_EPOCH
    assert _ask(partition, -1, current_leader_epoch=2)[0][0] == Errors.UNKNOWN_LEADER_EPOCH
    assert _ask(None, -1)[0][0] == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_a_new_leaders_latest_offset_waits_for_its_high_watermark() -> None:
    """KIP-207: the high watermark is below the new epoch's start until followers fetch."""
    partition = _led([100, 200])
    partition.log.append(build_batch_from_values([b"x"], timestamp=300), epoch=1)
    partition.epoch_start_offset = partition.log_end_offset  # as a new epoch would start
    assert _ask(partition, -1, 150)[0][0] == Errors.OFFSET_NOT_AVAILABLE
    assert _ask(partition, -1, 150)[1][0] == Errors.OFFSET_NOT_AVAILABLE
    assert _ask(partition, -2) == [(Errors.NONE, 0, -1)]


def test_offset_for_leader_epoch_answers_where_an_epoch_ends() -> None:
    partition = _led([100, 200])
    request = OffsetForLeaderEpochRequest(topics=(OffsetForLeaderEpochRequestTopic(
        topic=TOPIC, partitions=(
            OffsetForLeaderEpochRequestPartition(partition=0, leader_epoch=1),
            OffsetForLeaderEpochRequestPartition(
                partition=0, leader_epoch=1, current_leader_epoch=0
            ),
        ),
    ),))
    answer = offsets_for_leader_epochs(lambda topic, index: partition, EMPTY_IMAGE, request)
    current, fenced = answer.topics[0].partitions
    assert (current.error_code, current.leader_epoch, current.end_offset) == (Errors.NONE, 1, 2)
    assert fenced.error_code == Errors.FENCED_LEADER_EPOCH


def test_an_answer_before_v4_has_no_leader_epoch_so_it_can_be_encoded() -> None:
    # found by the differential tests (tests/kafka/differential): ListOffsets v1-3 of the
    # latest offset carried the leader epoch, a field those versions lack, and the broker
    # closed the connection instead of answering
    partition = _led([100])
    request = ListOffsetsRequest(replica_id=-1, topics=(ListOffsetsRequestTopic(
        name=TOPIC, partitions=(ListOffsetsRequestPartition(partition_index=0, timestamp=-1),),
    ),))
    for version in (1, 2, 3):
        answer = list_offsets(lambda topic, index: partition, EMPTY_IMAGE, request, version)
        assert answer.topics[0].partitions[0].offset == 1
        assert answer.topics[0].partitions[0].leader_epoch == -1
        assert isinstance(encode(answer, version), bytes)
    latest = list_offsets(lambda topic, index: partition, EMPTY_IMAGE, request, 4)
    assert latest.topics[0].partitions[0].leader_epoch == 1
    assert isinstance(encode(latest, 4), bytes)
