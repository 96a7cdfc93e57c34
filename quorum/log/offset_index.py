"""The sparse offset index of one segment (Kafka's ``.index`` file).

Each entry is 8 bytes, big-endian: the offset relative to the segment's base
offset (int32) and the byte position of the batch that starts at that offset
(int32).  An entry is added when more than ``index_interval_bytes`` were
written since the previous one, so a lookup lands at most that many bytes
before the wanted batch.  The entries live in memory; the file is a cache of
them that is rewritten when it disagrees (recovery rebuilds the tail's index
from the log itself, so the index file never needs an fsync of its own).
"""

from __future__ import annotations

import bisect
import struct
from array import array
from pathlib import Path
from typing import Final

from quorum.log.index_file import (
    read_index_file,
    replace_index_file,
    truncate_index_file,
    write_index_tail,
)

__all__ = ["ENTRY_SIZE", "OffsetIndex"]

ENTRY_SIZE: Final = 8
_ENTRY: Final = struct.Struct(">ii")


class OffsetIndex:
    """Relative offset -> position entries of one segment, persisted to ``path``."""

    __slots__ = ("_persisted", "_positions", "_relative", "base_offset", "path")

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._relative: array[int] = array("i")
        self._positions: array[int] = array("i")
        self._persisted = 0

    def __len__(self) -> int:
        return len(self._relative)

    def entries(self) -> list[tuple[int, int]]:
        """(absolute offset, position) pairs, in order."""
        return [
            (self.base_offset + rel, pos)
            for rel, pos in zip(self._relative, self._positions, strict=True)
        ]

    def append(self, offset: int, position: int) -> None:
        relative = offset - self.base_offset
        assert 0 <= relative < 2**31 and 0 <= position < 2**31, (offset, position)
        assert not self._relative or (
            relative > self._relative[-1] and position > self._positions[-1]
        ), "index entries must increase"
        # positions last: ``persist`` in a flush thread counts the positions, so every
        # entry it sees is whole (a thread switch may fall between these two appends)
        self._relative.append(relative)
        self._positions.append(position)

    def lookup(self, offset: int) -> int:
        """Position of the last indexed batch starting at or before ``offset`` (0 if none)."""
        index = bisect.bisect_right(self._relative, offset - self.base_offset) - 1
        return self._positions[index] if index >= 0 else 0

    def floor_position(self, position: int) -> int:
        """The last indexed batch start at or before byte ``position`` (0 if none)."""
        index = bisect.bisect_right(self._positions, position) - 1
        return self._positions[index] if index >= 0 else 0

    def truncate_at_position(self, position: int) -> None:
        """Drop the entries of batches at or after byte ``position``."""
        keep = bisect.bisect_left(self._positions, position)
        del self._relative[keep:]
        del self._positions[keep:]
        if self._persisted > keep:
            self._persisted = keep
            truncate_index_file(self.path, keep * ENTRY_SIZE)

    @property
    def last_position(self) -> int:
        """The position of the last entry (0 when there is none)."""
        return self._positions[-1] if self._positions else 0

    def to_bytes(self) -> bytes:
        return b"".join(
            _ENTRY.pack(rel, pos) for rel, pos in zip(self._relative, self._positions, strict=True)
        )

    def persist(self) -> None:
        """Write the entries added since the last call to the index file."""
        # entries may be added beside a flush thread: count the array ``append`` fills
        # last, or an entry whose position is not there yet would be read
        count = len(self._positions)
        if self._persisted >= count:
            return
        tail = b"".join(
            _ENTRY.pack(self._relative[i], self._positions[i])
            for i in range(self._persisted, count)
        )
        write_index_tail(self.path, tail, self._persisted * ENTRY_SIZE)
        self._persisted = count

    def replace_file_if_stale(self) -> bool:
        """Make the file hold exactly the in-memory entries; True if it had to change."""
        changed = replace_index_file(self.path, self.to_bytes())
        self._persisted = len(self._relative)
        return changed

    @classmethod
    def load(cls, path: Path, base_offset: int, segment_size: int) -> OffsetIndex | None:
        """Read an index file; None if it is missing or not plausible for the segment."""
        data = read_index_file(path)
        if data is None or len(data) % ENTRY_SIZE:
            return None
        index = cls(path, base_offset)
        for rel, pos in _ENTRY.iter_unpack(data):
            if rel < 0 or not 0 <= pos < segment_size:
                return None
            if index._relative and (rel <= index._relative[-1] or pos <= index._positions[-1]):
                return None
            index._relative.append(rel)
            index._positions.append(pos)
        index._persisted = len(index._relative)
        return index
