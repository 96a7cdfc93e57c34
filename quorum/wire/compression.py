"""Compression codecs of record batch v2 (bits 0-2 of the batch attributes).

Which codecs work, and why:

* ``NONE`` (0) and ``GZIP`` (1) always work.  gzip uses the standard
  library's zlib with the gzip wrapper, because Kafka's gzip payload is a gzip
  stream (RFC 1952), not a bare deflate stream; decoding accepts several
  concatenated gzip members, as a gzip stream reader must.
* ``SNAPPY`` (2), ``LZ4`` (3) and ``ZSTD`` (4) work only when their optional
  package is importable (``python-snappy``, ``lz4``, ``zstandard``).  They are
  not dependencies of the project: every client we serve defaults to no
  compression (kafka-python, aiokafka, librdkafka and the Java producer), and
  the broker never needs to decompress a produced batch (offsets inside it are
  deltas, so assigning offsets only patches the header).  Only deep validation
  and record decoding need the codec; without the package they raise
  :class:`UnsupportedCompressionError` naming the codec and the package.

Decompression is bounded.  A few kilobytes of gzip can expand to gigabytes, so
every decoder stops after ``max_bytes`` of output and raises
:class:`CorruptRecordError`.  The default, :data:`DEFAULT_MAX_DECOMPRESSED_BYTES`
(64 MiB), is 64 times Kafka's default ``max.message.bytes`` (1 MiB) and 8 times
the Raft layer's largest batch (8 MiB): far above any batch a producer builds,
far below what would hurt a node.  Callers that know a tighter limit (for
example the topic's ``max.message.bytes`` times a ratio) pass it.
"""

from __future__ import annotations

import enum
import importlib
import struct
import zlib
from collections.abc import Callable
from types import ModuleType
from typing import Any, Final

import attrs

from quorum.wire.errors import CorruptRecordError, WireEncodeError

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "Compression",
    "UnsupportedCompressionError",
    "available_codecs",
    "codec_available",
    "compress",
    "decompress",
]

DEFAULT_MAX_DECOMPRESSED_BYTES: Final = 64 * 1024 * 1024
DEFAULT_GZIP_LEVEL: Final = 6  # zlib's default, as Kafka's compression.gzip.level=-1 picks

# xerial's framing of snappy, which Kafka's Java client writes: magic, version, compatible version.
_XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
_XERIAL_HEADER: Final = struct.Struct(">8sii")
_XERIAL_BLOCK_BYTES: Final = 32 * 1024
_INT32: Final = struct.Struct(">i")


class Compression(enum.IntEnum):
    """Codec ids of the batch attributes (bits 0-2)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class UnsupportedCompressionError(CorruptRecordError, WireEncodeError):
    """A known codec whose optional package is not installed.

    It is a :class:`CorruptRecordError` so that code which only tells good
    batches from bad ones needs one ``except``; the broker catches it first to
    answer UNSUPPORTED_COMPRESSION_TYPE (76) instead of CORRUPT_MESSAGE (2).
    """


def _check_size(size: int, max_bytes: int, codec: str) -> None:
    if size > max_bytes:
        raise CorruptRecordError(
            f"{codec} payload decompresses to more than {max_bytes} bytes "
            f"(the configured limit); refusing it as a possible decompression bomb"
        )


def _gzip_compress(data: bytes, level: int | None) -> bytes:
    return zlib.compress(data, DEFAULT_GZIP_LEVEL if level is None else level, wbits=31)


def _gzip_decompress(data: bytes, max_bytes: int) -> bytes:
    out = bytearray()
    rest = data
    while True:
        inflater = zlib.decompressobj(wbits=31)
        out += inflater.decompress(rest, max_bytes + 1 - len(out))
        # max_length can only leave input unconsumed by returning max_bytes + 1 bytes
        _check_size(len(out), max_bytes, "gzip")
        if not inflater.eof:
            raise CorruptRecordError("gzip payload is truncated (the stream has no end marker)")
        rest = inflater.unused_data
        if not rest:
            return bytes(out)


def _module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _read_uvarint(data: bytes, pos: int) -> int:
    """The unsigned LEB128 length that starts a raw snappy block."""
    value = 0
    for shift in range(0, 35, 7):
        if pos >= len(data):
            break
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value
    raise CorruptRecordError("snappy block has a bad length preamble")


def _snappy_compress(data: bytes, level: int | None) -> bytes:
    snappy: Any = _require(Compression.SNAPPY)
    parts = [_XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1)]
    for start in range(0, len(data), _XERIAL_BLOCK_BYTES):
        block = snappy.compress(data[start : start + _XERIAL_BLOCK_BYTES])
        parts += [_INT32.pack(len(block)), block]
    return b"".join(parts)


def _snappy_decompress(data: bytes, max_bytes: int) -> bytes:
    snappy: Any = _require(Compression.SNAPPY)
    if not data.startswith(_XERIAL_MAGIC):
        # a bare snappy block, as some older clients send
        _check_size(_read_uvarint(data, 0), max_bytes, "snappy")
        return bytes(snappy.decompress(data))
    pos, out = _XERIAL_HEADER.size, bytearray()
    while pos < len(data):
        if len(data) - pos < 4:
            raise CorruptRecordError("snappy (xerial) payload ends inside a block length")
        (size,) = _INT32.unpack_from(data, pos)
        block = data[pos + 4 : pos + 4 + size]
        if size < 0 or len(block) != size:
            raise CorruptRecordError(f"snappy (xerial) block at byte {pos} is truncated")
        _check_size(len(out) + _read_uvarint(block, 0), max_bytes, "snappy")
        out += snappy.decompress(block)
        pos += 4 + size
    return bytes(out)


def _lz4_compress(data: bytes, level: int | None) -> bytes:
    frame: Any = _require(Compression.LZ4)
    return bytes(frame.compress(data, compression_level=level or 0))


def _lz4_decompress(data: bytes, max_bytes: int) -> bytes:
    frame: Any = _require(Compression.LZ4)
    inflater = frame.LZ4FrameDecompressor()
    out = bytes(inflater.decompress(data, max_length=max_bytes + 1))
    _check_size(len(out), max_bytes, "lz4")
    if not inflater.eof:
        raise CorruptRecordError("lz4 payload is truncated (the frame has no end mark)")
    return out


def _zstd_compress(data: bytes, level: int | None) -> bytes:
    zstandard: Any = _require(Compression.ZSTD)
    return bytes(zstandard.ZstdCompressor(level=3 if level is None else level).compress(data))


def _zstd_decompress(data: bytes, max_bytes: int) -> bytes:
    zstandard: Any = _require(Compression.ZSTD)
    reader = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True)
    size = 0
    while chunk := reader.read(min(max_bytes + 1 - size, 1 << 20)):
        size += len(chunk)
        _check_size(size, max_bytes, "zstd")
    # The reader ends quietly inside a truncated frame; decompressobj reports it, and its
    # output is now known to be bounded.
    out, rest = bytearray(), data
    while True:
        inflater = zstandard.ZstdDecompressor().decompressobj()
        out += inflater.decompress(rest)
        if not inflater.eof:
            raise CorruptRecordError("zstd payload is truncated (a frame has no end)")
        rest = inflater.unused_data
        if not rest:
            return bytes(out)


@attrs.frozen
class _Codec:
    name: str
    module: str | None  # the optional module that must import, None for the stdlib
    package: str | None  # what to install for it
    compress: Callable[[bytes, int | None], bytes]
    decompress: Callable[[bytes, int], bytes]


def _none_compress(data: bytes, level: int | None) -> bytes:
    return data


def _none_decompress(data: bytes, max_bytes: int) -> bytes:
    return data


_CODECS: Final[dict[int, _Codec]] = {
    Compression.NONE: _Codec("none", None, None, _none_compress, _none_decompress),
    Compression.GZIP: _Codec("gzip", None, None, _gzip_compress, _gzip_decompress),
    Compression.SNAPPY: _Codec(
        "snappy", "snappy", "python-snappy", _snappy_compress, _snappy_decompress
    ),
    Compression.LZ4: _Codec("lz4", "lz4.frame", "lz4", _lz4_compress, _lz4_decompress),
    Compression.ZSTD: _Codec("zstd", "zstandard", "zstandard", _zstd_compress, _zstd_decompress),
}


def _codec(codec: int) -> _Codec:
    found = _CODECS.get(codec)
    if found is None:
        raise CorruptRecordError(f"unknown compression codec id {codec} (known: 0-4)")
    return found


def _require(codec: Compression) -> ModuleType:
    spec = _CODECS[codec]
    assert spec.module is not None
    module = _module(spec.module)
    if module is None:
        raise UnsupportedCompressionError(
            f"{spec.name} compression needs the optional package {spec.package!r}, "
            f"which is not installed"
        )
    return module


def codec_available(codec: int) -> bool:
    """True if batches with this codec id can be compressed and decompressed here."""
    spec = _CODECS.get(codec)
    return spec is not None and (spec.module is None or _module(spec.module) is not None)


def available_codecs() -> frozenset[Compression]:
    return frozenset(c for c in Compression if codec_available(c))


def compress(codec: int, data: bytes, *, level: int | None = None) -> bytes:
    """Compress a batch's record bytes with ``codec`` (``level`` is codec-specific)."""
    spec = _codec(codec)
    try:
        return spec.compress(data, level)
    except (zlib.error, ValueError) as exc:
        raise WireEncodeError(f"{spec.name} cannot compress with level {level}: {exc}") from exc


def decompress(
    codec: int,
    data: bytes | bytearray | memoryview,
    *,
    max_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> bytes:
    """Decompress a batch's record bytes, refusing output larger than ``max_bytes``.

    Raises :class:`CorruptRecordError` for malformed or oversized payloads and
    :class:`UnsupportedCompressionError` for a codec whose package is missing.
    """
    spec = _codec(codec)
    payload = bytes(data)
    try:
        return spec.decompress(payload, max_bytes)
    except CorruptRecordError:
        raise
    except Exception as exc:  # third-party decoders raise their own types on bad input
        raise CorruptRecordError(f"{spec.name} payload does not decompress: {exc}") from exc
