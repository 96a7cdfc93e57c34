"""One segment of the file log: ``<20-digit base offset>.log`` plus its ``.index``.

The segment keeps its file open and writes with ``os.pwrite`` at its current
size, so the size in memory is the truth about where batches end; recovery
(``quorum.log.recovery``) establishes that truth when the log opens.
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array
from pathlib import Path
from typing import Final

from quorum.log.batch_scan import BatchInfo
from quorum.log.errors import LogCorruptionError
from quorum.log.offset_index import OffsetIndex
from quorum.wire.batch import BATCH_HEADER_SIZE, LOG_OVERHEAD

__all__ = ["INDEX_SUFFIX", "LOG_SUFFIX", "Segment", "segment_name"]

LOG_SUFFIX: Final = ".log"
INDEX_SUFFIX: Final = ".index"
# baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8,
# crc uint32, attributes int16, lastOffsetDelta int32: the first 27 bytes
_PREFIX: Final = struct.Struct(">qiibIhi")
_PREFIX_SIZE: Final = _PREFIX.size
_MAX_TIMESTAMP: Final = struct.Struct(">q")
_MAX_TIMESTAMP_AT: Final = 35
_MAGIC_V2: Final = 2


def segment_name(base_offset: int) -> str:
    """Kafka's file name stem: the base offset, zero-padded to 20 digits."""
    return f"{base_offset:020d}"


class Segment:
    """A segment file open for reads and (if it is the active one) appends."""

    __slots__ = (
        "_bytes_since_index",
        "_fd",
        "_flushed_size",
        "_tail_bases",
        "_tail_positions",
        "base_offset",
        "index",
        "index_interval_bytes",
        "log_path",
        "max_timestamp",
        "next_offset",
        "size",
    )

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int,
        create: bool = False,
    ) -> None:
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.log_path = directory / (segment_name(base_offset) + LOG_SUFFIX)
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        self._fd = os.open(self.log_path, flags, 0o644)
        self.size = os.fstat(self._fd).st_size
        self._flushed_size = self.size if create else 0
        self.next_offset = base_offset
        # None: not known until the headers are read (lazily, for retention)
        self.max_timestamp: int | None = -1
        self.index = OffsetIndex(self.index_path, base_offset)
        self._bytes_since_index = 0
        # The batches from the last index entry on, in memory: reads near the end of the
        # log (a leader serving its followers) find their batch without scanning headers.
        self._tail_positions: array[int] = array("q")
        self._tail_bases: array[int] = array("q")
        if create:
            self.index_path.write_bytes(b"")

    @property
    def index_path(self) -> Path:
        return self.log_path.with_suffix(INDEX_SUFFIX)

    @property
    def fd(self) -> int:
        return self._fd

    def __repr__(self) -> str:
        return f"Segment({self.log_path.name}, offsets {self.base_offset}..{self.next_offset})"

    # -- state set by recovery --------------------------------------------------

    def adopt_unverified(self, *, next_offset: int, index: OffsetIndex) -> None:
        """Trust a closed segment without reading it: its file size, end and index."""
        self.next_offset = next_offset
        self._flushed_size = self.size
        self.max_timestamp = None
        self.index = index

    def adopt_scanned(self, batches: list[BatchInfo], size: int) -> None:
        """Take the batches recovery found valid in ``[0, size)``; rebuilds the index."""
        self.reset_accounting()
        for batch in batches:
            self.note_batch(batch, batch.position)
        self.size = size
        # a killed process leaves its writes in the page cache, not on the disk:
        # what was found is durable only after the next flush
        self._flushed_size = 0

    def note_batch(self, batch: BatchInfo, position: int) -> None:
        """Account one batch at ``position`` (append or recovery): index, end, timestamp."""
        if self._bytes_since_index >= self.index_interval_bytes and position > 0:
            self.index.append(batch.base_offset, position)
            self._bytes_since_index = 0
            self._clear_tail()
        self._bytes_since_index += batch.size
        self._tail_positions.append(position)
        self._tail_bases.append(batch.base_offset)
        self.next_offset = batch.next_offset
        if self.max_timestamp is not None:
            self.max_timestamp = max(self.max_timestamp, batch.max_timestamp)

    def reset_accounting(self) -> None:
        self.size = 0
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self.index = OffsetIndex(self.index_path, self.base_offset)
        self._bytes_since_index = 0
        self._clear_tail()

    def _clear_tail(self) -> None:
        del self._tail_positions[:]
        del self._tail_bases[:]

    def largest_timestamp_ms(self) -> int:
        """The largest batch max timestamp, else the file's mtime (Kafka's retention clock)."""
        if self.max_timestamp is None:
            largest = -1
            for position, _, _, _ in self.iter_headers():
                raw = os.pread(self._fd, _MAX_TIMESTAMP.size, position + _MAX_TIMESTAMP_AT)
                largest = max(largest, _MAX_TIMESTAMP.unpack(raw)[0])
            self.max_timestamp = largest
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return int(os.fstat(self._fd).st_mtime * 1000)

    # -- appends ------------------------------------------------------------------

    def append(self, data: memoryview, batches: list[BatchInfo]) -> None:
        """Write validated batches (positions relative to ``data``) at the end."""
        written = 0
        while written < len(data):
            written += os.pwrite(self._fd, data[written:], self.size + written)
        for batch in batches:
            self.note_batch(batch, self.size + batch.position)
        self.size += len(data)

    def flush(self) -> None:
        size = self.size  # before the fsync: appends may go on beside it (FileLog.flush)
        if self._flushed_size < size:
            os.fsync(self._fd)
            self._flushed_size = max(self._flushed_size, size)
        self.index.persist()

    @property
    def is_flushed(self) -> bool:
        return self._flushed_size >= self.size

    # -- reads ----------------------------------------------------------------------

    def pread(self, length: int, position: int) -> bytes:
        return os.pread(self._fd, length, position)

    def _header_at(self, position: int) -> tuple[int, int, int]:
        """(base offset, size, last offset) of the batch at ``position``."""
        raw = os.pread(self._fd, _PREFIX_SIZE, position)
        if len(raw) < _PREFIX_SIZE:
            raise self.corruption(position, "a batch header is cut short by the end of the file")
        base, length, _, magic, _, _, delta = _PREFIX.unpack(raw)
        if magic != _MAGIC_V2 or length < BATCH_HEADER_SIZE - LOG_OVERHEAD or delta < 0:
            raise self.corruption(position, "the bytes there are not a v2 batch header")
        return base, LOG_OVERHEAD + length, base + delta

    def locate(self, offset: int) -> tuple[int, int, int]:
        """(position, size, base offset) of the batch containing ``offset`` (in this segment)."""
        assert self.base_offset <= offset < self.next_offset, (offset, self)
        # the tail always reaches the end of the segment, so the last batch of it that
        # starts at or before ``offset`` holds it
        found = bisect.bisect_right(self._tail_bases, offset) - 1
        if found >= 0:
            positions = self._tail_positions
            position = positions[found]
            end = positions[found + 1] if found + 1 < len(positions) else self.size
            return position, end - position, self._tail_bases[found]
        position = self.index.lookup(offset)
        while position < self.size:
            base, size, last = self._header_at(position)
            if last >= offset:
                return position, size, base
            position += size
        raise self.corruption(position, f"offset {offset} is missing from the segment")

    def iter_headers(self) -> list[tuple[int, int, int, int]]:
        """(position, base offset, size, last offset) of every batch, headers only."""
        result = []
        position = 0
        while position < self.size:
            base, size, last = self._header_at(position)
            result.append((position, base, size, last))
            position += size
        return result

    def corruption(self, position: int, problem: str) -> LogCorruptionError:
        return LogCorruptionError(
            f"{self.log_path} is corrupt at byte {position}: {problem}; "
            f"move the partition directory aside and let the node re-replicate it"
        )

    # -- truncation and removal -----------------------------------------------------

    def truncate_at(self, position: int, next_offset: int) -> None:
        """Cut the file at ``position`` (a batch boundary) and make the cut durable."""
        os.ftruncate(self._fd, position)
        os.fsync(self._fd)
        self.size = position
        self._flushed_size = position
        self.next_offset = next_offset
        self.max_timestamp = None
        self.index.truncate_at_position(position)
        self._bytes_since_index = self.index_interval_bytes
        self._clear_tail()  # rare: lookups scan from the index until the next entry

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        self.close()
        for path in (self.log_path, self.index_path):
            path.unlink(missing_ok=True)
