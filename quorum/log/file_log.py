"""The file log: Kafka's on-disk layout behind the log protocol.

A partition directory ``<log.dir>/<topic>-<partition>/`` holds::

    00000000000000000000.log        record batches, back to back
    00000000000000000000.index      sparse offset index of that segment
    00000000000000000000.timeindex  sparse time index of that segment
    leader-epoch-checkpoint         epoch -> start offset (Kafka's text format)
    log-start-offset-checkpoint     the log start offset (metadata log only; one row)
    <offset>-<epoch>.checkpoint     snapshots (KIP-630)

Two keepers (``OpenMode``):

* The metadata log: ``flush()`` fsyncs the active segment; rolling to a new
  segment first fsyncs the old one and then the directory, so unsynced bytes
  can only ever be in the last segment, and recovery scans only that one.  The
  log start offset has its own checkpoint file in the partition directory,
  written before segments below it are deleted.
* A data partition of a broker log directory (``quorum.log.log_dir``): a roll
  syncs nothing; the flush policy (``flush_due``) says when ``flush()`` is due,
  and ``flush()`` syncs every segment from the recovery point on (and the
  directory when segments were created).  The log directory checkpoints the
  log start offset and the recovery point; recovery scans from the recovery
  point, or nothing after a clean shutdown.  The log is opened lazily: no file
  is touched until first use (``load()`` forces it, e.g. in a worker thread).

Either way checkpoint files are replaced atomically (temp file, fsync, rename,
directory fsync), and the epoch checkpoint is written before the batches that
start a new epoch, so it never lacks an epoch that the durable log holds.

A data partition's offsets may skip: the log cleaner removes records and
keeps offsets, and a follower appends its cleaned leader's batches as they
are (``quorum.log.appends``); reads, truncation and recovery take the first
batch after an offset in a gap. A segment's next offset is still where the
next segment begins: a roll starts the new segment at the log end, so a gap
lies inside a segment, and a gap too wide to index from there is claimed by
the segment before (``quorum.log.roll``).

Reads use ``os.pread`` into a fresh buffer and return a ``memoryview`` of the
whole batches in it: one copy from the page cache, none after that.

Not safe for concurrent use: one task owns a log (``flush`` may run in a
worker thread beside appends; see there).
"""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import attrs

from quorum.log import retention, timestamp_search
from quorum.log.appends import PreparedAppend, prepare_follower_append, prepare_leader_append
from quorum.log.clock import Clock, wall_clock_ms
from quorum.log.config import LogConfig
from quorum.log.errors import OffsetOutOfRangeError
from quorum.log.file_cache import OpenFiles, default_open_files
from quorum.log.flush_policy import FlushReason, flush_due, next_flush_deadline_ms
from quorum.log.log_files import LogFiles
from quorum.log.producer_snapshots import ProducerEntry, ProducerSnapshot
from quorum.log.protocol import AppendInfo, OffsetAndEpoch, ReadResult, SnapshotData
from quorum.log.recovery import OpenMode
from quorum.log.roll import Incoming, roll_offset, should_roll
from quorum.log.segment import Segment
from quorum.log.timestamps import TimestampAndOffset
from quorum.wire.batch import LOG_OVERHEAD
from quorum.wire.file_region import FileRegion

__all__ = ["CheckpointedOffsets", "FileLog", "partition_dir"]

_BASE_AND_LENGTH: Final = struct.Struct(">qi")
_LAST_OFFSET_DELTA: Final = struct.Struct(">i")
_LAST_OFFSET_DELTA_AT: Final = 23
# the default source of roll jitter, shared: seeding one Random per log from the OS costs
# half of what creating 100,000 lazy logs costs
_JITTER_RNG: Final = random.Random()


def partition_dir(log_dir: Path, topic: str, partition: int) -> Path:
    """Kafka's directory name for one partition's log."""
    return log_dir / f"{topic}-{partition}"


def _whole_batches(buf: bytes, max_offset: int | None) -> tuple[int, int, int]:
    """(end, first base offset, next offset) of the whole batches at the front of ``buf``."""
    position = 0
    first_base = next_offset = -1
    while len(buf) - position >= LOG_OVERHEAD:
        base, length = _BASE_AND_LENGTH.unpack_from(buf, position)
        size = LOG_OVERHEAD + length
        if position + size > len(buf):
            break
        last = base + _LAST_OFFSET_DELTA.unpack_from(buf, position + _LAST_OFFSET_DELTA_AT)[0]
        if max_offset is not None and last >= max_offset:
            break
        if position == 0:
            first_base = base
        next_offset = last + 1
        position += size
    return position, first_base, next_offset


@attrs.frozen(kw_only=True)
class CheckpointedOffsets:
    """What a log directory's checkpoints record of one partition (None: leave it out)."""

    log_start_offset: int | None
    recovery_point: int


# reads at least this long are sent from the file (``read_records``); shorter ones read
_SEND_FROM_FILE_BYTES: Final = 65_536


class FileLog:
    """A ``ReplicatedLog`` in one partition directory (see ``quorum.log.protocol``)."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig | None = None,
        *,
        mode: OpenMode | None = None,
        files: OpenFiles | None = None,
        clock_ms: Clock = wall_clock_ms,
        rng: random.Random | None = None,
        lazy: bool = False,
    ) -> None:
        self._directory = directory
        self._config = config or LogConfig()
        self._mode = mode or OpenMode()
        self._files = files or default_open_files()
        self._clock_ms = clock_ms
        self._rng = rng or _JITTER_RNG
        self._loaded: LogFiles | None = None
        self._closed = False
        if not lazy:
            self.load()

    def load(self) -> None:
        """Open the partition directory now (recovery included) if not done yet."""
        if self._loaded is None:
            assert not self._closed, "the log is closed"
            self._loaded = LogFiles(
                self._directory,
                self._config,
                self._mode,
                files=self._files,
                clock_ms=self._clock_ms,
                rng=self._rng,
            )

    @property
    def _files_of(self) -> LogFiles:
        if self._loaded is None:
            self.load()
        assert self._loaded is not None
        return self._loaded

    @property
    def is_loaded(self) -> bool:
        return self._loaded is not None

    @property
    def is_closed(self) -> bool:
        return self._closed

    @property
    def needs_recovery(self) -> bool:
        """Not opened yet, after an unclean shutdown: its files are not known to be whole."""
        return self._loaded is None and not self._mode.clean_shutdown

    # -- offsets and epochs ---------------------------------------------------

    @property
    def directory(self) -> Path:
        return self._directory

    @property
    def config(self) -> LogConfig:
        return self._config

    def update_config(self, config: LogConfig) -> None:
        """A new config (its topic's changed): rolling, retention, flushing and new
        segments follow it from now on (Kafka's ``UnifiedLog.updateConfig``); existing
        segments keep the index sizes they were created with."""
        self._config = config
        if self._loaded is not None:
            self._loaded.config = config

    @property
    def segments(self) -> list[Segment]:
        """The open segments, oldest first (for tests and tools; do not mutate)."""
        return self._files_of.segments

    @property
    def log_start_offset(self) -> int:
        return self._files_of.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._files_of.log_end_offset

    @property
    def flushed_offset(self) -> int:
        return self._files_of.flushed_offset

    @property
    def recovery_point(self) -> int:
        """Everything below is on disk: recovery after an unclean shutdown starts here."""
        return self._files_of.flushed_offset

    def offsets_to_checkpoint(self) -> CheckpointedOffsets:
        """The log directory's checkpoint entries, without opening an unopened log."""
        files = self._loaded
        if files is None:
            return CheckpointedOffsets(
                log_start_offset=self._mode.log_start_offset,
                recovery_point=self._mode.recovery_point,
            )
        # Kafka leaves out a log start that the first segment implies; kept here, because
        # segments created since the last flush may vanish in a crash, and with them
        # the only record of where the log starts
        start = files.log_start_offset
        return CheckpointedOffsets(
            log_start_offset=start if start > 0 else None, recovery_point=files.flushed_offset
        )

    @property
    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self._files_of.segments)

    @property
    def last_fetched_epoch(self) -> int:
        files = self._files_of
        latest = files.epochs.latest_epoch
        if latest is not None:
            return latest
        snapshot = files.snapshots.latest
        return snapshot.epoch if snapshot is not None else 0

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        return self._files_of.epochs.end_offset_for(epoch, self.log_end_offset)

    # -- appends -------------------------------------------------------------

    def append(
        self, batches: bytes | bytearray | memoryview, *, epoch: int, crc_checked: bool = False
    ) -> AppendInfo:
        prepared = prepare_leader_append(
            batches,
            epoch=epoch,
            log_end_offset=self.log_end_offset,
            latest_epoch=self.last_fetched_epoch,
            max_message_bytes=self._config.max_message_bytes,
            check_crc=not crc_checked,
        )
        self._write(prepared)
        return prepared.info

    def append_as_follower(self, batches: bytes | bytearray | memoryview) -> AppendInfo:
        prepared = prepare_follower_append(
            batches,
            log_end_offset=self.log_end_offset,
            latest_epoch=self.last_fetched_epoch,
            max_message_bytes=self._config.max_message_bytes,
            # a data partition's leader may have cleaned: offsets skip what it removed
            allow_gaps=self._mode.data_partition,
        )
        self._write(prepared)
        return prepared.info

    def _write(self, prepared: PreparedAppend) -> None:
        assert not self._closed, "the log is closed"
        files = self._files_of
        changed = False
        for batch in prepared.batches:
            changed |= files.epochs.assign(batch.epoch, batch.base_offset)
        if changed:
            # before the data: the checkpoint must never lack a durable epoch
            files.save_epochs()
        active = files.active
        incoming = Incoming(
            size=len(prepared.data),
            last_offset=prepared.info.last_offset,
            max_timestamp=max(batch.max_timestamp for batch in prepared.batches),
        )
        # past a follower's gap too wide to index from the log end, the new segment starts
        # at the first batch (``quorum.log.roll``)
        info = prepared.info
        roll_at = roll_offset(files.log_end_offset, info.first_offset, info.last_offset)
        now = self._clock_ms()
        if roll_at is not None or should_roll(
            active.roll_facts(), incoming, config=self._config, now_ms=now
        ):
            active = files.roll(roll_at)
        active.append(memoryview(prepared.data), prepared.batches)

    @property
    def active_segment_base_offset(self) -> int:
        """Where the active segment starts (an append that moves it rolled a segment)."""
        return self._files_of.active.base_offset

    def roll(self) -> None:
        """Start a new segment now (if the active one holds anything)."""
        files = self._files_of
        if files.active.size > 0:
            files.roll()

    # -- the log cleaner (``quorum.log.cleaner_job``) -------------------------------------

    def detached_segment(self, base_offset: int) -> Segment:
        """A segment object for ``<base>.log`` outside the log: the cleaner builds its
        indexes while it writes the replacement, and swaps it in with ``replace_segments``."""
        return Segment(
            self._directory,
            base_offset,
            config=self._config,
            files=self._files,
            created_ms=self._clock_ms(),
        )

    def replace_segments(self, old: Sequence[Segment], new: Segment) -> None:
        """``new`` (on disk already: ``quorum.log.cleaner_swap``) takes the place of the
        consecutive closed segments ``old``."""
        self._files_of.replace_segments(old, new)

    # -- reads ----------------------------------------------------------------

    def _check_offset(self, offset: int, action: str) -> None:
        start = self.log_start_offset
        if not start <= offset <= self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"cannot {action} offset {offset}: the log holds offsets "
                f"[{start}, {self.log_end_offset})"
            )

    def _first_batch(self, start_offset: int) -> tuple[Segment, int, int, int] | None:
        """(segment, position, size, base offset) of the batch a read from
        ``start_offset`` begins with; None at the end of the log."""
        self._check_offset(start_offset, "read from")
        if start_offset == self.log_end_offset:
            return None
        files = self._files_of
        index = files.segment_index(start_offset)
        found = files.segments[index].find(start_offset)
        while found is None and index + 1 < len(files.segments):
            # no batch of the segment reaches the offset (it claims a follower's gap up to
            # the next segment, or is damaged): the next segment holds the next batch
            index += 1
            following = files.segments[index]
            found = following.find(following.base_offset) if following.size else None
        if found is None:
            return None
        return files.segments[index], *found

    def read_records(
        self, start_offset: int, max_bytes: int, *, max_offset: int | None = None
    ) -> bytes | FileRegion:
        """``read``'s records as a region of the segment file, to be sent from there;
        the batches are not read into the process (their boundaries come from the
        segment's positions and index)."""
        first = self._first_batch(start_offset)
        if first is None:
            return b""
        segment, position, first_size, base = first
        stop = segment.size
        if max_offset is not None and max_offset < segment.next_offset:
            if max_offset <= base:
                return b""
            # the batch holding ``max_offset`` (or the first after it) and every later one
            # reach it: the read ends where that batch begins
            reaching = segment.find(max_offset)
            if reaching is not None:
                stop = reaching[0]
        limit = min(stop, position + max(max_bytes, first_size))
        end = stop if limit == stop else segment.whole_batches_end(position, limit)
        if end - position < _SEND_FROM_FILE_BYTES:
            # a few batches (one record at a time, a follower caught up): one pread and
            # the response's own sendmsg cost less than duplicating a descriptor for a
            # sendfile, on the path of every record's latency
            return segment.pread(end - position, position) if end > position else b""
        return segment.region(position, end - position)

    def read(
        self, start_offset: int, max_bytes: int, *, max_offset: int | None = None
    ) -> ReadResult:
        empty = ReadResult(records=b"", base_offset=start_offset, next_offset=start_offset)
        first = self._first_batch(start_offset)
        if first is None:
            return empty
        segment, position, first_size, _ = first
        length = min(segment.size - position, max(max_bytes, first_size))
        buf = segment.pread(length, position)
        if len(buf) < min(length, first_size):
            raise segment.corruption(position, "the file is shorter than the log expects")
        end, base_offset, next_offset = _whole_batches(buf, max_offset)
        if end == 0:
            return empty
        return ReadResult(
            records=memoryview(buf)[:end], base_offset=base_offset, next_offset=next_offset
        )

    def offset_for_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets by timestamp: the first record at or after the log start offset whose
        timestamp is at least ``timestamp``; None if there is none."""
        files = self._files_of
        return timestamp_search.offset_for_timestamp(
            files.segments, timestamp, start_offset=files.log_start_offset
        )

    def max_timestamp(self) -> TimestampAndOffset | None:
        """ListOffsets MAX_TIMESTAMP (-3): the first record with the largest timestamp; None
        if no record (at or after the log start offset) has a timestamp."""
        files = self._files_of
        return timestamp_search.max_timestamp(files.segments, start_offset=files.log_start_offset)

    # -- durability -----------------------------------------------------------

    def flush_due(self, now_ms: int) -> FlushReason | None:
        """Why a data partition should run ``flush()`` now (``quorum.log.flush_policy``)."""
        return flush_due(self._files_of.unflushed_state(), config=self._config, now_ms=now_ms)

    def next_flush_deadline_ms(self) -> int | None:
        """When ``flush.ms`` makes a flush due; None if nothing is unflushed or never."""
        return next_flush_deadline_ms(self._files_of.unflushed_state(), config=self._config)

    def flush(self) -> int:
        """Make everything appended so far durable; returns the flushed offset.

        May run in a worker thread while the owner appends (the node's leader
        and a broker's flush policy do): it claims only what was written before
        it started, and races with a roll can only make it claim less. Nothing
        may truncate meanwhile; the leader's timers may delete segments below the
        active one (cleaning after a snapshot), which is safe for the metadata log,
        whose flush syncs the active segment only, not for a data partition's.
        """
        assert not self._closed, "the log is closed"
        return self._files_of.flush()

    def close(self) -> None:
        if self._closed:
            return
        if self._loaded is not None:
            self._loaded.close()
        self._closed = True

    def abandon(self) -> None:
        """Close the files without flushing (what a killed process leaves behind)."""
        if self._loaded is not None:
            self._loaded.abandon()
        self._closed = True

    # -- truncation ----------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        files = self._files_of
        if offset < files.log_start_offset:
            raise OffsetOutOfRangeError(
                f"cannot truncate to offset {offset}: it is below the log start offset "
                f"{files.log_start_offset}; use truncate_fully_and_start_at"
            )
        if offset >= self.log_end_offset:
            return
        index = files.segment_index(offset)
        segment = files.segments[index]
        # the batch containing ``offset`` goes whole (batches are never split), and so
        # does every later one; when ``offset`` lies in a gap (the cleaner's, or one a
        # follower appended) the cut is at the first batch after it. The log then ends
        # after the last batch kept, never in a gap: recovery finds its end from the
        # batches, and would take a segment ending early for a torn one.
        found = segment.find(offset)
        if found is None:
            position, new_end = segment.size, segment.end_before(segment.size, offset)
        else:
            position = found[0]
            new_end = segment.end_before(position, found[2] - 1)
        if position == 0 and index > 0:
            previous = files.segments[index - 1]
            end = previous.end_before(previous.size, previous.next_offset - 1)
            if end < segment.base_offset:
                # the one before claims a follower's gap up to this segment: an empty
                # segment after a gap could not be told from a torn one by recovery
                index, position, new_end = index - 1, previous.size, end
        if new_end < files.log_start_offset:
            self.truncate_fully_and_start_at(files.log_start_offset)
            return
        files.cut(index, position, new_end)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        if offset < 0:
            raise OffsetOutOfRangeError(f"cannot start the log at negative offset {offset}")
        self._files_of.start_at(offset)

    def truncate_to_latest_snapshot(self) -> bool:
        files = self._files_of
        latest = files.snapshots.latest
        # an empty log already at the snapshot reports the snapshot's epoch: no-op
        log_epoch = self.last_fetched_epoch
        if latest is None or not (
            latest.epoch > log_epoch
            or (latest.epoch == log_epoch and latest.offset > self.log_end_offset)
        ):
            return False
        files.start_at(latest.offset)
        files.snapshots.delete_before(latest)
        return True

    # -- the log start and retention ---------------------------------------

    def advance_log_start_offset(self, offset: int) -> None:
        files = self._files_of
        if offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"cannot move the log start offset to {offset}: it is past the log end "
                f"offset {self.log_end_offset}"
            )
        if offset <= files.log_start_offset:
            return
        files.set_log_start(offset)
        files.delete_oldest(files.segments_below(offset))

    def maybe_increment_log_start_offset(self, offset: int, *, high_watermark: int) -> bool:
        """DeleteRecords (Kafka's ``maybeIncrementLogStartOffset``): raise the log start
        offset, never past the high watermark; True if it moved.  Segments wholly below
        it are deleted at once."""
        if offset > high_watermark:
            raise OffsetOutOfRangeError(
                f"cannot increment the log start offset to {offset}: it is above the high "
                f"watermark {high_watermark}"
            )
        if offset <= self.log_start_offset:
            return False
        self.advance_log_start_offset(offset)
        return True

    def maybe_apply_retention(self, now_ms: int, *, max_deletable_offset: int) -> int:
        """The metadata log's retention: ``retention.ms`` then ``retention.bytes``; returns
        how many segments were deleted.

        Never deletes the active segment, nor a segment holding any offset at or
        above ``max_deletable_offset`` (the caller's high watermark or latest
        snapshot).  The log start offset moves to the first remaining segment.
        """
        files, config, limit = self._files_of, self._config, max_deletable_offset
        deleted = files.delete_expired(
            retention.expired_by_time(
                files.segments, now_ms=now_ms, retention_ms=config.retention_ms, limit=limit
            )
        )
        return deleted + files.delete_expired(
            retention.expired_by_size(
                files.segments, retention_bytes=config.retention_bytes, limit=limit
            )
        )

    def delete_old_segments(self, now_ms: int, *, high_watermark: int) -> int:
        """A data partition's retention (Kafka's ``deleteOldSegments``): segments below the
        log start offset, then, when ``cleanup.policy`` has ``delete``, by
        ``retention.bytes``, then by ``retention.ms`` (the active segment too, once it is
        wholly below the high watermark: the log is then empty at its end); returns how
        many segments were deleted."""
        files, config = self._files_of, self._config
        deleted = files.delete_expired(
            retention.start_breached(
                files.segments,
                log_start_offset=files.log_start_offset,
                high_watermark=high_watermark,
            )
        )
        if not config.delete:
            return deleted
        deleted += files.delete_expired(
            retention.size_breached(
                files.segments,
                retention_bytes=config.retention_bytes,
                high_watermark=high_watermark,
            )
        )
        return deleted + files.delete_expired(
            retention.time_breached(
                files.segments,
                now_ms=now_ms,
                retention_ms=config.retention_ms,
                high_watermark=high_watermark,
            )
        )

    # -- snapshots ------------------------------------------------------------

    @property
    def latest_snapshot_id(self) -> OffsetAndEpoch | None:
        return self._files_of.snapshots.latest

    @property
    def earliest_snapshot_id(self) -> OffsetAndEpoch | None:
        return self._files_of.snapshots.earliest

    def snapshot_ids(self) -> list[OffsetAndEpoch]:
        return self._files_of.snapshots.ids()

    def create_snapshot(self, snapshot_id: OffsetAndEpoch, data: SnapshotData) -> bool:
        return self._files_of.snapshots.create(snapshot_id, data)

    def write_partial_snapshot(
        self, snapshot_id: OffsetAndEpoch, position: int, data: bytes
    ) -> None:
        self._files_of.snapshots.write_partial(snapshot_id, position, data)

    def store_partial_snapshot(self, snapshot_id: OffsetAndEpoch) -> bool:
        return self._files_of.snapshots.store_partial(snapshot_id)

    def read_snapshot(
        self, snapshot_id: OffsetAndEpoch, position: int = 0, max_bytes: int | None = None
    ) -> bytes:
        return self._files_of.snapshots.read(snapshot_id, position, max_bytes)

    def snapshot_size(self, snapshot_id: OffsetAndEpoch) -> int:
        return self._files_of.snapshots.size(snapshot_id)

    def delete_before(self, snapshot_id: OffsetAndEpoch) -> bool:
        snapshots = self._files_of.snapshots
        latest = snapshots.latest
        if (
            latest is None
            or snapshot_id not in snapshots.ids()
            or snapshot_id.offset <= self.log_start_offset
            or snapshot_id > latest
        ):
            return False
        self.advance_log_start_offset(snapshot_id.offset)
        snapshots.delete_before(snapshot_id)
        return True

    # -- producer-state snapshots (data partitions; ``quorum.log.producer_snapshots``) --

    def write_producer_snapshot(self, offset: int, entries: Sequence[ProducerEntry]) -> None:
        files = self._files_of
        if not files.log_start_offset <= offset <= files.log_end_offset:
            raise OffsetOutOfRangeError(
                f"cannot snapshot producers at offset {offset}: the log holds offsets "
                f"[{files.log_start_offset}, {files.log_end_offset})"
            )
        files.producer_snapshots.write(offset, entries)

    def load_producer_snapshot(self, at_or_below: int) -> ProducerSnapshot | None:
        return self._files_of.producer_snapshots.latest(at_or_below)

    def producer_snapshot_offsets(self) -> list[int]:
        return self._files_of.producer_snapshots.offsets()
