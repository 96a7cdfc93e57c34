"""The in-memory log the simulator uses: the log protocol plus a crash.

It keeps a flushed prefix: ``flush()`` marks everything durable, and
``crash()`` drops what was appended after the last flush, as a killed process
loses writes that never reached the disk.  Truncation, log-start moves and
snapshots are durable as soon as they return, as in the file log.

A model of the file log's segments (``quorum.log.memory_segments``) gives the
same answers as a data partition's file log for rolls, retention, the flush
policy and ListOffsets by timestamp; reads ignore it.

``data_partition`` says who keeps the log, as the file log's ``OpenMode``
does: a data partition's follower appends may skip offsets (its leader's log
cleaner removed them), the metadata log's must continue exactly (the default).
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Sequence

import attrs

from quorum.log.appends import PreparedAppend, prepare_follower_append, prepare_leader_append
from quorum.log.clock import Clock, wall_clock_ms
from quorum.log.config import LogConfig
from quorum.log.epoch_cache import EpochCache
from quorum.log.errors import OffsetOutOfRangeError, SnapshotNotFoundError
from quorum.log.flush_policy import FlushReason, UnflushedState, flush_due, next_flush_deadline_ms
from quorum.log.memory_segments import BatchFacts, SegmentModels
from quorum.log.producer_snapshots import (
    MemoryProducerSnapshots,
    ProducerEntry,
    ProducerSnapshot,
)
from quorum.log.protocol import AppendInfo, OffsetAndEpoch, ReadResult, SnapshotData
from quorum.log.timestamps import TimestampAndOffset, scan_for_max_timestamp, scan_for_timestamp

__all__ = ["MemoryLog"]


@attrs.frozen(kw_only=True)
class _StoredBatch:
    base_offset: int
    last_offset: int
    max_timestamp: int
    data: bytes


class MemoryLog:
    """A ``ReplicatedLog`` held in memory (see ``quorum.log.protocol``)."""

    def __init__(
        self,
        config: LogConfig | None = None,
        *,
        clock_ms: Clock = wall_clock_ms,
        rng: random.Random | None = None,
        data_partition: bool = False,
    ) -> None:
        self._config = config or LogConfig()
        self._data_partition = data_partition
        self._clock_ms = clock_ms
        self._last_flush_ms = clock_ms()
        self._model = SegmentModels(self._config, now_ms=self._last_flush_ms, rng=rng or random.Random())
        self._batches: list[_StoredBatch] = []
        self._bases: list[int] = []
        self._log_start_offset = 0
        self._log_end_offset = 0
        self._flushed_offset = 0
        self._epochs = EpochCache()
        self._snapshots: dict[OffsetAndEpoch, bytes] = {}
        # downloads in progress (``write_partial_snapshot``): forgotten by a crash
        self._partial: dict[OffsetAndEpoch, bytearray] = {}
        self.producer_snapshots = MemoryProducerSnapshots()

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

    def append(
        self, batches: bytes | bytearray | memoryview, *, epoch: int, crc_checked: bool = False
    ) -> AppendInfo:
        prepared = prepare_leader_append(
            batches,
            epoch=epoch,
            log_end_offset=self._log_end_offset,
            latest_epoch=self.last_fetched_epoch,
            max_message_bytes=self._config.max_message_bytes,
            check_crc=not crc_checked,
        )
        self._store(prepared)
        return prepared.info

    def append_as_follower(self, batches: bytes | bytearray | memoryview) -> AppendInfo:
        prepared = prepare_follower_append(
            batches,
            log_end_offset=self._log_end_offset,
            latest_epoch=self.last_fetched_epoch,
            max_message_bytes=self._config.max_message_bytes,
            allow_gaps=self._data_partition,
        )
        self._store(prepared)
        return prepared.info

    def _store(self, prepared: PreparedAppend) -> None:
        view = memoryview(prepared.data)
        facts = []
        for batch in prepared.batches:
            self._epochs.assign(batch.epoch, batch.base_offset)
            data = bytes(view[batch.position : batch.position + batch.size])
            self._batches.append(
                _StoredBatch(
                    base_offset=batch.base_offset,
                    last_offset=batch.last_offset,
                    max_timestamp=batch.max_timestamp,
                    data=data,
                )
            )
            self._bases.append(batch.base_offset)
            facts.append(
                BatchFacts(
                    base_offset=batch.base_offset,
                    last_offset=batch.last_offset,
                    size=batch.size,
                    max_timestamp=batch.max_timestamp,
                )
            )
        self._model.append(facts, now_ms=self._clock_ms())
        self._log_end_offset = prepared.info.last_offset + 1

    @property
    def active_segment_base_offset(self) -> int:
        return self._model.active.base_offset

    def roll(self) -> None:
        """Start a new (modelled) segment now, if the active one holds anything."""
        if self._model.active.size > 0:
            self._model.roll(now_ms=self._clock_ms())

    def segment_summary(self) -> list[tuple[int, int, int, int]]:
        """(base offset, next offset, size, max timestamp) of each modelled segment."""
        return self._model.summary()

    def read_records(
        self, start_offset: int, max_bytes: int, *, max_offset: int | None = None
    ) -> bytes | memoryview:
        """``read``'s records (there is no file to send them from)."""
        return self.read(start_offset, max_bytes, max_offset=max_offset).records

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
        if index >= 0 and self._batches[index].last_offset < start_offset:
            index += 1  # the offset lies in a gap: the read starts at the next batch
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

    def _held(self) -> list[tuple[int, int, bytes]]:
        return [(batch.last_offset, batch.max_timestamp, batch.data) for batch in self._batches]

    def offset_for_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """See ``FileLog.offset_for_timestamp``."""
        return scan_for_timestamp(
            self._held(), target=timestamp, start_offset=self._log_start_offset
        )

    def max_timestamp(self) -> TimestampAndOffset | None:
        """See ``FileLog.max_timestamp``."""
        return scan_for_max_timestamp(self._held(), start_offset=self._log_start_offset)

    # -- durability -----------------------------------------------------------

    @property
    def recovery_point(self) -> int:
        return self._flushed_offset

    def _unflushed_state(self) -> UnflushedState:
        return UnflushedState(
            log_end_offset=self._log_end_offset,
            recovery_point=self._flushed_offset,
            active_base_offset=self._model.active.base_offset,
            last_flush_ms=self._last_flush_ms,
        )

    def flush_due(self, now_ms: int) -> FlushReason | None:
        return flush_due(self._unflushed_state(), config=self._config, now_ms=now_ms)

    def next_flush_deadline_ms(self) -> int | None:
        return next_flush_deadline_ms(self._unflushed_state(), config=self._config)

    def flush(self) -> int:
        if self._flushed_offset < self._log_end_offset:
            self._flushed_offset = self._log_end_offset
            self._last_flush_ms = self._clock_ms()
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
        else:
            flushed = self._flushed_offset
            self._drop_from(bisect.bisect_left(self._bases, flushed))
            self._log_end_offset = flushed
            # recovery keeps the segments starting at or below the flushed offset
            keep = sum(1 for segment in self._model.segments if segment.base_offset <= flushed)
            self._model.truncate_to(keep, flushed, now_ms=self._clock_ms())
            # the file log's recovery does the same with a snapshot of a lost tail
            self.producer_snapshots.delete_above(flushed)
        self._partial.clear()  # the file log removes its .part files when it opens
        self.restart()

    def restart(self) -> None:
        """What reopening does to the times the file log keeps: segment creation times and
        the last flush time start again now (as the file log's load sets them)."""
        now = self._clock_ms()
        self._last_flush_ms = now
        for segment in self._model.segments:
            segment.created_ms = now

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
        # as in the file log: the batch containing ``offset`` (or the first after it, in a
        # gap) goes whole with every later one, and the log ends after the last batch kept
        # (the model knows where, batches below the log start included)
        keep, new_end = self._model.truncation(offset)
        if new_end < self._log_start_offset:
            # the batch straddling the log start goes too: empty at the log start
            self.truncate_fully_and_start_at(self._log_start_offset)
            return
        self._drop_from(bisect.bisect_left(self._bases, new_end))
        self._model.truncate_to(keep, new_end, now_ms=self._clock_ms())
        self._log_end_offset = new_end
        self._flushed_offset = new_end
        self.producer_snapshots.delete_above(new_end)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        if offset < 0:
            raise OffsetOutOfRangeError(f"cannot start the log at negative offset {offset}")
        self._batches.clear()
        self._bases.clear()
        self._epochs.clear()
        self._model.start_at(offset, now_ms=self._clock_ms())
        self._log_start_offset = self._log_end_offset = self._flushed_offset = offset
        self.producer_snapshots.delete_all()

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
        self._set_log_start(offset)
        self._model.delete_oldest(self._model.below(offset), now_ms=self._clock_ms())

    def _set_log_start(self, offset: int) -> None:
        self._log_start_offset = offset
        self.producer_snapshots.delete_below(offset)
        self._epochs.truncate_from_start(offset)
        # no epoch may start at the log end (recovery could not tell it from a lost append)
        self._epochs.truncate_from_end(self._log_end_offset)
        keep = 0
        while keep < len(self._batches) and self._batches[keep].last_offset < offset:
            keep += 1
        del self._batches[:keep]
        del self._bases[:keep]

    def maybe_increment_log_start_offset(self, offset: int, *, high_watermark: int) -> bool:
        """See ``FileLog.maybe_increment_log_start_offset``."""
        if offset > high_watermark:
            raise OffsetOutOfRangeError(
                f"cannot increment the log start offset to {offset}: it is above the high "
                f"watermark {high_watermark}"
            )
        if offset <= self._log_start_offset:
            return False
        self.advance_log_start_offset(offset)
        return True

    def _delete_expired(self, count: int) -> int:
        if count:
            new_start = self._model.delete_oldest(count, now_ms=self._clock_ms())
            if new_start > self._log_start_offset:
                self._set_log_start(new_start)
        return count

    def maybe_apply_retention(self, now_ms: int, *, max_deletable_offset: int) -> int:
        """See ``FileLog.maybe_apply_retention``."""
        model, limit = self._model, max_deletable_offset
        deleted = self._delete_expired(
            model.time_breached(now_ms=now_ms, high_watermark=limit, include_active=False)
        )
        return deleted + self._delete_expired(
            model.size_breached(high_watermark=limit, include_active=False)
        )

    def delete_old_segments(self, now_ms: int, *, high_watermark: int) -> int:
        """See ``FileLog.delete_old_segments``."""
        model = self._model
        deleted = self._delete_expired(
            model.start_breached(
                log_start_offset=self._log_start_offset, high_watermark=high_watermark
            )
        )
        if not self._config.delete:  # cleanup.policy without delete: no retention
            return deleted
        deleted += self._delete_expired(model.size_breached(high_watermark=high_watermark))
        return deleted + self._delete_expired(
            model.time_breached(now_ms=now_ms, high_watermark=high_watermark)
        )

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
        if snapshot_id in self._snapshots or snapshot_id.offset < self.log_start_offset:
            return False  # (the file log's rule: nothing below the log start)
        whole = data if isinstance(data, bytes | memoryview) else b"".join(data)
        self._snapshots[snapshot_id] = bytes(whole)
        return True

    def write_partial_snapshot(
        self, snapshot_id: OffsetAndEpoch, position: int, data: bytes
    ) -> None:
        if position == 0:
            self._partial[snapshot_id] = bytearray()
        partial = self._partial[snapshot_id]
        # the file log writes at any position; a download only ever appends
        assert position == len(partial), f"a chunk at {position} of {len(partial)} bytes"
        partial += data

    def store_partial_snapshot(self, snapshot_id: OffsetAndEpoch) -> bool:
        return self.create_snapshot(snapshot_id, bytes(self._partial.pop(snapshot_id)))

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

    # -- producer-state snapshots (see ``FileLog``) ---------------------------

    def write_producer_snapshot(self, offset: int, entries: Sequence[ProducerEntry]) -> None:
        if not self._log_start_offset <= offset <= self._log_end_offset:
            raise OffsetOutOfRangeError(
                f"cannot snapshot producers at offset {offset}: the log holds offsets "
                f"[{self._log_start_offset}, {self._log_end_offset})"
            )
        self.producer_snapshots.write(offset, entries)

    def load_producer_snapshot(self, at_or_below: int) -> ProducerSnapshot | None:
        return self.producer_snapshots.latest(at_or_below)

    def producer_snapshot_offsets(self) -> list[int]:
        return self.producer_snapshots.offsets()
