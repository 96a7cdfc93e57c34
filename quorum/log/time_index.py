"""The time index of one segment (Kafka's ``.timeindex`` file).

Each entry is 12 bytes, big-endian: a timestamp (int64) and an offset relative
to the segment's base offset (int32).  An entry ``(T, O)`` says that the
largest batch max timestamp up to and including offset ``O`` is ``T``, and
that ``O`` is the last offset of the first batch that reached ``T``: any
record whose timestamp is above ``T`` comes after ``O``.  Timestamps strictly
increase from entry to entry; offsets never decrease.

Entries are added beside offset-index entries (every ``index.interval.bytes``)
when the segment's max timestamp has grown past the last entry, and once more
when the segment stops being the active one (on a roll, at close, after
recovery), so the last entry of a closed segment is its largest timestamp:
retention reads it instead of the batches.  Like the offset index, the entries
live in memory and the file is a copy of them.
"""

from __future__ import annotations

import bisect
import struct
from array import array
from pathlib import Path
from typing import Final

import attrs

from quorum.log.index_file import (
    read_index_file,
    replace_index_file,
    truncate_index_file,
    write_index_tail,
)

__all__ = ["NO_TIMESTAMP", "TIME_ENTRY_SIZE", "TimeIndex", "TimestampOffset"]

NO_TIMESTAMP: Final = -1
TIME_ENTRY_SIZE: Final = 12
_ENTRY: Final = struct.Struct(">qi")


@attrs.frozen
class TimestampOffset:
    """A time-index entry: ``timestamp`` is the largest up to and including ``offset``."""

    timestamp: int
    offset: int


class TimeIndex:
    """Timestamp -> offset entries of one segment, persisted to ``path``."""

    __slots__ = ("_persisted", "_relative", "_timestamps", "base_offset", "path")

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._timestamps: array[int] = array("q")
        self._relative: array[int] = array("i")
        self._persisted = 0

    def __len__(self) -> int:
        return len(self._timestamps)

    def entries(self) -> list[TimestampOffset]:
        return [
            TimestampOffset(ts, self.base_offset + rel)
            for ts, rel in zip(self._timestamps, self._relative, strict=True)
        ]

    @property
    def last_entry(self) -> TimestampOffset:
        """The last entry; ``(-1, base offset)`` when there is none (Kafka's answer)."""
        if not self._timestamps:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(self._timestamps[-1], self.base_offset + self._relative[-1])

    def maybe_append(self, timestamp: int, offset: int) -> bool:
        """Add ``(timestamp, offset)`` if the timestamp is above the last entry's."""
        last = self.last_entry
        if timestamp <= last.timestamp:
            return False
        assert not self._timestamps or offset >= last.offset, ("offsets must not decrease", offset)
        relative = offset - self.base_offset
        assert 0 <= relative < 2**31, (offset, self.base_offset)
        # offsets last: ``persist`` in a flush thread counts them, so every entry it sees
        # is whole (a thread switch may fall between these two appends)
        self._timestamps.append(timestamp)
        self._relative.append(relative)
        return True

    def lookup(self, timestamp: int) -> TimestampOffset:
        """The last entry whose timestamp is at or below ``timestamp``; else ``(-1, base)``."""
        found = bisect.bisect_right(self._timestamps, timestamp) - 1
        if found < 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(self._timestamps[found], self.base_offset + self._relative[found])

    def truncate_to(self, offset: int) -> None:
        """Drop every entry whose offset is at or above ``offset`` (the log was cut there)."""
        keep = bisect.bisect_left(self._relative, offset - self.base_offset)
        del self._timestamps[keep:]
        del self._relative[keep:]
        if self._persisted > keep:
            self._persisted = keep
            truncate_index_file(self.path, keep * TIME_ENTRY_SIZE)

    def to_bytes(self) -> bytes:
        return b"".join(
            _ENTRY.pack(ts, rel) for ts, rel in zip(self._timestamps, self._relative, strict=True)
        )

    def persist(self) -> None:
        """Write the entries added since the last call to the index file."""
        # entries may be added beside a flush thread: count the array ``maybe_append``
        # fills last, or an entry whose offset is not there yet would be read
        count = len(self._relative)
        if self._persisted >= count:
            return
        tail = b"".join(
            _ENTRY.pack(self._timestamps[i], self._relative[i])
            for i in range(self._persisted, count)
        )
        write_index_tail(self.path, tail, self._persisted * TIME_ENTRY_SIZE)
        self._persisted = count

    def replace_file_if_stale(self) -> bool:
        """Make the file hold exactly the in-memory entries; True if it had to change."""
        changed = replace_index_file(self.path, self.to_bytes())
        self._persisted = len(self._timestamps)
        return changed

    @classmethod
    def load(cls, path: Path, base_offset: int, next_offset: int) -> TimeIndex | None:
        """Read a time index file; None if it is missing or not plausible for the segment.

        Plausible: whole entries, strictly increasing timestamps, non-decreasing
        offsets, every offset inside ``[base_offset, next_offset)``.
        """
        data = read_index_file(path)
        if data is None or len(data) % TIME_ENTRY_SIZE:
            return None
        index = cls(path, base_offset)
        for ts, rel in _ENTRY.iter_unpack(data):
            if not base_offset <= base_offset + rel < next_offset:
                return None
            if index._timestamps and (ts <= index._timestamps[-1] or rel < index._relative[-1]):
                return None
            index._timestamps.append(ts)
            index._relative.append(rel)
        index._persisted = len(index._timestamps)
        return index
