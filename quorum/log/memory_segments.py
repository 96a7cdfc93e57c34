"""The memory log's model of the file log's segments: where files would roll and retention cut.

Reads of the memory log ignore segments; this model exists so that the roll
rule (``quorum.log.roll``), retention (``quorum.log.retention``) and the flush
policy give the memory log the same answers as the file log: which offsets a
segment would hold, its size and its largest timestamp.  It keeps one small
record per batch (no bytes), including batches below the log start that the
file log's first segment still holds.

Not modelled: full indexes (``segment.index.bytes``) and file modification
times (a segment whose batches have no timestamp, or an empty one that a
follower's roll past a wide gap closed); the equivalence tests stay away from
both.
"""

from __future__ import annotations

import random

import attrs

from quorum.log.config import LogConfig
from quorum.log.retention import size_breached, start_breached, time_breached
from quorum.log.roll import ActiveSegment, Incoming, roll_jitter_ms, roll_offset, should_roll
from quorum.log.time_index import NO_TIMESTAMP

__all__ = ["BatchFacts", "SegmentModel", "SegmentModels"]


@attrs.frozen(kw_only=True)
class BatchFacts:
    base_offset: int
    last_offset: int
    size: int
    max_timestamp: int


class SegmentModel:
    """One segment: its base offset, creation time and the facts of its batches."""

    __slots__ = (
        "base_offset",
        "batches",
        "claimed_end",
        "created_ms",
        "max_timestamp",
        "roll_jitter_ms",
        "size",
    )

    def __init__(self, base_offset: int, *, created_ms: int, roll_jitter_ms: int = 0) -> None:
        self.base_offset = base_offset
        self.created_ms = created_ms
        self.roll_jitter_ms = roll_jitter_ms
        self.batches: list[BatchFacts] = []
        # kept up to date: the roll rule reads them on every append
        self.size = 0
        self.max_timestamp = NO_TIMESTAMP
        # past the batches: a follower's gap up to the next segment (``Segment.claim_gap_to``)
        self.claimed_end = base_offset

    @property
    def batch_end(self) -> int:
        return self.batches[-1].last_offset + 1 if self.batches else self.base_offset

    @property
    def next_offset(self) -> int:
        return max(self.batch_end, self.claimed_end)

    def add(self, batches: list[BatchFacts]) -> None:
        self.batches.extend(batches)
        self.size += sum(batch.size for batch in batches)
        self.max_timestamp = max(self.max_timestamp, *(b.max_timestamp for b in batches))

    def keep_below(self, offset: int) -> None:
        self.claimed_end = self.base_offset
        self.batches = [batch for batch in self.batches if batch.base_offset < offset]
        self.size = sum(batch.size for batch in self.batches)
        self.max_timestamp = max((b.max_timestamp for b in self.batches), default=NO_TIMESTAMP)

    def largest_timestamp_ms(self) -> int:
        return self.max_timestamp

    def roll_facts(self) -> ActiveSegment:
        return ActiveSegment(
            base_offset=self.base_offset,
            size=self.size,
            first_batch_timestamp=self.batches[0].max_timestamp if self.batches else NO_TIMESTAMP,
            created_ms=self.created_ms,
            roll_jitter_ms=self.roll_jitter_ms,
            index_full=False,
        )

    def __repr__(self) -> str:
        return f"SegmentModel({self.base_offset}..{self.next_offset}, {self.size} B)"


class SegmentModels:
    """The segments of a log, oldest first; the last one is active."""

    def __init__(self, config: LogConfig, *, now_ms: int, rng: random.Random) -> None:
        self._config = config
        self._rng = rng
        self.segments = [SegmentModel(0, created_ms=now_ms)]

    @property
    def active(self) -> SegmentModel:
        return self.segments[-1]

    def _new(self, base_offset: int, now_ms: int) -> SegmentModel:
        jitter = roll_jitter_ms(self._config, self._rng)
        return SegmentModel(base_offset, created_ms=now_ms, roll_jitter_ms=jitter)

    def append(self, batches: list[BatchFacts], *, now_ms: int) -> None:
        incoming = Incoming(
            size=sum(batch.size for batch in batches),
            last_offset=batches[-1].last_offset,
            max_timestamp=max(batch.max_timestamp for batch in batches),
        )
        roll_at = roll_offset(
            self.active.next_offset, batches[0].base_offset, incoming.last_offset
        )
        if roll_at is not None or should_roll(
            self.active.roll_facts(), incoming, config=self._config, now_ms=now_ms
        ):
            self.roll(now_ms=now_ms, base_offset=roll_at)
        self.active.add(batches)

    def roll(self, *, now_ms: int, base_offset: int | None = None) -> None:
        active = self.active
        if base_offset is not None and base_offset > active.next_offset:
            active.claimed_end = base_offset
        self.segments.append(self._new(active.next_offset, now_ms))

    def truncation(self, offset: int) -> tuple[int, int]:
        """Where ``FileLog.truncate_to(offset)`` cuts: (how many segments stay, the new
        log end). The segment holding ``offset`` keeps its batches wholly below it and
        the log ends after them, or at its base; if none stays and the segment before
        claims a follower's gap up to it, that one is cut at its last batch instead."""
        index = 0
        while index + 1 < len(self.segments) and self.segments[index + 1].base_offset <= offset:
            index += 1
        holder = self.segments[index]
        kept = [batch for batch in holder.batches if batch.last_offset < offset]
        if kept:
            return index + 1, kept[-1].last_offset + 1
        if index > 0 and self.segments[index - 1].batch_end < holder.base_offset:
            return index, self.segments[index - 1].batch_end
        return index + 1, holder.base_offset

    def truncate_to(self, keep: int, new_end: int, *, now_ms: int) -> None:
        """The file log's cut: the segments after the first ``keep`` go, the last one kept
        keeps its batches below ``new_end``."""
        del self.segments[max(keep, 1) :]
        kept = self.active
        kept.keep_below(new_end)
        if not kept.batches:
            kept.created_ms = now_ms

    def start_at(self, offset: int, *, now_ms: int) -> None:
        self.segments = [self._new(offset, now_ms)]

    def delete_oldest(self, count: int, *, now_ms: int) -> int:
        """Delete ``count`` oldest segments (rolling first if that is all); returns the new
        first segment's base offset."""
        if count == len(self.segments):
            self.roll(now_ms=now_ms)
        del self.segments[:count]
        return self.segments[0].base_offset

    def below(self, offset: int) -> int:
        """How many oldest segments lie wholly below ``offset`` (never the active one)."""
        count = 0
        while count < len(self.segments) - 1 and self.segments[count].next_offset <= offset:
            count += 1
        return count

    def start_breached(self, *, log_start_offset: int, high_watermark: int) -> int:
        return start_breached(
            self.segments, log_start_offset=log_start_offset, high_watermark=high_watermark
        )

    def size_breached(self, *, high_watermark: int, include_active: bool = True) -> int:
        return size_breached(
            self.segments,
            retention_bytes=self._config.retention_bytes,
            high_watermark=high_watermark,
            include_active=include_active,
        )

    def time_breached(self, *, now_ms: int, high_watermark: int, include_active: bool = True) -> int:
        return time_breached(
            self.segments,
            now_ms=now_ms,
            retention_ms=self._config.retention_ms,
            high_watermark=high_watermark,
            include_active=include_active,
        )

    def summary(self) -> list[tuple[int, int, int, int]]:
        """(base offset, next offset, size, max timestamp) of each segment."""
        return [(s.base_offset, s.next_offset, s.size, s.max_timestamp) for s in self.segments]
