"""Control batches and control records (transaction markers, KRaft quorum records).

A control batch has attribute bit 5 set.  Each of its records has a 4-byte key,
``version int16`` (0) then ``type int16``; the value's schema depends on the
type.  KRaft writes its control values (LeaderChangeMessage, VotersRecord, ...)
with the message codec at the version Kafka pins for each (0 for all today),
uncompressed, with CreateTime and no producer id, one control batch carrying
the partition leader epoch of the leader that wrote it.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterable, Sequence
from typing import Final

from quorum.wire.codec import decode, encode
from quorum.wire.errors import CorruptRecordError, WireEncodeError
from quorum.wire.messages.control_records import LeaderChangeMessage, LeaderChangeVoter
from quorum.wire.records import Record, TimestampType, build_batch

__all__ = [
    "CONTROL_KEY_VERSION",
    "LEADER_CHANGE_VERSION",
    "ControlRecordType",
    "build_control_batch",
    "build_control_records_batch",
    "build_leader_change_batch",
    "control_record_key",
    "parse_control_record",
    "parse_leader_change",
]

CONTROL_KEY_VERSION: Final = 0
# Kafka writes and reads LeaderChangeMessage at version 0 (ControlRecordUtils), even
# though the schema has a version 1 with directory ids.
LEADER_CHANGE_VERSION: Final = 0
_KEY: Final = struct.Struct(">hh")


class ControlRecordType(enum.IntEnum):
    """Control record types; UNKNOWN stands for any id this code does not know."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


_KNOWN_TYPES: Final = {int(t): t for t in ControlRecordType if t != ControlRecordType.UNKNOWN}


def control_record_key(record_type: int) -> bytes:
    if record_type not in _KNOWN_TYPES:
        raise WireEncodeError(f"cannot write a control record of unknown type {record_type}")
    return _KEY.pack(CONTROL_KEY_VERSION, record_type)


def build_control_records_batch(
    entries: Sequence[tuple[int, bytes | None]],
    *,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
    timestamp: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    is_transactional: bool = False,
) -> bytes:
    """One control batch holding a control record per ``(type, value)`` entry, all at ``timestamp``."""
    records = [
        Record(offset_delta=i, key=control_record_key(record_type), value=value)
        for i, (record_type, value) in enumerate(entries)
    ]
    return build_batch(
        records,
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        timestamp_type=TimestampType.CREATE_TIME,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=is_transactional,
        is_control=True,
        base_timestamp=timestamp,
    )


def build_control_batch(
    record_type: int,
    value: bytes | None,
    *,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
    timestamp: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    is_transactional: bool = False,
) -> bytes:
    """A control batch with one control record of ``record_type``."""
    return build_control_records_batch(
        [(record_type, value)],
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        timestamp=timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=is_transactional,
    )


def parse_control_record(record: Record) -> tuple[ControlRecordType, bytes | None]:
    """The type and value of a record from a control batch.

    A type id this code does not know comes back as UNKNOWN (readers skip
    those, as Kafka's do); a key that is short or has a negative version is corrupt.
    """
    key = record.key
    if key is None or len(key) < _KEY.size:
        size = "null" if key is None else f"{len(key)} bytes"
        raise CorruptRecordError(
            f"control record at offset delta {record.offset_delta} has a {size} key; "
            f"it needs at least {_KEY.size} bytes (version, type)"
        )
    version, type_id = _KEY.unpack_from(key)
    if version < 0:
        raise CorruptRecordError(
            f"control record at offset delta {record.offset_delta} has key version {version}"
        )
    return _KNOWN_TYPES.get(type_id, ControlRecordType.UNKNOWN), record.value


def _voter(voter: int | LeaderChangeVoter) -> LeaderChangeVoter:
    return voter if isinstance(voter, LeaderChangeVoter) else LeaderChangeVoter(voter_id=voter)


def build_leader_change_batch(
    leader_id: int,
    voters: Iterable[int | LeaderChangeVoter],
    granting_voters: Iterable[int | LeaderChangeVoter],
    epoch: int,
    base_offset: int,
    timestamp: int,
) -> bytes:
    """The control batch a new Raft leader appends first in its epoch."""
    if epoch < 0:
        raise WireEncodeError(f"a leader change needs a valid leader epoch, not {epoch}")
    message = LeaderChangeMessage(
        version=LEADER_CHANGE_VERSION,
        leader_id=leader_id,
        voters=tuple(_voter(v) for v in voters),
        granting_voters=tuple(_voter(v) for v in granting_voters),
    )
    return build_control_batch(
        ControlRecordType.LEADER_CHANGE,
        encode(message, LEADER_CHANGE_VERSION),
        base_offset=base_offset,
        partition_leader_epoch=epoch,
        timestamp=timestamp,
    )


def parse_leader_change(record: Record) -> LeaderChangeMessage:
    """Decode the LeaderChangeMessage of a LEADER_CHANGE control record."""
    record_type, value = parse_control_record(record)
    if record_type != ControlRecordType.LEADER_CHANGE or value is None:
        raise CorruptRecordError(
            f"control record at offset delta {record.offset_delta} is {record_type.name} "
            f"with {'no' if value is None else 'a'} value, not a leader change"
        )
    message: LeaderChangeMessage = decode(LeaderChangeMessage, LEADER_CHANGE_VERSION, value)
    return message
