"""The file log: Kafka's on-disk layout behind the log protocol.

A partition directory ``<log.dir>/<topic>-<partition>/`` holds::

    00000000000000000000.log        record batches, back to back
    00000000000000000000.index      sparse offset index of that segment
    leader-epoch-checkpoint         epoch -> start offset (Kafka's text format)
    log-start-offset-checkpoint     the log start offset (same text format, one row)
    <offset>-<epoch>.checkpoint     snapshots (KIP-630)

Durability: ``flush()`` fsyncs the active segment.  Rolling to a new segment
first fsyncs the old one and then the directory, so unsynced bytes can only
ever be in the last segment; recovery relies on that (``quorum.log.recovery``).
Checkpoint files are replaced atomically (temp file, fsync, rename, directory
fsync).  The epoch checkpoint is written before the batches that start a new
epoch, so it never lacks an epoch that the durable log holds.  The log start
offset checkpoint is written before segments below it are deleted.

Reads use ``os.pread`` into a fresh buffer and return a ``memoryview`` of the
whole batches in it: one copy from the page cache, none after that.

Not safe for concurrent use: one task owns a log.
"""

from __future__ import annotations

import bisect
import struct
from pathlib import Path
from typing import Final

from quorum.log.appends import PreparedAppend, prepare_follower_append, prepare_leader_append
from quorum.log.config import LogConfig
from quorum.log.errors import OffsetOutOfRangeError
from quorum.log.fileio import fsync_dir, write_checkpoint
from quorum.log.protocol import AppendInfo, OffsetAndEpoch, ReadResult, SnapshotData
from quorum.log.recovery import EPOCH_CHECKPOINT, recover, write_log_start_offset
from quorum.log.retention import expired_by_size, expired_by_time
from quorum.log.segment import Segment
from quorum.log.snapshots import SnapshotStore
from quorum.wire.batch import LOG_OVERHEAD

__all__ = ["FileLog", "partition_dir"]

_BASE_AND_LENGTH: Final = struct.Struct(">qi")
_LAST_OFFSET_DELTA: Final = struct.Struct(">i")
_LAST_OFFSET_DELTA_AT: Final = 23
_MAX_RELATIVE_OFFSET: Final = 2**31 - 1


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


class FileLog:
    """A ``ReplicatedLog`` in one partition directory (see ``quorum.log.protocol``)."""

    def __init__(self, directory: Path, config: LogConfig | None = None) -> None:
        self._directory = directory
        self._config = config or LogConfig()
        recovered = recover(directory, self._config)
        self._segments: list[Segment] = recovered.segments
        self._bases = [segment.base_offset for segment in self._segments]
        self._log_start_offset = recovered.log_start_offset
        self._epochs = recovered.epochs
        self._snapshots = SnapshotStore(directory)
        self._closed = False
        self._segments[-1].flush()
        self._flushed_offset = self.log_end_offset

    # -- offsets and epochs ---------------------------------------------------

    @property
    def directory(self) -> Path:
        return self._directory

    @property
    def config(self) -> LogConfig:
        return self._config

    @property
    def segments(self) -> list[Segment]:
        """The open segments, oldest first (for tests and tools; do not mutate)."""
        return self._segments

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def flushed_offset(self) -> int:
        return self._flushed_offset

    @property
    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    @property
    def last_fetched_epoch(self) -> int:
        latest = self._epochs.latest_epoch
        if latest is not None:
            return latest
        snapshot = self._snapshots.latest
        return snapshot.epoch if snapshot is not None else 0

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        return self._epochs.end_offset_for(epoch, self.log_end_offset)

    def _save_epochs(self) -> None:
        write_checkpoint(self._directory / EPOCH_CHECKPOINT, self._epochs.to_rows())

    # -- appends -------------------------------------------------------------

    def append(self, batches: bytes | bytearray | memoryview, *, epoch: int) -> AppendInfo:
        prepared = prepare_leader_append(
            batches,
            epoch=epoch,
            log_end_offset=self.log_end_offset,
            latest_epoch=self.last_fetched_epoch,
            max_message_bytes=self._config.max_message_bytes,
        )
        self._write(prepared)
        return prepared.info

    def append_as_follower(self, batches: bytes | bytearray | memoryview) -> AppendInfo:
        prepared = prepare_follower_append(
            batches,
            log_end_offset=self.log_end_offset,
            latest_epoch=self.last_fetched_epoch,
            max_message_bytes=self._config.max_message_bytes,
        )
        self._write(prepared)
        return prepared.info

    def _write(self, prepared: PreparedAppend) -> None:
        assert not self._closed, "the log is closed"
        changed = False
        for batch in prepared.batches:
            changed |= self._epochs.assign(batch.epoch, batch.base_offset)
        if changed:
            # before the data: the checkpoint must never lack a durable epoch
            self._save_epochs()
        active = self._segments[-1]
        size = len(prepared.data)
        too_big = active.size > 0 and active.size + size > self._config.segment_bytes
        too_far = prepared.info.last_offset - active.base_offset > _MAX_RELATIVE_OFFSET
        if too_big or too_far:
            active = self._roll()
        active.append(memoryview(prepared.data), prepared.batches)

    def _roll(self) -> Segment:
        """Close the active segment durably and start a new one at the log end."""
        old = self._segments[-1]
        old.flush()
        new = Segment(
            self._directory,
            old.next_offset,
            index_interval_bytes=self._config.index_interval_bytes,
            create=True,
        )
        fsync_dir(self._directory)
        self._segments.append(new)
        self._bases.append(new.base_offset)
        self._flushed_offset = new.base_offset
        return new

    def roll(self) -> None:
        """Start a new segment now (if the active one holds anything)."""
        if self._segments[-1].size > 0:
            self._roll()

    # -- reads ----------------------------------------------------------------

    def _check_offset(self, offset: int, action: str) -> None:
        if not self._log_start_offset <= offset <= self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"cannot {action} offset {offset}: the log holds offsets "
                f"[{self._log_start_offset}, {self.log_end_offset})"
            )

    def _segment_index(self, offset: int) -> int:
        return bisect.bisect_right(self._bases, offset) - 1

    def read(
        self, start_offset: int, max_bytes: int, *, max_offset: int | None = None
    ) -> ReadResult:
        self._check_offset(start_offset, "read from")
        empty = ReadResult(records=b"", base_offset=start_offset, next_offset=start_offset)
        if start_offset == self.log_end_offset:
            return empty
        segment = self._segments[self._segment_index(start_offset)]
        position, first_size, _ = segment.locate(start_offset)
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

    # -- durability -----------------------------------------------------------

    def flush(self) -> int:
        """Make everything appended so far durable; returns the flushed offset.

        May run in a worker thread while the owner appends (the node's leader
        does): it claims only what was written before it started, and races
        with a roll can only make it claim less. Nothing may truncate, or
        delete the active segment, meanwhile.
        """
        assert not self._closed, "the log is closed"
        target = self.log_end_offset
        if self._flushed_offset < target:
            self._segments[-1].flush()
            self._flushed_offset = max(self._flushed_offset, target)
        return self._flushed_offset

    def close(self) -> None:
        if self._closed:
            return
        self.flush()
        for segment in self._segments:
            segment.index.persist()
            segment.close()
        self._closed = True

    def abandon(self) -> None:
        """Close the files without flushing (what a killed process leaves behind)."""
        for segment in self._segments:
            segment.close()
        self._closed = True

    # -- truncation ----------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        if offset < self._log_start_offset:
            raise OffsetOutOfRangeError(
                f"cannot truncate to offset {offset}: it is below the log start offset "
                f"{self._log_start_offset}; use truncate_fully_and_start_at"
            )
        if offset >= self.log_end_offset:
            return
        index = self._segment_index(offset)
        segment = self._segments[index]
        # the batch containing ``offset`` goes whole (batches are never split)
        position, _, new_end = segment.locate(offset)
        if new_end < self._log_start_offset:
            self.truncate_fully_and_start_at(self._log_start_offset)
            return
        later = self._segments[index + 1 :]
        for doomed in reversed(later):
            doomed.delete()
        if later:
            del self._segments[index + 1 :]
            del self._bases[index + 1 :]
            fsync_dir(self._directory)
        segment.truncate_at(position, new_end)
        if self._epochs.truncate_from_end(new_end):
            self._save_epochs()
        self._flushed_offset = new_end

    def truncate_fully_and_start_at(self, offset: int) -> None:
        if offset < 0:
            raise OffsetOutOfRangeError(f"cannot start the log at negative offset {offset}")
        # the start offset first: a crash part-way then opens as an empty log there
        write_log_start_offset(self._directory, offset)
        for segment in self._segments:
            segment.delete()
        fsync_dir(self._directory)
        new = Segment(
            self._directory,
            offset,
            index_interval_bytes=self._config.index_interval_bytes,
            create=True,
        )
        fsync_dir(self._directory)
        self._segments = [new]
        self._bases = [offset]
        self._epochs.clear()
        self._save_epochs()
        self._log_start_offset = self._flushed_offset = offset

    def truncate_to_latest_snapshot(self) -> bool:
        latest = self._snapshots.latest
        # an empty log already at the snapshot reports the snapshot's epoch: no-op
        log_epoch = self.last_fetched_epoch
        if latest is None or not (
            latest.epoch > log_epoch
            or (latest.epoch == log_epoch and latest.offset > self.log_end_offset)
        ):
            return False
        self.truncate_fully_and_start_at(latest.offset)
        self._snapshots.delete_before(latest)
        return True

    # -- the log start and retention ---------------------------------------

    def advance_log_start_offset(self, offset: int) -> None:
        if offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"cannot move the log start offset to {offset}: it is past the log end "
                f"offset {self.log_end_offset}"
            )
        if offset <= self._log_start_offset:
            return
        self._set_log_start(offset)
        count = 0
        while count < len(self._segments) - 1 and self._segments[count].next_offset <= offset:
            count += 1
        self._delete_oldest(count)

    def _set_log_start(self, offset: int) -> None:
        write_log_start_offset(self._directory, offset)
        self._log_start_offset = offset
        changed = self._epochs.truncate_from_start(offset)
        # no epoch may start at the log end (recovery could not tell it from a lost append)
        changed |= self._epochs.truncate_from_end(self.log_end_offset)
        if changed:
            self._save_epochs()

    def _delete_oldest(self, count: int) -> None:
        if count == 0:
            return
        for segment in self._segments[:count]:
            segment.delete()
        del self._segments[:count]
        del self._bases[:count]
        fsync_dir(self._directory)

    def _delete_expired(self, count: int) -> int:
        if count:
            new_start = self._segments[count].base_offset
            if new_start > self._log_start_offset:
                self._set_log_start(new_start)
            self._delete_oldest(count)
        return count

    def maybe_apply_retention(self, now_ms: int, *, max_deletable_offset: int) -> int:
        """Delete old segments by ``retention.ms`` then ``retention.bytes``; returns how many.

        Never deletes the active segment, nor a segment holding any offset at or
        above ``max_deletable_offset`` (the caller's high watermark or latest
        snapshot).  The log start offset moves to the first remaining segment.
        """
        config, limit = self._config, max_deletable_offset
        deleted = self._delete_expired(
            expired_by_time(
                self._segments, now_ms=now_ms, retention_ms=config.retention_ms, limit=limit
            )
        )
        deleted += self._delete_expired(
            expired_by_size(self._segments, retention_bytes=config.retention_bytes, limit=limit)
        )
        return deleted

    # -- snapshots ------------------------------------------------------------

    @property
    def latest_snapshot_id(self) -> OffsetAndEpoch | None:
        return self._snapshots.latest

    @property
    def earliest_snapshot_id(self) -> OffsetAndEpoch | None:
        return self._snapshots.earliest

    def snapshot_ids(self) -> list[OffsetAndEpoch]:
        return self._snapshots.ids()

    def create_snapshot(self, snapshot_id: OffsetAndEpoch, data: SnapshotData) -> bool:
        return self._snapshots.create(snapshot_id, data)

    def read_snapshot(
        self, snapshot_id: OffsetAndEpoch, position: int = 0, max_bytes: int | None = None
    ) -> bytes:
        return self._snapshots.read(snapshot_id, position, max_bytes)

    def snapshot_size(self, snapshot_id: OffsetAndEpoch) -> int:
        return self._snapshots.size(snapshot_id)

    def delete_before(self, snapshot_id: OffsetAndEpoch) -> bool:
        latest = self._snapshots.latest
        if (
            latest is None
            or snapshot_id not in self._snapshots.ids()
            or snapshot_id.offset <= self._log_start_offset
            or snapshot_id > latest
        ):
            return False
        self.advance_log_start_offset(snapshot_id.offset)
        self._snapshots.delete_before(snapshot_id)
        return True
