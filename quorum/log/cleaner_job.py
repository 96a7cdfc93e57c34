"""One cleaning round of one file log, as a generator of bounded slices.

``CleaningJob.steps()`` does the work of Kafka's ``Cleaner.doClean`` and yields
between slices of at most ``slice_batches`` batches (or ``slice_bytes`` bytes
read, whichever comes first; one batch at least), so the task that runs it
(the broker's log-maintenance task: ``broker.replica.log_cleaning``) can let
the other tasks run; a ``SyncFile`` effect is an fsync, which the runner does
in a worker thread.  A slice's bytes are the larger of a batch's stored and decompressed sizes (a
compressed batch costs what its records cost).  The rounds:

1. the offset map: the keys of the dirty range ``[first_dirty_offset,
   first_uncleanable_offset)`` (closed segments only), up to the map's bound;
   the round ends at ``latest_offset + 1`` of what was mapped;
2. the last batch of each producer id, from the batch headers of the whole
   log (unless the caller gives them, e.g. from its producer state);
3. every closed segment below the round's end, in groups of at most
   ``segment.bytes`` (``quorum.log.cleaner_plan.group_segments``), rewritten
   batch by batch (``quorum.log.cleaner_batches.clean_batch``) into
   ``<base>.log.cleaned``, fsynced, and swapped in
   (``quorum.log.cleaner_swap``); the new segment's indexes are built while
   it is written, so the swap itself is a few renames and list updates.

The log may change between slices (appends, a roll, retention or
DeleteRecords deleting segments, a truncation, the partition going away):
after each pause the job checks that every closed segment it works on is
still in the log with the size it had, and otherwise stops, deletes its
``.cleaned`` file and reports why (``CleaningResult.aborted``).
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import Final

import attrs

from quorum.log.batch_scan import BatchInfo
from quorum.log.cleaner_batches import BatchFate, clean_batch, map_batch
from quorum.log.cleaner_plan import CleanerConfig, OffsetMap, group_segments
from quorum.log.cleaner_swap import SwapHook, cleaned_path, no_hook, swap_in
from quorum.log.file_log import FileLog
from quorum.log.segment import Segment
from quorum.wire.batch import BATCH_HEADER_SIZE, BatchHeader, batch_size_at
from quorum.wire.errors import CorruptRecordError

__all__ = [
    "DEFAULT_SLICE_BATCHES",
    "DEFAULT_SLICE_BYTES",
    "CleaningJob",
    "CleaningResult",
    "CleaningStats",
    "Effect",
    "Pause",
    "SyncFile",
]

# a record costs ~1-3 us to map and again to filter (a batch header alone ~5 us): a slice
# of 256 KiB (~2,000 records of 100 B) or 200 batches stays near 10 ms
DEFAULT_SLICE_BATCHES: Final = 200
DEFAULT_SLICE_BYTES: Final = 256 * 1024
_READ_CHUNK: Final = 256 * 1024


@attrs.frozen
class Pause:
    """A slice is done: let the other tasks run before the next."""


@attrs.frozen
class SyncFile:
    """fsync ``path`` (a cleaned segment nobody else uses: safe in a worker thread)."""

    path: Path

    def perform(self) -> None:
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


Effect = Pause | SyncFile
_PAUSE: Final = Pause()


@attrs.define
class CleaningStats:
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_kept: int = 0
    batches_read: int = 0
    segments_replaced: int = 0
    groups: int = 0
    slices: int = 0
    # the most batches handled between two pauses
    max_slice_batches: int = 0


@attrs.frozen(kw_only=True)
class CleaningResult:
    """``end_offset``: the new cleaner checkpoint (None: nothing was cleaned);
    ``aborted``: why the round stopped early (what it swapped in before stays)."""

    end_offset: int | None
    aborted: str | None
    stats: CleaningStats


class _Aborted(Exception):
    """The log changed under a cleaning round (truncated or closed): the round is dropped."""


def _batches(segment: Segment, position: int, end: int) -> Iterator[tuple[int, memoryview]]:
    """The whole batches of ``segment`` in ``[position, end)``, read in chunks."""
    buf, origin = memoryview(b""), position
    while position < end:
        at = position - origin
        size = batch_size_at(buf, at)
        if size is None or at + size > len(buf):
            want = max(_READ_CHUNK, size or 0)
            buf, origin, at = memoryview(segment.pread(min(want, end - position), position)), position, 0
            size = batch_size_at(buf, 0)
            if size is None or size < BATCH_HEADER_SIZE or size > len(buf):
                raise segment.corruption(position, "a batch runs past the end of the segment")
        yield position, buf[at : at + size]
        position += size


class CleaningJob:
    """One round over ``log`` (module docstring); run ``steps()`` or ``run_to_end()``."""

    def __init__(
        self,
        log: FileLog,
        *,
        first_dirty_offset: int,
        first_uncleanable_offset: int,
        config: CleanerConfig,
        now_ms: int,
        producer_last_offsets: Mapping[int, int] | None = None,
        slice_batches: int = DEFAULT_SLICE_BATCHES,
        slice_bytes: int = DEFAULT_SLICE_BYTES,
        swap_hook: SwapHook | None = None,
    ) -> None:
        assert slice_batches > 0 and slice_bytes > 0
        self._log = log
        self._first_dirty = first_dirty_offset
        self._uncleanable = first_uncleanable_offset
        self._config = config
        self._now_ms = now_ms
        self._producer_last = producer_last_offsets
        self._slice_batches = slice_batches
        self._slice_bytes = slice_bytes
        self._swap_hook = swap_hook
        self._batches_in_slice = 0
        self._bytes_in_slice = 0
        # the closed segments worked on, by identity, with the size each had
        self._watched: dict[int, tuple[Segment, int]] = {}
        self._cleaned: Path | None = None
        self.stats = CleaningStats()
        self.result: CleaningResult | None = None

    # -- running ------------------------------------------------------------------------

    def steps(self) -> Iterator[Effect]:
        try:
            end_offset = yield from self._clean()
            self.result = CleaningResult(end_offset=end_offset, aborted=None, stats=self.stats)
        except _Aborted as exc:
            self.result = CleaningResult(end_offset=None, aborted=str(exc), stats=self.stats)
        finally:
            if self._cleaned is not None:
                self._cleaned.unlink(missing_ok=True)
                self._cleaned = None

    def run_to_end(self) -> CleaningResult:
        """Every slice at once, fsyncs inline (tests and tools)."""
        for effect in self.steps():
            if isinstance(effect, SyncFile):
                effect.perform()
        assert self.result is not None
        return self.result

    def _spend(self, size: int) -> bool:
        self._batches_in_slice += 1
        self._bytes_in_slice += size
        return (
            self._batches_in_slice >= self._slice_batches
            or self._bytes_in_slice >= self._slice_bytes
        )

    def _pause(self) -> Iterator[Effect]:
        stats = self.stats
        stats.slices += 1
        stats.max_slice_batches = max(stats.max_slice_batches, self._batches_in_slice)
        self._batches_in_slice = self._bytes_in_slice = 0
        yield _PAUSE
        self._check_intact()

    def _check_intact(self) -> None:
        log = self._log
        if log.is_closed:
            raise _Aborted("the log was closed")
        closed = {id(segment) for segment in log.segments[:-1]}
        for segment, size in self._watched.values():
            if id(segment) not in closed or segment.size != size:
                raise _Aborted(f"{segment} changed while it was being cleaned")

    # -- the round ----------------------------------------------------------------------

    def _clean(self) -> Generator[Effect, None, int | None]:
        segments = self._log.segments
        closed = [s for s in segments[:-1] if s.base_offset < self._uncleanable]
        self._watched = {id(s): (s, s.size) for s in closed}
        offset_map = OffsetMap(self._config.offset_map_entries)
        yield from self._map_dirty(closed, offset_map)
        end_offset = offset_map.latest_offset + 1
        if end_offset <= self._first_dirty:
            return None
        producer_last = self._producer_last
        if producer_last is None:
            producer_last = yield from self._scan_producers()
        doomed = [s for s in closed if s.base_offset < end_offset]
        for group in group_segments(
            doomed, max_bytes=self._config.segment_bytes, upper_offset=end_offset
        ):
            yield from self._rewrite(doomed[group.start : group.stop], offset_map, producer_last)
        self.stats.max_slice_batches = max(self.stats.max_slice_batches, self._batches_in_slice)
        return end_offset

    def _map_dirty(self, closed: list[Segment], offset_map: OffsetMap) -> Iterator[Effect]:
        start = self._first_dirty
        for index, segment in enumerate(closed):
            following = closed[index + 1].base_offset if index + 1 < len(closed) else None
            upper = self._uncleanable if following is None else following
            if upper <= start:
                continue
            position = 0
            if segment.base_offset < start < segment.next_offset:
                found = segment.find(start)
                position = segment.size if found is None else found[0]
            for _, batch in _batches(segment, position, segment.size):
                self.stats.bytes_read += len(batch)
                work = map_batch(batch, offset_map, start_offset=start)
                if work is None:
                    return  # full: the round ends at the last batch mapped whole
                if self._spend(max(len(batch), work)):
                    yield from self._pause()
            offset_map.update_latest_offset(upper - 1)

    def _scan_producers(self) -> Generator[Effect, None, dict[int, int]]:
        """Producer id -> last offset of its last batch, from every batch header."""
        last: dict[int, int] = {}
        for segment in list(self._log.segments):
            position, end = 0, segment.size
            while position + BATCH_HEADER_SIZE <= end:
                try:
                    header = BatchHeader.parse(segment.pread(BATCH_HEADER_SIZE, position))
                except CorruptRecordError:
                    break  # the active segment cut meanwhile: it holds no cleaned batch
                if header.producer_id >= 0:
                    last[header.producer_id] = header.last_offset
                position += header.size
                if self._spend(0):
                    yield from self._pause()
        return last

    def _rewrite(
        self, group: list[Segment], offset_map: OffsetMap, producer_last: Mapping[int, int]
    ) -> Iterator[Effect]:
        log, stats = self._log, self.stats
        base = group[0].base_offset
        new = log.detached_segment(base)
        new.reset_accounting()
        path = self._cleaned = cleaned_path(log.directory, base)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        written, pending = 0, bytearray()
        try:
            for segment in group:
                for position, batch in _batches(segment, 0, segment.size):
                    header = BatchHeader.parse(batch)
                    pid = header.producer_id
                    fate = BatchFate(
                        producer_last=pid >= 0 and producer_last.get(pid) == header.last_offset,
                        group_last=segment is group[-1] and position + header.size == segment.size,
                    )
                    cleaned = clean_batch(
                        batch,
                        offset_map,
                        fate=fate,
                        now_ms=self._now_ms,
                        delete_retention_ms=self._config.delete_retention_ms,
                    )
                    stats.bytes_read += header.size
                    stats.batches_read += 1
                    stats.records_read += cleaned.records_read
                    stats.records_kept += cleaned.records_kept
                    if cleaned.data is not None:
                        info = BatchInfo(
                            position=written,
                            size=len(cleaned.data),
                            base_offset=header.base_offset,
                            last_offset=header.last_offset,
                            epoch=header.partition_leader_epoch,
                            max_timestamp=cleaned.max_timestamp,
                        )
                        new.note_batch(info, written)
                        pending += cleaned.data
                        written += len(cleaned.data)
                    if self._spend(max(header.size, cleaned.records_bytes)):
                        _write_all(fd, pending)
                        pending.clear()
                        yield from self._pause()
            _write_all(fd, pending)
        finally:
            os.close(fd)
        stats.bytes_written += written
        yield SyncFile(path)
        self._check_intact()
        new.size = written
        swap_in(path, group, hook=self._swap_hook or no_hook)
        self._cleaned = None
        new.close_time_index()
        new.index.replace_file_if_stale()
        new.time_index.replace_file_if_stale()
        log.replace_segments(group, new)
        for segment in group:
            del self._watched[id(segment)]
        stats.segments_replaced += len(group)
        stats.groups += 1


def _write_all(fd: int, data: bytearray) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
