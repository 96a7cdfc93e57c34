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

from collections.abc import Iterator
from typing import Final

from quorum.controller.delta import MetadataDelta, MetadataReplayError
from quorum.controller.image import EMPTY_IMAGE, MetadataImage, Provenance
from quorum.controller.partition_map import items_in_order
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
    "SnapshotBuilder",
    "SnapshotFormatError",
    "SnapshotReader",
    "image_records",
    "iter_cluster_records",
    "iter_config_records",
    "iter_image_records",
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
    return list(iter_image_records(image))


def iter_image_records(image: MetadataImage) -> Iterator[MetadataRecord]:
    """``image_records`` one at a time: a caller may stop between any two (slices)."""
    yield from iter_cluster_records(image)
    yield from _topic_records(image)
    yield from iter_config_records(image)


def iter_cluster_records(image: MetadataImage) -> Iterator[MetadataRecord]:
    """The records before the topics: features, brokers, the next producer id."""
    yield from _feature_records(image)
    yield from _broker_records(image)
    yield from _producer_id_records(image)


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
        for index, p in items_in_order(topic.partitions):
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


def iter_config_records(image: MetadataImage) -> Iterator[MetadataRecord]:
    """The records after the topics: configs by resource and key."""
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


class SnapshotBuilder:
    """The snapshot file of an image, built a slice at a time (``step``).

    The image is immutable, so the node may publish newer images between two
    slices. Records go into data batches of at most ``max_records_per_batch``
    records or about ``max_batch_bytes`` bytes, as ``write_snapshot`` writes them.
    """

    def __init__(
        self,
        image: MetadataImage,
        *,
        last_contained_timestamp_ms: int,
        max_records_per_batch: int = MAX_RECORDS_PER_BATCH,
        max_batch_bytes: int = MAX_BATCH_BYTES,
    ) -> None:
        self.snapshot_id = OffsetAndEpoch(image.provenance.offset, image.provenance.epoch)
        self._timestamp = last_contained_timestamp_ms
        self._max_records = max_records_per_batch
        self._max_bytes = max_batch_bytes
        self._records = iter_image_records(image)
        header = SnapshotHeaderRecord(
            version=SNAPSHOT_HEADER_VERSION, last_contained_log_timestamp=self._timestamp
        )
        self._parts = [self._control(ControlRecordType.SNAPSHOT_HEADER, encode(header, 0), 0)]
        self._offset = 1
        self._batch: list[bytes] = []  # encoded values of the batch being filled
        self._batch_bytes = 0
        self.done = False

    def step(self, max_units: int) -> int:
        """Encode up to ``max_units`` records; returns how many (0 once done)."""
        units = 0
        while not self.done and units < max_units:
            record = next(self._records, None)
            if record is None:
                self._finish()
                break
            value = encode_metadata_record(record)
            if self._batch and (
                len(self._batch) >= self._max_records
                or self._batch_bytes + len(value) > self._max_bytes
            ):
                self._close_batch()
            self._batch.append(value)
            self._batch_bytes += len(value)
            units += 1
        return units

    def data(self) -> bytes:
        assert self.done, "the snapshot is not built yet"
        return b"".join(self._parts)

    def parts(self) -> list[bytes]:
        """The file's batches in order (``data`` without joining them into one copy)."""
        assert self.done, "the snapshot is not built yet"
        return list(self._parts)

    def _close_batch(self) -> None:
        records = [Record(offset_delta=i, value=v) for i, v in enumerate(self._batch)]
        self._parts.append(
            build_batch(
                records,
                base_offset=self._offset,
                partition_leader_epoch=self.snapshot_id.epoch,
                base_timestamp=self._timestamp,
            )
        )
        self._offset += len(self._batch)
        self._batch, self._batch_bytes = [], 0

    def _finish(self) -> None:
        if self._batch:
            self._close_batch()
        footer = SnapshotFooterRecord(version=SNAPSHOT_FOOTER_VERSION)
        self._parts.append(
            self._control(ControlRecordType.SNAPSHOT_FOOTER, encode(footer, 0), self._offset)
        )
        self.done = True

    def _control(self, kind: ControlRecordType, value: bytes, offset: int) -> bytes:
        return build_control_batch(
            kind,
            value,
            base_offset=offset,
            partition_leader_epoch=self.snapshot_id.epoch,
            timestamp=self._timestamp,
        )


def write_snapshot(
    image: MetadataImage,
    *,
    last_contained_timestamp_ms: int,
    max_records_per_batch: int = MAX_RECORDS_PER_BATCH,
    max_batch_bytes: int = MAX_BATCH_BYTES,
) -> bytes:
    """The snapshot file of ``image``: header, the image's records, footer."""
    builder = SnapshotBuilder(
        image,
        last_contained_timestamp_ms=last_contained_timestamp_ms,
        max_records_per_batch=max_records_per_batch,
        max_batch_bytes=max_batch_bytes,
    )
    while not builder.done:
        builder.step(1 << 30)
    return builder.data()


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
        self.record_count = 0
        self.next_offset: int | None = None

    def batch(self, batch: DecodedBatch) -> list[tuple[int, MetadataRecord]]:
        """The (offset, record) pairs of one batch's metadata records (none for control)."""
        base = batch.header.base_offset
        if self.next_offset is not None and base != self.next_offset:
            raise SnapshotFormatError(
                f"the batch at offset {base} does not follow the previous batch, "
                f"which ended before offset {self.next_offset}"
            )
        self.next_offset = batch.header.next_offset
        records: list[tuple[int, MetadataRecord]] = []
        for record in batch.records:
            offset = batch.offset_of(record)
            if self.footer is not None:
                raise SnapshotFormatError(f"a record at offset {offset} follows the footer")
            if batch.header.is_control:
                self._control(offset, record)
            else:
                records.append(self._data(offset, record))
        self.record_count += len(records)
        return records

    def finish(self) -> SnapshotHeaderRecord:
        if self.header is None:
            raise SnapshotFormatError("the snapshot has no header")
        if self.footer is None:
            raise SnapshotFormatError(
                f"the snapshot has no footer after offset {self.next_offset}: it is cut short"
            )
        return self.header

    def _control(self, offset: int, record: Record) -> None:
        try:
            kind, value = parse_control_record(record)
            if kind == ControlRecordType.SNAPSHOT_HEADER:
                if self.header is not None or self.record_count:
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

    def _data(self, offset: int, record: Record) -> tuple[int, MetadataRecord]:
        self._require_header(offset)
        if record.value is None:
            raise SnapshotFormatError(f"the record at offset {offset} has no value")
        try:
            return offset, decode_metadata_record(record.value)
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
    records: list[tuple[int, MetadataRecord]] = []
    for batch in _iter_batches(data):
        records += parser.batch(batch)
    return parser.finish(), records


class SnapshotReader:
    """The image a snapshot holds, rebuilt a slice at a time (``step``).

    Errors name the snapshot (``SnapshotFormatError``): bad layout, a record
    that does not decode, or one that does not apply to the records before it.
    """

    def __init__(self, data: bytes | memoryview, snapshot_id: OffsetAndEpoch) -> None:
        self.snapshot_id = snapshot_id
        self._parser = _SnapshotParser()
        self._batches = _iter_batches(data)
        self._delta = MetadataDelta(EMPTY_IMAGE)
        self._empty = len(data) == 0
        self.image: MetadataImage | None = None  # set once the whole snapshot is read
        self.header: SnapshotHeaderRecord | None = None

    @property
    def done(self) -> bool:
        return self.image is not None

    def step(self, max_units: int) -> int:
        """Read whole batches until ``max_units`` records are replayed; returns how many."""
        try:
            return self._step(max_units)
        except SnapshotFormatError as exc:
            sid = self.snapshot_id
            raise SnapshotFormatError(f"snapshot {sid.offset}-{sid.epoch}: {exc}") from exc

    def _step(self, max_units: int) -> int:
        if self._empty:
            raise SnapshotFormatError("the snapshot is empty (no header, no footer)")
        units = 0
        while self.image is None and units < max_units:
            batch = next(self._batches, None)
            if batch is None:
                self.header = self._parser.finish()
                sid = self.snapshot_id
                self.image = self._delta.apply(Provenance(sid.offset, sid.epoch))
                break
            records = self._parser.batch(batch)
            for offset, record in records:
                try:
                    self._delta.replay(record)
                except MetadataReplayError as exc:
                    raise SnapshotFormatError(
                        f"the record at offset {offset} does not apply: {exc}"
                    ) from exc
            units += len(records)  # a control batch (header, footer) counts for nothing
        if self.image is None and self._delta.record_count:
            # fold this slice's records now: the last slice does not build a
            # 1,000,000-partition image at once (partition maps are copied by chunk)
            sid = self.snapshot_id
            self._delta = MetadataDelta(self._delta.apply(Provenance(sid.offset, sid.epoch)))
        return units


def read_snapshot(data: bytes | memoryview, snapshot_id: OffsetAndEpoch) -> MetadataImage:
    """The image a snapshot holds; its provenance is the snapshot id."""
    reader = SnapshotReader(data, snapshot_id)
    while reader.image is None:
        reader.step(1 << 30)
    return reader.image
