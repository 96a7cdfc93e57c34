"""Open a partition directory: validate segments, cut a torn tail, rebuild state.

Rules (the file log syncs a segment before it rolls to the next one, so only
the last segment can hold writes that never reached the disk):

* The last segment is scanned from its start; each batch must have a sane
  header, a matching CRC-32C, offsets that continue the log, and an epoch that
  is not negative and agrees with ``leader-epoch-checkpoint`` (the epoch field
  is outside the CRC; the checkpoint is written before the batches of a new
  epoch, so every durable batch's epoch is in it).  The first bad or
  incomplete batch and everything after it are cut off (the file is
  truncated), with a warning on logger ``quorum.log`` saying how many bytes
  were dropped.
* Earlier segments are scanned the same way when
  ``LogConfig.verify_closed_segments_on_open`` is set (the default); any
  problem there, or a gap between segments, raises ``LogCorruptionError``
  naming the file and byte position.  Otherwise they are trusted as they are.
* The offset index of every scanned segment is rebuilt from its batches.
* The leader-epoch cache is the checkpoint minus entries at or beyond the
  recovered log end offset.  A missing or malformed checkpoint is reported
  and rebuilt from the batches (an epoch that no remaining batch carries, say
  one kept only for the log start offset, is then lost).
* The log start offset is ``max(log-start-offset-checkpoint, first segment's
  base offset)``; if that is past the recovered log end (the start moved
  ahead of data that was never synced) the log restarts empty there.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Final

import attrs

from quorum.log.batch_scan import BatchInfo, EpochLookup, scan_batches
from quorum.log.config import LogConfig
from quorum.log.epoch_cache import EpochCache
from quorum.log.fileio import fsync_dir, read_checkpoint, write_checkpoint
from quorum.log.offset_index import OffsetIndex
from quorum.log.segment import Segment
from quorum.wire.batch import batch_size_at

__all__ = [
    "EPOCH_CHECKPOINT",
    "LOG_START_CHECKPOINT",
    "FileScan",
    "RecoveredLog",
    "recover",
    "scan_segment_file",
    "write_log_start_offset",
]

EPOCH_CHECKPOINT: Final = "leader-epoch-checkpoint"
LOG_START_CHECKPOINT: Final = "log-start-offset-checkpoint"
_SEGMENT_NAME: Final = re.compile(r"^\d{20}\.log$")
_CHUNK_BYTES: Final = 1 << 20

logger = logging.getLogger("quorum.log")


@attrs.frozen(kw_only=True)
class FileScan:
    """The valid prefix ``[0, valid_size)`` of a segment file and why it stopped."""

    batches: list[BatchInfo]
    valid_size: int
    file_size: int
    error: str | None


@attrs.define(kw_only=True)
class RecoveredLog:
    segments: list[Segment]
    log_start_offset: int
    epochs: EpochCache


def scan_segment_file(
    segment: Segment,
    *,
    file_size: int | None = None,
    epoch_at: EpochLookup | None = None,
) -> FileScan:
    """Validate the batches of a segment file in chunks, from its first byte."""
    size = os.fstat(segment.fd).st_size if file_size is None else file_size
    batches: list[BatchInfo] = []
    position = 0
    expected = segment.base_offset
    want = _CHUNK_BYTES
    while position < size:
        buf = segment.pread(min(want, size - position), position)
        # epochs may go down across a log start that moved to the log end (the
        # epochs are forgotten there), so on disk only the checkpoint judges them
        scan = scan_batches(
            buf,
            origin=position,
            expected_offset=expected,
            epoch_at=epoch_at,
            monotonic_epochs=False,
        )
        batches.extend(scan.batches)
        if scan.batches:
            expected = scan.batches[-1].next_offset
        if scan.error is not None:
            return FileScan(batches=batches, valid_size=scan.end, file_size=size, error=scan.error)
        position = scan.end
        if scan.partial:
            remaining = size - position
            claimed = batch_size_at(segment.pread(12, position), 0)
            if claimed is None or claimed > remaining:
                problem = (
                    f"the last batch at byte {position} is incomplete "
                    f"({remaining} bytes remain of {claimed if claimed else 'at least 12'})"
                )
                return FileScan(batches=batches, valid_size=position, file_size=size, error=problem)
            want = max(_CHUNK_BYTES, claimed)
    return FileScan(batches=batches, valid_size=position, file_size=size, error=None)


def _remove_leftovers(directory: Path) -> None:
    for path in directory.glob("*.tmp"):
        logger.info("removing unfinished temporary file %s", path)
        path.unlink()
    for path in directory.glob("*.index"):
        if not path.with_suffix(".log").exists():
            path.unlink()


def _segment_bases(directory: Path) -> list[int]:
    return sorted(int(p.name[:20]) for p in directory.iterdir() if _SEGMENT_NAME.match(p.name))


def _read_log_start(directory: Path) -> int | None:
    path = directory / LOG_START_CHECKPOINT
    try:
        rows = read_checkpoint(path, width=1)
    except ValueError as exc:
        logger.warning(
            "%s is malformed (%s); using the first segment's base offset as the log start",
            path,
            exc,
        )
        return None
    if rows is None:
        return None
    if len(rows) != 1 or rows[0][0] < 0:
        logger.warning("%s does not hold one offset; ignoring it", path)
        return None
    return rows[0][0]


def write_log_start_offset(directory: Path, offset: int) -> None:
    write_checkpoint(directory / LOG_START_CHECKPOINT, [(offset,)])


def _read_epochs(directory: Path) -> EpochCache | None:
    """The checkpointed cache, or None (with a warning) if it cannot be trusted."""
    path = directory / EPOCH_CHECKPOINT
    try:
        rows = read_checkpoint(path, width=2)
        # a missing checkpoint is rebuilt from the batches, as a malformed one is
        return None if rows is None else EpochCache.from_rows(rows)
    except ValueError as exc:
        logger.warning(
            "%s is malformed (%s); rebuilding the leader-epoch cache from the log's batches",
            path,
            exc,
        )
        return None


def _recover_tail(segment: Segment, epoch_at: EpochLookup | None) -> FileScan:
    scan = scan_segment_file(segment, epoch_at=epoch_at)
    if scan.error is not None:
        dropped = scan.file_size - scan.valid_size
        logger.warning(
            "%s: %s; cutting the log there and dropping %d bytes",
            segment.log_path,
            scan.error,
            dropped,
        )
        os.ftruncate(segment.fd, scan.valid_size)
        os.fsync(segment.fd)
    return scan


def _recover_closed(
    segment: Segment,
    following: Segment,
    config: LogConfig,
    epoch_at: EpochLookup | None,
) -> FileScan | None:
    """Scan (or trust) a segment that is not the last; raises on corruption."""
    if not config.verify_closed_segments_on_open:
        index = OffsetIndex.load(segment.index_path, segment.base_offset, segment.size)
        if index is not None:
            segment.adopt_unverified(next_offset=following.base_offset, index=index)
            return None
    scan = scan_segment_file(segment, epoch_at=epoch_at)
    if scan.error is not None:
        raise segment.corruption(scan.valid_size, scan.error)
    return scan


def _check_contiguous(previous: Segment, segment: Segment) -> None:
    if previous.next_offset != segment.base_offset:
        raise segment.corruption(
            0,
            f"the segment starts at offset {segment.base_offset} but the one before it "
            f"ends at offset {previous.next_offset}",
        )


def _open_segments(
    directory: Path, config: LogConfig, checkpointed: EpochCache | None
) -> tuple[list[Segment], list[BatchInfo], bool]:
    """Open and recover every segment; also returns the scanned batches, in order."""
    epoch_at = checkpointed.epoch_at if checkpointed is not None else None
    segments = [
        Segment(directory, base, index_interval_bytes=config.index_interval_bytes)
        for base in _segment_bases(directory)
    ]
    scanned: list[BatchInfo] = []
    complete = True
    try:
        for i, segment in enumerate(segments):
            last = i == len(segments) - 1
            if last:
                scan: FileScan | None = _recover_tail(segment, epoch_at)
            else:
                scan = _recover_closed(segment, segments[i + 1], config, epoch_at)
            if scan is None:
                complete = False
            else:
                segment.adopt_scanned(scan.batches, scan.valid_size)
                segment.index.replace_file_if_stale()
                scanned.extend(scan.batches)
            if i > 0:
                _check_contiguous(segments[i - 1], segment)
    except BaseException:
        for segment in segments:
            segment.close()
        raise
    return segments, scanned, complete


def _create_segment(directory: Path, base_offset: int, config: LogConfig) -> Segment:
    segment = Segment(
        directory, base_offset, index_interval_bytes=config.index_interval_bytes, create=True
    )
    fsync_dir(directory)
    return segment


def _all_batches(segments: list[Segment]) -> list[BatchInfo]:
    batches: list[BatchInfo] = []
    for segment in segments:
        scan = scan_segment_file(segment, file_size=segment.size)
        if scan.error is not None:
            raise segment.corruption(scan.valid_size, scan.error)
        batches.extend(scan.batches)
    return batches


def _recover_epochs(
    cache: EpochCache | None, segments: list[Segment], scanned: list[BatchInfo], complete: bool
) -> EpochCache:
    """The epoch cache for the recovered segments (see the module docstring)."""
    if cache is not None:
        # every scanned batch agreed with it, so only entries past the end can be stale
        cache.truncate_from_end(segments[-1].next_offset)
        return cache
    batches = scanned if complete else _all_batches(segments)
    rebuilt = EpochCache()
    for batch in batches:
        rebuilt.assign(batch.epoch, batch.base_offset)
    return rebuilt


def recover(directory: Path, config: LogConfig) -> RecoveredLog:
    """Bring a partition directory to a consistent state and describe it."""
    directory.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(directory)
    checkpoint_start = _read_log_start(directory)
    checkpointed = _read_epochs(directory)
    segments, scanned, complete = _open_segments(directory, config, checkpointed)
    if not segments:
        segments = [_create_segment(directory, checkpoint_start or 0, config)]
    log_end = segments[-1].next_offset
    log_start = max(checkpoint_start or 0, segments[0].base_offset)
    epochs = _recover_epochs(checkpointed, segments, scanned, complete)
    if log_start > log_end:
        logger.warning(
            "%s: the log start offset %d is past the recovered log end offset %d; "
            "the log restarts empty at %d",
            directory,
            log_start,
            log_end,
            log_start,
        )
        for segment in segments:
            segment.delete()
        segments = [_create_segment(directory, log_start, config)]
        epochs.clear()
    epochs.truncate_from_start(log_start)
    epochs.truncate_from_end(segments[-1].next_offset)
    if read_checkpoint_rows(directory) != epochs.to_rows():
        write_checkpoint(directory / EPOCH_CHECKPOINT, epochs.to_rows())
    if checkpoint_start != log_start:
        write_log_start_offset(directory, log_start)
    return RecoveredLog(segments=segments, log_start_offset=log_start, epochs=epochs)


def read_checkpoint_rows(directory: Path) -> list[tuple[int, ...]] | None:
    """The epoch checkpoint's rows as stored, None if missing or malformed."""
    try:
        return read_checkpoint(directory / EPOCH_CHECKPOINT, width=2)
    except ValueError:
        return None
