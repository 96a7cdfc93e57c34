"""Control batches: record keys, transaction markers, the KRaft LeaderChange batch."""

from __future__ import annotations

import warnings

import pytest

from quorum.wire.batch_checks import validate_batch
from quorum.wire.control import (
    ControlRecordType,
    build_control_batch,
    build_control_records_batch,
    build_leader_change_batch,
    control_record_key,
    parse_control_record,
    parse_leader_change,
)
from quorum.wire.errors import CorruptRecordError, WireEncodeError
from quorum.wire.records import Record, build_batch, decode_batch

with warnings.catch_warnings():
    # kafka-python 3.0.12 loads its schemas with a deprecated importlib.resources call
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record.default_records import DefaultRecordBatch


def test_control_record_type_ids_are_kafkas() -> None:
    assert {t.name: int(t) for t in ControlRecordType} == {
        "UNKNOWN": -1, "ABORT": 0, "COMMIT": 1, "LEADER_CHANGE": 2, "SNAPSHOT_HEADER": 3,
        "SNAPSHOT_FOOTER": 4, "KRAFT_VERSION": 5, "KRAFT_VOTERS": 6,
    }


def test_control_key_is_version_zero_then_type() -> None:
    assert control_record_key(ControlRecordType.COMMIT) == bytes.fromhex("0000" "0001")
    assert control_record_key(ControlRecordType.KRAFT_VOTERS) == bytes.fromhex("0000" "0006")
    with pytest.raises(WireEncodeError, match="unknown type 9"):
        control_record_key(9)


def test_a_commit_marker_batch_is_a_transactional_control_batch() -> None:
    marker_value = bytes.fromhex("0000" "00000007")  # version 0, coordinator epoch 7
    batch = build_control_batch(
        ControlRecordType.COMMIT, marker_value, base_offset=40, producer_id=11,
        producer_epoch=2, is_transactional=True, timestamp=5000,
    )
    decoded = decode_batch(batch)
    assert decoded.header.is_control and decoded.header.is_transactional
    assert decoded.header.producer_id == 11
    assert parse_control_record(decoded.records[0]) == (ControlRecordType.COMMIT, marker_value)
    theirs = DefaultRecordBatch(batch)
    assert theirs.validate_crc() and theirs.is_control_batch
    (record,) = list(theirs)
    assert (record.type, record.version, record.commit) == (1, 0, True)


def test_unknown_control_types_parse_as_unknown_and_bad_keys_are_corrupt() -> None:
    assert parse_control_record(Record(offset_delta=0, key=b"\x00\x00\x00\x63", value=b"x")) == (
        ControlRecordType.UNKNOWN, b"x",
    )
    with pytest.raises(CorruptRecordError, match="has a 3 bytes key"):
        parse_control_record(Record(offset_delta=0, key=b"\x00\x00\x01"))
    with pytest.raises(CorruptRecordError, match="has a null key"):
        parse_control_record(Record(offset_delta=0))
    with pytest.raises(CorruptRecordError, match="key version -1"):
        parse_control_record(Record(offset_delta=0, key=b"\xff\xff\x00\x01"))


def test_several_control_records_share_one_batch() -> None:
    batch = build_control_records_batch(
        [(ControlRecordType.KRAFT_VERSION, b"\x00\x00\x00\x01\x00"),
         (ControlRecordType.KRAFT_VOTERS, b"\x00\x00\x01\x00")],
        partition_leader_epoch=3,
    )
    decoded = decode_batch(batch)
    assert [parse_control_record(r)[0] for r in decoded.records] == [
        ControlRecordType.KRAFT_VERSION, ControlRecordType.KRAFT_VOTERS,
    ]
    assert validate_batch(batch, deep=True).record_count == 2


# LeaderChangeMessage v0 (flexible) for leader 1, voters [1, 2, 3], granting [1, 2], written by
# hand from LeaderChangeMessage.json: version 0 has no VoterDirectoryId.
LEADER_CHANGE_V0 = bytes.fromhex(
    "0000"  # Version int16 = 0
    "00000001"  # LeaderId int32 = 1
    "04"  # Voters: compact array, 3 + 1
    "00000001" "00"  # VoterId 1, empty tagged fields
    "00000002" "00"
    "00000003" "00"
    "03"  # GrantingVoters: 2 + 1
    "00000001" "00"
    "00000002" "00"
    "00"  # top-level tagged fields
)


def test_leader_change_batch_matches_kafkas_layout() -> None:
    batch = build_leader_change_batch(
        leader_id=1, voters=[1, 2, 3], granting_voters=[1, 2], epoch=5, base_offset=100,
        timestamp=1234,
    )
    decoded = decode_batch(batch)
    header = decoded.header
    assert (header.base_offset, header.partition_leader_epoch) == (100, 5)
    assert header.is_control and not header.is_transactional
    assert (header.compression, header.producer_id, header.record_count) == (0, -1, 1)
    assert header.base_timestamp == header.max_timestamp == 1234
    (record,) = decoded.records
    assert record.key == bytes.fromhex("00000002")
    assert record.value == LEADER_CHANGE_V0
    message = parse_leader_change(record)
    assert message.leader_id == 1 and message.version == 0
    assert [v.voter_id for v in message.voters] == [1, 2, 3]
    assert [v.voter_id for v in message.granting_voters] == [1, 2]


def test_leader_change_needs_a_leader_epoch_and_a_leader_change_record() -> None:
    with pytest.raises(WireEncodeError, match="valid leader epoch"):
        build_leader_change_batch(1, [1], [1], epoch=-1, base_offset=0, timestamp=0)
    commit = decode_batch(build_control_batch(ControlRecordType.COMMIT, b"\x00\x00\x00\x00\x00\x00"))
    with pytest.raises(CorruptRecordError, match="COMMIT with a value, not a leader change"):
        parse_leader_change(commit.records[0])


def test_kafka_python_sees_a_leader_change_batch_as_a_control_batch() -> None:
    batch = build_leader_change_batch(2, [1, 2, 3], [2, 3], epoch=9, base_offset=0, timestamp=1)
    theirs = DefaultRecordBatch(batch)
    assert theirs.validate_crc() and theirs.is_control_batch and theirs.leader_epoch == 9
    (record,) = list(theirs)
    assert record.type == 2
    # a plain data batch is never mistaken for one
    assert not decode_batch(build_batch([Record(offset_delta=0)])).header.is_control
