"""How a produced partition's bytes frame into batches, and which code each malformed one gets.

Found by the differential tests (tests/kafka/differential): Kafka 4.4 answers a batch cut
short with INVALID_RECORD (87), pykraft answered CORRUPT_MESSAGE (2). Kafka's rules
(``ProduceRequest.validateRecords`` over ``ByteBufferLogInputStream``, then
``UnifiedLog.analyzeAndValidateRecords`` and ``trimInvalidBytes``): bytes holding no whole
batch are an INVALID_RECORD, a declared length below 14 or a magic outside 0-2 a
CORRUPT_MESSAGE, magic 0/1 or a second whole batch an INVALID_RECORD, and bytes after the
batch that hold no whole one are dropped.
"""

from __future__ import annotations

import struct

from broker.replica.append import append_to_leader, check_produced_batch
from quorum.wire.batch import BatchHeader
from quorum.wire.error_codes import Errors

from .helpers import batch, leader

MAX = 1 << 20


def _code(records: bytes) -> Errors:
    checked = check_produced_batch(records, MAX)
    return Errors.NONE if isinstance(checked, BatchHeader) else checked.error


def _with(data: bytes, fmt: str, at: int, value: int) -> bytes:
    raw = bytearray(data)
    struct.pack_into(fmt, raw, at, value)
    return bytes(raw)


def test_a_batch_cut_short_is_an_invalid_record_and_nothing_is_appended() -> None:
    good = batch(b"cut", b"short")
    partition = leader()
    for cut in (good[:-3], good[:16], good[:11], b""):
        result = append_to_leader(partition, cut, acks=1, now_ms=1)
        assert result.error == Errors.INVALID_RECORD, (len(cut), result)
    assert partition.log_end_offset == 0


def test_a_length_or_magic_no_batch_has_is_a_corrupt_message() -> None:
    good = batch(b"a")
    assert _code(_with(good, ">i", 8, 13)) == Errors.CORRUPT_MESSAGE  # below 14 bytes
    assert _code(b"\x00" * 80) == Errors.CORRUPT_MESSAGE  # length 0
    assert _code(_with(good, ">b", 16, 3)) == Errors.CORRUPT_MESSAGE
    assert _code(_with(good, ">b", 16, -1)) == Errors.CORRUPT_MESSAGE
    # a legacy magic frames as a batch but v3+ produces must be v2
    assert _code(_with(good, ">b", 16, 1)) == Errors.INVALID_RECORD


def test_a_second_batch_is_refused_but_stray_bytes_after_the_batch_are_dropped() -> None:
    good = batch(b"a")
    assert _code(good + batch(b"b")) == Errors.INVALID_RECORD
    # the second batch's framing is checked as Kafka's iterator reads it
    assert _code(good + _with(batch(b"b"), ">i", 8, 2)) == Errors.CORRUPT_MESSAGE
    partition = leader()
    for stray in (b"\x00\x01\x02", batch(b"b")[:-3]):
        result = append_to_leader(partition, good + stray, acks=1, now_ms=1)
        assert result.error == Errors.NONE, result
    assert partition.log_end_offset == 2
    read = partition.log.read(0, MAX)
    assert len(read.records) == 2 * len(good)  # the stray bytes were not written


def test_the_base_offset_and_size_are_checked_before_the_crc() -> None:
    # both batches also fail their CRC: Kafka's analyzeAndValidateRecords checks it last
    bad_crc = _with(batch(b"a"), ">I", 17, 0)
    assert _code(bad_crc) == Errors.CORRUPT_MESSAGE
    assert _code(_with(bad_crc, ">q", 0, 5)) == Errors.INVALID_RECORD
    checked = check_produced_batch(bad_crc, len(bad_crc) - 1)
    assert not isinstance(checked, BatchHeader) and checked.error == Errors.MESSAGE_TOO_LARGE
