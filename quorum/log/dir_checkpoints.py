"""The files a broker log directory keeps beside its partition directories.

Three offset checkpoints in Kafka's ``OffsetCheckpointFile`` format: a version
line (``0``), an entry count, then one ``topic partition offset`` line per
partition::

    replication-offset-checkpoint      high watermarks
    recovery-point-offset-checkpoint   recovery points (below: synced to disk)
    log-start-offset-checkpoint        log start offsets above the first segment's base

Each is replaced atomically (temp file, fsync, rename, directory fsync).  A
file that cannot be read raises ``CheckpointFileError`` naming the file and
the line.  An empty file reads as no entries (Kafka creates them empty).

And the clean-shutdown marker ``.kafka_cleanshutdown`` (Kafka's
``CleanShutdownFileHandler``): JSON ``{"version":0,"brokerEpoch":N}``, written
(and synced) at a clean close once everything else is on disk, removed when
the directory is opened, so a crash while the broker runs leaves no marker and
the next open recovers every log from its recovery point.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final, TypeAlias

from quorum.log.errors import LogError
from quorum.log.fileio import CHECKPOINT_VERSION, atomic_write, fsync_dir

__all__ = [
    "CLEAN_SHUTDOWN_MARKER",
    "LOG_START_OFFSET_CHECKPOINT",
    "RECOVERY_POINT_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "CheckpointFileError",
    "TopicPartition",
    "format_offsets",
    "parse_offsets",
    "read_clean_shutdown_marker",
    "read_offsets",
    "remove_clean_shutdown_marker",
    "write_clean_shutdown_marker",
    "write_offsets",
]

REPLICATION_OFFSET_CHECKPOINT: Final = "replication-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT: Final = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT: Final = "log-start-offset-checkpoint"
CLEAN_SHUTDOWN_MARKER: Final = ".kafka_cleanshutdown"
_MARKER_VERSION: Final = 0

# (topic, partition)
TopicPartition: TypeAlias = tuple[str, int]


class CheckpointFileError(LogError):
    """A log directory's checkpoint file that cannot be read (names the file and line)."""


def format_offsets(offsets: Mapping[TopicPartition, int]) -> str:
    lines = [str(CHECKPOINT_VERSION), str(len(offsets))]
    lines.extend(f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items()))
    return "\n".join(lines) + "\n"


def _integer(text: str, path: Path, number: int, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise CheckpointFileError(f"{path} line {number}: {what} {text!r} is not an integer") from None


def _entry(line: str, path: Path, number: int) -> tuple[TopicPartition, int]:
    parts = line.split()
    if len(parts) != 3:
        raise CheckpointFileError(
            f"{path} line {number}: {line!r} is not 'topic partition offset'"
        )
    topic, partition_text, offset_text = parts
    partition = _integer(partition_text, path, number, "partition")
    offset = _integer(offset_text, path, number, "offset")
    if partition < 0 or offset < 0:
        raise CheckpointFileError(f"{path} line {number}: {line!r} has a negative number")
    return (topic, partition), offset


def parse_offsets(text: str, *, path: Path) -> dict[TopicPartition, int]:
    """The entries of an offset checkpoint's text; ``path`` names it in errors."""
    lines = text.splitlines()
    if not lines:
        return {}
    version = _integer(lines[0].strip(), path, 1, "version")
    if version != CHECKPOINT_VERSION:
        raise CheckpointFileError(
            f"{path} line 1: version {version} is not the supported {CHECKPOINT_VERSION}"
        )
    if len(lines) < 2:
        return {}
    count = _integer(lines[1].strip(), path, 2, "entry count")
    offsets: dict[TopicPartition, int] = {}
    for number, line in enumerate(lines[2:], start=3):
        key, offset = _entry(line, path, number)
        if key in offsets:
            raise CheckpointFileError(f"{path} line {number}: {key[0]}-{key[1]} is listed twice")
        offsets[key] = offset
    if len(offsets) != count:
        raise CheckpointFileError(
            f"{path} line 2: it says {count} entries but {len(offsets)} follow"
        )
    return offsets


def read_offsets(path: Path) -> dict[TopicPartition, int]:
    """The entries of an offset checkpoint file; none if it does not exist."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CheckpointFileError(f"{path}: not UTF-8 text ({exc})") from None
    return parse_offsets(text, path=path)


def write_offsets(path: Path, offsets: Mapping[TopicPartition, int]) -> None:
    """Replace ``path`` atomically with ``offsets``."""
    atomic_write(path, format_offsets(offsets).encode("utf-8"))


def write_clean_shutdown_marker(log_dir: Path, broker_epoch: int = -1) -> None:
    """Mark ``log_dir`` cleanly closed (last, once its logs and checkpoints are on disk)."""
    content = json.dumps({"version": _MARKER_VERSION, "brokerEpoch": broker_epoch})
    atomic_write(log_dir / CLEAN_SHUTDOWN_MARKER, content.encode("ascii"))


def read_clean_shutdown_marker(log_dir: Path) -> int | None:
    """The broker epoch the marker records (-1 if it records none); None without a marker
    (or with one that cannot be read: Kafka reads such a marker as no broker epoch)."""
    try:
        content = json.loads((log_dir / CLEAN_SHUTDOWN_MARKER).read_bytes())
        epoch = content["brokerEpoch"]
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError):
        return -1
    return epoch if isinstance(epoch, int) else -1


def remove_clean_shutdown_marker(log_dir: Path) -> bool:
    """Remove the marker (durably); True if there was one."""
    try:
        os.unlink(log_dir / CLEAN_SHUTDOWN_MARKER)
    except FileNotFoundError:
        return False
    fsync_dir(log_dir)
    return True
