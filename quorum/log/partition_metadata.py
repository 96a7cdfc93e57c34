"""Kafka's ``partition.metadata`` file: which topic id a partition directory belongs to.

Two lines (Kafka's ``PartitionMetadataFile``)::

    version: 0
    topic_id: <22 characters of unpadded base64url>

A partition directory is named after its topic's name, and a topic deleted
and created again under the same name has a new id: the file is what tells
the old directory apart, so that a log of a deleted topic is never served as
the new topic's.  Written atomically (temp file, fsync, rename, directory
fsync) when the partition log is created; Kafka reads any version >= 0 and
rejects the zero id.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Final

from quorum.log.errors import LogError
from quorum.log.fileio import atomic_write
from quorum.wire.errors import WireDecodeError
from quorum.wire.uuids import ZERO_UUID, uuid_from_str, uuid_to_str

__all__ = [
    "PARTITION_METADATA_FILE",
    "PartitionMetadataError",
    "format_partition_metadata",
    "parse_partition_metadata",
    "read_partition_metadata",
    "write_partition_metadata",
]

PARTITION_METADATA_FILE: Final = "partition.metadata"
_VERSION: Final = 0
# Kafka splits each line at ":" followed by whitespace
_SEPARATOR: Final = re.compile(r":\s+")


class PartitionMetadataError(LogError):
    """A ``partition.metadata`` file that cannot be read (names the file and the line)."""


def format_partition_metadata(topic_id: uuid.UUID) -> str:
    return f"version: {_VERSION}\ntopic_id: {uuid_to_str(topic_id)}"


def _value(lines: list[str], number: int, name: str, path: Path) -> str:
    if len(lines) < number:
        raise PartitionMetadataError(f"{path}: line {number} ({name}) is missing")
    parts = _SEPARATOR.split(lines[number - 1].strip())
    if len(parts) != 2 or parts[0] != name:
        raise PartitionMetadataError(
            f"{path} line {number}: {lines[number - 1]!r} is not '{name}: <value>'"
        )
    return parts[1]


def parse_partition_metadata(text: str, *, path: Path) -> uuid.UUID:
    """The topic id the file's text records; ``path`` names it in errors."""
    lines = text.splitlines()
    version_text = _value(lines, 1, "version", path)
    try:
        version = int(version_text)
    except ValueError:
        raise PartitionMetadataError(
            f"{path} line 1: version {version_text!r} is not an integer"
        ) from None
    if version < _VERSION:
        raise PartitionMetadataError(f"{path} line 1: unrecognized version {version}")
    id_text = _value(lines, 2, "topic_id", path)
    try:
        topic_id = uuid_from_str(id_text)
    except WireDecodeError as exc:
        raise PartitionMetadataError(f"{path} line 2: {exc}") from None
    if topic_id == ZERO_UUID:
        raise PartitionMetadataError(f"{path} line 2: the zero topic id is not a topic's id")
    return topic_id


def read_partition_metadata(directory: Path) -> uuid.UUID | None:
    """The topic id recorded in ``directory``; None if it has no ``partition.metadata``."""
    path = directory / PARTITION_METADATA_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise PartitionMetadataError(f"{path}: not UTF-8 text") from None
    return parse_partition_metadata(text, path=path)


def write_partition_metadata(directory: Path, topic_id: uuid.UUID) -> None:
    """Record ``topic_id`` in ``directory`` durably (replacing any earlier file)."""
    atomic_write(
        directory / PARTITION_METADATA_FILE, format_partition_metadata(topic_id).encode("ascii")
    )
