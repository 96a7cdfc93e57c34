"""Reading a node's metadata log from disk, read-only, for checkers.

``read_metadata_log(metadata_dir)`` lists every record of
``__cluster_metadata-0`` with its offset and the epoch of its batch. It
parses the segment files directly instead of opening a ``FileLog`` (whose
recovery may truncate a torn tail), so it never changes the directory;
read a stopped node's directory: a running node may be mid-write.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import attrs

from quorum.log import partition_dir
from quorum.wire.metadata_serde import unwrap_payload
from quorum.wire.records import iter_batches

__all__ = ["METADATA_TOPIC", "LogEntry", "metadata_partition_dir", "read_metadata_log"]

METADATA_TOPIC: Final = "__cluster_metadata"


@attrs.frozen
class LogEntry:
    offset: int
    epoch: int
    # a PykraftAppend value as it was appended (unwrapped); other records as stored
    value: bytes | None
    # LeaderChange and other control records, which the leader writes itself
    control: bool


def metadata_partition_dir(metadata_dir: str | Path) -> Path:
    return partition_dir(Path(metadata_dir), METADATA_TOPIC, 0)


def read_metadata_log(metadata_dir: str | Path) -> list[LogEntry]:
    """Every record in the segments of ``metadata_dir`` (``metadata.log.dir``), in order."""
    entries: list[LogEntry] = []
    for segment in sorted(metadata_partition_dir(metadata_dir).glob("*.log")):
        for batch in iter_batches(segment.read_bytes()):
            header = batch.header
            entries += [
                LogEntry(
                    offset=batch.offset_of(record),
                    epoch=header.partition_leader_epoch,
                    value=_unwrapped(record.value, control=header.is_control),
                    control=header.is_control,
                )
                for record in batch.records
            ]
    return entries


def _unwrapped(value: bytes | memoryview | None, *, control: bool) -> bytes | None:
    if value is None or control:
        return None if value is None else bytes(value)
    payload = unwrap_payload(value)
    return bytes(value) if payload is None else payload
