"""Offline reading of a metadata log directory, for tools: files are never changed.

Opening a ``FileLog`` runs recovery, which may cut a torn tail, rebuild
indexes and remove unfinished snapshots; a tool that inspects a node's
directory must not do that. Here segment and snapshot files are read batch
by batch with plain reads. ``load_metadata_image`` builds the image from the
latest snapshot and every batch of the log after it: with no high watermark
at hand it includes records that may never have been committed, as Kafka's
metadata shell does. Read a stopped node's directory; a running node may be
mid-write.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import attrs

from quorum.controller.delta import MetadataDelta, MetadataReplayError
from quorum.controller.image import EMPTY_IMAGE, MetadataImage, Provenance
from quorum.controller.log_records import LogBatch, MetadataLogError, iter_log_batches
from quorum.controller.snapshot import read_snapshot
from quorum.log.protocol import OffsetAndEpoch
from quorum.wire.batch import BATCH_HEADER_SIZE, LOG_OVERHEAD, BatchHeader, batch_size_at
from quorum.wire.errors import WireError

__all__ = [
    "METADATA_PARTITION",
    "BatchFileReader",
    "OfflineImage",
    "RawBatch",
    "load_metadata_image",
    "metadata_partition_directory",
    "segment_files",
    "snapshot_files",
]

METADATA_PARTITION: Final = "__cluster_metadata-0"
_SEGMENT: Final = re.compile(r"^(\d{20})\.log$")
_SNAPSHOT: Final = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


def metadata_partition_directory(directory: Path) -> Path:
    """``directory/__cluster_metadata-0`` if it exists (a ``metadata.log.dir``), else itself."""
    inner = directory / METADATA_PARTITION
    return inner if inner.is_dir() else directory


def segment_files(directory: Path) -> list[Path]:
    """The ``<20-digit base offset>.log`` files, oldest first."""
    return sorted(p for p in directory.iterdir() if _SEGMENT.match(p.name))


def snapshot_files(directory: Path) -> list[tuple[OffsetAndEpoch, Path]]:
    """The ``<offset>-<epoch>.checkpoint`` files with their ids, oldest first."""
    found = []
    for path in directory.iterdir():
        match = _SNAPSHOT.match(path.name)
        if match:
            found.append((OffsetAndEpoch(int(match[1]), int(match[2])), path))
    return sorted(found)


@attrs.frozen
class RawBatch:
    """One batch as stored: where it starts in its file, its bytes, and its header."""

    position: int
    data: bytes
    header: BatchHeader
    crc_valid: bool


class BatchFileReader:
    """The batches of one segment or snapshot file, read one at a time.

    Iteration stops at the first bytes that cannot start a batch (too short,
    a bad length or magic, or cut off by the end of the file); afterwards
    ``trailing_bytes`` says how many bytes were left unread.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.trailing_bytes = 0

    def __iter__(self) -> Iterator[RawBatch]:
        with open(self.path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            position = 0
            while position < size:
                batch = self._read_batch(file.fileno(), position, size)
                if batch is None:
                    self.trailing_bytes = size - position
                    return
                yield batch
                position += len(batch.data)

    @staticmethod
    def _read_batch(fd: int, position: int, size: int) -> RawBatch | None:
        length = batch_size_at(os.pread(fd, LOG_OVERHEAD, position), 0)
        if length is None or length < BATCH_HEADER_SIZE or position + length > size:
            return None
        data = os.pread(fd, length, position)
        try:
            header = BatchHeader.parse(data)
        except WireError:
            return None
        return RawBatch(position, data, header, header.crc_matches(data))


@attrs.frozen(kw_only=True)
class OfflineImage:
    image: MetadataImage
    # the snapshot the image started from (None: from the empty image)
    snapshot_id: OffsetAndEpoch | None
    # metadata records replayed from the log after the snapshot
    log_record_count: int
    # bytes at the end of the last segment that are not a whole, valid batch (a torn tail)
    torn_tail_bytes: int


def _segment_batches(segments: list[Path]) -> Iterator[tuple[Path, RawBatch]]:
    """Every valid batch; a bad batch or stray bytes are an error except at the very end."""
    for index, path in enumerate(segments):
        reader = BatchFileReader(path)
        last = index == len(segments) - 1
        for raw in reader:
            if not raw.crc_valid:
                if last:
                    return
                raise MetadataLogError(
                    f"{path}: the batch at byte {raw.position} fails its CRC-32C check"
                )
            yield path, raw
        if reader.trailing_bytes and not last:
            raise MetadataLogError(
                f"{path}: {reader.trailing_bytes} bytes at its end are not a whole batch"
            )


def _replay_batch(delta: MetadataDelta, batch: LogBatch, start: int) -> int:
    count = 0
    for offset, record in batch.records:
        if offset < start:
            continue
        try:
            delta.replay(record)
        except MetadataReplayError as exc:
            raise MetadataLogError(f"the record at offset {offset} does not apply: {exc}") from exc
        count += 1
    return count


def _tail_bytes(segments: list[Path], end_position: int) -> int:
    return segments[-1].stat().st_size - end_position if segments else 0


def load_metadata_image(directory: Path) -> OfflineImage:
    """The image of the latest snapshot plus the log after it (see the module doc)."""
    partition = metadata_partition_directory(directory)
    if not partition.is_dir():
        raise MetadataLogError(f"{directory} is not a directory")
    snapshots = snapshot_files(partition)
    snapshot_id, image = None, EMPTY_IMAGE
    if snapshots:
        snapshot_id, path = snapshots[-1]
        image = read_snapshot(path.read_bytes(), snapshot_id)
    delta = MetadataDelta(image)
    next_offset, epoch, count = image.provenance.offset, image.provenance.epoch, 0
    segments = segment_files(partition)
    end_position = 0
    for path, raw in _segment_batches(segments):
        end_position = raw.position + len(raw.data) if path == segments[-1] else 0
        header = raw.header
        if header.next_offset <= next_offset:
            continue  # covered by the snapshot
        if header.base_offset > next_offset:
            raise MetadataLogError(
                f"{path}: the log jumps from offset {next_offset} to {header.base_offset} "
                f"at byte {raw.position}"
            )
        for batch in iter_log_batches(raw.data):
            count += _replay_batch(delta, batch, next_offset)
        next_offset, epoch = header.next_offset, header.partition_leader_epoch
    return OfflineImage(
        image=delta.apply(Provenance(next_offset, epoch)),
        snapshot_id=snapshot_id,
        log_record_count=count,
        torn_tail_bytes=_tail_bytes(segments, end_position),
    )
