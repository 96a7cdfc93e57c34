"""One segment of the file log: ``<20-digit base offset>.log`` with its ``.index`` and ``.timeindex``.

The segment writes with ``os.pwrite`` at its current size, so the size in
memory is the truth about where batches end; recovery (``quorum.log.recovery``)
establishes that truth when the log opens.  Its file descriptor comes from the
process's bounded ``OpenFiles`` (opened on first use, closed when others are
used more recently), and the indexes of a segment that recovery trusted
without reading are loaded from their files on first use (rebuilt from the
batch headers when a file is missing or implausible).
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from quorum.log.batch_scan import BatchInfo
from quorum.log.config import LogConfig
from quorum.log.errors import LogCorruptionError
from quorum.log.file_cache import CachedFile, OpenFiles
from quorum.log.index_file import sync_index_file
from quorum.log.offset_index import OffsetIndex
from quorum.log.roll import ActiveSegment
from quorum.log.time_index import NO_TIMESTAMP, TimeIndex, TimestampOffset
from quorum.wire.batch import BATCH_HEADER_SIZE, LOG_OVERHEAD
from quorum.wire.file_region import FileRegion

__all__ = ["INDEX_SUFFIX", "LOG_SUFFIX", "TIME_INDEX_SUFFIX", "Header", "Segment", "segment_name"]

LOG_SUFFIX: Final = ".log"
INDEX_SUFFIX: Final = ".index"
TIME_INDEX_SUFFIX: Final = ".timeindex"
# baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8,
# crc uint32, attributes int16, lastOffsetDelta int32: the first 27 bytes
_PREFIX: Final = struct.Struct(">qiibIhi")
# ... then baseTimestamp int64, maxTimestamp int64: the first 43 bytes
_HEADER: Final = struct.Struct(">qiibIhiqq")
_MAX_TIMESTAMP: Final = struct.Struct(">q")
_LENGTH: Final = struct.Struct(">i")
_MAX_TIMESTAMP_AT: Final = 35
_MAGIC_V2: Final = 2
_WALK_CHUNK: Final = 64 * 1024

# (position, base offset, size, last offset, max timestamp) of one batch
Header = tuple[int, int, int, int, int]


def segment_name(base_offset: int) -> str:
    """Kafka's file name stem: the base offset, zero-padded to 20 digits."""
    return f"{base_offset:020d}"


class Segment:
    """A segment file open for reads and (if it is the active one) appends."""

    __slots__ = (
        "_bytes_since_index",
        "_file",
        "_first_timestamp",
        "_flushed_size",
        "_gapped",
        "_index",
        "_max_timestamp",
        "_may_end_early",
        "_tail_bases",
        "_tail_positions",
        "_time_index",
        "base_offset",
        "config",
        "created_ms",
        "log_path",
        "next_offset",
        "roll_jitter_ms",
        "size",
    )

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        *,
        config: LogConfig,
        files: OpenFiles,
        created_ms: int,
        roll_jitter_ms: int = 0,
        create: bool = False,
    ) -> None:
        self.base_offset = base_offset
        self.config = config
        self.log_path = directory / (segment_name(base_offset) + LOG_SUFFIX)
        self._file = CachedFile(files, self.log_path, create=create)
        self.created_ms = created_ms
        self.roll_jitter_ms = roll_jitter_ms
        self.next_offset = base_offset
        self._bytes_since_index = 0
        # a batch may end before the next one starts (the log cleaner removed batches here,
        # or a follower appended its cleaned leader's batches)
        self._gapped = False
        # a trusted segment of a data partition: its batches may end before the next
        # segment begins (``claim_gap_to``), which rebuilding its indexes must accept
        self._may_end_early = False
        # The batches from the last index entry on, in memory: reads near the end of the
        # log (a leader serving its followers) find their batch without scanning headers.
        self._tail_positions: array[int] = array("q")
        self._tail_bases: array[int] = array("q")
        # None: not known yet (read from the files on first use)
        self._index: OffsetIndex | None = None
        self._time_index: TimeIndex | None = None
        self._max_timestamp: TimestampOffset | None = None
        self._first_timestamp: int | None = None
        if create:
            with self._file:
                pass  # the file exists from here on
            self.size = 0
            self._flushed_size = 0
            self._start_fresh()
        else:
            self.size = os.stat(self.log_path).st_size
            self._flushed_size = self.size

    def _start_fresh(self) -> None:
        """Empty indexes whose files hold nothing."""
        self._index = OffsetIndex(self.index_path, self.base_offset)
        self._time_index = TimeIndex(self.time_index_path, self.base_offset)
        self._index.replace_file_if_stale()
        self._time_index.replace_file_if_stale()
        self._max_timestamp = TimestampOffset(NO_TIMESTAMP, self.base_offset)

    @property
    def index_path(self) -> Path:
        return self.log_path.with_suffix(INDEX_SUFFIX)

    @property
    def time_index_path(self) -> Path:
        return self.log_path.with_suffix(TIME_INDEX_SUFFIX)

    @property
    def index(self) -> OffsetIndex:
        if self._index is None:
            self._load_indexes()
        assert self._index is not None
        return self._index

    @property
    def time_index(self) -> TimeIndex:
        if self._time_index is None:
            self._load_indexes()
        assert self._time_index is not None
        return self._time_index

    @property
    def file_is_open(self) -> bool:
        return self._file.is_open

    def __repr__(self) -> str:
        return f"Segment({self.log_path.name}, offsets {self.base_offset}..{self.next_offset})"

    # -- state set by recovery --------------------------------------------------

    def adopt_trusted(self, *, next_offset: int, may_end_early: bool = False) -> None:
        """Trust a closed segment without reading it; its indexes load on first use.
        ``may_end_early``: its batches may end before ``next_offset`` (a data partition)."""
        self.next_offset = next_offset
        self._may_end_early = may_end_early

    def claim_gap_to(self, offset: int) -> None:
        """End at ``offset``, past the last batch: the next segment starts there, after a
        follower's gap too wide to index from here (``quorum.log.roll``). A read or a
        truncation in between goes on to the next segment's first batch."""
        assert offset >= self.next_offset, (offset, self)
        self.next_offset = offset
        self._gapped = True

    def adopt_scanned(self, batches: list[BatchInfo], size: int) -> None:
        """Take the batches recovery found valid in ``[0, size)``; rebuilds the indexes."""
        self.reset_accounting()
        for batch in batches:
            self.note_batch(batch, batch.position)
        self.size = size
        # a killed process leaves its writes in the page cache, not on the disk:
        # what was found is durable only after the next flush
        self._flushed_size = 0
        self.close_time_index()
        self.index.replace_file_if_stale()
        self.time_index.replace_file_if_stale()

    def adopt_cleanly_closed(self) -> None:
        """Load the last segment of a cleanly closed log: its index files, then the
        batch headers after the last offset-index entry (the end, and the tail)."""
        index = OffsetIndex.load(self.index_path, self.base_offset, self.size)
        if index is None:
            self._rebuild_indexes()
            return
        start = index.last_position
        self._index = index
        self._clear_tail()
        end = self.base_offset
        for position, base, _, last, _ in self._walk(start):
            self._gapped |= bool(self._tail_bases) and base != end
            self._tail_positions.append(position)
            self._tail_bases.append(base)
            end = last + 1
        self.next_offset = end if self._tail_bases else self.base_offset
        self._bytes_since_index = self.size - start
        time_index = TimeIndex.load(self.time_index_path, self.base_offset, self.next_offset)
        if time_index is None:
            self._rebuild_indexes()
            return
        self._time_index = time_index
        self._max_timestamp = self._largest_after(start)

    def note_batch(self, batch: BatchInfo, position: int) -> None:
        """Account one batch at ``position`` (append or recovery): indexes, end, timestamps."""
        assert self._max_timestamp is not None and self._index is not None
        if batch.max_timestamp > self._max_timestamp.timestamp:
            self._max_timestamp = TimestampOffset(batch.max_timestamp, batch.last_offset)
        if position == 0:
            self._first_timestamp = batch.max_timestamp
        if self._bytes_since_index >= self.config.index_interval_bytes and position > 0:
            self._index.append(batch.base_offset, position)
            self.time_index.maybe_append(self._max_timestamp.timestamp, self._max_timestamp.offset)
            self._bytes_since_index = 0
            self._clear_tail()
        self._bytes_since_index += batch.size
        self._gapped |= batch.base_offset != self.next_offset
        self._tail_positions.append(position)
        self._tail_bases.append(batch.base_offset)
        self.next_offset = batch.next_offset

    def reset_accounting(self) -> None:
        self.size = 0
        self.next_offset = self.base_offset
        self._index = OffsetIndex(self.index_path, self.base_offset)
        self._time_index = TimeIndex(self.time_index_path, self.base_offset)
        self._max_timestamp = TimestampOffset(NO_TIMESTAMP, self.base_offset)
        self._first_timestamp = None
        self._bytes_since_index = 0
        self._gapped = False
        self._clear_tail()

    def _clear_tail(self) -> None:
        del self._tail_positions[:]
        del self._tail_bases[:]

    def _load_indexes(self) -> None:
        """The index files of a trusted segment, or indexes rebuilt from its headers."""
        index = OffsetIndex.load(self.index_path, self.base_offset, self.size)
        time_index = TimeIndex.load(self.time_index_path, self.base_offset, self.next_offset)
        if index is None or time_index is None:
            self._rebuild_indexes()
            return
        self._index, self._time_index = index, time_index
        self._bytes_since_index = self.size - index.last_position

    def _rebuild_indexes(self) -> None:
        """Both indexes from the batch headers (no CRC: the segment is trusted)."""
        size, end = self.size, self.next_offset
        self.reset_accounting()
        for position, base, length, last, max_timestamp in self._walk(0, end=size):
            self.note_batch(
                BatchInfo(
                    position=position,
                    size=length,
                    base_offset=base,
                    last_offset=last,
                    epoch=0,
                    max_timestamp=max_timestamp,
                ),
                position,
            )
        self.size = size
        if end != self.base_offset and self.next_offset != end:
            if not (self._may_end_early and self.next_offset < end):
                raise self.corruption(
                    size, f"its batches end at offset {self.next_offset}, not {end}"
                )
            self.claim_gap_to(end)
        self.close_time_index()
        self.index.replace_file_if_stale()
        self.time_index.replace_file_if_stale()

    # -- timestamps -----------------------------------------------------------------

    @property
    def max_timestamp_so_far(self) -> TimestampOffset:
        """The largest batch max timestamp and the last offset of the first batch with it."""
        if self._max_timestamp is None:
            self._max_timestamp = self.time_index.last_entry
        return self._max_timestamp

    def largest_timestamp_ms(self) -> int:
        """The largest batch max timestamp, else the file's mtime (Kafka's retention clock)."""
        largest = self.max_timestamp_so_far.timestamp
        if largest >= 0:
            return largest
        return os.stat(self.log_path).st_mtime_ns // 1_000_000

    def first_batch_timestamp(self) -> int:
        """The first batch's max timestamp (-1 when it has none or the segment is empty)."""
        if self._first_timestamp is None:
            if self.size == 0:
                return NO_TIMESTAMP
            raw = self.pread(_MAX_TIMESTAMP.size, _MAX_TIMESTAMP_AT)
            if len(raw) < _MAX_TIMESTAMP.size:
                raise self.corruption(0, "the first batch header is cut short")
            self._first_timestamp = int(_MAX_TIMESTAMP.unpack(raw)[0])
        return self._first_timestamp

    def roll_facts(self) -> ActiveSegment:
        config = self.config
        full = (
            len(self.index) >= config.max_offset_index_entries
            or len(self.time_index) >= config.max_time_index_entries - 1
        )
        return ActiveSegment(
            base_offset=self.base_offset,
            size=self.size,
            first_batch_timestamp=self.first_batch_timestamp(),
            created_ms=self.created_ms,
            roll_jitter_ms=self.roll_jitter_ms,
            index_full=full,
        )

    def close_time_index(self) -> None:
        """Kafka's ``onBecomeInactiveSegment``: the last time entry is the largest timestamp."""
        largest = self.max_timestamp_so_far
        self.time_index.maybe_append(largest.timestamp, largest.offset)

    def _largest_after(self, position: int) -> TimestampOffset:
        """The time index's last entry, or a larger batch max timestamp from ``position`` on."""
        largest = self.time_index.last_entry
        for _, _, _, last, max_timestamp in self._walk(position):
            if max_timestamp > largest.timestamp:
                largest = TimestampOffset(max_timestamp, last)
        return largest

    # -- appends and durability -------------------------------------------------------

    def append(self, data: memoryview, batches: list[BatchInfo]) -> None:
        """Write validated batches (positions relative to ``data``) at the end."""
        start = self.size
        written = 0
        with self._file as fd:
            while written < len(data):
                written += os.pwrite(fd, data[written:], start + written)
        # the size before the end offset: a flush thread reads the log end, then the size
        # it syncs (FileLog.flush), so every batch it counts lies inside what it syncs
        self.size = start + len(data)
        for batch in batches:
            self.note_batch(batch, start + batch.position)

    def flush(self, *, sync_indexes: bool = False) -> None:
        """fsync the data written so far; ``sync_indexes`` also syncs the index files (a
        closed segment that recovery will trust without reading)."""
        size = self.size  # before the fsync: appends may go on beside it (FileLog.flush)
        if self._flushed_size < size:
            with self._file as fd:
                os.fsync(fd)
            self._flushed_size = max(self._flushed_size, size)
        self.persist_indexes()
        if sync_indexes:
            sync_index_file(self.index_path)
            sync_index_file(self.time_index_path)

    def persist_indexes(self) -> None:
        if self._index is not None:
            self._index.persist()
        if self._time_index is not None:
            self._time_index.persist()

    @property
    def is_flushed(self) -> bool:
        return self._flushed_size >= self.size

    # -- reads ----------------------------------------------------------------------

    def file_size(self) -> int:
        with self._file as fd:
            return os.fstat(fd).st_size

    def pread(self, length: int, position: int) -> bytes:
        with self._file as fd:
            return os.pread(fd, length, position)

    def region(self, position: int, length: int) -> FileRegion:
        """``length`` bytes from ``position`` to send from the file (not read here)."""
        with self._file as fd:
            return FileRegion(fd, position, length)

    def _header_at(self, position: int) -> tuple[int, int, int]:
        """(base offset, size, last offset) of the batch at ``position``."""
        raw = self.pread(_PREFIX.size, position)
        if len(raw) < _PREFIX.size:
            raise self.corruption(position, "a batch header is cut short by the end of the file")
        base, length, _, magic, _, _, delta = _PREFIX.unpack(raw)
        if magic != _MAGIC_V2 or length < BATCH_HEADER_SIZE - LOG_OVERHEAD or delta < 0:
            raise self.corruption(position, "the bytes there are not a v2 batch header")
        return base, LOG_OVERHEAD + length, base + delta

    def _walk(self, position: int = 0, *, end: int | None = None) -> Iterator[Header]:
        """The headers of the batches from ``position`` to ``end`` (the size), read in chunks."""
        stop = self.size if end is None else end
        buf, origin = b"", position
        while position < stop:
            at = position - origin
            if at + _HEADER.size > len(buf):
                buf, origin, at = self.pread(min(_WALK_CHUNK, stop - position), position), position, 0
                if len(buf) < _HEADER.size:
                    raise self.corruption(position, "a batch header is cut short by the end of the file")
            base, length, _, magic, _, _, delta, _, max_timestamp = _HEADER.unpack_from(buf, at)
            size = LOG_OVERHEAD + length
            if magic != _MAGIC_V2 or length < BATCH_HEADER_SIZE - LOG_OVERHEAD or delta < 0:
                raise self.corruption(position, "the bytes there are not a v2 batch header")
            if position + size > stop:
                raise self.corruption(position, "the batch there runs past the end of the segment")
            yield position, base, size, base + delta, max_timestamp
            position += size

    def locate(self, offset: int) -> tuple[int, int, int]:
        """(position, size, base offset) of the batch containing ``offset`` (in this segment),
        or of the first batch after it if the log cleaner removed ``offset``."""
        found = self.find(offset)
        if found is None:
            raise self.corruption(self.size, f"offset {offset} is missing from the segment")
        return found

    def find(self, offset: int) -> tuple[int, int, int] | None:
        """``locate``, or None if no batch here ends at or after ``offset``: the segment
        claims a follower's gap up to the next one (``claim_gap_to``), or is damaged (the
        cleaner and truncation keep every other segment's batches ending where the next
        segment begins); a read then goes on with the next segment."""
        assert self.base_offset <= offset < self.next_offset, (offset, self)
        # the tail always reaches the end of the segment, so the last batch of it that
        # starts at or before ``offset`` holds it, unless it ends before (a cleaned gap)
        found = bisect.bisect_right(self._tail_bases, offset) - 1
        if found >= 0:
            positions = self._tail_positions
            if self._gapped and self._header_at(positions[found])[2] < offset:
                found += 1
                if found == len(positions):
                    return None
            position = positions[found]
            end = positions[found + 1] if found + 1 < len(positions) else self.size
            return position, end - position, self._tail_bases[found]
        position = self.index.lookup(offset)
        while position < self.size:
            base, size, last = self._header_at(position)
            if last >= offset:
                return position, size, base
            position += size
        return None

    def whole_batches_end(self, position: int, limit: int) -> int:
        """Where the whole batches from ``position`` (a batch start) that end at or before
        byte ``limit`` end: the last batch boundary at or before it, found without reading
        the batches (the tail's positions in memory, else the index and the few headers
        after its entry)."""
        if limit >= self.size:
            return self.size
        tail = self._tail_positions
        if tail and limit >= tail[0]:
            return max(position, tail[bisect.bisect_right(tail, limit) - 1])
        # an index entry is a batch start: the walk covers at most an index interval
        at = max(position, self.index.floor_position(limit))
        buf, origin = b"", at
        while at + LOG_OVERHEAD <= limit:
            offset_in_buf = at - origin
            if offset_in_buf + LOG_OVERHEAD > len(buf):
                buf, origin, offset_in_buf = self.pread(min(_WALK_CHUNK, limit - at), at), at, 0
                if len(buf) < LOG_OVERHEAD:
                    raise self.corruption(at, "a batch header is cut short by the end of the file")
            length = _LENGTH.unpack_from(buf, offset_in_buf + 8)[0]
            if length < BATCH_HEADER_SIZE - LOG_OVERHEAD:
                raise self.corruption(at, "the bytes there are not a v2 batch header")
            if at + LOG_OVERHEAD + length > limit:
                break
            at += LOG_OVERHEAD + length
        return at

    def end_before(self, position: int, offset: int) -> int:
        """The offset after the last batch before byte ``position`` (a batch boundary); the
        base offset if there is none. ``offset``: where the walk starts from the index, at
        or past that batch's base offset and below the base offset of the batch at
        ``position`` (offsets may skip between batches: a cleaned or follower gap)."""
        end = self.base_offset
        for _, _, _, last, _ in self._walk(self.index.lookup(offset), end=position):
            end = last + 1
        return end

    def iter_headers(self) -> list[tuple[int, int, int, int]]:
        """(position, base offset, size, last offset) of every batch, headers only."""
        return [(position, base, size, last) for position, base, size, last, _ in self._walk()]

    def headers_from(self, position: int) -> Iterator[Header]:
        """(position, base offset, size, last offset, max timestamp) from ``position`` on."""
        return self._walk(position)

    def corruption(self, position: int, problem: str) -> LogCorruptionError:
        return LogCorruptionError(
            f"{self.log_path} is corrupt at byte {position}: {problem}; "
            f"move the partition directory aside and let the node re-replicate it"
        )

    # -- truncation and removal -----------------------------------------------------

    def truncate_at(self, position: int, next_offset: int, *, now_ms: int) -> None:
        """Cut the file at ``position`` (a batch boundary) and make the cut durable."""
        index, time_index = self.index, self.time_index
        with self._file as fd:
            os.ftruncate(fd, position)
            os.fsync(fd)
        self.size = position
        self._flushed_size = position
        self.next_offset = next_offset
        index.truncate_at_position(position)
        time_index.truncate_to(next_offset)
        # every batch before the last offset-index entry is folded into the time index
        self._max_timestamp = self._largest_after(index.last_position)
        if position == 0:
            self._first_timestamp = None
            self.created_ms = now_ms
        self._bytes_since_index = self.config.index_interval_bytes
        self._clear_tail()  # rare: lookups scan from the index until the next entry

    def cut_file(self, size: int) -> None:
        """Cut the file at ``size`` durably (recovery, before the segment is adopted)."""
        with self._file as fd:
            os.ftruncate(fd, size)
            os.fsync(fd)
        self.size = size

    def close(self) -> None:
        self._file.close()

    def delete(self) -> None:
        self.close()
        for path in (self.log_path, self.index_path, self.time_index_path):
            path.unlink(missing_ok=True)
