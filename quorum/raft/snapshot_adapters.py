"""FetchSnapshot's message classes <-> the core's views (``FetchSnapshotAsk``/``Answer``).

The other RPCs' converters are in ``quorum.raft.adapters``; these live apart
only to keep that module at a readable size. A request that does not name
exactly one topic with one partition parses to None (Kafka answers it with a
top-level INVALID_REQUEST); a request for another topic or partition parses,
and the core answers UNKNOWN_TOPIC_OR_PARTITION for the partition it named.
"""

from __future__ import annotations

from quorum.log.protocol import OffsetAndEpoch
from quorum.raft.adapters import METADATA_PARTITION, METADATA_TOPIC
from quorum.raft.rpc import FetchSnapshotAnswer, FetchSnapshotAsk
from quorum.wire.messages import (
    FetchSnapshotRequest,
    FetchSnapshotRequestPartition,
    FetchSnapshotRequestSnapshotId,
    FetchSnapshotRequestTopic,
    FetchSnapshotResponse,
    FetchSnapshotResponseLeaderIdAndEpoch,
    FetchSnapshotResponsePartition,
    FetchSnapshotResponseSnapshotId,
    FetchSnapshotResponseTopic,
)

__all__ = [
    "fetch_snapshot_request",
    "fetch_snapshot_response",
    "parse_fetch_snapshot_request",
    "parse_fetch_snapshot_response",
]

_NO_ID = OffsetAndEpoch(-1, -1)


def parse_fetch_snapshot_request(msg: FetchSnapshotRequest) -> FetchSnapshotAsk | None:
    if len(msg.topics) != 1 or len(msg.topics[0].partitions) != 1:
        return None
    topic = msg.topics[0]
    part = topic.partitions[0]
    return FetchSnapshotAsk(
        cluster_id=msg.cluster_id,
        replica_id=msg.replica_id,
        max_bytes=msg.max_bytes,
        topic_name=topic.name,
        partition=part.partition,
        current_leader_epoch=part.current_leader_epoch,
        snapshot_id=OffsetAndEpoch(part.snapshot_id.end_offset, part.snapshot_id.epoch),
        position=part.position,
    )


def fetch_snapshot_request(ask: FetchSnapshotAsk) -> FetchSnapshotRequest:
    part = FetchSnapshotRequestPartition(
        partition=ask.partition,
        current_leader_epoch=ask.current_leader_epoch,
        snapshot_id=FetchSnapshotRequestSnapshotId(
            end_offset=ask.snapshot_id.offset, epoch=ask.snapshot_id.epoch
        ),
        position=ask.position,
    )
    topic = FetchSnapshotRequestTopic(name=ask.topic_name, partitions=(part,))
    return FetchSnapshotRequest(
        cluster_id=ask.cluster_id,
        replica_id=ask.replica_id,
        max_bytes=ask.max_bytes,
        topics=(topic,),
    )


def fetch_snapshot_response(answer: FetchSnapshotAnswer) -> FetchSnapshotResponse:
    if answer.error:
        return FetchSnapshotResponse(error_code=answer.error)
    snapshot = answer.snapshot_id or _NO_ID
    part = FetchSnapshotResponsePartition(
        index=answer.partition,
        error_code=answer.partition_error,
        snapshot_id=FetchSnapshotResponseSnapshotId(
            end_offset=snapshot.offset, epoch=snapshot.epoch
        ),
        current_leader=FetchSnapshotResponseLeaderIdAndEpoch(
            leader_id=answer.leader_id, leader_epoch=answer.leader_epoch
        ),
        size=answer.size,
        position=answer.position,
        unaligned_records=answer.data,
    )
    name = METADATA_TOPIC if answer.topic_name is None else answer.topic_name
    topic = FetchSnapshotResponseTopic(name=name, partitions=(part,))
    return FetchSnapshotResponse(topics=(topic,))


def parse_fetch_snapshot_response(msg: FetchSnapshotResponse) -> FetchSnapshotAnswer:
    """The metadata partition's answer; a response without it is a top-level error view."""
    for topic in msg.topics:
        for part in topic.partitions:
            if topic.name != METADATA_TOPIC or part.index != METADATA_PARTITION:
                continue
            snapshot = part.snapshot_id
            valid = snapshot.end_offset >= 0 and snapshot.epoch >= 0
            return FetchSnapshotAnswer(
                error=msg.error_code,
                partition_error=part.error_code,
                snapshot_id=OffsetAndEpoch(snapshot.end_offset, snapshot.epoch) if valid else None,
                leader_id=part.current_leader.leader_id,
                leader_epoch=part.current_leader.leader_epoch,
                size=part.size,
                position=part.position,
                data=part.unaligned_records or b"",
            )
    return FetchSnapshotAnswer(error=msg.error_code)
