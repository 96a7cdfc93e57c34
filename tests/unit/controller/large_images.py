"""Images with many partitions, for tests that work must be split into slices."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from quorum.controller.delta import fold_records
from quorum.controller.image import EMPTY_IMAGE, MetadataImage, Provenance
from quorum.wire.messages.metadata_records import (
    ConfigRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
    TopicRecord,
)
from quorum.wire.metadata_serde import MetadataRecord

__all__ = ["large_image"]


def large_image(
    partitions_by_topic: Mapping[str, int],
    *,
    brokers: int = 3,
    fenced: frozenset[int] = frozenset(),
    reassigning_every: int = 0,
) -> MetadataImage:
    """Topics of these sizes at RF 3 over ``brokers`` PLAINTEXT brokers (``fenced`` ones fenced).

    Every ``reassigning_every``-th partition (0: none) is moving a replica to the
    next broker; each topic has a config.
    """
    records: list[MetadataRecord] = [
        RegisterBrokerRecord(
            broker_id=b, incarnation_id=uuid.UUID(int=b), broker_epoch=b, fenced=b in fenced,
            end_points=(RegisterBrokerRecordBrokerEndpoint(
                name="PLAINTEXT", host=f"b{b}", port=9092 + b, security_protocol=0
            ),),
        )
        for b in range(1, brokers + 1)
    ]
    for number, (name, count) in enumerate(sorted(partitions_by_topic.items())):
        topic_id = uuid.UUID(int=number + 1)
        records.append(TopicRecord(name=name, topic_id=topic_id))
        records.append(ConfigRecord(
            resource_type=2, resource_name=name, name="retention.ms", value=str(number)
        ))
        for index in range(count):
            replicas = tuple((index + i) % brokers + 1 for i in range(3))
            moving = reassigning_every and index % reassigning_every == 0
            adding = ((index + 3) % brokers + 1,) if moving else ()
            records.append(PartitionRecord(
                partition_id=index, topic_id=topic_id,
                replicas=replicas + adding, isr=replicas, leader=replicas[index % 3],
                adding_replicas=adding, removing_replicas=replicas[:1] if moving else (),
                leader_epoch=index % 5, partition_epoch=0,
            ))
    return fold_records(EMPTY_IMAGE, records, Provenance(len(records), 1))
