"""Batch compression: gzip streams, bounded decompression, optional codecs."""

from __future__ import annotations

import gzip
import struct
import sys
import warnings
import zlib
from collections.abc import Callable

import crc32c
import pytest

from quorum.wire.batch_checks import validate_batch
from quorum.wire.compression import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    Compression,
    UnsupportedCompressionError,
    available_codecs,
    codec_available,
    compress,
    decompress,
)
from quorum.wire.errors import CorruptRecordError, WireEncodeError
from quorum.wire.records import Record, build_batch, decode_batch

PAYLOAD = b"".join(b"record %d of a compressible batch; " % i for i in range(500))
OPTIONAL = {Compression.SNAPPY: "snappy", Compression.LZ4: "lz4.frame", Compression.ZSTD: "zstandard"}


def test_gzip_output_is_a_gzip_stream_that_the_stdlib_reads() -> None:
    compressed = compress(Compression.GZIP, PAYLOAD)
    assert compressed[:2] == b"\x1f\x8b"  # the gzip magic, not a bare deflate stream
    assert gzip.decompress(compressed) == PAYLOAD
    assert decompress(Compression.GZIP, compressed) == PAYLOAD


def test_gzip_accepts_concatenated_members_and_other_levels() -> None:
    members = gzip.compress(PAYLOAD[:100], compresslevel=1) + gzip.compress(PAYLOAD[100:])
    assert decompress(Compression.GZIP, members) == PAYLOAD
    assert decompress(Compression.GZIP, compress(Compression.GZIP, PAYLOAD, level=9)) == PAYLOAD


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda c: c[:-6], "truncated"),
        (lambda c: c[:5] + bytes(10) + c[15:], "does not decompress"),
        (lambda c: b"", "truncated"),
        (lambda c: c + b"garbage!", "does not decompress"),
    ],
    ids=["truncated", "overwritten", "empty", "trailing garbage"],
)
def test_damaged_gzip_is_a_corrupt_record_error(
    damage: Callable[[bytes], bytes], message: str
) -> None:
    with pytest.raises(CorruptRecordError, match=message):
        decompress(Compression.GZIP, damage(compress(Compression.GZIP, PAYLOAD)))


def test_a_gzip_bomb_is_refused_at_the_limit() -> None:
    bomb = compress(Compression.GZIP, bytes(8 << 20), level=9)
    assert len(bomb) < 16 << 10
    assert len(decompress(Compression.GZIP, bomb, max_bytes=8 << 20)) == 8 << 20
    with pytest.raises(CorruptRecordError, match="more than 1048576 bytes"):
        decompress(Compression.GZIP, bomb, max_bytes=1 << 20)


def test_the_default_limit_stops_a_bomb_too() -> None:
    # one gzip member of DEFAULT + 1 MiB zero bytes, built without holding them all in memory
    deflater = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(1 << 20)
    bomb = b"".join(deflater.compress(chunk) for _ in range(DEFAULT_MAX_DECOMPRESSED_BYTES >> 20))
    bomb += deflater.compress(chunk) + deflater.flush()
    assert len(bomb) < 128 << 10
    with pytest.raises(CorruptRecordError, match="decompression bomb"):
        decompress(Compression.GZIP, bomb)


def test_a_batch_whose_records_are_a_bomb_is_corrupt_not_a_memory_hog() -> None:
    batch = build_batch(
        [Record(offset_delta=0, value=bytes(4 << 20))], compression=Compression.GZIP
    )
    assert len(batch) < 16 << 10
    assert validate_batch(batch).record_count == 1  # the shallow check does not decompress
    with pytest.raises(CorruptRecordError, match="more than 1048576 bytes"):
        decode_batch(batch, max_decompressed_bytes=1 << 20)
    with pytest.raises(CorruptRecordError, match="more than 1048576 bytes"):
        validate_batch(batch, deep=True, max_decompressed_bytes=1 << 20)


def test_unknown_codec_ids_are_corrupt() -> None:
    with pytest.raises(CorruptRecordError, match="unknown compression codec id 5"):
        decompress(5, b"x")
    with pytest.raises(CorruptRecordError, match="unknown compression codec id 7"):
        compress(7, b"x")
    assert not codec_available(6)


def test_none_passes_bytes_through_and_gzip_is_always_available() -> None:
    assert decompress(Compression.NONE, memoryview(PAYLOAD)) == PAYLOAD
    assert {Compression.NONE, Compression.GZIP} <= available_codecs()


@pytest.mark.parametrize("codec", list(OPTIONAL))
def test_a_codec_without_its_package_fails_cleanly_naming_it(
    codec: Compression, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a None entry in sys.modules makes the import fail, as if the package were absent
    monkeypatch.setitem(sys.modules, OPTIONAL[codec], None)
    assert not codec_available(codec)
    name = codec.name.lower()
    with pytest.raises(UnsupportedCompressionError, match=f"{name} compression needs"):
        build_batch([Record(offset_delta=0, value=b"v")], compression=codec)
    with pytest.raises(UnsupportedCompressionError, match=name):
        decompress(codec, b"anything")
    # the error is both a decode and an encode error, so either side can catch it
    assert issubclass(UnsupportedCompressionError, CorruptRecordError)
    assert issubclass(UnsupportedCompressionError, WireEncodeError)


def test_a_batch_with_an_unavailable_codec_is_stored_but_not_decoded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    batch = bytearray(build_batch([Record(offset_delta=0, value=b"v")]))
    batch[22] |= Compression.ZSTD  # attributes low byte; refresh the CRC
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    monkeypatch.setitem(sys.modules, "zstandard", None)
    assert validate_batch(batch).compression == Compression.ZSTD
    with pytest.raises(UnsupportedCompressionError, match="zstd"):
        validate_batch(batch, deep=True)


@pytest.mark.parametrize("codec", list(OPTIONAL))
def test_optional_codecs_round_trip_when_installed(codec: Compression) -> None:
    pytest.importorskip(OPTIONAL[codec])
    records = [Record(offset_delta=i, value=PAYLOAD[: 50 * i]) for i in range(40)]
    batch = build_batch(records, compression=codec)
    assert decode_batch(batch).records == tuple(records)
    big = compress(codec, bytes(4 << 20))
    with pytest.raises(CorruptRecordError, match="more than 1048576 bytes"):
        decompress(codec, big, max_bytes=1 << 20)
    with pytest.raises(CorruptRecordError):
        decompress(codec, compress(codec, PAYLOAD)[:-5])
    assert decode_batch(build_batch([], compression=codec)).records == ()


@pytest.mark.parametrize("codec", list(OPTIONAL))
def test_optional_codecs_agree_with_kafka_python(codec: Compression) -> None:
    pytest.importorskip(OPTIONAL[codec])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
    values = [PAYLOAD[: 40 * i] for i in range(30)]
    builder = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 1 << 20)
    for i, value in enumerate(values):
        builder.append(i, 1000, None, value, [])
    decoded = decode_batch(bytes(builder.build()))
    assert decoded.header.compression == codec
    assert [r.value for r in decoded.records] == values
    ours = build_batch([Record(offset_delta=i, value=v) for i, v in enumerate(values)],
                       compression=codec)
    assert [r.value for r in DefaultRecordBatch(ours)] == values
