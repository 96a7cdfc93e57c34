"""The leader-epoch cache: for each leader epoch, the first offset written in it.

Pure and in memory; ``FileLog`` persists it as Kafka's ``leader-epoch-checkpoint``
(version line ``0``, count line, then ``epoch startOffset`` lines) and
``MemoryLog`` keeps it as is.

Invariant: entries are strictly increasing in both epoch and start offset.
"""

from __future__ import annotations

import bisect
import itertools

import attrs

from quorum.log.protocol import UNDEFINED_EPOCH, UNDEFINED_OFFSET, OffsetAndEpoch

__all__ = ["EpochCache", "EpochEntry"]


@attrs.frozen
class EpochEntry:
    epoch: int
    start_offset: int


class EpochCache:
    """Epoch -> start offset, with Kafka's ``LeaderEpochFileCache`` rules."""

    __slots__ = ("_entries",)

    def __init__(self, entries: list[EpochEntry] | None = None) -> None:
        self._entries: list[EpochEntry] = []
        for entry in entries or []:
            self.assign(entry.epoch, entry.start_offset)

    @property
    def entries(self) -> tuple[EpochEntry, ...]:
        return tuple(self._entries)

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1].epoch if self._entries else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; True if the cache changed.

        A new entry that is not above the latest one removes every entry whose
        epoch or start offset is not below it (Kafka keeps the cache monotonic
        the same way).
        """
        assert epoch >= 0 and start_offset >= 0, (epoch, start_offset)
        if self._entries:
            latest = self._entries[-1]
            if latest.epoch == epoch and latest.start_offset <= start_offset:
                return False
        while self._entries and (
            self._entries[-1].epoch >= epoch or self._entries[-1].start_offset >= start_offset
        ):
            self._entries.pop()
        self._entries.append(EpochEntry(epoch, start_offset))
        return True

    def truncate_from_end(self, end_offset: int) -> bool:
        """Drop entries starting at or after ``end_offset`` (the log was cut there)."""
        changed = False
        while self._entries and self._entries[-1].start_offset >= end_offset:
            self._entries.pop()
            changed = True
        return changed

    def truncate_from_start(self, start_offset: int) -> bool:
        """Forget epochs wholly before ``start_offset``; the one covering it starts there."""
        offsets = [entry.start_offset for entry in self._entries]
        covering = bisect.bisect_right(offsets, start_offset) - 1
        if covering < 0 or (covering == 0 and offsets[0] == start_offset):
            return False
        epoch = self._entries[covering].epoch
        self._entries[: covering + 1] = [EpochEntry(epoch, start_offset)]
        return True

    def clear(self) -> bool:
        changed = bool(self._entries)
        self._entries.clear()
        return changed

    def end_offset_for(self, epoch: int, log_end_offset: int) -> OffsetAndEpoch:
        """Kafka's ``endOffsetFor``: see ``ReplicatedLog.end_offset_for_epoch``."""
        undefined = OffsetAndEpoch(UNDEFINED_OFFSET, UNDEFINED_EPOCH)
        if epoch == UNDEFINED_EPOCH or not self._entries:
            return undefined
        if self._entries[-1].epoch == epoch:
            return OffsetAndEpoch(log_end_offset, epoch)
        epochs = [entry.epoch for entry in self._entries]
        higher = bisect.bisect_right(epochs, epoch)
        if higher == len(epochs):
            return undefined
        if higher == 0:
            return OffsetAndEpoch(self._entries[0].start_offset, epoch)
        return OffsetAndEpoch(self._entries[higher].start_offset, epochs[higher - 1])

    def epoch_at(self, offset: int) -> int | None:
        """The epoch whose range contains ``offset``, None if before every entry."""
        offsets = [entry.start_offset for entry in self._entries]
        index = bisect.bisect_right(offsets, offset) - 1
        return self._entries[index].epoch if index >= 0 else None

    def to_rows(self) -> list[tuple[int, ...]]:
        return [(entry.epoch, entry.start_offset) for entry in self._entries]

    @classmethod
    def from_rows(cls, rows: list[tuple[int, ...]]) -> EpochCache:
        """Rebuild from checkpoint rows; ValueError if they are not strictly increasing."""
        entries = [EpochEntry(row[0], row[1]) for row in rows]
        for before, after in itertools.pairwise(entries):
            if after.epoch <= before.epoch or after.start_offset <= before.start_offset:
                raise ValueError(
                    f"entries are not increasing: ({before.epoch}, {before.start_offset}) "
                    f"then ({after.epoch}, {after.start_offset})"
                )
        if any(entry.epoch < 0 or entry.start_offset < 0 for entry in entries):
            raise ValueError("an entry has a negative epoch or offset")
        return cls(entries)
