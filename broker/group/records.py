"""``__consumer_offsets`` records: Kafka's layouts, written and read back.

A record's key and value each start with an int16 version, then the data
schema at that version (``quorum.wire.messages.group_records``).  The key's
version says what the record is: 0 and 1 an offset commit, 2 group metadata.
A null value is a tombstone: the offset or the group is gone.

Kafka 4.x writes OffsetCommitKey v1 with OffsetCommitValue v3 (v1 when the
commit carries an expire timestamp: OffsetCommit v2-4 with a retention) and
GroupMetadataKey v2 with GroupMetadataValue v3 (MetadataVersion's
``offsetCommitValueVersion`` / ``groupMetadataValueVersion``); it reads every
version, flexible v4 included, and so does this module.
"""

from __future__ import annotations

import struct
from typing import Final, TypeVar

import attrs

from broker.group.errors import RecordDecodeError
from quorum.wire.codec import decode_from, encode
from quorum.wire.errors import WireDecodeError
from quorum.wire.messages import (
    GroupMetadataKey,
    GroupMetadataValue,
    GroupMetadataValueMemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
)

__all__ = [
    "CommittedOffset",
    "GroupMetadataReplay",
    "OffsetCommitReplay",
    "OffsetsRecord",
    "StoredMember",
    "decode_offsets_record",
    "group_metadata_record",
    "group_tombstone",
    "offset_commit_record",
    "offset_tombstone",
]

OFFSET_COMMIT_KEY_VERSION: Final = 1
GROUP_METADATA_KEY_VERSION: Final = 2
_INT16: Final = struct.Struct(">h")
T = TypeVar("T")


@attrs.frozen
class OffsetsRecord:
    """One record for ``__consumer_offsets``: key and value bytes (None: tombstone)."""

    key: bytes
    value: bytes | None


@attrs.frozen(kw_only=True)
class CommittedOffset:
    """A committed offset as Kafka keeps it (OffsetAndMetadata)."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int = 0
    expire_timestamp_ms: int | None = None  # only from OffsetCommit v2-4 retention


@attrs.frozen(kw_only=True)
class StoredMember:
    """A member as group metadata stores it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@attrs.frozen(kw_only=True)
class OffsetCommitReplay:
    """A replayed offset commit (``offset`` None: the tombstone of one)."""

    group_id: str
    topic: str
    partition: int
    offset: CommittedOffset | None


@attrs.frozen(kw_only=True)
class GroupMetadataReplay:
    """A replayed group metadata record (``deleted``: its tombstone)."""

    group_id: str
    deleted: bool
    protocol_type: str = ""
    generation_id: int = 0
    protocol_name: str | None = None
    leader_id: str | None = None
    current_state_timestamp_ms: int = -1
    members: tuple[StoredMember, ...] = ()


def _versioned(version: int, message: object) -> bytes:
    return _INT16.pack(version) + encode(message, version)


def _offset_key(group_id: str, topic: str, partition: int) -> bytes:
    key = OffsetCommitKey(group=group_id, topic=topic, partition=partition)
    return _versioned(OFFSET_COMMIT_KEY_VERSION, key)


def _group_key(group_id: str) -> bytes:
    return _versioned(GROUP_METADATA_KEY_VERSION, GroupMetadataKey(group=group_id))


def offset_commit_record(
    group_id: str, topic: str, partition: int, committed: CommittedOffset
) -> OffsetsRecord:
    expire = committed.expire_timestamp_ms
    value = OffsetCommitValue(
        offset=committed.offset,
        leader_epoch=committed.leader_epoch,
        metadata=committed.metadata,
        commit_timestamp=committed.commit_timestamp_ms,
        expire_timestamp=-1 if expire is None else expire,
    )
    version = 3 if expire is None else 1
    return OffsetsRecord(_offset_key(group_id, topic, partition), _versioned(version, value))


def offset_tombstone(group_id: str, topic: str, partition: int) -> OffsetsRecord:
    return OffsetsRecord(_offset_key(group_id, topic, partition), None)


def group_metadata_record(
    *,
    group_id: str,
    protocol_type: str | None,
    generation_id: int,
    protocol_name: str | None,
    leader_id: str | None,
    current_state_timestamp_ms: int,
    members: tuple[StoredMember, ...],
) -> OffsetsRecord:
    value = GroupMetadataValue(
        protocol_type=protocol_type or "",
        generation=generation_id,
        protocol=protocol_name,
        leader=leader_id,
        current_state_timestamp=current_state_timestamp_ms,
        members=tuple(
            GroupMetadataValueMemberMetadata(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms,
                subscription=m.subscription,
                assignment=m.assignment,
            )
            for m in members
        ),
    )
    return OffsetsRecord(_group_key(group_id), _versioned(3, value))


def group_tombstone(group_id: str) -> OffsetsRecord:
    return OffsetsRecord(_group_key(group_id), None)


def _read_version(data: bytes | memoryview, what: str) -> int:
    if len(data) < 2:
        raise RecordDecodeError(f"{what} of {len(data)} bytes has no version")
    version: int = _INT16.unpack_from(data, 0)[0]
    return version


def _decode(cls: type[T], data: bytes | memoryview, low: int, high: int) -> T:
    version = _read_version(data, cls.__name__)
    if not low <= version <= high:
        raise RecordDecodeError(f"{cls.__name__} version {version} is not in {low}..{high}")
    try:
        message, _end = decode_from(cls, version, data, 2)
    except WireDecodeError as error:
        raise RecordDecodeError(str(error)) from error
    return message


def _member(m: GroupMetadataValueMemberMetadata) -> StoredMember:
    return StoredMember(
        member_id=m.member_id,
        group_instance_id=m.group_instance_id,
        client_id=m.client_id,
        client_host=m.client_host,
        # v0 has no rebalance timeout (-1): Kafka then uses the session timeout
        rebalance_timeout_ms=m.rebalance_timeout if m.rebalance_timeout >= 0 else m.session_timeout,
        session_timeout_ms=m.session_timeout,
        subscription=bytes(m.subscription),
        assignment=bytes(m.assignment),
    )


def _offset_replay(
    key: bytes | memoryview, value: bytes | memoryview | None
) -> OffsetCommitReplay:
    k = _decode(OffsetCommitKey, key, 0, 1)
    if value is None:
        return OffsetCommitReplay(group_id=k.group, topic=k.topic, partition=k.partition, offset=None)
    v = _decode(OffsetCommitValue, value, 0, 4)
    committed = CommittedOffset(
        offset=v.offset,
        leader_epoch=v.leader_epoch,
        metadata=v.metadata,
        commit_timestamp_ms=v.commit_timestamp,
        expire_timestamp_ms=v.expire_timestamp if v.expire_timestamp >= 0 else None,
    )
    return OffsetCommitReplay(group_id=k.group, topic=k.topic, partition=k.partition, offset=committed)


def _group_replay(key: bytes | memoryview, value: bytes | memoryview | None) -> GroupMetadataReplay:
    k = _decode(GroupMetadataKey, key, 2, 2)
    if value is None:
        return GroupMetadataReplay(group_id=k.group, deleted=True)
    v = _decode(GroupMetadataValue, value, 0, 4)
    return GroupMetadataReplay(
        group_id=k.group,
        deleted=False,
        protocol_type=v.protocol_type,
        generation_id=v.generation,
        protocol_name=v.protocol,
        leader_id=v.leader,
        current_state_timestamp_ms=v.current_state_timestamp,
        members=tuple(_member(m) for m in v.members),
    )


def decode_offsets_record(
    key: bytes | memoryview, value: bytes | memoryview | None
) -> OffsetCommitReplay | GroupMetadataReplay:
    """Read one ``__consumer_offsets`` record; RecordDecodeError if it is not Kafka's."""
    version = _read_version(key, "key")
    if version in (0, 1):
        return _offset_replay(key, value)
    if version == GROUP_METADATA_KEY_VERSION:
        return _group_replay(key, value)
    raise RecordDecodeError(f"unknown __consumer_offsets key version {version}")
