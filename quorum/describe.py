"""What a DescribeQuorum response says, checked and in a caller's terms.

``describe_quorum_request()`` asks for ``__cluster_metadata``-0;
``quorum_info_from_response`` checks the answer the way Kafka's admin
client does (one topic, that topic, one partition, partition 0, no error)
and turns it into ``QuorumInfo``: voters and observers with their log end
offsets, unknown timestamps as ``None``, and each voter's endpoints.
``max_follower_lag`` is the arithmetic behind ``MaxFollowerLag`` and
``MaxFollowerLagTimeMs`` of ``kafka-metadata-quorum describe --status``.
Pure functions: no I/O.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Final

import attrs

from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    DescribeQuorumRequest,
    DescribeQuorumRequestPartition,
    DescribeQuorumRequestTopic,
    DescribeQuorumResponse,
    DescribeQuorumResponseNode,
    DescribeQuorumResponsePartition,
    DescribeQuorumResponseReplicaState,
)

__all__ = [
    "METADATA_PARTITION",
    "METADATA_TOPIC",
    "DescribeQuorumError",
    "FollowerLag",
    "QuorumInfo",
    "ReplicaInfo",
    "VoterEndpoint",
    "describe_quorum_request",
    "leader_endpoints",
    "max_follower_lag",
    "quorum_info_from_response",
]

METADATA_TOPIC: Final = "__cluster_metadata"
METADATA_PARTITION: Final = 0


class DescribeQuorumError(Exception):
    """The quorum could not be described; ``error`` is the Kafka error behind it."""

    def __init__(self, message: str, *, error: Errors = Errors.UNKNOWN_SERVER_ERROR,
                 leader_id: int = -1) -> None:
        super().__init__(message)
        self.error = error
        # the leader the answering node knows of (-1 if none): where to ask next
        self.leader_id = leader_id


@attrs.frozen
class VoterEndpoint:
    """One listener of a voter, printed as Kafka prints it (IPv6 hosts in brackets)."""

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


@attrs.frozen(kw_only=True)
class ReplicaInfo:
    replica_id: int
    directory_id: uuid.UUID
    log_end_offset: int
    # None where the response says -1 (not known)
    last_fetch_timestamp: int | None
    last_caught_up_timestamp: int | None


@attrs.frozen(kw_only=True)
class QuorumInfo:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaInfo, ...]
    observers: tuple[ReplicaInfo, ...]
    # voter id -> its endpoints (DescribeQuorum v2+; empty before)
    nodes: Mapping[int, tuple[VoterEndpoint, ...]]

    @property
    def leader(self) -> ReplicaInfo:
        """The leader's own row among the voters."""
        for voter in self.voters:
            if voter.replica_id == self.leader_id:
                return voter
        raise DescribeQuorumError(
            f"the leader {self.leader_id} is not among the voters "
            f"{[v.replica_id for v in self.voters]} of the DescribeQuorum response"
        )

    def endpoints_of(self, replica_id: int) -> tuple[VoterEndpoint, ...]:
        return self.nodes.get(replica_id, ())


@attrs.frozen
class FollowerLag:
    # leader log end offset minus the smallest voter log end offset
    lag: int
    # how long the most lagging voter has been behind; -1 when not known
    lag_time_ms: int


def describe_quorum_request() -> DescribeQuorumRequest:
    partition = DescribeQuorumRequestPartition(partition_index=METADATA_PARTITION)
    topic = DescribeQuorumRequestTopic(topic_name=METADATA_TOPIC, partitions=(partition,))
    return DescribeQuorumRequest(topics=(topic,))


def _error(code: int, message: str | None, *, leader_id: int = -1) -> DescribeQuorumError:
    error = Errors.from_code(code)
    text = message or error.name.lower().replace("_", " ")
    return DescribeQuorumError(f"{error.name}: {text}", error=error, leader_id=leader_id)


def _only_partition(response: DescribeQuorumResponse) -> DescribeQuorumResponsePartition:
    """The one partition of the answer, checked as Kafka's admin client checks it."""
    if response.error_code != Errors.NONE:
        raise _error(response.error_code, response.error_message)
    if len(response.topics) != 1:
        raise DescribeQuorumError(
            f"DescribeMetadataQuorum received {len(response.topics)} topics when 1 was expected"
        )
    topic = response.topics[0]
    if topic.topic_name != METADATA_TOPIC:
        raise DescribeQuorumError(
            f"DescribeMetadataQuorum received a topic with name {topic.topic_name} "
            f"when {METADATA_TOPIC} was expected"
        )
    if len(topic.partitions) != 1:
        raise DescribeQuorumError(
            f"DescribeMetadataQuorum received a topic {topic.topic_name} with "
            f"{len(topic.partitions)} partitions when 1 was expected"
        )
    partition = topic.partitions[0]
    if partition.partition_index != METADATA_PARTITION:
        raise DescribeQuorumError(
            f"DescribeMetadataQuorum received a single partition with index "
            f"{partition.partition_index} when {METADATA_PARTITION} was expected"
        )
    if partition.error_code != Errors.NONE:
        raise _error(partition.error_code, partition.error_message, leader_id=partition.leader_id)
    return partition


def _replica(state: DescribeQuorumResponseReplicaState) -> ReplicaInfo:
    return ReplicaInfo(
        replica_id=state.replica_id,
        directory_id=state.replica_directory_id,
        log_end_offset=state.log_end_offset,
        last_fetch_timestamp=None if state.last_fetch_timestamp == -1 else state.last_fetch_timestamp,
        last_caught_up_timestamp=(
            None if state.last_caught_up_timestamp == -1 else state.last_caught_up_timestamp
        ),
    )


def _endpoints(node: DescribeQuorumResponseNode) -> tuple[VoterEndpoint, ...]:
    return tuple(VoterEndpoint(x.name, x.host, x.port) for x in node.listeners)


def quorum_info_from_response(response: DescribeQuorumResponse) -> QuorumInfo:
    """The quorum as the leader described it; raises DescribeQuorumError otherwise.

    A non-leader's NOT_LEADER_OR_FOLLOWER becomes an error whose ``leader_id``
    names the leader it knows, so that a caller can ask that node instead.
    """
    partition = _only_partition(response)
    return QuorumInfo(
        leader_id=partition.leader_id,
        leader_epoch=partition.leader_epoch,
        high_watermark=partition.high_watermark,
        voters=tuple(_replica(v) for v in partition.current_voters),
        observers=tuple(_replica(o) for o in partition.observers),
        nodes={node.node_id: _endpoints(node) for node in response.nodes},
    )


def leader_endpoints(response: DescribeQuorumResponse, leader_id: int) -> tuple[VoterEndpoint, ...]:
    """The endpoints a (non-leader's) response gives for ``leader_id``."""
    for node in response.nodes:
        if node.node_id == leader_id:
            return _endpoints(node)
    return ()


def max_follower_lag(info: QuorumInfo) -> FollowerLag:
    """``MaxFollowerLag`` and ``MaxFollowerLagTimeMs`` as Kafka computes them.

    The most lagging voter is the first voter (in response order) with the
    smallest log end offset; the leader counts as a voter, and when it is
    that voter the lag time is 0.
    """
    leader = info.leader
    laggard = min(info.voters, key=lambda v: v.log_end_offset)
    lag = leader.log_end_offset - laggard.log_end_offset
    if laggard.replica_id == leader.replica_id:
        return FollowerLag(lag, 0)
    if leader.last_caught_up_timestamp is None or laggard.last_caught_up_timestamp is None:
        return FollowerLag(lag, -1)
    return FollowerLag(lag, leader.last_caught_up_timestamp - laggard.last_caught_up_timestamp)
