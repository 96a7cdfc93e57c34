"""``PartitionMap``: a topic's partitions, copied in chunks when some change.

Images are immutable, and a new image copies what changed. A topic of
1,000,000 partitions held in one dict made every change to it a copy of a
million entries: a CreateTopics of that topic in slices of 1,000 records
copied the growing map once per slice (quadratic: 75% of the active
controller's time at 1,000,000 partitions), and every publication of a
single ISR change copied it again. Here the partitions live in chunks of
``CHUNK_SIZE`` consecutive indexes; a change copies the chunks it touches and
the small map of chunks, and chunks nobody touched are shared by both
versions, which also tells a reader in O(chunks) what changed
(``changed_against``).

Iteration runs in partition index order for maps built the way topics grow
(new partitions take the next indexes), as the images expect.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from typing import Final

from quorum.controller.image import PartitionRegistration

__all__ = [
    "CHUNK_SIZE",
    "EMPTY_PARTITIONS",
    "Chunk",
    "PartitionMap",
    "items_in_order",
    "keyed_chunks",
]

CHUNK_SIZE: Final = 1024
_SHIFT: Final = CHUNK_SIZE.bit_length() - 1
_MASK: Final = CHUNK_SIZE - 1
assert 1 << _SHIFT == CHUNK_SIZE

# position i of chunk k: partition k * CHUNK_SIZE + i (None: no such partition). A list,
# not a dict keyed by index: 8 B a partition instead of a table entry and an int object
# for each index above 256 (about 60 B), in every image of every node
Chunk = list[PartitionRegistration | None]


class PartitionMap(Mapping[int, PartitionRegistration]):
    __slots__ = ("_chunks", "_length")

    def __init__(self, chunks: dict[int, Chunk], length: int) -> None:
        # never mutated once built: chunks are shared between versions
        self._chunks = chunks
        self._length = length

    @classmethod
    def of(cls, partitions: Mapping[int, PartitionRegistration]) -> PartitionMap:
        if isinstance(partitions, PartitionMap):
            return partitions
        return EMPTY_PARTITIONS.with_changes(partitions)

    def with_changes(self, changes: Mapping[int, PartitionRegistration]) -> PartitionMap:
        """This map with ``changes`` set (partitions are never removed one by one)."""
        if not changes:
            return self
        chunks = dict(self._chunks)
        copied: set[int] = set()
        length = self._length
        for index, partition in changes.items():
            if index < 0:
                raise KeyError(index)
            key, position = index >> _SHIFT, index & _MASK
            if key not in copied:
                chunks[key] = list(chunks.get(key, ()))
                copied.add(key)
            chunk = chunks[key]
            if position >= len(chunk):
                chunk.extend([None] * (position + 1 - len(chunk)))
            if chunk[position] is None:
                length += 1
            chunk[position] = partition
        return PartitionMap(chunks, length)

    def changed_against(
        self, other: Mapping[int, PartitionRegistration]
    ) -> Iterator[tuple[int, PartitionRegistration | None, PartitionRegistration | None]]:
        """(index, other's, this map's) for every partition that is not the same object
        in both; chunks shared by the two maps are skipped without a look inside."""
        theirs = other._chunks if isinstance(other, PartitionMap) else None
        if theirs is None:
            for index, new in self.items():
                old = other.get(index)
                if old is not new:
                    yield index, old, new
            for index, old in other.items():
                if index not in self:
                    yield index, old, None
            return
        for key, chunk in self._chunks.items():
            before = theirs.get(key)
            if before is chunk:
                continue
            base = key << _SHIFT
            if before is None:
                before = []
            for position, now in enumerate(chunk):
                was = before[position] if position < len(before) else None
                if was is not now:
                    yield base + position, was, now
            for position in range(len(chunk), len(before)):
                gone = before[position]
                if gone is not None:
                    yield base + position, gone, None
        for key, chunk in theirs.items():
            if key not in self._chunks:
                base = key << _SHIFT
                for position, gone in enumerate(chunk):
                    if gone is not None:
                        yield base + position, gone, None

    # -- Mapping ----------------------------------------------------------------------------

    def _find(self, index: int) -> PartitionRegistration | None:
        chunk = self._chunks.get(index >> _SHIFT)
        position = index & _MASK
        if chunk is None or position >= len(chunk) or index < 0:
            return None
        return chunk[position]

    def __getitem__(self, index: int) -> PartitionRegistration:
        found = self._find(index) if isinstance(index, int) else None
        if found is None:
            raise KeyError(index)
        return found

    def get(self, index: int, default: object = None) -> object:  # type: ignore[override]
        found = self._find(index) if isinstance(index, int) else None
        return default if found is None else found

    def __contains__(self, index: object) -> bool:
        return isinstance(index, int) and self._find(index) is not None

    def __iter__(self) -> Iterator[int]:
        for key, chunk in self._chunks.items():
            base = key << _SHIFT
            for position, partition in enumerate(chunk):
                if partition is not None:
                    yield base + position

    def __len__(self) -> int:
        return self._length

    def items(self) -> ItemsView[int, PartitionRegistration]:
        return _Items(self)

    def values(self) -> ValuesView[PartitionRegistration]:
        return _Values(self)

    def chunks(self) -> Iterator[Chunk]:
        """The chunks in index order (do not change them)."""
        return iter(self._chunks.values())

    def keyed_chunks(self) -> list[tuple[int, Chunk]]:
        """(key, chunk) in key order; chunk ``key`` holds partitions from ``key * CHUNK_SIZE``."""
        return sorted(self._chunks.items())

    def items_of_chunks(self) -> Iterator[tuple[int, PartitionRegistration]]:
        for key, chunk in self._chunks.items():
            base = key << _SHIFT
            for position, partition in enumerate(chunk):
                if partition is not None:
                    yield base + position, partition

    def __repr__(self) -> str:
        return f"PartitionMap({dict(self.items())!r})"


def keyed_chunks(partitions: Mapping[int, PartitionRegistration]) -> list[tuple[int, Chunk]]:
    """Any partition mapping as ``PartitionMap.keyed_chunks`` lists it: a ``PartitionMap``'s
    own chunks (the same objects in every image that shares them), or chunks built afresh."""
    if isinstance(partitions, PartitionMap):
        return partitions.keyed_chunks()
    chunks: dict[int, Chunk] = {}
    for index in sorted(partitions):
        chunk = chunks.setdefault(index >> _SHIFT, [])
        position = index & _MASK
        chunk.extend([None] * (position - len(chunk)))
        chunk.append(partitions[index])
    return list(chunks.items())


def items_in_order(
    partitions: Mapping[int, PartitionRegistration],
) -> Iterator[tuple[int, PartitionRegistration]]:
    """(index, partition) by index, lazily: a ``PartitionMap`` sorts only its chunk keys (a
    thousand at 1,000,000 partitions), so a reader that takes a slice at a time pays for what
    it takes, where ``sorted(partitions)`` walked and sorted every index in one step."""
    for key, chunk in keyed_chunks(partitions):
        base = key << _SHIFT
        for position, partition in enumerate(chunk):
            if partition is not None:
                yield base + position, partition


class _Items(ItemsView[int, PartitionRegistration]):
    _mapping: PartitionMap

    def __iter__(self) -> Iterator[tuple[int, PartitionRegistration]]:
        return self._mapping.items_of_chunks()


class _Values(ValuesView[PartitionRegistration]):
    _mapping: PartitionMap

    def __iter__(self) -> Iterator[PartitionRegistration]:
        for chunk in self._mapping.chunks():
            for partition in chunk:
                if partition is not None:
                    yield partition


EMPTY_PARTITIONS: Final = PartitionMap({}, 0)
