"""FindCoordinator (10) and the group APIs' table: who coordinates a group, and where.

A group's coordinator is the leader of partition
``offsets_partition_for(group_id, partitions)`` of ``__consumer_offsets``
(Kafka's mapping, identical on every broker), answered from this broker's
image with the leader's endpoint on the listener the request came in on
(``KafkaApis.getCoordinator``):

* the topic does not exist yet: the broker asks the active controller to
  create it (``offsets.topic.num.partitions`` partitions,
  ``offsets.topic.replication.factor`` replicas, compacted, Kafka's internal
  topic configs) and answers COORDINATOR_NOT_AVAILABLE; the client asks
  again. While fewer brokers are registered than the replication factor the
  controller refuses the creation and every answer stays
  COORDINATOR_NOT_AVAILABLE, as Kafka's are;
* the partition has no leader, or its leader no endpoint on this listener:
  COORDINATOR_NOT_AVAILABLE;
* key type TRANSACTION: TRANSACTIONAL_ID_AUTHORIZATION_FAILED with a message
  that pykraft has no transactions (librdkafka retries every other error of
  FindCoordinator until its timeout; this one every client reports at once);
  another key type: INVALID_REQUEST.

v0-3 carry one key, v4+ a list (KIP-699); each answer carries Kafka's error
message text (``Errors.NONE`` reads "NONE").

OffsetCommit of a topic this broker's image does not hold is answered
UNKNOWN_TOPIC_OR_PARTITION for its partitions before the coordinator sees the
request (``KafkaApis.handleOffsetCommitRequest``); the coordinator commits the
rest, and the two parts make one answer (``commit_known_topics``).
"""

from __future__ import annotations

from typing import Any, Final, Protocol

import attrs
import trio

from broker.api.forwarding import ControllerForwarder
from broker.auto_topics import AutoTopicCreator
from broker.group.partitioning import offsets_partition_for
from quorum.controller.image import MetadataImage
from quorum.controller.topic_names import OFFSETS_TOPIC
from quorum.wire import ApiKey
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    CreateTopicsRequestConfig,
    CreateTopicsRequestTopic,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    FindCoordinatorResponseCoordinator,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)

__all__ = [
    "GROUP_APIS",
    "GROUP_COORDINATOR_APIS",
    "KEY_TYPE_GROUP",
    "KEY_TYPE_TRANSACTION",
    "OffsetsTopicCreator",
    "commit_known_topics",
    "find_coordinator",
]

KEY_TYPE_GROUP: Final = 0
KEY_TYPE_TRANSACTION: Final = 1

# served by the group coordinator (the broker that leads the group's offsets partition)
GROUP_COORDINATOR_APIS: Final = frozenset({
    ApiKey.JOIN_GROUP,
    ApiKey.SYNC_GROUP,
    ApiKey.HEARTBEAT,
    ApiKey.LEAVE_GROUP,
    ApiKey.OFFSET_COMMIT,
    ApiKey.OFFSET_FETCH,
    ApiKey.LIST_GROUPS,
    ApiKey.DESCRIBE_GROUPS,
    ApiKey.DELETE_GROUPS,
    ApiKey.OFFSET_DELETE,
})
GROUP_APIS: Final = GROUP_COORDINATOR_APIS | {ApiKey.FIND_COORDINATOR}

_NO_TRANSACTIONS: Final = (
    "pykraft has no transactions: a transactional producer cannot find a transaction "
    "coordinator (produce with enable.idempotence and no transactional.id)"
)


def _message(error: Errors) -> str:
    return "NONE" if error == Errors.NONE else error.name.replace("_", " ").lower()


class OffsetsTopicCreator:
    """Asks the active controller for ``__consumer_offsets`` with Kafka's internal topic
    configs (``GroupCoordinator.groupMetadataTopicConfigs``), one request at a time."""

    def __init__(
        self,
        forwarder: ControllerForwarder,
        nursery: trio.Nursery,
        *,
        partitions: int,
        replication_factor: int,
        segment_bytes: int,
    ) -> None:
        self._creator = AutoTopicCreator(forwarder, nursery)
        self._topic = CreateTopicsRequestTopic(
            name=OFFSETS_TOPIC,
            num_partitions=partitions,
            replication_factor=replication_factor,
            configs=(
                CreateTopicsRequestConfig(name="cleanup.policy", value="compact"),
                CreateTopicsRequestConfig(name="compression.type", value="producer"),
                CreateTopicsRequestConfig(name="segment.bytes", value=str(segment_bytes)),
            ),
        )

    def ensure(self) -> None:
        self._creator.create(self._topic)


def find_coordinator(
    image: MetadataImage,
    request: FindCoordinatorRequest,
    version: int,
    *,
    listener_name: str,
    creator: OffsetsTopicCreator | None,
) -> FindCoordinatorResponse:
    keys = request.coordinator_keys if version >= 4 else (request.key,)
    found = [
        _coordinator(image, key, request.key_type, listener_name, creator) for key in keys
    ]
    if version >= 4:
        return FindCoordinatorResponse(coordinators=tuple(found))
    one = found[0]
    return FindCoordinatorResponse(
        error_code=one.error_code,
        error_message=one.error_message,
        node_id=one.node_id,
        host=one.host,
        port=one.port,
    )


def _coordinator(
    image: MetadataImage,
    key: str,
    key_type: int,
    listener_name: str,
    creator: OffsetsTopicCreator | None,
) -> FindCoordinatorResponseCoordinator:
    if key_type == KEY_TYPE_TRANSACTION:
        return _refused(key, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, _NO_TRANSACTIONS)
    if key_type != KEY_TYPE_GROUP:
        return _refused(key, Errors.INVALID_REQUEST, f"Unknown coordinator key type {key_type}")
    topic = image.topic(OFFSETS_TOPIC)
    if topic is None:
        if creator is not None:
            creator.ensure()
        return _refused(key, Errors.COORDINATOR_NOT_AVAILABLE)
    partition = topic.partition(offsets_partition_for(key, len(topic.partitions)))
    broker = None if partition is None else image.broker(partition.leader)
    endpoint = None if broker is None or broker.fenced else broker.listener(listener_name)
    if broker is None or endpoint is None:
        return _refused(key, Errors.COORDINATOR_NOT_AVAILABLE)
    return FindCoordinatorResponseCoordinator(
        key=key,
        node_id=broker.broker_id,
        host=endpoint.host,
        port=endpoint.port,
        error_code=Errors.NONE,
        error_message=_message(Errors.NONE),
    )


def _refused(
    key: str, error: Errors, message: str | None = None
) -> FindCoordinatorResponseCoordinator:
    return FindCoordinatorResponseCoordinator(
        key=key,
        node_id=-1,
        host="",
        port=-1,
        error_code=error,
        error_message=message or _message(error),
    )


class Answerable(Protocol):
    """Where an answer goes: a connection's response slot, or a wrapper of one (hashable:
    the coordinator keys its waiting requests by it)."""

    def complete(self, response: Any) -> None: ...

    def __hash__(self) -> int: ...


class TopicLookup(Protocol):
    def topic(self, name: str) -> object | None: ...


class _WithUnknownTopics:
    """A response slot that adds the unknown topics' answers to the coordinator's."""

    def __init__(self, slot: Answerable, unknown: tuple[OffsetCommitResponseTopic, ...]) -> None:
        self._slot = slot
        self._unknown = unknown

    def complete(self, response: OffsetCommitResponse) -> None:
        self._slot.complete(attrs.evolve(response, topics=response.topics + self._unknown))


def commit_known_topics(
    image: TopicLookup, request: OffsetCommitRequest, slot: Answerable
) -> tuple[OffsetCommitRequest | None, Answerable]:
    """(what the coordinator commits, the slot its answer goes to): the topics ``image``
    holds, and a slot that adds UNKNOWN_TOPIC_OR_PARTITION for the others. No topic known:
    (None, the slot), and the slot is already answered."""
    unknown = tuple(
        OffsetCommitResponseTopic(name=t.name, partitions=tuple(
            OffsetCommitResponsePartition(partition_index=p.partition_index,
                                          error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION)
            for p in t.partitions))
        for t in request.topics if image.topic(t.name) is None)
    if not unknown:
        return request, slot
    known = tuple(t for t in request.topics if image.topic(t.name) is not None)
    if not known:
        slot.complete(OffsetCommitResponse(topics=unknown))
        return None, slot
    return attrs.evolve(request, topics=known), _WithUnknownTopics(slot, unknown)
