"""Kafka's message classes <-> the core's one-partition views (``quorum.raft.rpc``).

Parsing a request checks that it addresses ``__cluster_metadata``/0 (Fetch by
topic id, or by name before topic ids) and returns None otherwise; the core
answers those with the error Kafka uses. A Vote, BeginQuorumEpoch or
EndQuorumEpoch naming an epoch above ``MAX_REQUEST_EPOCH`` is refused the same
way (INVALID_REQUEST): pykraft's departure from Kafka, which takes any epoch. Responses are parsed leniently: a
response without the partition (a top-level error) yields a view whose
partition fields keep their defaults.
"""

from __future__ import annotations

from typing import Final

from quorum.log.protocol import OffsetAndEpoch
from quorum.raft.rpc import (
    BeginEpochAsk,
    DescribeQuorumAnswer,
    EndEpochAsk,
    EpochAnswer,
    FetchAnswer,
    FetchAsk,
    ReplicaDescription,
    VoteAnswer,
    VoteAsk,
)
from quorum.wire.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochRequestPartition,
    BeginQuorumEpochRequestTopic,
    BeginQuorumEpochResponse,
    BeginQuorumEpochResponsePartition,
    BeginQuorumEpochResponseTopic,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    DescribeQuorumResponsePartition,
    DescribeQuorumResponseReplicaState,
    DescribeQuorumResponseTopic,
    EndQuorumEpochRequest,
    EndQuorumEpochRequestPartition,
    EndQuorumEpochRequestReplicaInfo,
    EndQuorumEpochRequestTopic,
    EndQuorumEpochResponse,
    EndQuorumEpochResponsePartition,
    EndQuorumEpochResponseTopic,
    FetchRequest,
    FetchRequestPartition,
    FetchRequestReplicaState,
    FetchRequestTopic,
    FetchResponse,
    FetchResponseEpochEndOffset,
    FetchResponseLeaderIdAndEpoch,
    FetchResponsePartition,
    FetchResponseSnapshotId,
    FetchResponseTopic,
    VoteRequest,
    VoteRequestPartition,
    VoteRequestTopic,
    VoteResponse,
    VoteResponsePartition,
    VoteResponseTopic,
)
from quorum.wire.uuids import METADATA_TOPIC_ID, ZERO_UUID

__all__ = [
    "MAX_REQUEST_EPOCH",
    "METADATA_PARTITION",
    "METADATA_TOPIC",
    "begin_epoch_request",
    "begin_epoch_response",
    "describe_quorum_addresses_metadata",
    "describe_quorum_response",
    "end_epoch_request",
    "end_epoch_response",
    "fetch_request",
    "fetch_response",
    "parse_begin_epoch_request",
    "parse_end_epoch_request",
    "parse_epoch_response",
    "parse_fetch_request",
    "parse_fetch_response",
    "parse_vote_request",
    "parse_vote_response",
    "vote_request",
    "vote_response",
]

METADATA_TOPIC: Final = "__cluster_metadata"
METADATA_PARTITION: Final = 0
# The highest epoch a request may move a voter to. Epochs are int32 and every election
# adds one: a voter moved to 2^31-1 could never stand again (Kafka's wraps to a negative
# epoch that every voter refuses), so one forged request would end the quorum for good.
# Below this ceiling a quorum still has 2^20 elections ahead of it.
MAX_REQUEST_EPOCH: Final = 2**31 - 1 - 2**20


def _single_partition(topics: tuple[object, ...], name_of: str, index_of: str) -> object | None:
    """The one partition of a one-topic request for the metadata partition, else None."""
    if len(topics) != 1:
        return None
    topic = topics[0]
    if getattr(topic, name_of) != METADATA_TOPIC:
        return None
    partitions: tuple[object, ...] = topic.partitions  # type: ignore[attr-defined]
    if len(partitions) != 1 or getattr(partitions[0], index_of) != METADATA_PARTITION:
        return None
    return partitions[0]


def _first_partition(topics: tuple[object, ...]) -> object | None:
    for topic in topics:
        for partition in topic.partitions:  # type: ignore[attr-defined]
            return partition  # type: ignore[no-any-return]
    return None


# -- Vote ---------------------------------------------------------------------------------


def parse_vote_request(msg: VoteRequest) -> VoteAsk | None:
    part = _single_partition(msg.topics, "topic_name", "partition_index")
    if not isinstance(part, VoteRequestPartition) or part.replica_epoch > MAX_REQUEST_EPOCH:
        return None
    return VoteAsk(
        cluster_id=msg.cluster_id,
        voter_id=msg.voter_id,
        replica_id=part.replica_id,
        replica_epoch=part.replica_epoch,
        last_offset_epoch=part.last_offset_epoch,
        last_offset=part.last_offset,
        pre_vote=part.pre_vote,
    )


def vote_request(ask: VoteAsk) -> VoteRequest:
    part = VoteRequestPartition(
        partition_index=METADATA_PARTITION,
        replica_epoch=ask.replica_epoch,
        replica_id=ask.replica_id,
        last_offset_epoch=ask.last_offset_epoch,
        last_offset=ask.last_offset,
        pre_vote=ask.pre_vote,
    )
    topic = VoteRequestTopic(topic_name=METADATA_TOPIC, partitions=(part,))
    return VoteRequest(cluster_id=ask.cluster_id, voter_id=ask.voter_id, topics=(topic,))


def vote_response(answer: VoteAnswer) -> VoteResponse:
    if answer.error:
        return VoteResponse(error_code=answer.error)
    part = VoteResponsePartition(
        partition_index=METADATA_PARTITION,
        error_code=answer.partition_error,
        leader_id=answer.leader_id,
        leader_epoch=answer.leader_epoch,
        vote_granted=answer.vote_granted,
    )
    topic = VoteResponseTopic(topic_name=METADATA_TOPIC, partitions=(part,))
    return VoteResponse(topics=(topic,))


def parse_vote_response(msg: VoteResponse) -> VoteAnswer:
    part = _first_partition(msg.topics)
    if not isinstance(part, VoteResponsePartition):
        return VoteAnswer(error=msg.error_code)
    return VoteAnswer(
        error=msg.error_code,
        partition_error=part.error_code,
        leader_id=part.leader_id,
        leader_epoch=part.leader_epoch,
        vote_granted=part.vote_granted,
    )


# -- BeginQuorumEpoch / EndQuorumEpoch ------------------------------------------------------


def parse_begin_epoch_request(msg: BeginQuorumEpochRequest) -> BeginEpochAsk | None:
    part = _single_partition(msg.topics, "topic_name", "partition_index")
    if not isinstance(part, BeginQuorumEpochRequestPartition) or (
        part.leader_epoch > MAX_REQUEST_EPOCH
    ):
        return None
    return BeginEpochAsk(
        cluster_id=msg.cluster_id,
        voter_id=msg.voter_id,
        leader_id=part.leader_id,
        leader_epoch=part.leader_epoch,
    )


def begin_epoch_request(ask: BeginEpochAsk) -> BeginQuorumEpochRequest:
    part = BeginQuorumEpochRequestPartition(
        partition_index=METADATA_PARTITION, leader_id=ask.leader_id, leader_epoch=ask.leader_epoch
    )
    topic = BeginQuorumEpochRequestTopic(topic_name=METADATA_TOPIC, partitions=(part,))
    return BeginQuorumEpochRequest(cluster_id=ask.cluster_id, voter_id=ask.voter_id, topics=(topic,))


def begin_epoch_response(answer: EpochAnswer) -> BeginQuorumEpochResponse:
    if answer.error:
        return BeginQuorumEpochResponse(error_code=answer.error)
    part = BeginQuorumEpochResponsePartition(
        partition_index=METADATA_PARTITION,
        error_code=answer.partition_error,
        leader_id=answer.leader_id,
        leader_epoch=answer.leader_epoch,
    )
    topic = BeginQuorumEpochResponseTopic(topic_name=METADATA_TOPIC, partitions=(part,))
    return BeginQuorumEpochResponse(topics=(topic,))


def parse_epoch_response(msg: BeginQuorumEpochResponse | EndQuorumEpochResponse) -> EpochAnswer:
    part = _first_partition(msg.topics)
    if not isinstance(part, BeginQuorumEpochResponsePartition | EndQuorumEpochResponsePartition):
        return EpochAnswer(error=msg.error_code)
    return EpochAnswer(
        error=msg.error_code,
        partition_error=part.error_code,
        leader_id=part.leader_id,
        leader_epoch=part.leader_epoch,
    )


def parse_end_epoch_request(msg: EndQuorumEpochRequest) -> EndEpochAsk | None:
    part = _single_partition(msg.topics, "topic_name", "partition_index")
    if not isinstance(part, EndQuorumEpochRequestPartition) or (
        part.leader_epoch > MAX_REQUEST_EPOCH
    ):
        return None
    # v0 lists successor ids, v1+ candidates with directory ids
    successors = part.preferred_successors or tuple(
        c.candidate_id for c in part.preferred_candidates
    )
    return EndEpochAsk(
        cluster_id=msg.cluster_id,
        leader_id=part.leader_id,
        leader_epoch=part.leader_epoch,
        preferred_successors=successors,
    )


def end_epoch_request(ask: EndEpochAsk) -> EndQuorumEpochRequest:
    # Both forms are filled; the codec writes the one the chosen version has.
    part = EndQuorumEpochRequestPartition(
        partition_index=METADATA_PARTITION,
        leader_id=ask.leader_id,
        leader_epoch=ask.leader_epoch,
        preferred_successors=ask.preferred_successors,
        preferred_candidates=tuple(
            EndQuorumEpochRequestReplicaInfo(candidate_id=c, candidate_directory_id=ZERO_UUID)
            for c in ask.preferred_successors
        ),
    )
    topic = EndQuorumEpochRequestTopic(topic_name=METADATA_TOPIC, partitions=(part,))
    return EndQuorumEpochRequest(cluster_id=ask.cluster_id, topics=(topic,))


def end_epoch_response(answer: EpochAnswer) -> EndQuorumEpochResponse:
    if answer.error:
        return EndQuorumEpochResponse(error_code=answer.error)
    part = EndQuorumEpochResponsePartition(
        partition_index=METADATA_PARTITION,
        error_code=answer.partition_error,
        leader_id=answer.leader_id,
        leader_epoch=answer.leader_epoch,
    )
    topic = EndQuorumEpochResponseTopic(topic_name=METADATA_TOPIC, partitions=(part,))
    return EndQuorumEpochResponse(topics=(topic,))


# -- Fetch ------------------------------------------------------------------------------


def parse_fetch_request(msg: FetchRequest) -> FetchAsk | None:
    if len(msg.topics) != 1 or len(msg.topics[0].partitions) != 1:
        return None
    topic = msg.topics[0]
    named = topic.topic_id == METADATA_TOPIC_ID or (
        topic.topic_id == ZERO_UUID and topic.topic == METADATA_TOPIC
    )
    part = topic.partitions[0]
    if not named or part.partition != METADATA_PARTITION:
        return None
    replica_id = msg.replica_state.replica_id
    if replica_id == -1:
        replica_id = msg.replica_id  # versions before 15
    return FetchAsk(
        cluster_id=msg.cluster_id,
        replica_id=replica_id,
        max_wait_ms=msg.max_wait_ms,
        max_bytes=min(msg.max_bytes, part.partition_max_bytes),
        current_leader_epoch=part.current_leader_epoch,
        fetch_offset=part.fetch_offset,
        last_fetched_epoch=part.last_fetched_epoch,
    )


def fetch_request(ask: FetchAsk) -> FetchRequest:
    """A KRaft Fetch for version 15 or later (the replica id travels in ReplicaState)."""
    part = FetchRequestPartition(
        partition=METADATA_PARTITION,
        current_leader_epoch=ask.current_leader_epoch,
        fetch_offset=ask.fetch_offset,
        last_fetched_epoch=ask.last_fetched_epoch,
        partition_max_bytes=ask.max_bytes,
    )
    topic = FetchRequestTopic(topic=METADATA_TOPIC, topic_id=METADATA_TOPIC_ID, partitions=(part,))
    return FetchRequest(
        cluster_id=ask.cluster_id,
        replica_state=FetchRequestReplicaState(replica_id=ask.replica_id),
        max_wait_ms=ask.max_wait_ms,
        max_bytes=ask.max_bytes,
        topics=(topic,),
    )


def fetch_response(answer: FetchAnswer) -> FetchResponse:
    if answer.error:
        return FetchResponse(error_code=answer.error)
    diverging = answer.diverging_epoch or OffsetAndEpoch(-1, -1)
    snapshot = answer.snapshot_id or OffsetAndEpoch(-1, -1)
    part = FetchResponsePartition(
        partition_index=METADATA_PARTITION,
        error_code=answer.partition_error,
        high_watermark=answer.high_watermark,
        log_start_offset=answer.log_start_offset,
        diverging_epoch=FetchResponseEpochEndOffset(
            epoch=diverging.epoch, end_offset=diverging.offset
        ),
        current_leader=FetchResponseLeaderIdAndEpoch(
            leader_id=answer.leader_id, leader_epoch=answer.leader_epoch
        ),
        snapshot_id=FetchResponseSnapshotId(end_offset=snapshot.offset, epoch=snapshot.epoch),
        records=bytes(answer.records),
    )
    topic = FetchResponseTopic(topic=METADATA_TOPIC, topic_id=METADATA_TOPIC_ID, partitions=(part,))
    return FetchResponse(responses=(topic,))


def parse_fetch_response(msg: FetchResponse) -> FetchAnswer:
    part = _first_partition(msg.responses)
    if not isinstance(part, FetchResponsePartition):
        return FetchAnswer(error=msg.error_code)
    diverging = part.diverging_epoch
    snapshot = part.snapshot_id
    return FetchAnswer(
        error=msg.error_code,
        partition_error=part.error_code,
        high_watermark=part.high_watermark,
        log_start_offset=part.log_start_offset,
        diverging_epoch=(
            OffsetAndEpoch(diverging.end_offset, diverging.epoch)
            if diverging.epoch >= 0 and diverging.end_offset >= 0
            else None
        ),
        leader_id=part.current_leader.leader_id,
        leader_epoch=part.current_leader.leader_epoch,
        # kept as sent if either half is set: the follower refuses a half-valid id
        snapshot_id=(
            OffsetAndEpoch(snapshot.end_offset, snapshot.epoch)
            if snapshot.epoch >= 0 or snapshot.end_offset >= 0
            else None
        ),
        records=part.records or b"",
    )


# -- DescribeQuorum ----------------------------------------------------------------------


def describe_quorum_addresses_metadata(msg: DescribeQuorumRequest) -> bool:
    return _single_partition(msg.topics, "topic_name", "partition_index") is not None


def _replica_state(row: ReplicaDescription) -> DescribeQuorumResponseReplicaState:
    return DescribeQuorumResponseReplicaState(
        replica_id=row.replica_id,
        log_end_offset=row.log_end_offset,
        last_fetch_timestamp=row.last_fetch_timestamp,
        last_caught_up_timestamp=row.last_caught_up_timestamp,
    )


def describe_quorum_response(answer: DescribeQuorumAnswer) -> DescribeQuorumResponse:
    if answer.error:
        return DescribeQuorumResponse(error_code=answer.error)
    part = DescribeQuorumResponsePartition(
        partition_index=METADATA_PARTITION,
        error_code=answer.partition_error,
        leader_id=answer.leader_id,
        leader_epoch=answer.leader_epoch,
        high_watermark=answer.high_watermark,
        current_voters=tuple(_replica_state(row) for row in answer.voters),
        observers=tuple(_replica_state(row) for row in answer.observers),
    )
    topic = DescribeQuorumResponseTopic(topic_name=METADATA_TOPIC, partitions=(part,))
    return DescribeQuorumResponse(topics=(topic,))
