"""Metadata snapshots (KIP-630): an image as records, and as a snapshot file.

``image_records(image)`` lists the records that rebuild ``image`` from the
empty image, in one canonical order: features by name; brokers by id (a
RegisterBrokerRecord carries fence and shutdown state); the next producer
id; topics by name, each followed by its partitions by index (a
PartitionRecord carries the whole current registration, epochs included);
configs by resource and key. Two equal images give equal lists, which is
what ``image_digest`` hashes.

A snapshot file is record batches v2, as Kafka writes them: a control batch
with a SnapshotHeaderRecord, data batches of at most
``MAX_RECORDS_PER_BATCH`` records (or about ``MAX_BATCH_BYTES``), and a control
batch with a SnapshotFooterRecord. Offsets run from 0 within the file; every
batch carries the image's epoch as its partition leader epoch. Unlike Kafka,
every batch's timestamp is the last contained log timestamp rather than the
wall clock, so two nodes that snapshot the same image write the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

from quorum.controller.delta import MetadataDelta, MetadataReplayError
from quorum.controller.image import EMPTY_IMAGE, MetadataImage, Provenance
from quorum.log.protocol import OffsetAndEpoch
from quorum.wire.codec import decode, encode
from quorum.wire.control import ControlRecordType, build_control_batch, parse_control_record
from quorum.wire.errors import WireError
from quorum.wire.messages.control_records import SnapshotFooterRecord, SnapshotHeaderRecord
from quorum.wire.messages.metadata_records import (
    ConfigRecord,
    FeatureLevelRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
    RegisterBrokerRecordBrokerFeature,
    TopicRecord,
)
from quorum.wire.metadata_serde import (
    MetadataRecord,
    decode_metadata_record,
    encode_metadata_record,
)
from quorum.wire.records import DecodedBatch, Record, build_batch, decode_batch

__all__ = [
    "MAX_BATCH_BYTES",
    "MAX_RECORDS_PER_BATCH",
    "SNAPSHOT_FOOTER_VERSION",
    "SNAPSHOT_HEADER_VERSION",
    "SnapshotFormatError",
    "image_records",
    "read_snapshot",
    "read_snapshot_records",
    "write_snapshot",
]

MAX_RECORDS_PER_BATCH: Final = 1000
MAX_BATCH_BYTES: Final = 1 << 20
# the versions Kafka writes both control records at
SNAPSHOT_HEADER_VERSION: Final = 0
SNAPSHOT_FOOTER_VERSION: Final = 0


class SnapshotFormatError(Exception):
    """Snapshot bytes that are not a well-formed metadata snapshot (the message says why)."""


# -- the records of an image --------------------------------------------------------------


def image_records(image: MetadataImage) -> list[MetadataRecord]:
    """The records that rebuild ``image`` from the empty image, in canonical order."""
    return [
        *_feature_records(image),
        *_broker_records(image),
        *_producer_id_records(image),
        *_topic_records(image),
        *_config_records(image),
    ]


def _feature_records(image: MetadataImage) -> Iterator[MetadataRecord]:
    for name in sorted(image.features):
        yield FeatureLevelRecord(name=name, feature_level=image.features[name])


def _broker_records(image: MetadataImage) -> Iterator[MetadataRecord]:
    for broker_id in sorted(image.brokers):
        broker = image.brokers[broker_id]
        yield RegisterBrokerRecord(
            broker_id=broker.broker_id,
            incarnation_id=broker.incarnation_id,
            broker_epoch=broker.epoch,
            end_points=tuple(
                RegisterBrokerRecordBrokerEndpoint(
                    name=e.name, host=e.host, port=e.port, security_protocol=e.security_protocol
                )
                for e in broker.listeners
            ),
            features=tuple(
                RegisterBrokerRecordBrokerFeature(
                    name=f.name,
                    min_supported_version=f.min_version,
                    max_supported_version=f.max_version,
                )
                for f in broker.features
            ),
            rack=broker.rack,
            fenced=broker.fenced,
            in_controlled_shutdown=broker.in_controlled_shutdown,
        )


def _producer_id_records(image: MetadataImage) -> Iterator[MetadataRecord]:
    # as Kafka's ProducerIdsImage: no broker, only the next id (0 is the empty image's)
    if image.next_producer_id > EMPTY_IMAGE.next_producer_id:
        yield ProducerIdsRecord(
            broker_id=-1, broker_epoch=-1, next_producer_id=image.next_producer_id
        )


def _topic_records(image: MetadataImage) -> Iterator[MetadataRecord]:
    for name in sorted(image.topic_ids_by_name):
        topic = image.topics_by_id[image.topic_ids_by_name[name]]
        yield TopicRecord(name=topic.name, topic_id=topic.topic_id)
        for index in sorted(topic.partitions):
            p = topic.partitions[index]
            yield PartitionRecord(
                partition_id=index,
                topic_id=topic.topic_id,
                replicas=p.replicas,
                isr=p.isr,
                removing_replicas=p.removing_replicas,
                adding_replicas=p.adding_replicas,
                leader=p.leader,
                leader_recovery_state=int(p.leader_recovery_state),
                leader_epoch=p.leader_epoch,
                partition_epoch=p.partition_epoch,
            )


def _config_records(image: MetadataImage) -> Iterator[MetadataRecord]:
    for resource in sorted(image.configs):
        values = image.configs[resource]
        for key in sorted(values):
            yield ConfigRecord(
                resource_type=int(resource.type),
                resource_name=resource.name,
                name=key,
                value=values[key],
            )


# -- writing ------------------------------------------------------------------------------


def _data_batches(values: Sequence[bytes], max_records: int, max_bytes: int) -> list[list[bytes]]:
    batches: list[list[bytes]] = []
    current: list[bytes] = []
    size = 0
    for value in values:
        if current and (len(current) >= max_records or size + len(value) > max_bytes):
            batches.append(current)
            current, size = [], 0
        current.append(value)
        size += len(value)
    if current:
        batches.append(current)
    return batches


def write_snapshot(
    image: MetadataImage,
    *,
    last_contained_timestamp_ms: int,
    max_records_per_batch: int = MAX_RECORDS_PER_BATCH,
    max_batch_bytes: int = MAX_BATCH_BYTES,
) -> bytes:
    """The snapshot file of ``image``: header, the image's records, footer."""
    epoch = image.provenance.epoch
    timestamp = last_contained_timestamp_ms
    header = SnapshotHeaderRecord(
        version=SNAPSHOT_HEADER_VERSION, last_contained_log_timestamp=timestamp
    )
    parts = [
        build_control_batch(
            ControlRecordType.SNAPSHOT_HEADER,
            encode(header, 0),
            base_offset=0,
            partition_leader_epoch=epoch,
            timestamp=timestamp,
        )
    ]
    offset = 1
    values = [encode_metadata_record(r) for r in image_records(image)]
    for chunk in _data_batches(values, max_records_per_batch, max_batch_bytes):
        records = [Record(offset_delta=i, value=v) for i, v in enumerate(chunk)]
        parts.append(
            build_batch(
                records, base_offset=offset, partition_leader_epoch=epoch, base_timestamp=timestamp
            )
        )
        offset += len(chunk)
    footer = SnapshotFooterRecord(version=SNAPSHOT_FOOTER_VERSION)
    parts.append(
        build_control_batch(
            ControlRecordType.SNAPSHOT_FOOTER,
            encode(footer, 0),
            base_offset=offset,
            partition_leader_epoch=epoch,
            timestamp=timestamp,
        )
    )
    return b"".join(parts)


# -- reading ------------------------------------------------------------------------------


def _iter_batches(data: bytes | memoryview) -> Iterator[DecodedBatch]:
    """Every batch of a snapshot, CRC checked; a partial trailing batch is an error."""
    pos, size = 0, len(data)
    while pos < size:
        try:
            batch = decode_batch(data, pos)
        except WireError as exc:
            raise SnapshotFormatError(f"the batch at byte {pos} is unreadable: {exc}") from exc
        yield batch
        pos += batch.header.size


class _SnapshotParser:
    """Checks the layout (header first, footer last, offsets contiguous) while decoding."""

    def __init__(self) -> None:
        self.header: SnapshotHeaderRecord | None = None
        self.footer: SnapshotFooterRecord | None = None
        self.records: list[tuple[int, MetadataRecord]] = []
        self.next_offset: int | None = None

    def batch(self, batch: DecodedBatch) -> None:
        base = batch.header.base_offset
        if self.next_offset is not None and base != self.next_offset:
            raise SnapshotFormatError(
                f"the batch at offset {base} does not follow the previous batch, "
                f"which ended before offset {self.next_offset}"
            )
        self.next_offset = batch.header.next_offset
        for record in batch.records:
            offset = batch.offset_of(record)
            if self.footer is not None:
                raise SnapshotFormatError(f"a record at offset {offset} follows the footer")
            if batch.header.is_control:
                self._control(offset, record)
            else:
                self._data(offset, record)

    def _control(self, offset: int, record: Record) -> None:
        try:
            kind, value = parse_control_record(record)
            if kind == ControlRecordType.SNAPSHOT_HEADER:
                if self.header is not None or self.records:
                    raise SnapshotFormatError(f"a second snapshot header at offset {offset}")
                self.header = decode(SnapshotHeaderRecord, 0, value or b"")
            elif kind == ControlRecordType.SNAPSHOT_FOOTER:
                self._require_header(offset)
                self.footer = decode(SnapshotFooterRecord, 0, value or b"")
            else:
                # KRaft version and voters records (kraft.version 1) carry nothing for the image
                self._require_header(offset)
        except WireError as exc:
            raise SnapshotFormatError(f"control record at offset {offset}: {exc}") from exc

    def _data(self, offset: int, record: Record) -> None:
        self._require_header(offset)
        if record.value is None:
            raise SnapshotFormatError(f"the record at offset {offset} has no value")
        try:
            self.records.append((offset, decode_metadata_record(record.value)))
        except WireError as exc:
            raise SnapshotFormatError(f"the record at offset {offset}: {exc}") from exc

    def _require_header(self, offset: int) -> None:
        if self.header is None:
            raise SnapshotFormatError(
                f"the record at offset {offset} comes before any snapshot header; "
                "a snapshot starts with a SnapshotHeaderRecord"
            )


def read_snapshot_records(
    data: bytes | memoryview,
) -> tuple[SnapshotHeaderRecord, list[tuple[int, MetadataRecord]]]:
    """The header and the (offset, record) pairs of a snapshot, layout checked."""
    if len(data) == 0:
        raise SnapshotFormatError("the snapshot is empty (no header, no footer)")
    parser = _SnapshotParser()
    for batch in _iter_batches(data):
        parser.batch(batch)
    if parser.header is None:
        raise SnapshotFormatError("the snapshot has no header")
    if parser.footer is None:
        raise SnapshotFormatError(
            f"the snapshot has no footer after offset {parser.next_offset}: it is cut short"
        )
    return parser.header, parser.records


def read_snapshot(data: bytes | memoryview, snapshot_id: OffsetAndEpoch) -> MetadataImage:
    """The image a snapshot holds; its provenance is the snapshot id."""
    try:
        _, records = read_snapshot_records(data)
    except SnapshotFormatError as exc:
        raise SnapshotFormatError(
            f"snapshot {snapshot_id.offset}-{snapshot_id.epoch}: {exc}"
        ) from exc
    delta = MetadataDelta(EMPTY_IMAGE)
    for offset, record in records:
        try:
            delta.replay(record)
        except MetadataReplayError as exc:
            raise SnapshotFormatError(
                f"snapshot {snapshot_id.offset}-{snapshot_id.epoch}: "
                f"the record at offset {offset} does not apply: {exc}"
            ) from exc
    return delta.apply(Provenance(snapshot_id.offset, snapshot_id.epoch))
