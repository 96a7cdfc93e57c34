"""validate_batch: each rejection names its cause and position; arbitrary bytes raise only WireError."""

from __future__ import annotations

import contextlib
import random
import struct
from collections.abc import Callable

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quorum.wire.batch_checks import RecordBatchTooLargeError, validate_batch, validate_batches
from quorum.wire.compression import Compression
from quorum.wire.errors import CorruptRecordError, WireError
from quorum.wire.records import Header, Record, build_batch, decode_batch, iter_batches


def recrc(buf: bytearray, pos: int = 0) -> bytearray:
    """Recompute the CRC after patching CRC-covered bytes, so later checks are reached."""
    size = 12 + struct.unpack_from(">i", buf, pos + 8)[0]
    struct.pack_into(">I", buf, pos + 17, crc32c.crc32c(bytes(buf[pos + 21 : pos + size])))
    return buf


def sample_batch(n: int = 4, compression: int = Compression.NONE) -> bytes:
    records = [
        Record(
            offset_delta=i,
            timestamp_delta=i,
            key=b"k%d" % i if i % 2 else None,
            value=b"value %d" % i * 3,
            headers=(Header("h", b"x"),) if i == 1 else (),
        )
        for i in range(n)
    ]
    return build_batch(records, base_timestamp=1000, compression=compression)


def patched(fmt: str, offset: int, value: int, *, fix_crc: bool = True) -> bytearray:
    buf = bytearray(sample_batch())
    struct.pack_into(fmt, buf, offset, value)
    return recrc(buf) if fix_crc else buf


def count_patched(count: int) -> bytearray:
    """The sample batch claiming ``count`` records (count and lastOffsetDelta agree)."""
    buf = bytearray(sample_batch())
    struct.pack_into(">i", buf, 23, count - 1)
    struct.pack_into(">i", buf, 57, count)
    return recrc(buf)


CASES: list[tuple[str, Callable[[], bytes | bytearray], str]] = [
    ("short header", lambda: sample_batch()[:40], r"header at byte 0 is truncated \(40 of 61"),
    ("bad magic", lambda: patched(">b", 16, 1, fix_crc=False), "magic 1"),
    ("length shorter than the header", lambda: patched(">i", 8, 10, fix_crc=False),
     "length 10, shorter than its own header"),
    ("length beyond buffer", lambda: sample_batch()[:-1], r"declares \d+ bytes but only \d+ remain"),
    ("crc mismatch", lambda: patched(">q", 27, 5, fix_crc=False), "fails its CRC-32C check"),
    ("count vs last offset delta", lambda: patched(">i", 23, 7),
     "recordCount 4 but lastOffsetDelta 7"),
    ("negative count", lambda: patched(">i", 57, -3), "negative record count -3"),
    ("negative last offset delta", lambda: patched(">i", 23, -5), "negative lastOffsetDelta -5"),
    ("unknown codec", lambda: patched(">h", 21, 6), "unknown compression codec id 6"),
    ("too many records for the bytes", lambda: count_patched(1000), "declares 1000 records in only"),
]


@pytest.mark.parametrize(("bad", "message"), [(c[1], c[2]) for c in CASES],
                         ids=[c[0] for c in CASES])
def test_validate_batch_names_what_is_wrong(
    bad: Callable[[], bytes | bytearray], message: str
) -> None:
    with pytest.raises(CorruptRecordError, match=message):
        validate_batch(bad())


def test_errors_name_the_byte_position_of_the_batch() -> None:
    good = sample_batch()
    damaged = bytearray(good + good)
    damaged[len(good) + 40] ^= 1
    validate_batch(damaged, 0)
    with pytest.raises(CorruptRecordError, match=f"batch at byte {len(good)} fails its CRC"):
        validate_batch(damaged, len(good))


def test_a_produced_blob_must_hold_only_whole_valid_batches() -> None:
    one, two = sample_batch(2), sample_batch(3)
    found = validate_batches(one + two, deep=True)
    assert [(pos, h.record_count) for pos, h in found] == [(0, 2), (len(one), 3)]
    assert validate_batches(b"") == []
    with pytest.raises(CorruptRecordError, match=f"header at byte {len(one)} is truncated"):
        validate_batches(one + two[:30])
    with pytest.raises(CorruptRecordError, match=f"batch at byte {len(one)} declares"):
        validate_batches(one + two[:-1])


def test_a_batch_over_the_size_limit_is_too_large_not_corrupt_only() -> None:
    batch = sample_batch()
    assert validate_batch(batch, max_batch_bytes=len(batch)).size == len(batch)
    with pytest.raises(RecordBatchTooLargeError, match=f"over the limit of {len(batch) - 1}"):
        validate_batch(batch, max_batch_bytes=len(batch) - 1)


def test_compacted_batches_pass_only_when_allowed() -> None:
    records = [Record(offset_delta=0, value=b"a"), Record(offset_delta=3, value=b"b")]
    batch = build_batch(records)
    with pytest.raises(CorruptRecordError, match="recordCount 2 but lastOffsetDelta 3"):
        validate_batch(batch)
    assert validate_batch(batch, allow_compacted=True, deep=True).record_count == 2
    assert [r.offset_delta for r in decode_batch(batch).records] == [0, 3]


def test_deep_check_finds_records_that_do_not_match_the_declared_count() -> None:
    # declare 5 records (and lastOffsetDelta 4) over 4 records' bytes: the header alone looks fine
    buf = count_patched(5)
    assert validate_batch(buf).record_count == 5
    with pytest.raises(CorruptRecordError, match="record 4 of 5: varint at byte 120 runs past the end"):
        validate_batch(buf, deep=True)


def test_deep_check_finds_a_record_whose_length_disagrees_with_its_fields() -> None:
    buf = bytearray(sample_batch())
    buf[61] += 2  # first record's length varint: claim one more byte (zigzag +2)
    with pytest.raises(CorruptRecordError, match="record 0 of 4: its fields end at byte 28 but its length says byte 29"):
        validate_batch(recrc(buf), deep=True)


def test_deep_check_finds_non_dense_offset_deltas_in_a_produced_batch() -> None:
    records = [Record(offset_delta=0), Record(offset_delta=2), Record(offset_delta=3)]
    buf = bytearray(build_batch(records))
    struct.pack_into(">i", buf, 23, 2)  # lastOffsetDelta 2 = count - 1 hides the gap from the header
    with pytest.raises(CorruptRecordError, match="record 1 has offset delta 2 after 0"):
        validate_batch(recrc(buf), deep=True)


# -- fuzzing: nothing but WireError on arbitrary bytes ----------------------------------------


def exercise(data: bytes | bytearray) -> None:
    """Run every decoding entry point; only WireError may escape."""
    for call in (
        lambda: validate_batch(data, deep=True, max_decompressed_bytes=1 << 20),
        lambda: decode_batch(data, max_decompressed_bytes=1 << 20),
        lambda: list(iter_batches(data, max_decompressed_bytes=1 << 20)),
        lambda: validate_batches(data, deep=True, max_decompressed_bytes=1 << 20),
    ):
        with contextlib.suppress(WireError):
            call()


def mutate(rng: random.Random, seed_batch: bytes) -> bytearray:
    buf = bytearray(seed_batch)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(5)
        position = rng.randrange(len(buf)) if buf else 0
        if kind == 0 and buf:
            buf[position] = rng.randrange(256)
        elif kind == 1:
            del buf[position : position + rng.randint(1, 8)]
        elif kind == 2:
            buf[position:position] = rng.randbytes(rng.randint(1, 8))
        elif kind == 3 and len(buf) >= 61:
            # a header field set to an extreme value
            offset, fmt = rng.choice([(8, ">i"), (23, ">i"), (57, ">i"), (21, ">h")])
            struct.pack_into(fmt, buf, offset, rng.choice([-1, 0, 1, 2**15 - 1, 7]))
        else:
            buf = buf[: rng.randrange(len(buf) + 1)]
    if len(buf) >= 61 and rng.random() < 0.7:
        # most mutants get a fresh CRC so the record decoder is exercised, not just the CRC check
        size = 12 + struct.unpack_from(">i", buf, 8)[0]
        if 21 <= size <= len(buf):
            struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:size])))
    return buf


def test_seeded_fuzz_of_mutated_batches_raises_only_wire_errors() -> None:
    rng = random.Random(20240531)
    seeds = [sample_batch(1), sample_batch(6), sample_batch(6, Compression.GZIP), build_batch([])]
    for _ in range(3000):
        exercise(mutate(rng, rng.choice(seeds)))


@settings(max_examples=200)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_raise_only_wire_errors(data: bytes) -> None:
    exercise(data)


@settings(max_examples=200)
@given(
    position=st.integers(0, 120),
    replacement=st.binary(min_size=1, max_size=6),
    fix_crc=st.booleans(),
)
def test_patched_valid_batches_raise_only_wire_errors(
    position: int, replacement: bytes, fix_crc: bool
) -> None:
    buf = bytearray(sample_batch(3))
    buf[position : position + len(replacement)] = replacement
    if fix_crc and len(buf) >= 61:
        size = 12 + struct.unpack_from(">i", buf, 8)[0]
        if 21 <= size <= len(buf):
            recrc(buf)
    exercise(buf)
