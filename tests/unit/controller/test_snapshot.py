"""Snapshots: an image as records and as a KIP-630 file, and back, with every way to break one."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quorum.controller.delta import fold_records
from quorum.controller.image import EMPTY_IMAGE, MetadataImage, Provenance
from quorum.controller.snapshot import (
    SnapshotFormatError,
    image_records,
    read_snapshot,
    read_snapshot_records,
    write_snapshot,
)
from quorum.log.protocol import OffsetAndEpoch
from quorum.wire.batch import iter_batch_headers
from quorum.wire.control import ControlRecordType, build_control_batch, parse_control_record
from quorum.wire.messages.metadata_records import (
    ConfigRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from quorum.wire.metadata_serde import MetadataRecord, encode_metadata_record
from quorum.wire.records import Record, build_batch, iter_batches
from tests.unit.controller.image_strategies import histories, images

TOPIC_A = uuid.UUID(int=0xA)
TOPIC_B = uuid.UUID(int=0xB)
INCARNATION = uuid.UUID(int=0x1234)


PROVENANCE = Provenance(10, 2)


def folded(records: list[MetadataRecord]) -> MetadataImage:
    return fold_records(EMPTY_IMAGE, records, PROVENANCE)


def small_image() -> MetadataImage:
    return folded([
        ConfigRecord(resource_type=2, resource_name="beta", name="retention.ms", value="1000"),
        TopicRecord(name="beta", topic_id=TOPIC_B),
        PartitionRecord(partition_id=1, topic_id=TOPIC_B, replicas=(2,), isr=(2,), leader=2,
                        leader_epoch=4, partition_epoch=7),
        PartitionRecord(partition_id=0, topic_id=TOPIC_B, replicas=(1, 2), isr=(1,), leader=1,
                        leader_epoch=0, partition_epoch=0),
        TopicRecord(name="alpha", topic_id=TOPIC_A),
        PartitionRecord(partition_id=0, topic_id=TOPIC_A, replicas=(1,), isr=(1,), leader=-1,
                        leader_epoch=3, partition_epoch=5),
        RegisterBrokerRecord(broker_id=2, incarnation_id=INCARNATION, broker_epoch=5, fenced=False),
        RegisterBrokerRecord(broker_id=1, incarnation_id=INCARNATION, broker_epoch=6, fenced=True),
        ProducerIdsRecord(broker_id=1, broker_epoch=6, next_producer_id=2000),
        FeatureLevelRecord(name="metadata.version", feature_level=21),
        FeatureLevelRecord(name="kraft.version", feature_level=1),
    ])


def with_provenance(image: MetadataImage, offset: int, epoch: int) -> MetadataImage:
    return attrs.evolve(image, provenance=Provenance(offset, epoch))


# -- image_records ------------------------------------------------------------------------


IDENTITY: dict[type, Callable[[Any], object]] = {
    FeatureLevelRecord: lambda r: r.name,
    RegisterBrokerRecord: lambda r: r.broker_id,
    ProducerIdsRecord: lambda r: r.next_producer_id,
    TopicRecord: lambda r: r.name,
    PartitionRecord: lambda r: (r.topic_id.int, r.partition_id),
    ConfigRecord: lambda r: (r.resource_name, r.name),
}


def test_image_records_come_in_canonical_order() -> None:
    records = image_records(small_image())
    assert [(type(r).__name__, IDENTITY[type(r)](r)) for r in records] == [
        ("FeatureLevelRecord", "kraft.version"),
        ("FeatureLevelRecord", "metadata.version"),
        ("RegisterBrokerRecord", 1),
        ("RegisterBrokerRecord", 2),
        ("ProducerIdsRecord", 2000),
        ("TopicRecord", "alpha"),
        ("PartitionRecord", (0xA, 0)),
        ("TopicRecord", "beta"),
        ("PartitionRecord", (0xB, 0)),
        ("PartitionRecord", (0xB, 1)),
        ("ConfigRecord", ("beta", "retention.ms")),
    ]


def test_a_partition_record_carries_the_current_registration_with_its_epochs() -> None:
    image = folded([
        TopicRecord(name="alpha", topic_id=TOPIC_A),
        PartitionRecord(partition_id=0, topic_id=TOPIC_A, replicas=(1, 2), isr=(1, 2), leader=1,
                        leader_epoch=0, partition_epoch=0),
        RegisterBrokerRecord(broker_id=2, incarnation_id=INCARNATION, broker_epoch=2, fenced=False),
        FenceBrokerRecord(id=2, epoch=2),
    ])
    partition = [r for r in image_records(image) if isinstance(r, PartitionRecord)]
    broker = [r for r in image_records(image) if isinstance(r, RegisterBrokerRecord)]
    assert partition[0].leader_epoch == 0 and partition[0].isr == (1, 2)
    assert broker[0].fenced is True  # the fence state, not the registration's


@settings(max_examples=100, deadline=None)
@given(images())
def test_folding_an_images_records_onto_the_empty_image_rebuilds_it(image: MetadataImage) -> None:
    rebuilt = fold_records(EMPTY_IMAGE, image_records(image), image.provenance)
    assert rebuilt == image


@settings(max_examples=40, deadline=None)
@given(images())
def test_image_records_of_the_rebuilt_image_are_the_same_records(image: MetadataImage) -> None:
    records = image_records(image)
    assert image_records(fold_records(EMPTY_IMAGE, records, image.provenance)) == records


# -- write and read -----------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(histories(), st.integers(1, 4), st.integers(0, 2**40))
def test_a_written_snapshot_reads_back_as_the_same_image(
    history: tuple[list[MetadataRecord], MetadataImage], per_batch: int, timestamp: int
) -> None:
    _, image = history
    data = write_snapshot(image, last_contained_timestamp_ms=timestamp,
                          max_records_per_batch=per_batch)
    snapshot_id = OffsetAndEpoch(image.provenance.offset, image.provenance.epoch)
    assert read_snapshot(data, snapshot_id) == image
    header, _ = read_snapshot_records(data)
    assert header.last_contained_log_timestamp == timestamp


def test_the_snapshot_layout_is_header_data_batches_footer_with_contiguous_offsets() -> None:
    image = small_image()
    data = write_snapshot(image, last_contained_timestamp_ms=1_700_000_000_000,
                          max_records_per_batch=4)
    batches = list(iter_batches(data))
    headers = [b.header for b in batches]
    assert headers[0].is_control and headers[-1].is_control
    assert not any(h.is_control for h in headers[1:-1])
    assert [h.record_count for h in headers] == [1, 4, 4, 3, 1]
    assert [h.base_offset for h in headers] == [0, 1, 5, 9, 12]
    assert {h.partition_leader_epoch for h in headers} == {image.provenance.epoch}
    assert {h.base_timestamp for h in headers} == {1_700_000_000_000}
    first = parse_control_record(batches[0].records[0])
    last = parse_control_record(batches[-1].records[0])
    assert first[0] == ControlRecordType.SNAPSHOT_HEADER
    # SnapshotHeaderRecord v0: Version int16, LastContainedLogTimestamp int64, no tagged fields
    assert first[1] == b"\x00\x00" + (1_700_000_000_000).to_bytes(8, "big") + b"\x00"
    assert last == (ControlRecordType.SNAPSHOT_FOOTER, b"\x00\x00\x00")


def test_a_batch_is_cut_near_the_byte_limit() -> None:
    image = small_image()
    data = write_snapshot(image, last_contained_timestamp_ms=0, max_batch_bytes=60)
    data_batches = [h for _, h in iter_batch_headers(data) if not h.is_control]
    assert len(data_batches) > 1
    assert sum(h.record_count for h in data_batches) == len(image_records(image))


def test_kafka_python_reads_the_snapshot_batches_with_valid_crcs() -> None:
    with warnings.catch_warnings():
        # kafka-python 3.0.12 loads its schemas with a deprecated importlib.resources call
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.record.memory_records import MemoryRecords

    data = write_snapshot(small_image(), last_contained_timestamp_ms=5, max_records_per_batch=3)
    records = MemoryRecords(data)
    seen = []
    while (batch := records.next_batch()) is not None:
        assert batch.validate_crc()
        seen.append((batch.base_offset, batch.is_control_batch, batch.leader_epoch))
    assert seen[0] == (0, True, 2) and seen[-1][1] is True
    assert [offset for offset, _, _ in seen] == [0, 1, 4, 7, 10, 12]


def test_an_empty_image_is_a_header_and_a_footer() -> None:
    data = write_snapshot(EMPTY_IMAGE, last_contained_timestamp_ms=0)
    assert [h.record_count for _, h in iter_batch_headers(data)] == [1, 1]
    assert read_snapshot(data, OffsetAndEpoch(7, 3)) == with_provenance(EMPTY_IMAGE, 7, 3)


def test_equal_images_reached_differently_write_the_same_bytes() -> None:
    fenced_later = folded([
        RegisterBrokerRecord(broker_id=1, incarnation_id=INCARNATION, broker_epoch=0, fenced=False),
        FenceBrokerRecord(id=1, epoch=0),
    ])
    fenced_at_once = folded([
        RegisterBrokerRecord(broker_id=1, incarnation_id=INCARNATION, broker_epoch=0, fenced=True),
    ])
    assert write_snapshot(fenced_later, last_contained_timestamp_ms=9) == write_snapshot(
        fenced_at_once, last_contained_timestamp_ms=9
    )


def test_read_snapshot_takes_its_provenance_from_the_snapshot_id() -> None:
    data = write_snapshot(small_image(), last_contained_timestamp_ms=0)
    assert read_snapshot(data, OffsetAndEpoch(99, 8)).provenance == Provenance(99, 8)


# -- broken snapshots ---------------------------------------------------------------------


def _header(offset: int = 0) -> bytes:
    return build_control_batch(ControlRecordType.SNAPSHOT_HEADER, b"\x00\x00" + bytes(8) + b"\x00",
                               base_offset=offset)


def _footer(offset: int) -> bytes:
    return build_control_batch(ControlRecordType.SNAPSHOT_FOOTER, b"\x00\x00\x00",
                               base_offset=offset)


def _data(offset: int, *values: bytes | None) -> bytes:
    return build_batch([Record(offset_delta=i, value=v) for i, v in enumerate(values)],
                       base_offset=offset)


TOPIC = encode_metadata_record(TopicRecord(name="alpha", topic_id=TOPIC_A))
ID = OffsetAndEpoch(10, 1)


def test_a_hand_built_snapshot_reads_back() -> None:
    image = read_snapshot(_header() + _data(1, TOPIC) + _footer(2), ID)
    assert image.topic("alpha") is not None


@pytest.mark.parametrize(
    ("data", "complaint"),
    [
        (b"", "empty"),
        (_data(0, TOPIC) + _footer(1), "before any snapshot header"),
        (_header() + _data(1, TOPIC), "no footer"),
        (_header() + _footer(1) + _data(2, TOPIC), "follows the footer"),
        (_header() + _header(1) + _footer(2), "second snapshot header"),
        (_header() + _data(5, TOPIC) + _footer(6), "does not follow the previous batch"),
        (_header() + _data(1, b"\x01\x63\x00") + _footer(2), "offset 1"),
        (_header() + _data(1, None) + _footer(2), "offset 1 has no value"),
        (_header() + _data(1, TOPIC, TOPIC) + _footer(3), "does not apply"),
        ((_header() + _data(1, TOPIC) + _footer(2))[:-5], "unreadable"),
    ],
    ids=[
        "empty", "no-header", "no-footer", "data-after-footer", "two-headers", "offset-gap",
        "undecodable-record", "null-value", "record-that-does-not-replay", "truncated",
    ],
)
def test_a_malformed_snapshot_raises_one_clear_error(data: bytes, complaint: str) -> None:
    with pytest.raises(SnapshotFormatError, match=complaint) as caught:
        read_snapshot(data, ID)
    if data:
        assert "snapshot 10-1" in str(caught.value)


def test_a_flipped_bit_fails_the_crc_check() -> None:
    data = bytearray(write_snapshot(small_image(), last_contained_timestamp_ms=0))
    data[len(data) // 2] ^= 0x10
    with pytest.raises(SnapshotFormatError, match="CRC"):
        read_snapshot(bytes(data), ID)
