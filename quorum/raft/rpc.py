"""The Raft RPCs as the core sees them: one partition, flattened.

Every KRaft RPC addresses exactly ``__cluster_metadata``/0, so the core works
on these small views and ``quorum.raft.adapters`` converts them to and from
Kafka's message classes (where the topic/partition check happens). Offsets
and epochs keep Kafka's sentinels (-1 for unknown) so a view maps 1:1 onto
the wire.
"""

from __future__ import annotations

import attrs

from quorum.log.protocol import OffsetAndEpoch

# One table of Kafka error codes for the whole project; the core uses its names.
from quorum.wire.error_codes import Errors as ErrorCode

__all__ = [
    "BeginEpochAsk",
    "DescribeQuorumAnswer",
    "EndEpochAsk",
    "EpochAnswer",
    "ErrorCode",
    "FetchAnswer",
    "FetchAsk",
    "FetchSnapshotAnswer",
    "FetchSnapshotAsk",
    "ReplicaDescription",
    "VoteAnswer",
    "VoteAsk",
]


@attrs.frozen(kw_only=True)
class VoteAsk:
    """A Vote request; ``voter_id`` is the receiver the sender meant (-1: unset)."""

    cluster_id: str | None
    voter_id: int
    replica_id: int
    replica_epoch: int
    last_offset_epoch: int
    last_offset: int
    pre_vote: bool


@attrs.frozen(kw_only=True)
class VoteAnswer:
    error: int = ErrorCode.NONE
    partition_error: int = ErrorCode.NONE
    leader_id: int = -1
    leader_epoch: int = -1
    vote_granted: bool = False


@attrs.frozen(kw_only=True)
class BeginEpochAsk:
    cluster_id: str | None
    voter_id: int
    leader_id: int
    leader_epoch: int


@attrs.frozen(kw_only=True)
class EndEpochAsk:
    cluster_id: str | None
    leader_id: int
    leader_epoch: int
    preferred_successors: tuple[int, ...] = ()


@attrs.frozen(kw_only=True)
class EpochAnswer:
    """A BeginQuorumEpoch or EndQuorumEpoch response."""

    error: int = ErrorCode.NONE
    partition_error: int = ErrorCode.NONE
    leader_id: int = -1
    leader_epoch: int = -1


@attrs.frozen(kw_only=True)
class FetchAsk:
    cluster_id: str | None
    replica_id: int
    max_wait_ms: int
    max_bytes: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int


@attrs.frozen(kw_only=True)
class FetchAnswer:
    error: int = ErrorCode.NONE
    partition_error: int = ErrorCode.NONE
    high_watermark: int = -1
    log_start_offset: int = -1
    diverging_epoch: OffsetAndEpoch | None = None
    leader_id: int = -1
    leader_epoch: int = -1
    snapshot_id: OffsetAndEpoch | None = None
    records: bytes | memoryview = b""


@attrs.frozen(kw_only=True)
class FetchSnapshotAsk:
    """A FetchSnapshot request; the topic and partition are kept to echo a wrong one."""

    cluster_id: str | None
    replica_id: int
    max_bytes: int
    topic_name: str
    partition: int
    current_leader_epoch: int
    snapshot_id: OffsetAndEpoch
    position: int


@attrs.frozen(kw_only=True)
class FetchSnapshotAnswer:
    """A FetchSnapshot response; ``snapshot_id`` None travels as (-1, -1)."""

    error: int = ErrorCode.NONE
    partition_error: int = ErrorCode.NONE
    topic_name: str | None = None  # None: the metadata topic
    partition: int = 0
    snapshot_id: OffsetAndEpoch | None = None
    leader_id: int = -1
    leader_epoch: int = -1
    size: int = -1
    position: int = -1
    data: bytes = b""


@attrs.frozen(kw_only=True)
class ReplicaDescription:
    """One row of DescribeQuorum: -1 for what is unknown."""

    replica_id: int
    log_end_offset: int = -1
    last_fetch_timestamp: int = -1
    last_caught_up_timestamp: int = -1


@attrs.frozen(kw_only=True)
class DescribeQuorumAnswer:
    error: int = ErrorCode.NONE
    partition_error: int = ErrorCode.NONE
    leader_id: int = -1
    leader_epoch: int = -1
    high_watermark: int = -1
    voters: tuple[ReplicaDescription, ...] = ()
    observers: tuple[ReplicaDescription, ...] = ()
