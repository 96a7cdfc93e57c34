"""Hypothesis strategies: metadata images built by folding random valid records.

``histories()`` draws a list of records that replays cleanly from the empty
image (each record is chosen against the image the earlier ones built: a
fence names a registered broker at its epoch, a partition change an existing
partition) and ``images()`` the image they fold into. Every record type the
image keeps is drawn, including removals, so images have gaps and overwrites.
"""

from __future__ import annotations

import uuid
from typing import Final

from hypothesis import strategies as st

from quorum.controller.delta import fold_records
from quorum.controller.image import EMPTY_IMAGE, MetadataImage, Provenance
from quorum.wire.messages.metadata_records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
    RegisterBrokerRecordBrokerFeature,
    RemoveTopicRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)
from quorum.wire.metadata_serde import MetadataRecord

__all__ = ["histories", "images"]

BROKER_IDS: Final = range(0, 5)
TOPIC_NAMES: Final = ("alpha", "beta", "gamma", "delta")
FEATURES: Final = ("metadata.version", "kraft.version", "group.version")
CONFIG_KEYS: Final = ("cleanup.policy", "retention.ms", "min.insync.replicas")

_small_ints = st.integers(0, 6)
_replica_sets = st.lists(st.sampled_from(BROKER_IDS), min_size=1, max_size=4, unique=True)


def _subset(draw: st.DrawFn, items: tuple[int, ...], *, min_size: int = 0) -> tuple[int, ...]:
    chosen = draw(st.lists(st.sampled_from(items), min_size=min_size, unique=True)) if items else []
    return tuple(chosen)


def _register(draw: st.DrawFn, offset: int) -> MetadataRecord:
    endpoint = st.builds(
        RegisterBrokerRecordBrokerEndpoint,
        name=st.sampled_from(("PLAINTEXT", "SSL", "CONTROLLER")),
        host=st.sampled_from(("localhost", "10.0.0.1", "broker.example")),
        port=st.integers(1, 65535),
        security_protocol=st.integers(0, 3),
    )
    feature = st.builds(
        RegisterBrokerRecordBrokerFeature,
        name=st.sampled_from(FEATURES),
        min_supported_version=st.integers(0, 3),
        max_supported_version=st.integers(3, 20),
    )
    return RegisterBrokerRecord(
        broker_id=draw(st.sampled_from(BROKER_IDS)),
        incarnation_id=draw(st.uuids()),
        broker_epoch=offset,  # Kafka's rule: the offset of the registration
        end_points=tuple(draw(st.lists(endpoint, max_size=2))),
        features=tuple(draw(st.lists(feature, max_size=2))),
        rack=draw(st.sampled_from((None, "rack-a", "rack-b"))),
        fenced=draw(st.booleans()),
        in_controlled_shutdown=draw(st.booleans()),
    )


def _broker_change(draw: st.DrawFn, image: MetadataImage) -> MetadataRecord:
    broker = image.brokers[draw(st.sampled_from(sorted(image.brokers)))]
    kind = draw(st.sampled_from(("fence", "unfence", "change", "unregister")))
    if kind == "fence":
        return FenceBrokerRecord(id=broker.broker_id, epoch=broker.epoch)
    if kind == "unfence":
        return UnfenceBrokerRecord(id=broker.broker_id, epoch=broker.epoch)
    if kind == "unregister":
        return UnregisterBrokerRecord(broker_id=broker.broker_id, broker_epoch=broker.epoch)
    return BrokerRegistrationChangeRecord(
        broker_id=broker.broker_id,
        broker_epoch=broker.epoch,
        fenced=draw(st.sampled_from((-1, 0, 1))),
        in_controlled_shutdown=draw(st.sampled_from((0, 1))),
    )


def _partition(draw: st.DrawFn, topic_id: uuid.UUID, index: int) -> PartitionRecord:
    replicas = tuple(draw(_replica_sets))
    isr = _subset(draw, replicas, min_size=1)
    moving = _subset(draw, replicas)
    split = draw(st.integers(0, len(moving)))
    return PartitionRecord(
        partition_id=index,
        topic_id=topic_id,
        replicas=replicas,
        isr=isr,
        adding_replicas=moving[:split],
        removing_replicas=moving[split:],
        leader=draw(st.sampled_from((-1, *isr))),
        leader_recovery_state=draw(st.sampled_from((0, 1))),
        leader_epoch=draw(_small_ints),
        partition_epoch=draw(_small_ints),
    )


def _create_topic(draw: st.DrawFn, image: MetadataImage) -> list[MetadataRecord]:
    name = draw(st.sampled_from([n for n in TOPIC_NAMES if n not in image.topic_ids_by_name]))
    topic_id = draw(st.uuids().filter(lambda u: u not in image.topics_by_id))
    count = draw(st.integers(0, 3))
    return [
        TopicRecord(name=name, topic_id=topic_id),
        *(_partition(draw, topic_id, i) for i in range(count)),
    ]


def _topic_change(draw: st.DrawFn, image: MetadataImage) -> list[MetadataRecord]:
    topic = image.topics_by_id[draw(st.sampled_from(sorted(image.topics_by_id)))]
    if not topic.partitions or draw(st.integers(0, 3)) == 0:
        return [RemoveTopicRecord(topic_id=topic.topic_id)]
    index = draw(st.sampled_from(sorted(topic.partitions)))
    current = topic.partitions[index]
    replicas = tuple(draw(_replica_sets)) if draw(st.booleans()) else None
    isr = _subset(draw, replicas or current.replicas, min_size=1) if draw(st.booleans()) else None
    maybe = st.none() | st.just(())
    return [
        PartitionChangeRecord(
            partition_id=index,
            topic_id=topic.topic_id,
            replicas=replicas,
            isr=isr,
            adding_replicas=draw(maybe),
            removing_replicas=draw(maybe),
            leader=draw(st.sampled_from((-2, -1, *(isr or current.isr)))),
            leader_recovery_state=draw(st.sampled_from((-1, 0, 1))),
        )
    ]


def _config(draw: st.DrawFn) -> MetadataRecord:
    resource = draw(
        st.sampled_from([(2, name) for name in TOPIC_NAMES] + [(4, ""), (4, "1")])
    )
    return ConfigRecord(
        resource_type=resource[0],
        resource_name=resource[1],
        name=draw(st.sampled_from(CONFIG_KEYS)),
        value=draw(st.none() | st.sampled_from(("delete", "compact", "2", "604800000"))),
    )


def _next_records(draw: st.DrawFn, image: MetadataImage, offset: int) -> list[MetadataRecord]:
    kinds = ["register", "config", "feature", "producer_ids", "no_op"]
    kinds += ["broker_change"] if image.brokers else []
    kinds += ["topic_change"] if image.topics_by_id else []
    kinds += ["create_topic"] if len(image.topic_ids_by_name) < len(TOPIC_NAMES) else []
    kind = draw(st.sampled_from(kinds))
    if kind == "register":
        return [_register(draw, offset)]
    if kind == "broker_change":
        return [_broker_change(draw, image)]
    if kind == "create_topic":
        return _create_topic(draw, image)
    if kind == "topic_change":
        return _topic_change(draw, image)
    if kind == "config":
        return [_config(draw)]
    if kind == "feature":
        return [FeatureLevelRecord(name=draw(st.sampled_from(FEATURES)),
                                   feature_level=draw(st.integers(0, 5)))]
    if kind == "producer_ids":
        step = draw(st.integers(1, 5000))
        return [ProducerIdsRecord(broker_id=draw(st.sampled_from(BROKER_IDS)), broker_epoch=offset,
                                  next_producer_id=image.next_producer_id + step)]
    return [NoOpRecord()]


@st.composite
def histories(draw: st.DrawFn, max_steps: int = 25) -> tuple[list[MetadataRecord], MetadataImage]:
    """Records that replay cleanly from the empty image, and the image they make."""
    image, records = EMPTY_IMAGE, list[MetadataRecord]()
    epoch = 1
    for _ in range(draw(st.integers(0, max_steps))):
        step = _next_records(draw, image, len(records))
        records += step
        epoch += draw(st.sampled_from((0, 0, 1)))
        image = fold_records(image, step, Provenance(len(records), epoch))
    return records, image


def images(max_steps: int = 25) -> st.SearchStrategy[MetadataImage]:
    return histories(max_steps).map(lambda pair: pair[1])
