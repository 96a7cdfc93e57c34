"""A produced batch on the leader: Kafka's checks, offsets and epochs stamped in place."""

from __future__ import annotations

import struct

from broker.replica.append import append_to_leader, check_produced_batch
from broker.replica.config import TopicConfig
from quorum.wire.batch import BatchHeader
from quorum.wire.error_codes import Errors
from quorum.wire.records import Record, build_batch, decode_batch

from .helpers import assignment, batch, leader, new_partition


def _corrupt(data: bytes, at: int, value: int = 0xFF) -> bytes:
    raw = bytearray(data)
    raw[at] ^= value
    return bytes(raw)


def test_a_bad_crc_or_magic_is_a_corrupt_message() -> None:
    # a batch cut short or followed by stray bytes: test_append_framing.py
    good = batch(b"a", b"b")
    for broken in (_corrupt(good, len(good) - 1), _corrupt(good, 16, 0x01)):
        refused = check_produced_batch(broken, 1 << 20)
        assert not isinstance(refused, BatchHeader), broken
        assert refused.error == Errors.CORRUPT_MESSAGE, refused


def test_a_record_count_that_does_not_match_the_last_offset_delta_is_an_invalid_record() -> None:
    good = bytearray(batch(b"a", b"b"))
    struct.pack_into(">i", good, 57, 3)  # recordCount, inside the CRC span: refused either way
    refused = check_produced_batch(bytes(good), 1 << 20)
    assert not isinstance(refused, BatchHeader)
    assert refused.error in (Errors.CORRUPT_MESSAGE, Errors.INVALID_RECORD)


def test_transactional_batches_and_idempotent_ones_without_a_sequence_are_refused() -> None:
    records = [Record(offset_delta=0, value=b"a")]
    for kwargs, says in (
        ({"producer_id": 7, "producer_epoch": 0, "base_sequence": 0, "is_transactional": True},
         "no transactions"),
        ({"producer_id": 7, "producer_epoch": 0, "base_sequence": -1}, "sequence number -1"),
    ):
        refused = check_produced_batch(build_batch(records, **kwargs), 1 << 20)  # type: ignore[arg-type]
        assert not isinstance(refused, BatchHeader)
        assert refused.error == Errors.INVALID_RECORD
        assert refused.error_message and says in refused.error_message


def test_an_idempotent_batch_passes_the_batch_checks() -> None:
    records = [Record(offset_delta=0, value=b"a")]
    data = build_batch(records, producer_id=7, producer_epoch=0, base_sequence=0)
    assert isinstance(check_produced_batch(data, 1 << 20), BatchHeader)


def test_a_batch_over_max_message_bytes_is_too_large() -> None:
    data = batch(b"x" * 200)
    refused = check_produced_batch(data, 100)
    assert not isinstance(refused, BatchHeader) and refused.error == Errors.MESSAGE_TOO_LARGE
    assert isinstance(check_produced_batch(data, len(data)), BatchHeader)


def test_the_leader_assigns_offsets_and_its_epoch_without_re_encoding_records() -> None:
    partition = leader(leader_epoch=4)
    first = append_to_leader(partition, batch(b"a", b"b"), acks=1, now_ms=1)
    second = append_to_leader(partition, batch(b"c"), acks=1, now_ms=2)
    assert (first.error, first.base_offset, first.last_offset) == (Errors.NONE, 0, 1)
    assert (second.base_offset, second.last_offset) == (2, 2)
    stored = bytes(partition.log.read(2, 1 << 20).records)
    header = BatchHeader.parse(stored)
    assert (header.base_offset, header.partition_leader_epoch) == (2, 4)
    assert header.crc_matches(stored)
    assert stored[21:] == batch(b"c")[21:]  # the records and the CRC span are untouched


def test_log_append_time_stamps_the_batch_and_recomputes_its_crc() -> None:
    partition = new_partition(config=TopicConfig(min_insync_replicas=1, log_append_time=True))
    partition.apply_assignment(assignment(isr=(1,)), now_ms=0)
    result = append_to_leader(partition, batch(b"a", timestamp=5), acks=1, now_ms=1234)
    assert result.error == Errors.NONE and result.log_append_time_ms == 1234
    stored = bytes(partition.log.read(0, 1 << 20).records)
    header = BatchHeader.parse(stored)
    assert header.max_timestamp == 1234 and header.crc_matches(stored)
    decoded = decode_batch(stored)
    assert [decoded.timestamp_of(r) for r in decoded.records] == [1234]


def test_acks_all_under_min_isr_appends_nothing() -> None:
    partition = leader(isr=(1,), min_isr=2)
    refused = append_to_leader(partition, batch(b"a"), acks=-1, now_ms=1)
    assert refused.error == Errors.NOT_ENOUGH_REPLICAS
    assert partition.log_end_offset == 0
    accepted = append_to_leader(partition, batch(b"a"), acks=1, now_ms=1)
    assert accepted.error == Errors.NONE and partition.log_end_offset == 1


def test_a_follower_refuses_produces() -> None:
    partition = new_partition(broker_id=2)
    partition.apply_assignment(assignment(broker_id=2, leader=1), now_ms=0)
    assert append_to_leader(partition, batch(b"a"), 1, 0).error == Errors.NOT_LEADER_OR_FOLLOWER


def test_a_corrupt_batch_appends_nothing() -> None:
    partition = leader()
    result = append_to_leader(partition, _corrupt(batch(b"a"), 62), acks=1, now_ms=1)
    assert result.error == Errors.CORRUPT_MESSAGE and partition.log_end_offset == 0
