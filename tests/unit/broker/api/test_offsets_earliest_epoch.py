"""ListOffsets EARLIEST carries the leader epoch of the log start offset.

Found by the differential tests (tests/kafka/differential): Kafka 4.4 answers EARLIEST (v4+)
with the epoch of its leader epoch cache's earliest entry (``UnifiedLog
.fetchOffsetByTimestamp``), pykraft answered -1.
"""

from __future__ import annotations

from broker.api.offsets import list_offsets
from broker.replica.partition import Partition
from quorum.controller.image import EMPTY_IMAGE
from quorum.wire.messages import (
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
)
from tests.unit.broker.replica.helpers import TOPIC, assignment, batch, leader, new_partition

EARLIEST = -2
EARLIEST_LOCAL = -4


def _earliest(partition: Partition, timestamp: int = EARLIEST, version: int = 4,
              replica_id: int = -1) -> tuple[int, int, int]:
    request = ListOffsetsRequest(replica_id=replica_id, topics=(ListOffsetsRequestTopic(
        name=TOPIC,
        partitions=(ListOffsetsRequestPartition(partition_index=0, timestamp=timestamp),),
    ),))
    found = list_offsets(lambda topic, index: partition, EMPTY_IMAGE, request, version)
    answer = found.topics[0].partitions[0]
    return answer.error_code, answer.offset, answer.leader_epoch


def test_the_earliest_offset_carries_the_epoch_of_its_batch() -> None:
    partition = leader(leader_epoch=1)
    partition.log.append(batch(b"a"), epoch=1)
    partition.apply_assignment(assignment(leader_epoch=3, partition_epoch=2), now_ms=0)
    partition.log.append(batch(b"b"), epoch=3)
    assert _earliest(partition) == (0, 0, 1)
    assert _earliest(partition, EARLIEST_LOCAL) == (0, 0, 1)
    # records deleted up to the epoch 3 batch: the start now lies in epoch 3
    partition.log.advance_log_start_offset(1)
    assert _earliest(partition) == (0, 1, 3)


def test_an_empty_leaders_earliest_offset_carries_its_own_epoch() -> None:
    # Kafka's leader writes (its epoch, log end) into the cache when it becomes leader
    assert _earliest(leader(leader_epoch=2)) == (0, 0, 2)


def test_an_empty_followers_earliest_offset_has_no_epoch() -> None:
    follower = new_partition()
    follower.apply_assignment(assignment(leader=2, leader_epoch=2), now_ms=0)
    assert _earliest(follower, replica_id=-2) == (0, 0, -1)


def test_before_v4_the_answer_has_no_epoch() -> None:
    partition = leader(leader_epoch=2)
    partition.log.append(batch(b"a"), epoch=2)
    assert _earliest(partition, version=3) == (0, 0, -1)
