"""Requests a group member and the admin client send to a group coordinator (pure).

Builders take the version the connection agreed on where the request's
shape changes with it (FindCoordinator v4 batches keys, LeaveGroup v3
names members, OffsetFetch v8 batches groups); readers turn answers into
per-partition results. The highest versions used (``MAX_VERSIONS``) stay
below what only the KIP-848 consumer protocol means (OffsetCommit and
OffsetFetch v9 carry a member epoch).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

import attrs

from broker.client.types import OffsetAndMetadata, TopicPartition
from quorum.wire.api_keys import ApiKey
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    LeaveGroupRequest,
    LeaveGroupRequestMemberIdentity,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
)

__all__ = [
    "COORDINATOR_MOVED",
    "GROUP_KEY_TYPE",
    "MAX_VERSIONS",
    "Coordinator",
    "FetchedOffsets",
    "find_coordinator_request",
    "leave_group_error",
    "leave_group_request",
    "offset_commit_request",
    "offset_fetch_request",
    "read_find_coordinator",
    "read_offset_commit",
    "read_offset_fetch",
]

GROUP_KEY_TYPE: Final = 0
# an answer with one of these: look the coordinator up again (Kafka's markCoordinatorUnknown)
COORDINATOR_MOVED: Final = frozenset({Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE})
MAX_VERSIONS: Final[Mapping[ApiKey, int]] = {
    ApiKey.FIND_COORDINATOR: 6,
    ApiKey.JOIN_GROUP: 9,
    ApiKey.SYNC_GROUP: 5,
    ApiKey.HEARTBEAT: 4,
    ApiKey.LEAVE_GROUP: 5,
    ApiKey.OFFSET_COMMIT: 8,
    ApiKey.OFFSET_FETCH: 8,
    ApiKey.LIST_GROUPS: 5,
    ApiKey.DESCRIBE_GROUPS: 5,
    ApiKey.DELETE_GROUPS: 2,
    ApiKey.OFFSET_DELETE: 0,
}


@attrs.frozen
class Coordinator:
    node_id: int
    host: str
    port: int


@attrs.frozen
class FetchedOffsets:
    """An OffsetFetch answer: the group's error, and per partition an offset or an error."""

    error: Errors
    offsets: Mapping[TopicPartition, OffsetAndMetadata | None]
    errors: Mapping[TopicPartition, Errors]


def find_coordinator_request(group_id: str, version: int) -> FindCoordinatorRequest:
    if version >= 4:
        return FindCoordinatorRequest(key_type=GROUP_KEY_TYPE, coordinator_keys=(group_id,))
    return FindCoordinatorRequest(key=group_id, key_type=GROUP_KEY_TYPE)


def read_find_coordinator(
    response: FindCoordinatorResponse, version: int
) -> tuple[Errors, str | None, Coordinator | None]:
    if version >= 4:
        if not response.coordinators:
            return Errors.COORDINATOR_NOT_AVAILABLE, "no coordinator in the answer", None
        one = response.coordinators[0]
        error, message, node, host, port = (
            one.error_code, one.error_message, one.node_id, one.host, one.port
        )
    else:
        error, message, node, host, port = (
            response.error_code, response.error_message, response.node_id, response.host,
            response.port,
        )
    if error != Errors.NONE:
        return Errors.from_code(error), message, None
    return Errors.NONE, None, Coordinator(node, host, port)


def leave_group_request(
    group_id: str, member_id: str, instance_id: str | None, version: int, reason: str
) -> LeaveGroupRequest:
    if version >= 3:
        member = LeaveGroupRequestMemberIdentity(
            member_id=member_id, group_instance_id=instance_id, reason=reason
        )
        return LeaveGroupRequest(group_id=group_id, members=(member,))
    return LeaveGroupRequest(group_id=group_id, member_id=member_id)


def leave_group_error(response: LeaveGroupResponse) -> Errors:
    if response.error_code != Errors.NONE:
        return Errors.from_code(response.error_code)
    for member in response.members:
        if member.error_code != Errors.NONE:
            return Errors.from_code(member.error_code)
    return Errors.NONE


def _by_topic(tps: Iterable[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for tp in sorted(tps):
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return grouped


def offset_commit_request(
    group_id: str,
    offsets: Mapping[TopicPartition, OffsetAndMetadata],
    *,
    generation: int = -1,
    member_id: str = "",
    instance_id: str | None = None,
) -> OffsetCommitRequest:
    """Generation -1 and no member: a commit from outside the group (``assign()`` users)."""
    topics = tuple(
        OffsetCommitRequestTopic(name=topic, partitions=tuple(
            OffsetCommitRequestPartition(
                partition_index=p,
                committed_offset=offsets[TopicPartition(topic, p)].offset,
                committed_leader_epoch=offsets[TopicPartition(topic, p)].leader_epoch,
                committed_metadata=offsets[TopicPartition(topic, p)].metadata,
            )
            for p in parts
        ))
        for topic, parts in _by_topic(offsets).items()
    )
    return OffsetCommitRequest(
        group_id=group_id, generation_id_or_member_epoch=generation, member_id=member_id,
        group_instance_id=instance_id, topics=topics,
    )


def read_offset_commit(response: OffsetCommitResponse) -> dict[TopicPartition, Errors]:
    return {
        TopicPartition(topic.name, part.partition_index): Errors.from_code(part.error_code)
        for topic in response.topics for part in topic.partitions
    }


def offset_fetch_request(
    group_id: str, partitions: Iterable[TopicPartition] | None, version: int,
    *, require_stable: bool = False,
) -> OffsetFetchRequest:
    """None asks for every partition the group has an offset for (v2+)."""
    grouped = None if partitions is None else _by_topic(partitions)
    if version >= 8:
        topics = None if grouped is None else tuple(
            OffsetFetchRequestTopics(name=t, partition_indexes=tuple(ps))
            for t, ps in grouped.items()
        )
        group = OffsetFetchRequestGroup(group_id=group_id, topics=topics)
        return OffsetFetchRequest(groups=(group,), require_stable=require_stable)
    old_topics = None if grouped is None else tuple(
        OffsetFetchRequestTopic(name=t, partition_indexes=tuple(ps)) for t, ps in grouped.items()
    )
    return OffsetFetchRequest(group_id=group_id, topics=old_topics,
                              require_stable=require_stable)


def read_offset_fetch(response: OffsetFetchResponse, version: int) -> FetchedOffsets:
    if version >= 8:
        if not response.groups:
            return FetchedOffsets(Errors.UNKNOWN_SERVER_ERROR, {}, {})
        group = response.groups[0]
        error = Errors.from_code(group.error_code)
        rows = [(t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch,
                 p.metadata, p.error_code) for t in group.topics for p in t.partitions]
    else:
        error = Errors.from_code(response.error_code)
        rows = [(t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch,
                 p.metadata, p.error_code) for t in response.topics for p in t.partitions]
    offsets: dict[TopicPartition, OffsetAndMetadata | None] = {}
    errors: dict[TopicPartition, Errors] = {}
    for topic, partition, offset, epoch, metadata, code in rows:
        tp = TopicPartition(topic, partition)
        if code != Errors.NONE:
            errors[tp] = Errors.from_code(code)
        else:
            # offset -1: nothing committed for the partition
            offsets[tp] = None if offset < 0 else OffsetAndMetadata(offset, metadata or "", epoch)
    return FetchedOffsets(error, offsets, errors)
