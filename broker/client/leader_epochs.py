"""OffsetForLeaderEpoch as Kafka's consumer asks it (KIP-320), built and read.

The consumer validates a position after a leader change by asking the new
leader where the position's epoch ends (``OffsetsForLeaderEpochUtils``,
``forConsumer``): replica id -1 says "a consumer asks", which needs v3+; a
broker that speaks only older versions cannot answer a consumer, and the
position is then taken as it is, as Kafka does.
"""

from __future__ import annotations

from typing import Final

from broker.client.fetch_core import CONSUMER_REPLICA_ID, EpochEndOffset, ValidationPlan
from broker.client.types import TopicPartition
from quorum.wire.api_keys import ApiKey
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochRequestPartition,
    OffsetForLeaderEpochRequestTopic,
    OffsetForLeaderEpochResponse,
)

__all__ = [
    "OFFSET_FOR_LEADER_EPOCH_MAX_VERSION",
    "OFFSET_FOR_LEADER_EPOCH_MIN_VERSION",
    "can_validate",
    "epoch_end_offsets",
    "offset_for_leader_epoch_request",
]

# v3 is the first that carries replica_id
OFFSET_FOR_LEADER_EPOCH_MIN_VERSION: Final = 3
OFFSET_FOR_LEADER_EPOCH_MAX_VERSION: Final = 4


def can_validate(server_versions: dict[int, tuple[int, int]] | None) -> bool:
    """Whether a broker with these versions answers a consumer (None: not known yet, try)."""
    if server_versions is None:
        return True
    row = server_versions.get(ApiKey.OFFSET_FOR_LEADER_EPOCH)
    return row is not None and row[1] >= OFFSET_FOR_LEADER_EPOCH_MIN_VERSION


def offset_for_leader_epoch_request(plan: ValidationPlan) -> OffsetForLeaderEpochRequest:
    topics: dict[str, list[OffsetForLeaderEpochRequestPartition]] = {}
    for tp, position in plan.positions.items():
        topics.setdefault(tp.topic, []).append(OffsetForLeaderEpochRequestPartition(
            partition=tp.partition,
            current_leader_epoch=position.leader_epoch,
            leader_epoch=position.offset_epoch,
        ))
    return OffsetForLeaderEpochRequest(
        replica_id=CONSUMER_REPLICA_ID,
        topics=tuple(
            OffsetForLeaderEpochRequestTopic(topic=topic, partitions=tuple(parts))
            for topic, parts in topics.items()
        ),
    )


def epoch_end_offsets(response: OffsetForLeaderEpochResponse) -> dict[TopicPartition, EpochEndOffset]:
    """Each partition of an OffsetForLeaderEpoch answer."""
    return {
        TopicPartition(topic.topic, part.partition): EpochEndOffset(
            Errors.from_code(part.error_code), part.leader_epoch, part.end_offset
        )
        for topic in response.topics
        for part in topic.partitions
    }
