"""``MetadataImage``: the cluster's metadata at one offset of ``__cluster_metadata``.

An image is immutable and shared: a new image is made by folding records into
a ``MetadataDelta`` (``quorum.controller.delta``), which copies only what
changed (one topic's partition map when one partition changes). Controllers
and brokers build images with the same code, so two nodes that replayed the
same records hold equal images (``image_digest`` compares them cheaply).

Conventions from Kafka: a leader of -1 means no leader; broker epochs are the
offsets of the brokers' RegisterBrokerRecords; ``provenance.offset`` is the
end offset (exclusive) of the records folded in, like a snapshot id.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Final

import attrs

__all__ = [
    "EMPTY_IMAGE",
    "NO_LEADER",
    "BrokerEndpoint",
    "BrokerRegistration",
    "ConfigResource",
    "ConfigResourceType",
    "FeatureRange",
    "LeaderRecoveryState",
    "MetadataImage",
    "PartitionRegistration",
    "Provenance",
    "TopicImage",
    "TopicPartition",
    "partitions_by_topic",
]

# what a topic without configs of its own has (one shared object: callers may compare by identity)
_NO_CONFIGS: Mapping[str, str] = MappingProxyType({})

NO_LEADER: Final = -1
_EMPTY: Final[Mapping[object, object]] = MappingProxyType({})


class LeaderRecoveryState(enum.IntEnum):
    RECOVERED = 0
    RECOVERING = 1  # an unclean leader that has not yet confirmed its log (KIP-704)


class ConfigResourceType(enum.IntEnum):
    """Kafka's ConfigResource.Type codes (the ones the controller stores)."""

    TOPIC = 2
    BROKER = 4


@attrs.frozen(order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def partitions_by_topic(partitions: Iterable[TopicPartition]) -> dict[str, tuple[int, ...]]:
    """Topic -> its partition indexes, in sorted order (how requests list partitions)."""
    grouped: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return {topic: tuple(indexes) for topic, indexes in grouped.items()}


@attrs.frozen(order=True)
class ConfigResource:
    """A topic (by name) or a broker (by id as text; "" = the cluster default)."""

    type: ConfigResourceType
    name: str


@attrs.frozen
class Provenance:
    """Which records an image holds: everything before ``offset``; ``epoch`` of the last."""

    offset: int
    epoch: int


@attrs.frozen
class BrokerEndpoint:
    name: str
    host: str
    port: int
    security_protocol: int


@attrs.frozen
class FeatureRange:
    name: str
    min_version: int
    max_version: int


@attrs.frozen(kw_only=True)
class BrokerRegistration:
    broker_id: int
    epoch: int
    incarnation_id: uuid.UUID
    listeners: tuple[BrokerEndpoint, ...]
    features: tuple[FeatureRange, ...] = ()
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False

    @property
    def is_active(self) -> bool:
        """Registered, unfenced and not shutting down: may lead and join ISRs."""
        return not self.fenced and not self.in_controlled_shutdown

    def listener(self, name: str) -> BrokerEndpoint | None:
        return next((e for e in self.listeners if e.name == name), None)


# no weakref slot: 8 fields fit a 96-B block (with it, 112 B); an image holds one per partition
@attrs.frozen(kw_only=True, weakref_slot=False)
class PartitionRegistration:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader: int = NO_LEADER
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    leader_epoch: int = 0
    partition_epoch: int = 0

    @property
    def preferred_leader(self) -> int:
        return self.replicas[0] if self.replicas else NO_LEADER

    @property
    def has_leader(self) -> bool:
        return self.leader != NO_LEADER

    @property
    def is_reassigning(self) -> bool:
        return bool(self.removing_replicas or self.adding_replicas)


@attrs.frozen(kw_only=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, PartitionRegistration]

    def partition(self, index: int) -> PartitionRegistration | None:
        return self.partitions.get(index)


@attrs.frozen(kw_only=True)
class MetadataImage:
    provenance: Provenance
    features: Mapping[str, int] = attrs.field(default=_EMPTY)
    brokers: Mapping[int, BrokerRegistration] = attrs.field(default=_EMPTY)
    topics_by_id: Mapping[uuid.UUID, TopicImage] = attrs.field(default=_EMPTY)
    topic_ids_by_name: Mapping[str, uuid.UUID] = attrs.field(default=_EMPTY)
    configs: Mapping[ConfigResource, Mapping[str, str]] = attrs.field(default=_EMPTY)
    # the first producer id not yet handed to any broker
    next_producer_id: int = 0

    @property
    def is_empty(self) -> bool:
        return self.provenance.offset == 0 and not self.features

    def topic(self, name: str) -> TopicImage | None:
        topic_id = self.topic_ids_by_name.get(name)
        return None if topic_id is None else self.topics_by_id[topic_id]

    def partition(self, topic_id: uuid.UUID, index: int) -> PartitionRegistration | None:
        topic = self.topics_by_id.get(topic_id)
        return None if topic is None else topic.partitions.get(index)

    def topic_configs(self, name: str) -> Mapping[str, str]:
        found = self.configs.get(ConfigResource(ConfigResourceType.TOPIC, name))
        return _NO_CONFIGS if found is None else found

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self.brokers.get(broker_id)

    def active_broker_ids(self) -> list[int]:
        return sorted(b.broker_id for b in self.brokers.values() if b.is_active)

    def iter_partitions(self) -> Iterator[tuple[TopicImage, int, PartitionRegistration]]:
        """Every partition, topics by name, partitions by index (a stable order), taken
        lazily: scans over every partition (fencing, controlled shutdown) run in slices."""
        # partition_map imports this module for PartitionRegistration
        from quorum.controller.partition_map import items_in_order

        for name in sorted(self.topic_ids_by_name):
            topic = self.topics_by_id[self.topic_ids_by_name[name]]
            for index, partition in items_in_order(topic.partitions):
                yield topic, index, partition

    def partitions_led_by(self, broker_id: int) -> list[tuple[TopicImage, int]]:
        return [(t, i) for t, i, p in self.iter_partitions() if p.leader == broker_id]


EMPTY_IMAGE: Final = MetadataImage(provenance=Provenance(0, 0))
