"""Metadata record values: Kafka's frame (version 1, api key, record version) + the record."""

from __future__ import annotations

import uuid

import pytest

from quorum.wire.errors import WireDecodeError, WireEncodeError
from quorum.wire.messages import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
    TopicRecord,
)
from quorum.wire.metadata_serde import (
    RECORD_CLASSES,
    WRITE_VERSIONS,
    decode_metadata_record,
    encode_metadata_record,
)

TOPIC_ID = uuid.UUID(int=1)


def test_a_partition_change_with_only_a_new_leader_matches_kafkas_bytes() -> None:
    # frame 1, api key 5, version 0; partition id; topic id; tag block: one tag
    # (1 = Leader) of 4 bytes; the null ISR/replica lists are defaults, not written
    record = PartitionChangeRecord(partition_id=3, topic_id=TOPIC_ID, leader=2)
    expected = bytes.fromhex("010500" "00000003" + "00" * 15 + "01" "01" "0104" "00000002")
    assert encode_metadata_record(record) == expected
    assert decode_metadata_record(expected) == record


def test_a_partition_change_keeps_no_change_apart_from_an_empty_isr() -> None:
    unchanged = PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID)
    emptied = PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, isr=())
    assert decode_metadata_record(encode_metadata_record(unchanged)).isr is None
    assert decode_metadata_record(encode_metadata_record(emptied)).isr == ()


@pytest.mark.parametrize(
    "record",
    [
        RegisterBrokerRecord(
            broker_id=4,
            incarnation_id=uuid.UUID(int=7),
            broker_epoch=12,
            end_points=(RegisterBrokerRecordBrokerEndpoint(name="PLAINTEXT", host="h", port=9092),),
            rack=None,
        ),
        TopicRecord(name="orders", topic_id=TOPIC_ID),
        PartitionRecord(
            partition_id=1, topic_id=TOPIC_ID, replicas=(1, 2, 3), isr=(1, 2), leader=1,
            leader_epoch=0, partition_epoch=0,
        ),
        FeatureLevelRecord(name="metadata.version", feature_level=21),
        NoOpRecord(),
        BeginTransactionRecord(name="CreateTopics"),
        EndTransactionRecord(),
        AbortTransactionRecord(reason=None),
    ],
)
def test_records_round_trip_at_their_write_version(record: object) -> None:
    value = encode_metadata_record(record)  # type: ignore[arg-type]
    assert value[0] == 1
    assert RECORD_CLASSES[value[1]] is type(record)
    assert value[2] == WRITE_VERSIONS[type(record)]  # type: ignore[index]
    assert decode_metadata_record(value) == record


@pytest.mark.parametrize(
    ("record", "hex_value"),
    [
        # KIP-868: api keys 23-25, version 0, the optional text as tag 0 (a compact string)
        (BeginTransactionRecord(name="ab"), "011700" "01" "00" "03" "03" "6162"),
        (BeginTransactionRecord(name=None), "011700" "00"),
        (EndTransactionRecord(), "011800" "00"),
        (AbortTransactionRecord(reason="x"), "011900" "01" "00" "02" "02" "78"),
    ],
)
def test_transaction_markers_match_kafkas_bytes(record: object, hex_value: str) -> None:
    assert encode_metadata_record(record).hex() == hex_value  # type: ignore[arg-type]
    assert decode_metadata_record(bytes.fromhex(hex_value)) == record


def test_frame_version_zero_is_refused_with_the_reason() -> None:
    with pytest.raises(WireDecodeError, match=r"frame version 0.*2\.8 preview"):
        decode_metadata_record(b"\x00\x14\x00")


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"\x01\x7f\x00", "unknown metadata record type 127"),
        (b"\x01\x14\x05\x00", "NoOpRecord version 5 is outside 0-0"),
        (b"\x01\x14\x00\x00\xff", "1 byte\\(s\\) of garbage after NoOpRecord"),
        (b"\x01\x02\x00", "TopicRecord|short|end"),
    ],
)
def test_malformed_record_values_name_what_is_wrong(value: bytes, reason: str) -> None:
    with pytest.raises(WireDecodeError, match=reason):
        decode_metadata_record(value)


def test_a_class_that_is_not_a_metadata_record_is_refused_on_encode() -> None:
    with pytest.raises(WireEncodeError, match="not a metadata record"):
        encode_metadata_record(object())  # type: ignore[arg-type]
