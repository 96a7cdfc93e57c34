"""Open a partition directory: validate segments, cut a torn tail, rebuild state.

Which segments may hold writes that never reached the disk depends on who
keeps the log (``OpenMode``):

* The metadata log syncs a segment before it rolls to the next one, so only
  the last segment can be torn.
* A data partition of a broker log directory syncs when its flush policy says
  so (``quorum.log.flush_policy``); its recovery point (from the log
  directory's ``recovery-point-offset-checkpoint``) is the offset below which
  everything was synced, so every segment from the one holding the recovery
  point on may be torn (Kafka's ``LogLoader.recoverLog``).  After a clean
  shutdown (the log directory's marker) nothing is read at all: the last
  segment's end comes from its index file and the headers after its last
  entry.

Rules for the segments that may be torn:

* Each is scanned from its start; each batch must have a sane header, a
  matching CRC-32C, offsets that continue the log (in a data partition,
  increase: the log cleaner leaves gaps where it removed batches, and a
  follower copies them; see ``offset_gaps_allowed``), and an epoch that is not
  negative and agrees with ``leader-epoch-checkpoint`` (the epoch field is
  outside the CRC; the checkpoint is written before the batches of a new
  epoch, so every durable batch's epoch is in it).  The first bad or
  incomplete batch and everything after it are cut off (the file is
  truncated, later segments are deleted), with a warning on logger
  ``quorum.log`` saying how many bytes were dropped.  A segment that ends
  before the next one begins is cut the same way, unless (in a data
  partition) the next one's first batch could not have been indexed from
  where it ends: a follower rolled over its leader's gap there
  (``followed_over_gap``; ``quorum.log.roll``).

Before anything is listed, what a crash left of a log cleaner's swap is
finished or discarded (``quorum.log.cleaner_swap``).

Segments before them are scanned the same way when
``LogConfig.verify_closed_segments_on_open`` is set (the default); any
problem there, or a gap between segments, raises ``LogCorruptionError``
naming the file and byte position.  Otherwise they are trusted as they are
and their index files are read when first needed.

* The indexes (offset and time) of every scanned segment are rebuilt from its
  batches.
* The leader-epoch cache is the checkpoint minus entries at or beyond the
  recovered log end offset.  A missing or malformed checkpoint is reported
  and rebuilt from the batches (an epoch that no remaining batch carries, say
  one kept only for the log start offset, is then lost).
* The log start offset is ``max(checkpointed log start, first segment's base
  offset)``; if that is past the recovered log end (the start moved ahead of
  data that was never synced) the log restarts empty there.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Final

import attrs

from quorum.log.batch_scan import BatchInfo, EpochLookup, scan_batches
from quorum.log.cleaner_swap import complete_interrupted_swaps
from quorum.log.config import LogConfig
from quorum.log.epoch_cache import EpochCache
from quorum.log.errors import LogCorruptionError
from quorum.log.file_cache import OpenFiles
from quorum.log.fileio import fsync_dir, read_checkpoint, write_checkpoint
from quorum.log.roll import beyond_reach
from quorum.log.segment import Segment
from quorum.wire.batch import batch_size_at

__all__ = [
    "EPOCH_CHECKPOINT",
    "LOG_START_CHECKPOINT",
    "FileScan",
    "OpenMode",
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
class OpenMode:
    """Who keeps the log: the metadata log (the default) or a data partition.

    A data partition's log start offset and recovery point come from its log
    directory's checkpoints (``quorum.log.log_dir``; a partition they do not
    list starts at 0 and is recovered from 0), and ``clean_shutdown`` from the
    directory's marker.  The metadata log keeps its log start offset in its own
    ``log-start-offset-checkpoint`` and only its last segment can be torn.
    """

    data_partition: bool = False
    log_start_offset: int | None = None
    recovery_point: int = 0
    clean_shutdown: bool = False

    @classmethod
    def for_data_partition(
        cls, *, log_start_offset: int | None, recovery_point: int, clean_shutdown: bool
    ) -> OpenMode:
        return cls(
            data_partition=True,
            log_start_offset=log_start_offset,
            recovery_point=recovery_point,
            clean_shutdown=clean_shutdown,
        )


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
    # where recovery after the next unclean shutdown must start checking
    recovery_point: int


def scan_segment_file(
    segment: Segment,
    *,
    file_size: int | None = None,
    epoch_at: EpochLookup | None = None,
    allow_gaps: bool = False,
) -> FileScan:
    """Validate the batches of a segment file in chunks, from its first byte
    (``allow_gaps``: see ``offset_gaps_allowed``)."""
    size = segment.file_size() if file_size is None else file_size
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
            allow_gaps=allow_gaps,
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
    complete_interrupted_swaps(directory)
    for path in directory.glob("*.tmp"):
        logger.info("removing unfinished temporary file %s", path)
        path.unlink()
    for pattern in ("*.index", "*.timeindex"):
        for path in directory.glob(pattern):
            if not path.with_suffix(".log").exists():
                path.unlink()


def _segment_bases(directory: Path) -> list[int]:
    return sorted(
        int(entry.name[:20]) for entry in os.scandir(directory) if _SEGMENT_NAME.match(entry.name)
    )


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


def _cut(segment: Segment, scan: FileScan) -> None:
    logger.warning(
        "%s: %s; cutting the log there and dropping %d bytes",
        segment.log_path,
        scan.error,
        scan.file_size - scan.valid_size,
    )
    segment.cut_file(scan.valid_size)


def followed_over_gap(previous: Segment, segment: Segment, mode: OpenMode) -> bool:
    """Whether ``previous`` ends before ``segment`` begins because a data partition's
    follower rolled over a gap too wide to index (``quorum.log.roll``): ``segment``
    starts at its first batch, whose offsets cannot be indexed from ``previous``'s end.
    If so ``previous`` claims the gap again (``Segment.claim_gap_to``).

    A torn ``previous`` followed by an intact ``segment`` is taken for this only if
    the batches it lost reached almost ``MAX_RELATIVE_OFFSET`` offsets past what it
    kept (its own gap included): ``segment``'s first batch was within reach of the
    true end. Kafka's recovery checks no segment's end at all."""
    if not mode.data_partition or previous.next_offset >= segment.base_offset:
        return False
    try:
        first = next(segment.headers_from(0), None)
    except LogCorruptionError:
        return False  # torn: its scan cuts it
    if first is None:
        return False
    _, base, _, last, _ = first
    if base != segment.base_offset or not beyond_reach(previous.next_offset, last):
        return False
    previous.claim_gap_to(segment.base_offset)
    return True


def _check_contiguous(previous: Segment, segment: Segment, mode: OpenMode) -> None:
    if followed_over_gap(previous, segment, mode):
        return
    if previous.next_offset != segment.base_offset:
        raise segment.corruption(
            0,
            f"the segment starts at offset {segment.base_offset} but the one before it "
            f"ends at offset {previous.next_offset}",
        )


def _first_unflushed(segments: list[Segment], mode: OpenMode) -> int:
    """Index of the first segment that may hold writes that never reached the disk."""
    if not mode.data_partition:
        return len(segments) - 1
    found = 0
    for i, segment in enumerate(segments):
        if segment.base_offset <= mode.recovery_point:
            found = i
    return found


def offset_gaps_allowed(mode: OpenMode) -> bool:
    """Whether offsets may skip ahead inside a segment: the log cleaner rewrites
    a data partition's closed segments without the batches it removes, and a follower
    appends its cleaned leader's batches as they are, into any segment, the last one
    included (Kafka's ``LogSegment.recover`` does not check offsets either). The
    metadata log must continue exactly, so a flipped base offset there (the CRC does
    not cover it) is caught; in a data partition only one that goes down is."""
    return mode.data_partition


def _recover_unflushed(
    segments: list[Segment], first: int, epoch_at: EpochLookup | None, mode: OpenMode
) -> tuple[list[BatchInfo], list[Segment]]:
    """Scan segments ``first..`` and cut at the first torn batch; returns the batches and
    the segments to delete (everything after a cut)."""
    scanned: list[BatchInfo] = []
    for i in range(first, len(segments)):
        segment = segments[i]
        scan = scan_segment_file(segment, epoch_at=epoch_at, allow_gaps=offset_gaps_allowed(mode))
        following = segments[i + 1] if i + 1 < len(segments) else None
        if scan.error is not None:
            _cut(segment, scan)
        segment.adopt_scanned(scan.batches, scan.valid_size)
        scanned.extend(scan.batches)
        gap = following is not None and following.base_offset != segment.next_offset
        if gap and scan.error is None and following is not None:
            gap = not followed_over_gap(segment, following, mode)
        if gap and scan.error is None:
            logger.warning(
                "%s ends at offset %d but the next segment starts at %d; cutting the log there",
                segment.log_path,
                segment.next_offset,
                following.base_offset if following else -1,
            )
        if scan.error is not None or gap:
            return scanned, segments[i + 1 :]
    return scanned, []


def _open_segments(
    directory: Path,
    config: LogConfig,
    mode: OpenMode,
    files: OpenFiles,
    now_ms: int,
    checkpointed: EpochCache | None,
) -> tuple[list[Segment], list[BatchInfo], bool]:
    """Open and recover every segment; also the scanned batches and whether all were."""
    epoch_at = checkpointed.epoch_at if checkpointed is not None else None
    segments = [
        Segment(directory, base, config=config, files=files, created_ms=now_ms)
        for base in _segment_bases(directory)
    ]
    if not segments:
        return segments, [], True
    try:
        if mode.clean_shutdown and mode.data_partition:
            for i, segment in enumerate(segments[:-1]):
                segment.adopt_trusted(next_offset=segments[i + 1].base_offset, may_end_early=True)
            segments[-1].adopt_cleanly_closed()
            return segments, [], False
        first = _first_unflushed(segments, mode)
        scanned: list[BatchInfo] = []
        complete = True
        for i in range(first):
            segment = segments[i]
            if config.verify_closed_segments_on_open:
                scan = scan_segment_file(
                    segment, epoch_at=epoch_at, allow_gaps=offset_gaps_allowed(mode)
                )
                if scan.error is not None:
                    raise segment.corruption(scan.valid_size, scan.error)
                segment.adopt_scanned(scan.batches, scan.valid_size)
                scanned.extend(scan.batches)
                if i > 0:
                    _check_contiguous(segments[i - 1], segment, mode)
            else:
                segment.adopt_trusted(
                    next_offset=segments[i + 1].base_offset, may_end_early=mode.data_partition
                )
                complete = False
        tail, doomed = _recover_unflushed(segments, first, epoch_at, mode)
        if first > 0:
            _check_contiguous(segments[first - 1], segments[first], mode)
        scanned.extend(tail)
    except BaseException:
        for segment in segments:
            segment.close()
        raise
    for segment in doomed:
        segment.delete()
    if doomed:
        fsync_dir(directory)
    return segments[: len(segments) - len(doomed)], scanned, complete


def _create_segment(
    directory: Path, base_offset: int, config: LogConfig, files: OpenFiles, now_ms: int
) -> Segment:
    segment = Segment(
        directory, base_offset, config=config, files=files, created_ms=now_ms, create=True
    )
    fsync_dir(directory)
    return segment


def _all_batches(segments: list[Segment], mode: OpenMode) -> list[BatchInfo]:
    batches: list[BatchInfo] = []
    allow_gaps = offset_gaps_allowed(mode)
    for segment in segments:
        scan = scan_segment_file(segment, file_size=segment.size, allow_gaps=allow_gaps)
        if scan.error is not None:
            raise segment.corruption(scan.valid_size, scan.error)
        batches.extend(scan.batches)
    return batches


def _recover_epochs(
    cache: EpochCache | None,
    segments: list[Segment],
    scanned: list[BatchInfo],
    complete: bool,
    mode: OpenMode,
) -> EpochCache:
    """The epoch cache for the recovered segments (see the module docstring)."""
    if cache is not None:
        # every scanned batch agreed with it, so only entries past the end can be stale
        cache.truncate_from_end(segments[-1].next_offset)
        return cache
    batches = scanned if complete else _all_batches(segments, mode)
    rebuilt = EpochCache()
    for batch in batches:
        rebuilt.assign(batch.epoch, batch.base_offset)
    return rebuilt


def recover(
    directory: Path, config: LogConfig, mode: OpenMode, *, files: OpenFiles, now_ms: int
) -> RecoveredLog:
    """Bring a partition directory to a consistent state and describe it."""
    directory.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(directory)
    own_file = not mode.data_partition
    checkpoint_start = _read_log_start(directory) if own_file else mode.log_start_offset
    checkpointed = _read_epochs(directory)
    segments, scanned, complete = _open_segments(
        directory, config, mode, files, now_ms, checkpointed
    )
    # a log created empty here has nothing unsynced
    created = not segments
    if created:
        segments = [_create_segment(directory, checkpoint_start or 0, config, files, now_ms)]
    log_end = segments[-1].next_offset
    log_start = max(checkpoint_start or 0, segments[0].base_offset)
    epochs = _recover_epochs(checkpointed, segments, scanned, complete, mode)
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
        segments = [_create_segment(directory, log_start, config, files, now_ms)]
        created = True
        epochs.clear()
    epochs.truncate_from_start(log_start)
    epochs.truncate_from_end(segments[-1].next_offset)
    if read_checkpoint_rows(directory) != epochs.to_rows():
        write_checkpoint(directory / EPOCH_CHECKPOINT, epochs.to_rows())
    if own_file and checkpoint_start != log_start:
        write_log_start_offset(directory, log_start)
    log_end = segments[-1].next_offset
    clean = mode.clean_shutdown and mode.data_partition
    recovery_point = log_end if clean or created else min(mode.recovery_point, log_end)
    return RecoveredLog(
        segments=segments, log_start_offset=log_start, epochs=epochs, recovery_point=recovery_point
    )


def read_checkpoint_rows(directory: Path) -> list[tuple[int, ...]] | None:
    """The epoch checkpoint's rows as stored, None if missing or malformed."""
    try:
        return read_checkpoint(directory / EPOCH_CHECKPOINT, width=2)
    except ValueError:
        return None
