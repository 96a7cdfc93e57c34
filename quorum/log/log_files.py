"""The opened files of one partition directory, and the changes that keep them whole.

``FileLog`` checks its callers' offsets and decides; ``LogFiles`` does the
file work in the order durability needs (see ``quorum.log.file_log`` for the
two keepers, the metadata log and a data partition, and what each syncs).
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Sequence
from pathlib import Path

from quorum.log.clock import Clock
from quorum.log.config import LogConfig
from quorum.log.file_cache import OpenFiles
from quorum.log.fileio import fsync_dir, write_checkpoint
from quorum.log.flush_policy import UnflushedState
from quorum.log.producer_snapshots import ProducerSnapshotFiles
from quorum.log.recovery import EPOCH_CHECKPOINT, OpenMode, recover, write_log_start_offset
from quorum.log.roll import roll_jitter_ms
from quorum.log.segment import Segment
from quorum.log.snapshots import SnapshotStore

__all__ = ["LogFiles"]


class LogFiles:
    """Segments, log start, epochs, snapshots and durability of an opened partition directory."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        mode: OpenMode,
        *,
        files: OpenFiles,
        clock_ms: Clock,
        rng: random.Random,
    ) -> None:
        self.directory = directory
        self.config = config
        self.mode = mode
        self._files = files
        self._clock_ms = clock_ms
        self._rng = rng
        now = clock_ms()
        recovered = recover(directory, config, mode, files=files, now_ms=now)
        self.segments = recovered.segments
        self.bases = [segment.base_offset for segment in self.segments]
        self.snapshots = SnapshotStore(directory)
        self.log_start_offset = recovered.log_start_offset
        self.epochs = recovered.epochs
        self.producer_snapshots = ProducerSnapshotFiles(directory)
        # recovery may have cut a tail that a producer snapshot covered
        self.producer_snapshots.delete_above(self.log_end_offset)
        self.producer_snapshots.delete_below(self.log_start_offset)
        self.flushed_offset = recovered.recovery_point
        self.last_flush_ms = now
        if not mode.data_partition:
            # the metadata log claims its whole tail durable from the start
            self.segments[-1].flush()
            self.flushed_offset = self.log_end_offset

    @property
    def data_partition(self) -> bool:
        return self.mode.data_partition

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @log_start_offset.setter
    def log_start_offset(self, offset: int) -> None:
        # the snapshot store refuses snapshots below it, also one that a worker thread
        # finishes after the start moved past it
        self._log_start_offset = offset
        self.snapshots.refuse_below(offset)

    @property
    def active(self) -> Segment:
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    def segment_index(self, offset: int) -> int:
        """Index of the segment whose offsets would include ``offset``."""
        return bisect.bisect_right(self.bases, offset) - 1

    def save_epochs(self) -> None:
        write_checkpoint(self.directory / EPOCH_CHECKPOINT, self.epochs.to_rows())

    def unflushed_state(self) -> UnflushedState:
        return UnflushedState(
            log_end_offset=self.log_end_offset,
            recovery_point=self.flushed_offset,
            active_base_offset=self.active.base_offset,
            last_flush_ms=self.last_flush_ms,
        )

    # -- segments -----------------------------------------------------------------

    def new_segment(self, base_offset: int) -> Segment:
        return Segment(
            self.directory,
            base_offset,
            config=self.config,
            files=self._files,
            created_ms=self._clock_ms(),
            roll_jitter_ms=roll_jitter_ms(self.config, self._rng),
            create=True,
        )

    def roll(self, base_offset: int | None = None) -> Segment:
        """Close the active segment and start a new one at the log end, or at
        ``base_offset`` past it, up to which the old one then claims the gap
        (``quorum.log.roll``); the metadata log syncs the old one and the directory
        first, a data partition's flush does later."""
        old = self.active
        old.close_time_index()
        if self.data_partition:
            old.persist_indexes()
        else:
            old.flush()
        if base_offset is not None and base_offset > old.next_offset:
            old.claim_gap_to(base_offset)
        new = self.new_segment(old.next_offset)
        if not self.data_partition:
            fsync_dir(self.directory)
            self.flushed_offset = new.base_offset
        self.segments.append(new)
        self.bases.append(new.base_offset)
        return new

    # -- durability -----------------------------------------------------------------

    def flush(self) -> int:
        """See ``FileLog.flush`` (this may run in a worker thread beside appends)."""
        target = self.log_end_offset  # before the list is read: a roll may follow
        if self.flushed_offset < target:
            if self.data_partition:
                self.sync_from(self.flushed_offset, list(self.segments))
            else:
                self.segments[-1].flush()
            self.flushed_offset = max(self.flushed_offset, target)
            self.last_flush_ms = self._clock_ms()
        return self.flushed_offset

    def sync_from(self, recovery_point: int, segments: list[Segment]) -> None:
        """fsync every segment holding offsets at or above ``recovery_point`` (Kafka's
        ``LocalLog.flush``), and the directory if any of them was created since."""
        created = False
        for segment in segments:
            closed = segment is not self.active
            if closed and segment.next_offset <= recovery_point:
                continue
            # recovery will trust a closed segment below the recovery point, indexes too
            segment.flush(sync_indexes=closed)
            created |= segment.base_offset >= recovery_point
        if created:
            fsync_dir(self.directory)

    def close(self) -> None:
        self.flush()
        for segment in self.segments:
            if segment is self.active:
                segment.close_time_index()
            segment.persist_indexes()
            segment.close()

    def abandon(self) -> None:
        for segment in self.segments:
            segment.close()

    # -- truncation and the log start -------------------------------------------------

    def cut(self, index: int, position: int, new_end: int) -> None:
        """Truncate at byte ``position`` of segment ``index`` (a batch boundary, the log end
        becomes ``new_end``), durably; later segments go."""
        if self.data_partition:
            # what stays must be durable too: the segments before the cut may be unsynced
            self.sync_from(self.flushed_offset, self.segments[:index])
        later = self.segments[index + 1 :]
        for doomed in reversed(later):
            doomed.delete()
        if later:
            del self.segments[index + 1 :]
            del self.bases[index + 1 :]
            fsync_dir(self.directory)
        self.segments[index].truncate_at(position, new_end, now_ms=self._clock_ms())
        if self.epochs.truncate_from_end(new_end):
            self.save_epochs()
        self.producer_snapshots.delete_above(new_end)
        self.flushed_offset = new_end

    def start_at(self, offset: int) -> None:
        """Drop every segment; the log becomes empty at ``offset``."""
        if not self.data_partition:
            # the start offset first: a crash part-way then opens as an empty log there
            write_log_start_offset(self.directory, offset)
        for segment in self.segments:
            segment.delete()
        fsync_dir(self.directory)
        new = self.new_segment(offset)
        fsync_dir(self.directory)
        self.segments = [new]
        self.bases = [offset]
        self.epochs.clear()
        self.save_epochs()
        self.producer_snapshots.delete_all()
        self.log_start_offset = self.flushed_offset = offset

    def set_log_start(self, offset: int) -> None:
        if not self.data_partition:
            # before segments below it are deleted (a data partition's log directory
            # checkpoints it; segments below it are gone either way)
            write_log_start_offset(self.directory, offset)
        self.log_start_offset = offset
        self.producer_snapshots.delete_below(offset)
        changed = self.epochs.truncate_from_start(offset)
        # no epoch may start at the log end (recovery could not tell it from a lost append)
        changed |= self.epochs.truncate_from_end(self.log_end_offset)
        if changed:
            self.save_epochs()

    def segments_below(self, offset: int) -> int:
        """How many oldest segments hold only offsets below ``offset`` (never the active one)."""
        count = 0
        while count < len(self.segments) - 1 and self.segments[count].next_offset <= offset:
            count += 1
        return count

    def replace_segments(self, old: Sequence[Segment], new: Segment) -> None:
        """The cleaner's swap: ``new`` replaces the consecutive closed segments ``old``."""
        first = next(i for i, segment in enumerate(self.segments) if segment is old[0])
        stop = first + len(old)
        assert stop < len(self.segments), "the active segment is never replaced"
        assert all(a is b for a, b in zip(self.segments[first:stop], old, strict=True))
        assert new.base_offset == old[0].base_offset
        if new.next_offset < old[-1].next_offset:
            # the cleaner kept the last batch, but not a follower's gap after it
            new.claim_gap_to(old[-1].next_offset)
        self.segments[first:stop] = [new]
        self.bases[first:stop] = [new.base_offset]

    def delete_oldest(self, count: int) -> None:
        if count == 0:
            return
        for segment in self.segments[:count]:
            segment.delete()
        del self.segments[:count]
        del self.bases[:count]
        fsync_dir(self.directory)

    def delete_expired(self, count: int) -> int:
        """Retention: delete the ``count`` oldest segments (rolling first if that is all of
        them) and move the log start offset to the first one left."""
        if count == 0:
            return 0
        if count == len(self.segments):
            self.roll()  # a log always has an active segment
        new_start = self.segments[count].base_offset
        if new_start > self.log_start_offset:
            self.set_log_start(new_start)
        self.delete_oldest(count)
        return count
