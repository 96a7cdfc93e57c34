"""The consumer's embedded protocol: what JoinGroup's metadata and SyncGroup's assignment hold.

A consumer group is a classic group of protocol type ``consumer``. Each
member's JoinGroup names, per assignor, a ``ConsumerProtocolSubscription``
(the topics it wants, the partitions it owns, its generation and rack);
the leader answers with one ``ConsumerProtocolAssignment`` per member
through SyncGroup. Both are Kafka data schemas (apache/kafka
``clients/src/main/resources/common/message/ConsumerProtocolSubscription.json``
and ``ConsumerProtocolAssignment.json``, versions 0-3, never flexible),
written after an INT16 version header (``ConsumerProtocol.java``). We write
version 3; a version above 3 is read as 3 (its extra fields are at the end
and ignorable, as Kafka's ``checkSubscriptionVersion`` does), one below 0
is refused.

The cooperative-sticky assignor also puts its generation in the user data
(an INT32 on its own), for members that speak only version 0 or 1.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Final

import attrs

from broker.client.errors import KafkaError
from broker.client.types import TopicPartition
from quorum.wire.codec import decode_from, encode
from quorum.wire.errors import WireDecodeError
from quorum.wire.schema import BYTES, INT32, STRING, array, field, message

__all__ = [
    "CONSUMER_PROTOCOL_TYPE",
    "Assignment",
    "Subscription",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
    "generation_user_data",
    "read_generation_user_data",
]

CONSUMER_PROTOCOL_TYPE: Final = "consumer"
_HIGHEST: Final = 3
_HEADER: Final = struct.Struct(">h")
_GENERATION: Final = struct.Struct(">i")


@attrs.frozen(kw_only=True)
class _OwnedTopic:
    topic: str = field(STRING, versions="1+", default="")
    partitions: tuple[int, ...] = field(array(INT32), versions="1+", default=())


@message(api_key=None, versions=(0, 3), flexible="none")
@attrs.frozen(kw_only=True)
class _SubscriptionData:
    topics: tuple[str, ...] = field(array(STRING), default=())
    user_data: bytes | None = field(BYTES, nullable="0+", default=None)
    owned_partitions: tuple[_OwnedTopic, ...] = field(
        array(_OwnedTopic), versions="1+", ignorable=True, default=()
    )
    generation_id: int = field(INT32, versions="2+", ignorable=True, default=-1)
    rack_id: str | None = field(STRING, versions="3+", nullable="3+", ignorable=True,
                                default=None)


@attrs.frozen(kw_only=True)
class _AssignedTopic:
    topic: str = field(STRING, default="")
    partitions: tuple[int, ...] = field(array(INT32), default=())


@message(api_key=None, versions=(0, 3), flexible="none")
@attrs.frozen(kw_only=True)
class _AssignmentData:
    assigned_partitions: tuple[_AssignedTopic, ...] = field(array(_AssignedTopic), default=())
    user_data: bytes | None = field(BYTES, nullable="0+", default=None)


@attrs.frozen(kw_only=True)
class Subscription:
    """One member's JoinGroup metadata for one assignor (Kafka's ``Subscription``)."""

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = -1  # -1: unknown (version 0 and 1 do not carry it)
    rack_id: str | None = None
    group_instance_id: str | None = None  # from the JoinGroup answer, not the bytes


@attrs.frozen(kw_only=True)
class Assignment:
    partitions: tuple[TopicPartition, ...] = ()
    user_data: bytes | None = None


def _grouped(tps: Iterable[TopicPartition]) -> dict[str, list[int]]:
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(tps):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return by_topic


def _version(data: bytes) -> tuple[int, memoryview]:
    view = memoryview(data)
    if len(view) < _HEADER.size:
        raise KafkaError(None, "the consumer protocol's header is cut short")
    (version,) = _HEADER.unpack_from(view)
    if version < 0:
        raise KafkaError(None, f"consumer protocol version {version} is not valid")
    return min(version, _HIGHEST), view[_HEADER.size:]


def encode_subscription(subscription: Subscription) -> bytes:
    data = _SubscriptionData(
        topics=tuple(sorted(subscription.topics)),
        user_data=subscription.user_data,
        owned_partitions=tuple(
            _OwnedTopic(topic=topic, partitions=tuple(parts))
            for topic, parts in _grouped(subscription.owned_partitions).items()
        ),
        generation_id=subscription.generation_id,
        rack_id=subscription.rack_id,
    )
    return _HEADER.pack(_HIGHEST) + encode(data, _HIGHEST)


def decode_subscription(metadata: bytes, group_instance_id: str | None = None) -> Subscription:
    version, body = _version(metadata)
    try:
        data, _ = decode_from(_SubscriptionData, version, body)
    except WireDecodeError as exc:
        raise KafkaError(None, f"a member's subscription cannot be read: {exc}") from None
    return Subscription(
        topics=tuple(data.topics),
        user_data=None if data.user_data is None else bytes(data.user_data),
        owned_partitions=tuple(
            TopicPartition(owned.topic, p) for owned in data.owned_partitions
            for p in owned.partitions
        ),
        generation_id=data.generation_id,
        rack_id=data.rack_id or None,
        group_instance_id=group_instance_id,
    )


def encode_assignment(assignment: Assignment) -> bytes:
    data = _AssignmentData(
        assigned_partitions=tuple(
            _AssignedTopic(topic=topic, partitions=tuple(parts))
            for topic, parts in _grouped(assignment.partitions).items()
        ),
        user_data=assignment.user_data,
    )
    return _HEADER.pack(_HIGHEST) + encode(data, _HIGHEST)


def decode_assignment(data: bytes) -> Assignment:
    """An empty buffer is no assignment (the coordinator's answer to a member left out)."""
    if not data:
        return Assignment()
    version, body = _version(data)
    try:
        decoded, _ = decode_from(_AssignmentData, version, body)
    except WireDecodeError as exc:
        raise KafkaError(None, f"the group's assignment cannot be read: {exc}") from None
    return Assignment(
        partitions=tuple(
            TopicPartition(topic.topic, p) for topic in decoded.assigned_partitions
            for p in topic.partitions
        ),
        user_data=None if decoded.user_data is None else bytes(decoded.user_data),
    )


def generation_user_data(generation: int) -> bytes:
    """CooperativeStickyAssignor's user data: its generation, an INT32."""
    return _GENERATION.pack(generation)


def read_generation_user_data(user_data: bytes | None) -> int | None:
    """The generation in a cooperative-sticky member's user data (None: none given)."""
    if user_data is None:
        return None
    if len(user_data) < _GENERATION.size:
        return -1  # Kafka: unreadable user data counts as DEFAULT_GENERATION
    (generation,) = _GENERATION.unpack_from(user_data)
    return int(generation)
