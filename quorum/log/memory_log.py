"""The in-memory log the simulator uses: the log protocol plus a crash.

It keeps a flushed prefix: ``flush()`` marks everything durable, and
``crash()`` drops what was appended after the last flush, as a killed process
loses writes that never reached the disk.  Truncation, log-start moves and
snapshots are durable as soon as they return, as in the file log.
"""

from __future__ import annotations

import bisect

import attrs

from quorum.log.appends import PreparedAppend, prepare_follower_append, prepare_leader_append
from quorum.log.config import LogConfig
from quorum.log.epoch_cache import EpochCache
from quorum.log.errors import OffsetOutOfRangeError, SnapshotNotFoundError
from quorum.log.protocol import AppendInfo, OffsetAndEpoch, ReadResult, SnapshotData

__all__ = ["MemoryLog"]


@attrs.frozen(kw_only=True)
class _StoredBatch:
    base_offset: int
    last_offset: int
    data: bytes


class MemoryLog:
    """A ``ReplicatedLog`` held in memory (see ``quorum.log.protocol``)."""

    def __init__(self, config: LogConfig | None = None) -> None:
        self._config = config or LogConfig()
        self._batches: list[_StoredBatch] = []
        self._bases: list[int] = []
        self._log_start_offset = 0
        self._log_end_offset = 0
        self._flushed_offset = 0
        self._epochs = EpochCache()
        self._snapshots: dict[OffsetAndEpoch, bytes] = {}

    # -- offsets and epochs ---------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def flushed_offset(self) -> int:
        return self._flushed_offset

    @property
    def size_in_bytes(self) -> int:
        return sum(len(batch.data) for batch in self._batches)

    @property
    def epoch_cache(self) -> EpochCache:
        return self._epochs

    @property
    def last_fetched_epoch(self) -> int:
        latest = self._epochs.latest_epoch
        if latest is not None:
            return latest
        snapshot = self.latest_snapshot_id
        return snapshot.epoch if snapshot is not None else 0

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        return self._epochs.end_offset_for(epoch, self._log_end_offset)

    # -- appends and reads ----------------------------------------------------

    def append(self, batches: bytes | bytearray | memoryview, *, epoch: int) -> AppendInfo:
        prepared = prepare_leader_append(
            batches,
            epoch=epoch,
            log_end_offset=self._log_end_offset,
            latest_epoch=self.last_fetched_epoch,
            max_message_bytes=self._config.max_message_bytes,
        )
        self._store(prepared)
        return prepared.info

    def append_as_follower(self, batches: bytes | bytearray | memoryview) -> AppendInfo:
        prepared = prepare_follower_append(
            batches,
            log_end_offset=self._log_end_offset,
            latest_epoch=self.last_fetched_epoch,
            max_message_bytes=self._config.max_message_bytes,
        )
        self._store(prepared)
        return prepared.info

    def _store(self, prepared: PreparedAppend) -> None:
        view = memoryview(prepared.data)
        for batch in prepared.batches:
            self._epochs.assign(batch.epoch, batch.base_offset)
            data = bytes(view[batch.position : batch.position + batch.size])
            self._batches.append(
                _StoredBatch(
                    base_offset=batch.base_offset, last_offset=batch.last_offset, data=data
                )
            )
            self._bases.append(batch.base_offset)
        self._log_end_offset = prepared.info.last_offset + 1

    def read(
        self, start_offset: int, max_bytes: int, *, max_offset: int | None = None
    ) -> ReadResult:
        if not self._log_start_offset <= start_offset <= self._log_end_offset:
            raise OffsetOutOfRangeError(
                f"cannot read from offset {start_offset}: the log holds offsets "
                f"[{self._log_start_offset}, {self._log_end_offset})"
            )
        if start_offset == self._log_end_offset:
            return ReadResult(records=b"", base_offset=start_offset, next_offset=start_offset)
        index = bisect.bisect_right(self._bases, start_offset) - 1
        chosen: list[bytes] = []
        total = 0
        base_offset = start_offset
        next_offset = start_offset
        for batch in self._batches[max(index, 0) :]:
            if max_offset is not None and batch.last_offset >= max_offset:
                break
            if chosen and total + len(batch.data) > max_bytes:
                break
            if not chosen:
                base_offset = batch.base_offset
            chosen.append(batch.data)
            total += len(batch.data)
            next_offset = batch.last_offset + 1
        return ReadResult(
            records=b"".join(chosen), base_offset=base_offset, next_offset=next_offset
        )

    # -- durability -----------------------------------------------------------

    def flush(self) -> int:
        self._flushed_offset = self._log_end_offset
        return self._flushed_offset

    def flush_up_to(self, offset: int) -> int:
        """A flush that started when the log ended at ``offset`` (the simulator's flush
        beside a leader's core): what was appended after it may not be durable."""
        self._flushed_offset = max(self._flushed_offset, min(offset, self._log_end_offset))
        return self._flushed_offset

    def crash(self) -> None:
        """Lose everything appended since the last flush (a kill before fsync)."""
        if self._flushed_offset < self._log_start_offset:
            # the log start moved past durable data: nothing below it survives
            self.truncate_fully_and_start_at(self._log_start_offset)
            return
        self._drop_from(bisect.bisect_left(self._bases, self._flushed_offset))
        self._log_end_offset = self._flushed_offset

    def close(self) -> None:
        self.flush()

    # -- truncation and the log start -----------------------------------------

    def _drop_from(self, index: int) -> None:
        del self._batches[index:]
        del self._bases[index:]
        new_end = self._batches[-1].last_offset + 1 if self._batches else self._log_start_offset
        self._epochs.truncate_from_end(new_end)

    def truncate_to(self, offset: int) -> None:
        if offset < self._log_start_offset:
            raise OffsetOutOfRangeError(
                f"cannot truncate to offset {offset}: it is below the log start offset "
                f"{self._log_start_offset}; use truncate_fully_and_start_at"
            )
        if offset >= self._log_end_offset:
            return
        # the batch containing ``offset`` goes whole (batches are never split)
        cut_at = bisect.bisect_right(self._bases, offset) - 1
        assert cut_at >= 0, (offset, self._log_start_offset, self._bases[:1])
        new_end = self._batches[cut_at].base_offset
        if new_end < self._log_start_offset:
            # the batch straddling the log start goes too: empty at the log start
            self.truncate_fully_and_start_at(self._log_start_offset)
            return
        self._drop_from(cut_at)
        self._log_end_offset = new_end
        self._flushed_offset = new_end

    def truncate_fully_and_start_at(self, offset: int) -> None:
        if offset < 0:
            raise OffsetOutOfRangeError(f"cannot start the log at negative offset {offset}")
        self._batches.clear()
        self._bases.clear()
        self._epochs.clear()
        self._log_start_offset = self._log_end_offset = self._flushed_offset = offset

    def truncate_to_latest_snapshot(self) -> bool:
        latest = self.latest_snapshot_id
        # an empty log already at the snapshot reports the snapshot's epoch: no-op
        log_epoch = self.last_fetched_epoch
        if latest is None or not (
            latest.epoch > log_epoch
            or (latest.epoch == log_epoch and latest.offset > self._log_end_offset)
        ):
            return False
        self.truncate_fully_and_start_at(latest.offset)
        self._forget_snapshots_before(latest)
        return True

    def advance_log_start_offset(self, offset: int) -> None:
        if offset > self._log_end_offset:
            raise OffsetOutOfRangeError(
                f"cannot move the log start offset to {offset}: it is past the log end "
                f"offset {self._log_end_offset}"
            )
        if offset <= self._log_start_offset:
            return
        self._log_start_offset = offset
        self._epochs.truncate_from_start(offset)
        # no epoch may start at the log end (recovery could not tell it from a lost append)
        self._epochs.truncate_from_end(self._log_end_offset)
        keep = 0
        while keep < len(self._batches) and self._batches[keep].last_offset < offset:
            keep += 1
        del self._batches[:keep]
        del self._bases[:keep]

    # -- snapshots ------------------------------------------------------------

    @property
    def latest_snapshot_id(self) -> OffsetAndEpoch | None:
        return max(self._snapshots) if self._snapshots else None

    @property
    def earliest_snapshot_id(self) -> OffsetAndEpoch | None:
        return min(self._snapshots) if self._snapshots else None

    def snapshot_ids(self) -> list[OffsetAndEpoch]:
        return sorted(self._snapshots)

    def create_snapshot(self, snapshot_id: OffsetAndEpoch, data: SnapshotData) -> bool:
        if snapshot_id.offset < 0 or snapshot_id.epoch < 0:
            raise ValueError(f"snapshot id {snapshot_id} has a negative offset or epoch")
        if snapshot_id in self._snapshots:
            return False
        whole = data if isinstance(data, bytes | memoryview) else b"".join(data)
        self._snapshots[snapshot_id] = bytes(whole)
        return True

    def _snapshot(self, snapshot_id: OffsetAndEpoch) -> bytes:
        try:
            return self._snapshots[snapshot_id]
        except KeyError:
            raise SnapshotNotFoundError(f"no snapshot {snapshot_id} in this log") from None

    def read_snapshot(
        self, snapshot_id: OffsetAndEpoch, position: int = 0, max_bytes: int | None = None
    ) -> bytes:
        data = self._snapshot(snapshot_id)
        if not 0 <= position <= len(data):
            raise OffsetOutOfRangeError(
                f"snapshot {snapshot_id} has {len(data)} bytes; position {position} is outside it"
            )
        end = len(data) if max_bytes is None else min(len(data), position + max_bytes)
        return data[position:end]

    def snapshot_size(self, snapshot_id: OffsetAndEpoch) -> int:
        return len(self._snapshot(snapshot_id))

    def delete_before(self, snapshot_id: OffsetAndEpoch) -> bool:
        latest = self.latest_snapshot_id
        if (
            latest is None
            or snapshot_id not in self._snapshots
            or snapshot_id.offset <= self._log_start_offset
            or snapshot_id > latest
        ):
            return False
        self.advance_log_start_offset(snapshot_id.offset)
        self._forget_snapshots_before(snapshot_id)
        return True

    def _forget_snapshots_before(self, snapshot_id: OffsetAndEpoch) -> None:
        for old in [key for key in self._snapshots if key < snapshot_id]:
            del self._snapshots[old]
