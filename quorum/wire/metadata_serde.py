"""Metadata records as record values of ``__cluster_metadata`` (Kafka's serde).

A metadata record value is ``frame version (unsigned varint, 1)``, ``api key
(unsigned varint)``, ``record version (unsigned varint)`` and then the record
at that version (all metadata records are flexible). Frame version 0 (KRaft's
2.8 preview) is refused as Kafka refuses it.

Write versions follow what Kafka writes at the metadata.version pykraft
claims (3.9-IV0), except where a feature pykraft does not implement would put
content in a later version: partition records are written at v0 because
pykraft brokers have one log directory and do no directory assignment
(KIP-858), so ``Directories`` would carry nothing. Every version of a record
the schema declares is decoded.

Every node decodes every record it replays, so both directions keep a fast
path beside the checked one. Decoding looks the value's first three bytes (the
frame when every varint in it is one byte) up in a table of compiled decoders;
encoding looks the record's class up. The table fills as the checked path
succeeds. Whatever the fast path does not take (a frame with a longer varint,
a value that is not ``bytes``, any failure) goes through the checked path,
which raises the error a caller sees: the fast path never reports one itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeAlias

from quorum.wire.codec import compiled_pair, decode_from, encode_parts
from quorum.wire.errors import WireDecodeError, WireEncodeError
from quorum.wire.messages.metadata_records import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)
from quorum.wire.messages.pykraft_append import PykraftPayloadRecord
from quorum.wire.primitives import decode_unsigned_varint, unsigned_varint_bytes
from quorum.wire.schema import message_info

__all__ = [
    "FRAME_VERSION",
    "RECORD_CLASSES",
    "WRITE_VERSIONS",
    "MetadataRecord",
    "decode_metadata_record",
    "encode_metadata_record",
    "record_api_key",
    "unwrap_payload",
    "wrap_payload",
]

MetadataRecord: TypeAlias = (
    RegisterBrokerRecord
    | UnregisterBrokerRecord
    | TopicRecord
    | PartitionRecord
    | ConfigRecord
    | PartitionChangeRecord
    | FenceBrokerRecord
    | UnfenceBrokerRecord
    | RemoveTopicRecord
    | FeatureLevelRecord
    | ProducerIdsRecord
    | BrokerRegistrationChangeRecord
    | NoOpRecord
    | BeginTransactionRecord
    | EndTransactionRecord
    | AbortTransactionRecord
    | PykraftPayloadRecord
)

FRAME_VERSION: Final = 1

WRITE_VERSIONS: Final[dict[type[MetadataRecord], int]] = {
    RegisterBrokerRecord: 3,
    UnregisterBrokerRecord: 0,
    TopicRecord: 0,
    PartitionRecord: 0,
    ConfigRecord: 0,
    PartitionChangeRecord: 0,
    FenceBrokerRecord: 0,
    UnfenceBrokerRecord: 0,
    RemoveTopicRecord: 0,
    FeatureLevelRecord: 0,
    ProducerIdsRecord: 0,
    BrokerRegistrationChangeRecord: 1,
    NoOpRecord: 0,
    BeginTransactionRecord: 0,
    EndTransactionRecord: 0,
    AbortTransactionRecord: 0,
    PykraftPayloadRecord: 0,
}


def record_api_key(cls: type) -> int:
    key = message_info(cls).api_key
    assert key is not None, f"{cls.__name__} is not a metadata record"
    return key


RECORD_CLASSES: Final[dict[int, type[MetadataRecord]]] = {record_api_key(cls): cls for cls in WRITE_VERSIONS}
_HEADERS: Final[dict[type, bytes]] = {
    cls: unsigned_varint_bytes(FRAME_VERSION)
    + unsigned_varint_bytes(record_api_key(cls))
    + unsigned_varint_bytes(version)
    for cls, version in WRITE_VERSIONS.items()
}


_Encoder = Callable[[Any, list[Any]], None]
_Decoder = Callable[[bytes, int], tuple[MetadataRecord, int]]
# class -> (frame, compiled encoder at its write version), filled by the checked path
_ENCODERS: Final[dict[type, tuple[bytes, _Encoder]]] = {}
# three-byte frame (version 1, api key, record version) -> compiled decoder that
# takes the whole value as ``bytes``; filled by the checked path
_DECODERS: Final[dict[bytes, _Decoder]] = {}
_FRAME_BYTES: Final = 3


def encode_metadata_record(record: MetadataRecord) -> bytes:
    """The record value Kafka's MetadataRecordSerde writes for ``record``."""
    found = _ENCODERS.get(type(record))
    if found is not None:
        header, encode = found
        parts = [header]
        try:
            encode(record, parts)
        except Exception:  # the checked path raises the error to report
            return _encode_checked(record)
        return b"".join(parts)
    return _encode_checked(record)


def _encode_checked(record: MetadataRecord) -> bytes:
    cls = type(record)
    header = _HEADERS.get(cls)
    if header is None:
        raise WireEncodeError(f"{cls.__name__} is not a metadata record pykraft writes")
    parts = encode_parts(record, WRITE_VERSIONS[cls])
    _ENCODERS[cls] = (header, compiled_pair(cls, WRITE_VERSIONS[cls]).encode)
    return b"".join([header, *parts])


def decode_metadata_record(value: bytes | memoryview) -> MetadataRecord:
    """Parse one record value; raises WireDecodeError naming what is wrong."""
    if type(value) is bytes:
        decode = _DECODERS.get(value[:_FRAME_BYTES])
        if decode is not None:
            try:
                record, end = decode(value, _FRAME_BYTES)
            except Exception:  # the checked path raises the error to report
                return _decode_checked(value)
            if end == len(value):
                return record
    return _decode_checked(value)


def _decoder_of_bytes(cls: type, version: int) -> _Decoder:
    """The compiled decoder, given a view of the value when decoded fields are views of it."""
    compiled = compiled_pair(cls, version)
    if not compiled.views:
        return compiled.decode
    decode = compiled.decode

    def decode_viewed(value: bytes, pos: int) -> tuple[Any, int]:
        return decode(memoryview(value), pos)

    return decode_viewed


def _decode_checked(value: bytes | memoryview) -> MetadataRecord:
    frame, pos = decode_unsigned_varint(value, 0)
    if frame != FRAME_VERSION:
        hint = " (KRaft's 2.8 preview format)" if frame == 0 else ""
        raise WireDecodeError(
            f"metadata record frame version {frame}{hint} is not supported; only {FRAME_VERSION}"
        )
    api_key, pos = decode_unsigned_varint(value, pos)
    version, pos = decode_unsigned_varint(value, pos)
    cls: type[MetadataRecord] | None = RECORD_CLASSES.get(api_key)
    if cls is None:
        raise WireDecodeError(f"unknown metadata record type {api_key}")
    info = message_info(cls)
    if not info.low <= version <= info.high:
        raise WireDecodeError(
            f"{cls.__name__} version {version} is outside {info.low}-{info.high}"
        )
    record: MetadataRecord
    record, end = decode_from(cls, version, value, pos)
    if end != len(value):
        raise WireDecodeError(
            f"{len(value) - end} byte(s) of garbage after {cls.__name__} v{version}"
        )
    if pos == _FRAME_BYTES:
        _DECODERS[bytes(value[:_FRAME_BYTES])] = _decoder_of_bytes(cls, version)
    return record


def wrap_payload(value: bytes | memoryview) -> bytes:
    """A PykraftAppend value as a metadata record value (PykraftPayloadRecord)."""
    return encode_metadata_record(PykraftPayloadRecord(payload=bytes(value)))


def unwrap_payload(value: bytes | memoryview) -> bytes | None:
    """The value ``wrap_payload`` wrapped; None for any other record value."""
    try:
        record = decode_metadata_record(value)
    except WireDecodeError:
        return None
    return bytes(record.payload) if isinstance(record, PykraftPayloadRecord) else None
