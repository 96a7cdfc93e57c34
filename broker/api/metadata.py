"""Metadata (3) and DescribeCluster (60) answers of a broker listener, from an image. Pure.

Kafka's KRaft broker rules (``KRaftMetadataCache``): the brokers listed are
the registered, unfenced ones that have a listener of the name the request
came in on; a partition whose leader is not such a broker answers leader -1
with LEADER_NOT_AVAILABLE (LISTENER_NOT_FOUND when the leader lives but lacks
the listener); offline replicas are those on brokers that are unregistered,
fenced or without the listener. Metadata v0 asks for every topic with an
empty list, v1+ with a null one (an empty one asks for none). An unknown
topic is UNKNOWN_TOPIC_OR_PARTITION (by name; INVALID_TOPIC_EXCEPTION for a name
no topic may have) or UNKNOWN_TOPIC_ID (by id, v10+); the router may have asked
the controller to create it meanwhile (``broker.auto_topics``). The broker list
is never empty (librdkafka gives up on a cluster that answers none): before any
broker is known this broker lists itself. The controller id clients see is this
broker, which forwards controller-bound requests (Kafka's KRaft brokers do the
same).

An answer for every topic grows with the metadata (half a second at 100,000
partitions), so ``MetadataAnswerBuilder`` builds it a bounded number of
partitions at a time (``quorum.controller.slicing``); ``metadata_response``
runs it in one go. ``broker.api.metadata_cache`` encodes the answer in slices
too and keeps it per image.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator, Sequence
from typing import Final, Generic, Protocol, TypeVar

import attrs

from quorum.controller.image import (
    NO_LEADER,
    BrokerRegistration,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from quorum.controller.partition_map import items_in_order
from quorum.controller.slicing import build_at_once
from quorum.controller.topic_names import INTERNAL_TOPICS, topic_name_problem
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
    "MetadataAnswerBuilder",
    "MetadataAnswerSink",
    "ResponseSink",
    "all_topics_asked",
    "describe_cluster_response",
    "invalid_metadata_request",
    "live_brokers",
    "metadata_response",
]

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)

BROKER_ENDPOINT_TYPE: Final = 1
CONTROLLER_ENDPOINT_TYPE: Final = 2
# Metadata looks topics up by id from this version (v10-11 carry ids but refuse them)
_TOPIC_IDS_SINCE: Final = 12


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
    """The answer in one go (small requests, tests)."""
    return build_at_once(MetadataAnswerBuilder(image, request, version, view, ResponseSink()))


def invalid_metadata_request(request: MetadataRequest, version: int) -> MetadataResponse | None:
    """The INVALID_REQUEST answer to a v10-11 request naming a topic by id or by no name.

    Those versions carry the fields but Kafka's ``handleTopicMetadataRequest``
    refuses both (ids are served from v12); its ``getErrorResponse`` answers
    every topic asked about with the error, a null name as "" (the response
    has no null names before v12), and no brokers.
    """
    if version >= _TOPIC_IDS_SINCE or all_topics_asked(request, version):
        return None
    topics = request.topics or ()
    if all(t.name is not None and t.topic_id == ZERO_UUID for t in topics):
        return None
    return MetadataResponse(topics=tuple(
        MetadataResponseTopic(error_code=Errors.INVALID_REQUEST, name=t.name or "",
                              topic_id=t.topic_id)
        for t in topics
    ))


def all_topics_asked(request: MetadataRequest, version: int) -> bool:
    """v0 asks for every topic with an empty list, v1+ with a null one."""
    return request.topics is None or (version == 0 and not request.topics)


class _Reach:
    """What a partition's answer needs of the brokers, looked up once per answer."""

    def __init__(self, image: MetadataImage, listener_name: str) -> None:
        # leader id -> the partition's error: NONE when it can be reached on this listener
        self.leader_errors: dict[int, int] = {}
        for broker_id, broker in image.brokers.items():
            if _endpoint(broker, listener_name) is not None:
                self.leader_errors[broker_id] = Errors.NONE
            elif not broker.fenced:
                self.leader_errors[broker_id] = Errors.LISTENER_NOT_FOUND
        self.reachable = frozenset(b for b, e in self.leader_errors.items() if e == Errors.NONE)

    def partition(self, index: int, partition: PartitionRegistration) -> MetadataResponsePartition:
        leader = partition.leader
        # unregistered or fenced: LEADER_NOT_AVAILABLE (-1 included)
        error = self.leader_errors.get(leader, Errors.LEADER_NOT_AVAILABLE)
        replicas = partition.replicas
        return MetadataResponsePartition(
            error_code=error,
            partition_index=index,
            leader_id=leader if error == Errors.NONE else NO_LEADER,
            leader_epoch=partition.leader_epoch,
            replica_nodes=replicas,
            isr_nodes=partition.isr,
            offline_replicas=(
                () if self.reachable.issuperset(replicas)
                else tuple(r for r in replicas if r not in self.reachable)
            ),
        )


class MetadataAnswerSink(Protocol[R_co]):
    """Where a ``MetadataAnswerBuilder`` puts the answer, as it builds it."""

    def topic(self, topic: MetadataResponseTopic) -> None:
        """A whole topic: one built within a slice, or an unknown one."""

    def partitions(self, built: list[MetadataResponsePartition]) -> None:
        """More partitions of a large topic (built over several slices), in order."""

    def large_topic(self, topic: MetadataResponseTopic) -> None:
        """The end of a large topic: its partitions are those given since the last topic."""

    def finish(self, head: MetadataResponse) -> R_co:
        """The answer: ``head`` (brokers, cluster, controller) with the topics given."""


class ResponseSink:
    """Collects the answer as a ``MetadataResponse``."""

    def __init__(self) -> None:
        self._topics: list[MetadataResponseTopic] = []
        self._partitions: list[MetadataResponsePartition] = []

    def topic(self, topic: MetadataResponseTopic) -> None:
        self._topics.append(topic)

    def partitions(self, built: list[MetadataResponsePartition]) -> None:
        self._partitions += built

    def large_topic(self, topic: MetadataResponseTopic) -> None:
        self._topics.append(attrs.evolve(topic, partitions=tuple(self._partitions)))
        self._partitions = []

    def finish(self, head: MetadataResponse) -> MetadataResponse:
        return attrs.evolve(head, topics=tuple(self._topics))


class MetadataAnswerBuilder(Generic[R]):
    """A Metadata answer built a slice at a time (the image is immutable), into ``sink``.

    A unit is one topic asked about or one partition. A topic whose partitions
    fit what is left of the slice goes to the sink whole; a larger one goes in
    chunks of partitions, one per slice, then its head.
    """

    def __init__(
        self,
        image: MetadataImage,
        request: MetadataRequest,
        version: int,
        view: ListenerView,
        sink: MetadataAnswerSink[R],
    ) -> None:
        self._image = image
        self._view = view
        self._sink = sink
        self._reach = _Reach(image, view.listener_name)
        self._wanted = _wanted_topics(image, request, version)
        # a large topic being built: (topic, its partitions in index order, not yet taken)
        self._large: tuple[TopicImage, Iterator[tuple[int, PartitionRegistration]]] | None = None
        self._done = False
        self.units = 0  # done so far (tests)
        self.partitions_built = 0

    def step(self, max_units: int) -> bool:
        """Build up to ``max_units`` units; True once the answer is complete."""
        units = 0
        while units < max_units and not self._done:
            if self._large is not None:
                units += self._continue_large(max_units - units)
                continue
            wanted = next(self._wanted, None)
            if wanted is None:
                self._done = True
                break
            units += 1
            if isinstance(wanted, MetadataResponseTopic):
                self._sink.topic(wanted)  # an unknown topic
                continue
            items = items_in_order(wanted.partitions)
            if len(wanted.partitions) <= max_units - units:
                self._sink.topic(self._topic(wanted, self._partitions(list(items))))
                units += len(wanted.partitions)
            else:
                self._large = (wanted, items)
                units += self._continue_large(max_units - units)
        self.units += units
        return self._done

    def result(self) -> R:
        assert self._done, "the answer is not complete yet"
        view = self._view
        return self._sink.finish(MetadataResponse(
            brokers=tuple(
                MetadataResponseBroker(node_id=b.broker_id, host=b.host, port=b.port, rack=b.rack)
                for b in live_brokers(self._image, view)
            ),
            cluster_id=view.cluster_id,
            controller_id=view.node_id,
        ))

    def _continue_large(self, budget: int) -> int:
        assert self._large is not None
        if budget <= 0:
            return 0
        topic, items = self._large
        chunk = list(itertools.islice(items, budget))
        if chunk:
            self._sink.partitions(self._partitions(chunk))
        if len(chunk) < budget:  # the last of them
            self._sink.large_topic(self._topic(topic, ()))
            self._large = None
        return len(chunk)

    def _partitions(
        self, items: list[tuple[int, PartitionRegistration]]
    ) -> list[MetadataResponsePartition]:
        answer = self._reach.partition
        self.partitions_built += len(items)
        return [answer(index, partition) for index, partition in items]

    @staticmethod
    def _topic(
        topic: TopicImage, partitions: Sequence[MetadataResponsePartition]
    ) -> MetadataResponseTopic:
        return MetadataResponseTopic(
            name=topic.name,
            topic_id=topic.topic_id,
            is_internal=topic.name in INTERNAL_TOPICS,
            partitions=tuple(partitions),
        )


def _wanted_topics(
    image: MetadataImage, request: MetadataRequest, version: int
) -> Iterator[TopicImage | MetadataResponseTopic]:
    """The topics to answer about, in order: known ones, or the answer for an unknown one."""
    if all_topics_asked(request, version):
        by_name, by_id = image.topic_ids_by_name, image.topics_by_id
        for name in sorted(by_name):
            yield by_id[by_name[name]]
        return
    seen: set[tuple[str | None, uuid.UUID]] = set()
    for wanted in request.topics or ():
        key = (wanted.name, wanted.topic_id)
        if key not in seen:
            seen.add(key)
            yield _requested_topic(image, wanted.name, wanted.topic_id)


def _requested_topic(
    image: MetadataImage, name: str | None, topic_id: uuid.UUID
) -> TopicImage | MetadataResponseTopic:
    if name is None:
        by_id = image.topics_by_id.get(topic_id)
        if by_id is None:
            return MetadataResponseTopic(
                error_code=Errors.UNKNOWN_TOPIC_ID, name=None, topic_id=topic_id
            )
        return by_id
    topic = image.topic(name)
    if topic is None:
        # Kafka's getTopicMetadata: a name no topic could have is INVALID_TOPIC_EXCEPTION
        error = (Errors.UNKNOWN_TOPIC_OR_PARTITION if topic_name_problem(name) is None
                 else Errors.INVALID_TOPIC_EXCEPTION)
        return MetadataResponseTopic(error_code=error, name=name, topic_id=ZERO_UUID)
    return topic


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
