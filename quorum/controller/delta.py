"""``MetadataDelta``: records folded onto an image, and the next image.

``replay(record)`` is the only place metadata state changes (event sourcing):
the controller's working state, a standby controller's hot image and a
broker's image all come from it. ``apply(provenance)`` builds the new image,
copying only the maps that changed. A record that contradicts the image (a
partition change for an unknown topic, a second topic with one name) means
the log is not one this code wrote: replay raises ``MetadataReplayError``
rather than guess.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, TypeVar

import attrs

from quorum.controller.image import (
    BrokerEndpoint,
    BrokerRegistration,
    ConfigResource,
    ConfigResourceType,
    FeatureRange,
    LeaderRecoveryState,
    MetadataImage,
    PartitionRegistration,
    Provenance,
    TopicImage,
)
from quorum.controller.partition_map import PartitionMap
from quorum.wire.messages.metadata_records import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)
from quorum.wire.messages.pykraft_append import PykraftPayloadRecord
from quorum.wire.metadata_serde import MetadataRecord

__all__ = [
    "NO_LEADER_CHANGE",
    "MetadataDelta",
    "MetadataReplayError",
    "fold_records",
    "merge_partition_change",
]

# PartitionChangeRecord.leader when the leader does not change
NO_LEADER_CHANGE: Final = -2
K = TypeVar("K")
V = TypeVar("V")


class MetadataReplayError(Exception):
    """A committed record that cannot apply to the image it follows."""


def merge_partition_change(
    partition: PartitionRegistration, record: PartitionChangeRecord
) -> PartitionRegistration:
    """Kafka's PartitionRegistration.merge: every change bumps the partition epoch,
    a leader change (``leader != -2``) bumps the leader epoch."""
    leader, leader_epoch = partition.leader, partition.leader_epoch
    if record.leader != NO_LEADER_CHANGE:
        leader, leader_epoch = record.leader, leader_epoch + 1
    recovery = partition.leader_recovery_state
    if record.leader_recovery_state != -1:
        recovery = LeaderRecoveryState(record.leader_recovery_state)
    return PartitionRegistration(
        replicas=_or(record.replicas, partition.replicas),
        isr=_or(record.isr, partition.isr),
        removing_replicas=_or(record.removing_replicas, partition.removing_replicas),
        adding_replicas=_or(record.adding_replicas, partition.adding_replicas),
        leader=leader,
        leader_recovery_state=recovery,
        leader_epoch=leader_epoch,
        partition_epoch=partition.partition_epoch + 1,
    )


def _or(value: tuple[int, ...] | None, current: tuple[int, ...]) -> tuple[int, ...]:
    return current if value is None else shared_ids(value)


def shared_ids(values: tuple[int, ...] | list[int]) -> tuple[int, ...]:
    """``tuple(values)``, the same tuple object for equal lists seen recently.

    Replica and ISR lists repeat across partitions (a 3-broker cluster has six replica
    lists): one tuple per distinct list, shared by every registration holding it, saves
    about 120 B per partition. Bounded, so a cluster whose lists are all distinct does not
    pay a table entry per partition on top.
    """
    return _shared_tuple(tuple(values))


@functools.lru_cache(maxsize=100_000)
def _shared_tuple(ids: tuple[int, ...]) -> tuple[int, ...]:
    return ids


@attrs.define
class _TopicChange:
    name: str
    topic_id: uuid.UUID
    base: Mapping[int, PartitionRegistration]
    changed: dict[int, PartitionRegistration] = attrs.field(factory=dict)

    def get(self, index: int) -> PartitionRegistration | None:
        found = self.changed.get(index)
        return self.base.get(index) if found is None else found

    def build(self) -> TopicImage:
        # copies only the chunks of the partition map that changed (quorum.controller.
        # partition_map): a change to a 1,000,000-partition topic is not a million copies
        partitions = PartitionMap.of(self.base).with_changes(self.changed)
        return TopicImage(name=self.name, topic_id=self.topic_id, partitions=partitions)


_REMOVED: Final = object()


class MetadataDelta:
    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self._features: dict[str, int | None] = {}
        self._brokers: dict[int, BrokerRegistration | None] = {}
        self._topics: dict[uuid.UUID, _TopicChange | None] = {}
        self._names: dict[str, uuid.UUID | None] = {}
        self._configs: dict[ConfigResource, dict[str, str | None]] = {}
        self._next_producer_id: int | None = None
        self.record_count = 0

    # -- reading through the delta (what the image will be) --------------------------------

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        if broker_id in self._brokers:
            return self._brokers[broker_id]
        return self.image.brokers.get(broker_id)

    def topic_id(self, name: str) -> uuid.UUID | None:
        if name in self._names:
            return self._names[name]
        return self.image.topic_ids_by_name.get(name)

    def _topic(self, topic_id: uuid.UUID, what: str) -> _TopicChange:
        if topic_id in self._topics:
            change = self._topics[topic_id]
        else:
            base = self.image.topics_by_id.get(topic_id)
            change = None if base is None else _TopicChange(base.name, topic_id, base.partitions)
            self._topics[topic_id] = change
        if change is None:
            raise MetadataReplayError(f"{what} for unknown topic id {topic_id}")
        return change

    # -- replay ----------------------------------------------------------------------------

    def replay(self, record: MetadataRecord) -> None:
        handler = _REPLAY.get(type(record))
        if handler is None:
            raise MetadataReplayError(f"no replay rule for {type(record).__name__}")
        handler(self, record)
        self.record_count += 1

    def _replay_register_broker(self, r: RegisterBrokerRecord) -> None:
        self._brokers[r.broker_id] = BrokerRegistration(
            broker_id=r.broker_id,
            epoch=r.broker_epoch,
            incarnation_id=r.incarnation_id,
            listeners=tuple(
                BrokerEndpoint(e.name, e.host, e.port, e.security_protocol) for e in r.end_points
            ),
            features=tuple(
                FeatureRange(f.name, f.min_supported_version, f.max_supported_version)
                for f in r.features
            ),
            rack=r.rack,
            fenced=r.fenced,
            in_controlled_shutdown=r.in_controlled_shutdown,
        )

    def _registered(self, broker_id: int, epoch: int, what: str) -> BrokerRegistration:
        broker = self.broker(broker_id)
        if broker is None or broker.epoch != epoch:
            raise MetadataReplayError(
                f"{what} for broker {broker_id} epoch {epoch}, which is not registered "
                f"(registered epoch: {None if broker is None else broker.epoch})"
            )
        return broker

    def _replay_unregister_broker(self, r: UnregisterBrokerRecord) -> None:
        self._registered(r.broker_id, r.broker_epoch, "UnregisterBrokerRecord")
        self._brokers[r.broker_id] = None

    def _replay_fence(self, r: FenceBrokerRecord) -> None:
        broker = self._registered(r.id, r.epoch, "FenceBrokerRecord")
        self._brokers[r.id] = attrs.evolve(broker, fenced=True)

    def _replay_unfence(self, r: UnfenceBrokerRecord) -> None:
        broker = self._registered(r.id, r.epoch, "UnfenceBrokerRecord")
        self._brokers[r.id] = attrs.evolve(broker, fenced=False)

    def _replay_registration_change(self, r: BrokerRegistrationChangeRecord) -> None:
        broker = self._registered(r.broker_id, r.broker_epoch, "BrokerRegistrationChangeRecord")
        fenced = {1: True, -1: False}.get(r.fenced, broker.fenced)
        shutdown = True if r.in_controlled_shutdown == 1 else broker.in_controlled_shutdown
        self._brokers[r.broker_id] = attrs.evolve(
            broker, fenced=fenced, in_controlled_shutdown=shutdown
        )

    def _replay_topic(self, r: TopicRecord) -> None:
        if self.topic_id(r.name) is not None:
            raise MetadataReplayError(f"TopicRecord for {r.name!r}, which already exists")
        self._topics[r.topic_id] = _TopicChange(r.name, r.topic_id, {})
        self._names[r.name] = r.topic_id

    def _replay_partition(self, r: PartitionRecord) -> None:
        topic = self._topic(r.topic_id, f"PartitionRecord {r.partition_id}")
        topic.changed[r.partition_id] = PartitionRegistration(
            replicas=shared_ids(r.replicas),
            isr=shared_ids(r.isr),
            removing_replicas=shared_ids(r.removing_replicas),
            adding_replicas=shared_ids(r.adding_replicas),
            leader=r.leader,
            leader_recovery_state=LeaderRecoveryState(r.leader_recovery_state),
            leader_epoch=r.leader_epoch,
            partition_epoch=r.partition_epoch,
        )

    def _replay_partition_change(self, r: PartitionChangeRecord) -> None:
        topic = self._topic(r.topic_id, f"PartitionChangeRecord {r.partition_id}")
        current = topic.get(r.partition_id)
        if current is None:
            raise MetadataReplayError(
                f"PartitionChangeRecord for {topic.name}-{r.partition_id}, which does not exist"
            )
        topic.changed[r.partition_id] = merge_partition_change(current, r)

    def _replay_remove_topic(self, r: RemoveTopicRecord) -> None:
        topic = self._topic(r.topic_id, "RemoveTopicRecord")
        self._topics[r.topic_id] = None
        self._names[topic.name] = None
        # a topic's configs go with it (a new topic of that name starts clean)
        resource = ConfigResource(ConfigResourceType.TOPIC, topic.name)
        # every key the base image or this delta holds is deleted (a pending deletion too)
        keys = {*self.image.configs.get(resource, {}), *self._configs.get(resource, {})}
        self._configs[resource] = dict.fromkeys(keys)

    def _config_view(self, resource: ConfigResource) -> dict[str, str]:
        merged = dict(self.image.configs.get(resource, {}))
        for key, value in self._configs.get(resource, {}).items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        return merged

    def _replay_config(self, r: ConfigRecord) -> None:
        try:
            kind = ConfigResourceType(r.resource_type)
        except ValueError:
            raise MetadataReplayError(f"ConfigRecord for resource type {r.resource_type}") from None
        changes = self._configs.setdefault(ConfigResource(kind, r.resource_name), {})
        changes[r.name] = r.value

    def _replay_feature_level(self, r: FeatureLevelRecord) -> None:
        self._features[r.name] = r.feature_level or None  # level 0 removes the feature

    def _replay_producer_ids(self, r: ProducerIdsRecord) -> None:
        current = self.next_producer_id
        if r.next_producer_id <= current:
            raise MetadataReplayError(
                f"ProducerIdsRecord moves the next producer id back ({current} -> "
                f"{r.next_producer_id})"
            )
        self._next_producer_id = r.next_producer_id

    def _replay_no_op(self, r: NoOpRecord | PykraftPayloadRecord) -> None:
        pass  # written to advance the high watermark; changes nothing

    def _replay_transaction_marker(
        self, r: BeginTransactionRecord | EndTransactionRecord | AbortTransactionRecord
    ) -> None:
        # what a transaction's markers mean (publish all or nothing) is the log follower's
        # business (quorum.node.metadata_follower); folded into one delta they change nothing
        pass

    @property
    def changed_topic_ids(self) -> set[uuid.UUID]:
        """Topics this delta created, removed or changed a partition of."""
        return set(self._topics)

    @property
    def next_producer_id(self) -> int:
        if self._next_producer_id is not None:
            return self._next_producer_id
        return self.image.next_producer_id

    # -- the next image --------------------------------------------------------------------

    def apply(self, provenance: Provenance) -> MetadataImage:
        image = self.image
        topics = _overlay(image.topics_by_id, {
            k: (_REMOVED if v is None else v.build()) for k, v in self._topics.items()
        })
        configs = dict(image.configs)
        for resource in self._configs:
            merged = self._config_view(resource)
            if merged:
                configs[resource] = MappingProxyType(merged)
            else:
                configs.pop(resource, None)
        return MetadataImage(
            provenance=provenance,
            features=_overlay(image.features, _removals(self._features)),
            brokers=_overlay(image.brokers, _removals(self._brokers)),
            topics_by_id=topics,
            topic_ids_by_name=_overlay(image.topic_ids_by_name, _removals(self._names)),
            configs=MappingProxyType(configs) if self._configs else image.configs,
            next_producer_id=self.next_producer_id,
        )


def _removals(changes: Mapping[K, V | None]) -> dict[K, Any]:
    return {k: (_REMOVED if v is None else v) for k, v in changes.items()}


def _overlay(base: Mapping[K, V], changes: Mapping[K, Any]) -> Mapping[K, V]:
    if not changes:
        return base
    merged = dict(base)
    for key, value in changes.items():
        if value is _REMOVED:
            merged.pop(key, None)
        else:
            merged[key] = value
    return MappingProxyType(merged)


def fold_records(
    image: MetadataImage, records: list[MetadataRecord], provenance: Provenance
) -> MetadataImage:
    """The image after ``records`` (one delta for all of them)."""
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta.apply(provenance)


_REPLAY: Final[dict[type, Callable[[MetadataDelta, Any], None]]] = {
    RegisterBrokerRecord: MetadataDelta._replay_register_broker,
    UnregisterBrokerRecord: MetadataDelta._replay_unregister_broker,
    FenceBrokerRecord: MetadataDelta._replay_fence,
    UnfenceBrokerRecord: MetadataDelta._replay_unfence,
    BrokerRegistrationChangeRecord: MetadataDelta._replay_registration_change,
    TopicRecord: MetadataDelta._replay_topic,
    PartitionRecord: MetadataDelta._replay_partition,
    PartitionChangeRecord: MetadataDelta._replay_partition_change,
    RemoveTopicRecord: MetadataDelta._replay_remove_topic,
    ConfigRecord: MetadataDelta._replay_config,
    FeatureLevelRecord: MetadataDelta._replay_feature_level,
    ProducerIdsRecord: MetadataDelta._replay_producer_ids,
    NoOpRecord: MetadataDelta._replay_no_op,
    PykraftPayloadRecord: MetadataDelta._replay_no_op,  # test and bench payloads
    BeginTransactionRecord: MetadataDelta._replay_transaction_marker,
    EndTransactionRecord: MetadataDelta._replay_transaction_marker,
    AbortTransactionRecord: MetadataDelta._replay_transaction_marker,
}
