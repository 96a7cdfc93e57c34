"""Metadata records for broker tests: brokers, topics, partition changes, and logs of them."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from quorum.controller.delta import fold_records
from quorum.controller.image import EMPTY_IMAGE, MetadataImage, Provenance
from quorum.log import MemoryLog
from quorum.wire.messages.metadata_records import (
    FeatureLevelRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
    TopicRecord,
)
from quorum.wire.metadata_serde import MetadataRecord, encode_metadata_record
from quorum.wire.records import Record, build_batch

__all__ = [
    "append_records",
    "change",
    "fold",
    "metadata_version",
    "partition",
    "register",
    "topic",
    "topic_id",
]


def topic_id(name: str) -> uuid.UUID:
    """A stable id per name, so tests can name topics."""
    return uuid.uuid5(uuid.NAMESPACE_DNS, name)


def metadata_version(level: int = 21) -> FeatureLevelRecord:
    return FeatureLevelRecord(name="metadata.version", feature_level=level)


def register(
    broker_id: int, epoch: int, *, fenced: bool = False, port: int = 9092
) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id=broker_id,
        incarnation_id=uuid.UUID(int=broker_id + 1),
        broker_epoch=epoch,
        end_points=(
            RegisterBrokerRecordBrokerEndpoint(
                name="PLAINTEXT", host=f"b{broker_id}", port=port + broker_id, security_protocol=0
            ),
        ),
        rack=None,
        fenced=fenced,
    )


def topic(name: str) -> TopicRecord:
    return TopicRecord(name=name, topic_id=topic_id(name))


def partition(
    name: str, index: int, replicas: Sequence[int], *, isr: Sequence[int] | None = None,
    leader: int | None = None,
) -> PartitionRecord:
    in_sync = tuple(replicas if isr is None else isr)
    return PartitionRecord(
        partition_id=index,
        topic_id=topic_id(name),
        replicas=tuple(replicas),
        isr=in_sync,
        leader=in_sync[0] if leader is None else leader,
        leader_epoch=0,
        partition_epoch=0,
    )


def change(
    name: str, index: int, *, leader: int = -2, isr: Sequence[int] | None = None,
    replicas: Sequence[int] | None = None,
) -> PartitionChangeRecord:
    return PartitionChangeRecord(
        partition_id=index,
        topic_id=topic_id(name),
        leader=leader,
        isr=None if isr is None else tuple(isr),
        replicas=None if replicas is None else tuple(replicas),
    )


def fold(records: Sequence[MetadataRecord], image: MetadataImage = EMPTY_IMAGE) -> MetadataImage:
    end = image.provenance.offset + len(records)
    return fold_records(image, list(records), Provenance(end, 1))


def append_records(
    log: MemoryLog, records: Sequence[MetadataRecord], *, epoch: int = 1, timestamp: int = 0
) -> None:
    """One batch of ``records`` appended as the leader of ``epoch`` would (at ``timestamp``)."""
    batch = build_batch(
        [Record(offset_delta=i, value=encode_metadata_record(r)) for i, r in enumerate(records)],
        base_timestamp=timestamp,
    )
    log.append(batch, epoch=epoch)
