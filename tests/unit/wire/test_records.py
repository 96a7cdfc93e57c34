"""Record batch v2: golden bytes, round trips, CRC, in-place rewrites, kafka-python cross-checks."""

from __future__ import annotations

import struct
import warnings

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

with warnings.catch_warnings():
    # kafka-python 3.0.12 loads its schemas with a deprecated importlib.resources call
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record._crc32c import crc as pure_python_crc32c
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from quorum.wire.batch import BatchHeader
from quorum.wire.batch_checks import (
    assign_offsets,
    assign_offsets_to_batches,
    set_log_append_time,
    validate_batch,
)
from quorum.wire.compression import Compression
from quorum.wire.errors import CorruptRecordError, WireEncodeError
from quorum.wire.records import (
    Header,
    Record,
    TimestampType,
    build_batch,
    build_batch_from_values,
    decode_batch,
    encode_varint,
    iter_batches,
    read_varint,
)

TS = 1_700_000_000_000  # 0x0000018BCFE56800

# One batch with one record: null key, value b"hi", one header ("a", null).  Assembled by
# hand from the layout in kafka-client-compat.md section 3.3, not by our encoder.
GOLDEN_RECORD = bytes.fromhex(
    "16"  # record length: 11 bytes follow -> zigzag 22
    "00"  # attributes
    "00"  # timestampDelta 0
    "00"  # offsetDelta 0
    "01"  # key length -1 (null) -> zigzag 1
    "04" "6869"  # value length 2 -> zigzag 4, b"hi"
    "02"  # header count 1 -> zigzag 2
    "02" "61"  # header key length 1, "a"
    "01"  # header value null
)
GOLDEN_HEADER_TAIL = bytes.fromhex(
    "0000"  # attributes: no compression, CreateTime, not transactional, not control
    "00000000"  # lastOffsetDelta 0
    "0000018bcfe56800"  # baseTimestamp = TS
    "0000018bcfe56800"  # maxTimestamp = TS
    "ffffffffffffffff"  # producerId -1
    "ffff"  # producerEpoch -1
    "ffffffff"  # baseSequence -1
    "00000001"  # recordCount 1
)
GOLDEN_CRC = 0x7F5BE816  # CRC-32C of tail + record, from kafka-python's pure-Python CRC
GOLDEN_BATCH = (
    bytes.fromhex(
        "0000000000000000"  # baseOffset 0
        "0000003d"  # batchLength 61 = 49 header bytes after this field + 12 record bytes
        "ffffffff"  # partitionLeaderEpoch -1
        "02"  # magic
        "7f5be816"  # crc
    )
    + GOLDEN_HEADER_TAIL
    + GOLDEN_RECORD
)
GOLDEN_RECORD_OBJECT = Record(
    offset_delta=0, timestamp_delta=0, key=None, value=b"hi", headers=(Header("a", None),)
)


def recrc(buf: bytearray, pos: int = 0) -> None:
    """Recompute a batch's CRC after a test patched CRC-covered bytes."""
    size = 12 + struct.unpack_from(">i", buf, pos + 8)[0]
    struct.pack_into(">I", buf, pos + 17, crc32c.crc32c(bytes(buf[pos + 21 : pos + size])))


def sample_records(n: int) -> list[Record]:
    return [
        Record(
            offset_delta=i,
            timestamp_delta=i * 7,
            key=None if i % 3 == 0 else b"key-%d" % i,
            value=None if i % 5 == 4 else b"value-%d-" % i * 8,
            headers=(Header("trace", b"t%d" % i), Header("empty", None)) if i % 4 == 1 else (),
        )
        for i in range(n)
    ]


# -- golden bytes ---------------------------------------------------------------------------


def test_golden_crc_matches_an_independent_crc32c_implementation() -> None:
    assert pure_python_crc32c(GOLDEN_HEADER_TAIL + GOLDEN_RECORD) == GOLDEN_CRC
    assert crc32c.crc32c(GOLDEN_HEADER_TAIL + GOLDEN_RECORD) == GOLDEN_CRC


def test_encoder_produces_the_hand_assembled_golden_batch() -> None:
    assert build_batch([GOLDEN_RECORD_OBJECT], base_timestamp=TS) == GOLDEN_BATCH


def test_decoder_reads_the_hand_assembled_golden_batch() -> None:
    decoded = decode_batch(GOLDEN_BATCH)
    assert decoded.records == (GOLDEN_RECORD_OBJECT,)
    assert decoded.header.record_count == 1
    assert decoded.header.size == len(GOLDEN_BATCH) == 73
    assert decoded.timestamp_of(decoded.records[0]) == TS


def test_kafka_python_reads_the_golden_batch_as_we_do() -> None:
    theirs = DefaultRecordBatch(GOLDEN_BATCH)
    assert theirs.validate_crc()
    (record,) = list(theirs)
    assert (record.offset, record.timestamp, record.key, record.value) == (0, TS, None, b"hi")
    assert list(record.headers) == [("a", None)]


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, "00"), (-1, "01"), (1, "02"), (63, "7e"), (-64, "7f"), (64, "8001"), (300, "d804"),
     (2**31 - 1, "feffffff0f"), (-(2**31), "ffffffff0f"), (-(2**63), "ffffffffffffffffff01")],
)
def test_record_varints_are_zigzag_encoded(value: int, encoded: str) -> None:
    assert encode_varint(value).hex() == encoded
    assert read_varint(bytes.fromhex(encoded), 0) == (value, len(encoded) // 2)


# -- round trips ----------------------------------------------------------------------------

headers_strategy = st.lists(
    st.builds(Header, st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=3
).map(tuple)


@st.composite
def record_lists(draw: st.DrawFn) -> list[Record]:
    count = draw(st.integers(0, 30))
    gaps = draw(st.lists(st.integers(1, 3), min_size=count, max_size=count))
    records, offset = [], -1
    for gap in gaps:
        offset += gap
        records.append(
            Record(
                offset_delta=offset,
                timestamp_delta=draw(st.integers(-(2**40), 2**40)),
                key=draw(st.none() | st.binary(max_size=40)),
                value=draw(st.none() | st.binary(max_size=300)),
                headers=draw(headers_strategy),
            )
        )
    return records


@settings(max_examples=100)
@given(
    records=record_lists(),
    compression=st.sampled_from([Compression.NONE, Compression.GZIP]),
    base_offset=st.integers(0, 2**62),
    epoch=st.integers(-1, 2**31 - 1),
    base_timestamp=st.integers(0, 2**50),
)
def test_batches_round_trip_through_build_and_decode(
    records: list[Record], compression: int, base_offset: int, epoch: int, base_timestamp: int
) -> None:
    encoded = build_batch(
        records,
        base_offset=base_offset,
        partition_leader_epoch=epoch,
        compression=compression,
        base_timestamp=base_timestamp,
    )
    decoded = decode_batch(encoded)
    assert decoded.records == tuple(records)
    header = decoded.header
    assert (header.base_offset, header.partition_leader_epoch) == (base_offset, epoch)
    assert header.compression == compression
    assert header.record_count == len(records)
    assert header.size == len(encoded)
    if records:
        assert header.last_offset_delta == records[-1].offset_delta
        assert header.max_timestamp == base_timestamp + max(r.timestamp_delta for r in records)
    # dense batches (no gaps) also pass the strict produce-path validation, deep included
    if [r.offset_delta for r in records] == list(range(len(records))):
        assert validate_batch(encoded, deep=True) == header


def test_many_records_with_gzip_round_trip_and_compress() -> None:
    records = sample_records(2000)
    plain = build_batch(records, base_timestamp=TS)
    gzipped = build_batch(records, base_timestamp=TS, compression=Compression.GZIP)
    assert len(gzipped) < len(plain) // 4
    assert decode_batch(gzipped).records == decode_batch(plain).records == tuple(records)


def test_empty_batch_has_no_timestamps_and_no_records() -> None:
    decoded = decode_batch(build_batch([]))
    assert decoded.records == ()
    assert decoded.header.last_offset_delta == -1
    assert decoded.header.base_timestamp == decoded.header.max_timestamp == -1


def test_iter_batches_reads_every_whole_batch_and_ignores_a_partial_tail() -> None:
    batches = [build_batch_from_values([b"%d" % i] * (i + 1), base_offset=i * 10) for i in range(3)]
    data = b"".join(batches) + batches[0][:30]
    decoded = list(iter_batches(data))
    assert [d.header.base_offset for d in decoded] == [0, 10, 20]
    assert [len(d.records) for d in decoded] == [1, 2, 3]


def test_build_batch_from_values_pairs_keys_and_values() -> None:
    decoded = decode_batch(build_batch_from_values([b"a", None], [b"k", None], timestamp=TS))
    assert [(r.key, r.value, r.offset_delta) for r in decoded.records] == [
        (b"k", b"a", 0),
        (None, None, 1),
    ]
    with pytest.raises(WireEncodeError, match="2 keys for 1 values"):
        build_batch_from_values([b"a"], [b"k", b"l"])


def test_values_that_cannot_be_encoded_are_refused_with_the_reason() -> None:
    with pytest.raises(WireEncodeError, match="offset deltas must increase"):
        build_batch([Record(offset_delta=1), Record(offset_delta=1)])
    with pytest.raises(WireEncodeError, match="offset delta 2147483648 is outside"):
        build_batch([Record(offset_delta=2**31)])
    with pytest.raises(WireEncodeError, match="not encodable as UTF-8"):
        build_batch([Record(offset_delta=0, headers=(Header("\ud800", None),))])
    with pytest.raises(WireEncodeError, match="out of range"):
        build_batch([Record(offset_delta=0)], producer_epoch=2**15)


# -- CRC and in-place rewrites --------------------------------------------------------------


def test_any_flipped_bit_in_the_crc_span_fails_validation() -> None:
    encoded = build_batch(sample_records(5), base_timestamp=TS)
    for position in range(21, len(encoded)):
        damaged = bytearray(encoded)
        damaged[position] ^= 0x10
        with pytest.raises(CorruptRecordError, match="CRC-32C"):
            validate_batch(damaged)


def changed_positions(before: bytes, after: bytes) -> set[int]:
    return {i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b}


def test_assign_offsets_patches_only_base_offset_and_epoch_and_keeps_the_crc_valid() -> None:
    for compression in (Compression.NONE, Compression.GZIP):
        original = build_batch(sample_records(10), base_timestamp=TS, compression=compression)
        buf = bytearray(original)
        next_offset = assign_offsets(buf, 0, 1_000_000, 42)
        assert next_offset == 1_000_010
        # only bytes 0-7 (baseOffset) and 12-15 (epoch) may change: records were not re-encoded
        assert changed_positions(original, bytes(buf)) <= set(range(8)) | set(range(12, 16))
        assert buf[61:] == original[61:]
        header = validate_batch(buf, deep=True)
        assert (header.base_offset, header.partition_leader_epoch) == (1_000_000, 42)
        theirs = DefaultRecordBatch(bytes(buf))
        assert theirs.validate_crc()
        assert [r.offset for r in theirs] == list(range(1_000_000, 1_000_010))


def test_assign_offsets_to_batches_numbers_consecutive_batches() -> None:
    sizes = [3, 1, 5]
    whole = b"".join(build_batch_from_values([b"x"] * n) for n in sizes)
    tail = build_batch_from_values([b"y"] * 2)[:70]  # fetch data may end with a partial batch
    buf = bytearray(whole + tail)
    assert assign_offsets_to_batches(buf, 100, 7) == 109
    assert buf[len(whole) :] == tail
    decoded = list(iter_batches(buf))
    assert [d.header.base_offset for d in decoded] == [100, 103, 104]
    assert {d.header.partition_leader_epoch for d in decoded} == {7}


def test_set_log_append_time_recomputes_the_crc_without_touching_records() -> None:
    original = build_batch(sample_records(4), base_timestamp=TS)
    buf = bytearray(original)
    set_log_append_time(buf, 0, TS + 5000)
    assert buf[61:] == original[61:]
    assert changed_positions(original, bytes(buf)) <= set(range(17, 23)) | set(range(35, 43))
    decoded = decode_batch(buf)
    assert decoded.header.max_timestamp == TS + 5000
    assert {decoded.timestamp_of(r) for r in decoded.records} == {TS + 5000}
    theirs = DefaultRecordBatch(bytes(buf))
    assert theirs.validate_crc()
    assert theirs.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert {r.timestamp for r in theirs} == {TS + 5000}


# -- kafka-python cross-checks --------------------------------------------------------------


def compressible_records(n: int) -> list[Record]:
    return [
        Record(
            offset_delta=i,
            timestamp_delta=i,
            key=b"user-%d" % (i % 7) if i % 2 else None,
            value=b"the same compressible payload %d " % (i % 3) * 6,
            headers=(Header("h", b"v"),) if i % 3 == 0 else (),
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.GZIP])
def test_kafka_python_decodes_batches_we_build(compression: int) -> None:
    records = compressible_records(50)
    encoded = build_batch(
        records, base_offset=500, partition_leader_epoch=3, base_timestamp=TS,
        compression=compression, producer_id=9, producer_epoch=1, base_sequence=40,
    )
    theirs = DefaultRecordBatch(encoded)
    assert theirs.validate_crc()
    assert theirs.compression_type == compression
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == (9, 1, 40)
    got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in theirs]
    assert got == [
        (500 + r.offset_delta, TS + r.timestamp_delta, r.key, r.value,
         [(h.key, h.value) for h in r.headers])
        for r in records
    ]


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.GZIP])
def test_we_decode_batches_kafka_python_builds(compression: int) -> None:
    records = compressible_records(50)
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=compression, is_transactional=False,
        producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )
    for r in records:
        headers = [(h.key, h.value) for h in r.headers]
        assert builder.append(r.offset_delta, TS + r.timestamp_delta, r.key, r.value, headers)
    theirs = bytes(builder.build())
    decoded = decode_batch(theirs)
    # kafka-python falls back to no compression when it does not pay: make sure it did compress
    assert decoded.header.compression == compression
    assert decoded.records == tuple(records)
    assert decoded.header.base_timestamp == TS
    assert validate_batch(theirs, deep=True).record_count == 50


def test_crc_of_a_kafka_python_batch_survives_our_offset_assignment() -> None:
    builder = DefaultRecordBatchBuilder(2, 1, False, -1, -1, -1, 1 << 20)
    for i in range(20):
        builder.append(i, TS, None, b"payload payload payload %d" % (i % 2), [])
    buf = bytearray(builder.build())
    assert assign_offsets(buf, 0, 77, 5) == 97
    assert DefaultRecordBatch(bytes(buf)).validate_crc()
    assert BatchHeader.parse(buf).crc_matches(buf)
