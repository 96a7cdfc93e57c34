"""Metadata (3) and DescribeCluster (60) answers of a broker listener, from an image. Pure.

Kafka's KRaft broker rules (``KRaftMetadataCache``): the brokers listed are
the registered, unfenced ones that have a listener of the name the request
came in on; a partition whose leader is not such a broker answers leader -1
with LEADER_NOT_AVAILABLE (LISTENER_NOT_FOUND when the leader lives but lacks
the listener); offline replicas are those on brokers that are unregistered,
fenced or without the listener. Metadata v0 asks for every topic with an
empty list, v1+ with a null one (an empty one asks for none). Topics are not
created on Metadata: an unknown one is UNKNOWN_TOPIC_OR_PARTITION (by name)
or UNKNOWN_TOPIC_ID (by id, v10+). The broker list is never empty (librdkafka
gives up on a cluster that answers none): before any broker is known this
broker lists itself. The controller id clients see is this broker, which
forwards controller-bound requests (Kafka's KRaft brokers do the same).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Final

import attrs

from quorum.controller.image import NO_LEADER, BrokerRegistration, MetadataImage, TopicImage
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeClusterResponseBroker,
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from quorum.wire.uuids import ZERO_UUID

__all__ = [
    "BROKER_ENDPOINT_TYPE",
    "CONTROLLER_ENDPOINT_TYPE",
    "ListenerView",
    "LiveBroker",
    "describe_cluster_response",
    "live_brokers",
    "metadata_response",
]

BROKER_ENDPOINT_TYPE: Final = 1
CONTROLLER_ENDPOINT_TYPE: Final = 2
_INTERNAL_TOPICS: Final = frozenset({"__consumer_offsets", "__transaction_state"})


@attrs.frozen(kw_only=True)
class ListenerView:
    """Who answers: this broker, its cluster, and the listener the request came in on."""

    node_id: int
    cluster_id: str
    listener_name: str
    host: str
    port: int
    rack: str | None


@attrs.frozen
class LiveBroker:
    broker_id: int
    host: str
    port: int
    rack: str | None


def _endpoint(broker: BrokerRegistration | None, listener_name: str) -> LiveBroker | None:
    if broker is None or broker.fenced:
        return None
    endpoint = broker.listener(listener_name)
    if endpoint is None:
        return None
    return LiveBroker(broker.broker_id, endpoint.host, endpoint.port, broker.rack)


def live_brokers(image: MetadataImage, view: ListenerView) -> list[LiveBroker]:
    """Unfenced brokers with the view's listener, by id; never empty (this broker at least)."""
    found = [
        live
        for broker_id in sorted(image.brokers)
        if (live := _endpoint(image.brokers[broker_id], view.listener_name)) is not None
    ]
    return found or [LiveBroker(view.node_id, view.host, view.port, view.rack)]


# -- Metadata ------------------------------------------------------------------------------------


def metadata_response(
    image: MetadataImage, request: MetadataRequest, version: int, view: ListenerView
) -> MetadataResponse:
    return MetadataResponse(
        brokers=tuple(
            MetadataResponseBroker(node_id=b.broker_id, host=b.host, port=b.port, rack=b.rack)
            for b in live_brokers(image, view)
        ),
        cluster_id=view.cluster_id,
        controller_id=view.node_id,
        topics=tuple(_topics(image, request, version, view.listener_name)),
    )


def _topics(
    image: MetadataImage, request: MetadataRequest, version: int, listener_name: str
) -> Iterable[MetadataResponseTopic]:
    asked = request.topics
    if asked is None or (version == 0 and not asked):
        for name in sorted(image.topic_ids_by_name):
            yield _topic(image, image.topics_by_id[image.topic_ids_by_name[name]], listener_name)
        return
    seen: set[tuple[str | None, uuid.UUID]] = set()
    for wanted in asked:
        key = (wanted.name, wanted.topic_id)
        if key in seen:
            continue
        seen.add(key)
        yield _requested_topic(image, wanted.name, wanted.topic_id, listener_name)


def _requested_topic(
    image: MetadataImage, name: str | None, topic_id: uuid.UUID, listener_name: str
) -> MetadataResponseTopic:
    if name is None:
        by_id = image.topics_by_id.get(topic_id)
        if by_id is None:
            return MetadataResponseTopic(
                error_code=Errors.UNKNOWN_TOPIC_ID, name=None, topic_id=topic_id
            )
        return _topic(image, by_id, listener_name)
    topic = image.topic(name)
    if topic is None:
        return MetadataResponseTopic(
            error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION, name=name, topic_id=ZERO_UUID
        )
    return _topic(image, topic, listener_name)


def _topic(image: MetadataImage, topic: TopicImage, listener_name: str) -> MetadataResponseTopic:
    return MetadataResponseTopic(
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=topic.name in _INTERNAL_TOPICS,
        partitions=tuple(
            _partition(image, topic, index, listener_name) for index in sorted(topic.partitions)
        ),
    )


def _partition(
    image: MetadataImage, topic: TopicImage, index: int, listener_name: str
) -> MetadataResponsePartition:
    partition = topic.partitions[index]
    leader = partition.leader
    broker = image.broker(leader)
    error = Errors.NONE
    if _endpoint(broker, listener_name) is None:
        alive = broker is not None and not broker.fenced
        error = Errors.LISTENER_NOT_FOUND if alive else Errors.LEADER_NOT_AVAILABLE
        leader = NO_LEADER
    return MetadataResponsePartition(
        error_code=error,
        partition_index=index,
        leader_id=leader,
        leader_epoch=partition.leader_epoch,
        replica_nodes=partition.replicas,
        isr_nodes=partition.isr,
        offline_replicas=tuple(
            r for r in partition.replicas if _endpoint(image.broker(r), listener_name) is None
        ),
    )


# -- DescribeCluster ---------------------------------------------------------------------------


def describe_cluster_response(
    image: MetadataImage, request: DescribeClusterRequest, version: int, view: ListenerView
) -> DescribeClusterResponse:
    kind = request.endpoint_type
    if kind != BROKER_ENDPOINT_TYPE:
        if kind == CONTROLLER_ENDPOINT_TYPE:
            error, text = Errors.MISMATCHED_ENDPOINT_TYPE, (
                "The request was sent to an endpoint of type BROKER, but we wanted an "
                "endpoint of type CONTROLLER"
            )
        else:
            error, text = Errors.UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {kind}"
        return DescribeClusterResponse(
            error_code=Errors.INVALID_REQUEST if version == 0 else error, error_message=text
        )
    return DescribeClusterResponse(
        endpoint_type=BROKER_ENDPOINT_TYPE,
        cluster_id=view.cluster_id,
        controller_id=view.node_id,
        brokers=tuple(
            DescribeClusterResponseBroker(
                broker_id=b.broker_id, host=b.host, port=b.port, rack=b.rack
            )
            for b in live_brokers(image, view)
        ),
    )
