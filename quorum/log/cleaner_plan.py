"""What the log cleaner cleans and when: Kafka's ``LogCleanerManager`` as pure functions.

Kafka's terms (``LogCleanerManager.cleanableOffsets``, ``LogToClean``):

* the **first dirty offset** is the cleaner checkpoint of the partition (the
  log start offset if there is none, or if it lies below the log start or past
  the log end; the checkpoint is then rewritten);
* the **first uncleanable offset** is the smallest of the high watermark (the
  last stable offset: pykraft has no transactions), the active segment's base
  offset, and the base offset of the first dirty closed segment whose largest
  timestamp is newer than ``min.compaction.lag.ms``; it is then rounded down to
  the base offset of the segment holding it, so only whole closed segments are
  ever rewritten and the active segment never is;
* ``clean bytes`` are the segments below the first dirty offset, ``cleanable
  bytes`` those from it up to the first uncleanable segment; the **dirty
  ratio** is cleanable / (clean + cleanable);
* a log is cleaned when its dirty ratio is above ``min.cleanable.dirty.ratio``
  (Kafka compares with ``>``), or when it has cleanable bytes and a dirty closed
  segment whose first batch is older than ``max.compaction.lag.ms``; among
  several, the one with the highest ratio goes first.

``OffsetMap`` is Kafka's ``OffsetMap`` with a bound on its entries instead of
bytes (``log.cleaner.dedupe.buffer.size``): when it is full the round ends at
the last batch mapped whole, and the next round goes on from there.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Final, Protocol, TypeVar

import attrs

__all__ = [
    "CleanableSegment",
    "CleanerConfig",
    "CleaningCandidate",
    "OffsetMap",
    "OffsetsToClean",
    "choose_log",
    "cleanable_offsets",
    "group_segments",
    "judge_log",
]

LONG_MAX: Final = 2**63 - 1
_INT_MAX: Final = 2**31 - 1
_K = TypeVar("_K")


def _ratio(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{attribute.name} must be in [0, 1], got {value}")


def _not_negative(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 0:
        raise ValueError(f"{attribute.name} must be at least 0, got {value}")


def _positive(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value <= 0:
        raise ValueError(f"{attribute.name} must be positive, got {value}")


@attrs.frozen(kw_only=True)
class CleanerConfig:
    """The cleaner's view of one topic's configs (Kafka's names and defaults).

    The broker maps a topic's effective config onto this: ``compact`` is
    ``cleanup.policy`` containing ``compact``; ``delete_retention_ms``
    (``delete.retention.ms``) is how long a tombstone outlives the clean that
    first kept it; ``min_cleanable_dirty_ratio``, ``min_compaction_lag_ms`` and
    ``max_compaction_lag_ms`` choose when a log is cleaned (module docstring);
    ``segment_bytes`` (``segment.bytes``) bounds a group of small segments
    rewritten into one; ``offset_map_entries`` bounds the keys one round maps
    (Kafka sizes it in bytes: ``log.cleaner.dedupe.buffer.size``).
    """

    compact: bool = True
    delete_retention_ms: int = attrs.field(default=86_400_000, validator=_not_negative)
    min_cleanable_dirty_ratio: float = attrs.field(default=0.5, validator=_ratio)
    min_compaction_lag_ms: int = attrs.field(default=0, validator=_not_negative)
    max_compaction_lag_ms: int = attrs.field(default=LONG_MAX, validator=_positive)
    segment_bytes: int = attrs.field(default=1_073_741_824, validator=_positive)
    # about 100 B a key in a Python dict: a million keys is ~100 MB at worst
    offset_map_entries: int = attrs.field(default=1_000_000, validator=_positive)


class CleanableSegment(Protocol):
    """What the plan reads of a segment (``quorum.log.segment.Segment`` has it)."""

    @property
    def base_offset(self) -> int: ...

    @property
    def size(self) -> int: ...

    def largest_timestamp_ms(self) -> int: ...

    def first_batch_timestamp(self) -> int: ...


@attrs.frozen(kw_only=True)
class OffsetsToClean:
    """``[first_dirty_offset, first_uncleanable_offset)``; ``reset_checkpoint``: the
    checkpoint was invalid and is rewritten to ``first_dirty_offset``."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    reset_checkpoint: bool


@attrs.frozen(kw_only=True)
class CleaningCandidate:
    """A log judged for cleaning (Kafka's ``LogToClean``)."""

    first_dirty_offset: int
    # a segment base offset: the first segment this round leaves alone
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    needs_compaction_now: bool
    reset_checkpoint: bool

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def dirty_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0

    def is_due(self, config: CleanerConfig) -> bool:
        if self.total_bytes == 0:
            return False
        return (
            self.needs_compaction_now and self.cleanable_bytes > 0
        ) or self.dirty_ratio > config.min_cleanable_dirty_ratio


def _floor_index(segments: Sequence[CleanableSegment], offset: int) -> int:
    """Index of the segment holding ``offset`` (0 if it lies below the first)."""
    bases = [segment.base_offset for segment in segments]
    return max(bisect.bisect_right(bases, offset) - 1, 0)


def cleanable_offsets(
    segments: Sequence[CleanableSegment],
    *,
    checkpoint: int | None,
    log_start_offset: int,
    log_end_offset: int,
    high_watermark: int,
    now_ms: int,
    config: CleanerConfig,
) -> OffsetsToClean:
    """Kafka's ``cleanableOffsets`` (module docstring); ``segments`` oldest first, the
    last one active."""
    first_dirty = log_start_offset if checkpoint is None else checkpoint
    reset = checkpoint is not None and not log_start_offset <= checkpoint <= log_end_offset
    if reset:
        first_dirty = log_start_offset
    limits = [high_watermark, segments[-1].base_offset]
    if config.min_compaction_lag_ms > 0:
        for segment in segments[_floor_index(segments, first_dirty) : -1]:
            if segment.largest_timestamp_ms() > now_ms - config.min_compaction_lag_ms:
                limits.append(segment.base_offset)
                break
    return OffsetsToClean(
        first_dirty_offset=first_dirty,
        first_uncleanable_offset=max(first_dirty, min(limits)),
        reset_checkpoint=reset,
    )


def _needs_compaction_now(
    segments: Sequence[CleanableSegment], first_dirty: int, now_ms: int, config: CleanerConfig
) -> bool:
    """Kafka's ``maxCompactionDelay > 0``: a dirty closed segment's first batch is older
    than ``max.compaction.lag.ms`` (batches without a timestamp do not count)."""
    clean_until = now_ms - config.max_compaction_lag_ms
    for segment in segments[_floor_index(segments, first_dirty) : -1]:
        first = segment.first_batch_timestamp()
        if 0 < first < clean_until:
            return True
    return False


def judge_log(
    segments: Sequence[CleanableSegment],
    *,
    checkpoint: int | None,
    log_start_offset: int,
    log_end_offset: int,
    high_watermark: int,
    now_ms: int,
    config: CleanerConfig,
) -> CleaningCandidate:
    """The candidate a log makes now (``is_due`` says whether to clean it)."""
    offsets = cleanable_offsets(
        segments,
        checkpoint=checkpoint,
        log_start_offset=log_start_offset,
        log_end_offset=log_end_offset,
        high_watermark=high_watermark,
        now_ms=now_ms,
        config=config,
    )
    first_dirty = offsets.first_dirty_offset
    # Kafka's calculateCleanableBytes: up to the base of the closed segment holding the
    # uncleanable offset, else the active segment's
    uncleanable_index = min(
        _floor_index(segments, offsets.first_uncleanable_offset), len(segments) - 1
    )
    uncleanable = segments[uncleanable_index].base_offset
    start_index = _floor_index(segments, min(first_dirty, uncleanable))
    cleanable_bytes = sum(s.size for s in segments[start_index:uncleanable_index])
    clean_bytes = sum(s.size for s in segments if s.base_offset < first_dirty)
    return CleaningCandidate(
        first_dirty_offset=first_dirty,
        first_uncleanable_offset=uncleanable,
        clean_bytes=clean_bytes,
        cleanable_bytes=cleanable_bytes,
        needs_compaction_now=_needs_compaction_now(segments, first_dirty, now_ms, config),
        reset_checkpoint=offsets.reset_checkpoint,
    )


def choose_log(
    candidates: Sequence[tuple[_K, CleaningCandidate, CleanerConfig]],
) -> tuple[_K, CleaningCandidate] | None:
    """Kafka's ``grabFilthiestCompactedLog``: the due log with the highest dirty ratio."""
    due = [(key, c) for key, c, config in candidates if config.compact and c.is_due(config)]
    if not due:
        return None
    return max(due, key=lambda pair: pair[1].dirty_ratio)


def group_segments(
    segments: Sequence[CleanableSegment], *, max_bytes: int, upper_offset: int
) -> list[range]:
    """Kafka's ``groupSegmentsBySize``: consecutive segments (indexes into ``segments``,
    which are the ones to clean) merged while their sizes add up to at most
    ``max_bytes`` and their offsets span at most 2^31 (offset deltas are int32)."""
    groups: list[range] = []
    start = 0
    while start < len(segments):
        end, size = start + 1, segments[start].size
        while end < len(segments):
            following = segments[end]
            last = segments[end + 1].base_offset - 1 if end + 1 < len(segments) else upper_offset - 1
            if size + following.size > max_bytes or (
                following.size > 0 and last - segments[start].base_offset > _INT_MAX
            ):
                break
            size += following.size
            end += 1
        groups.append(range(start, end))
        start = end
    return groups


class OffsetMap:
    """Key -> latest offset over the dirty range, at most ``capacity`` keys."""

    __slots__ = ("_capacity", "_offsets", "latest_offset")

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._offsets: dict[bytes, int] = {}
        # the last offset of the last batch mapped whole (-1: none)
        self.latest_offset = -1

    def __len__(self) -> int:
        return len(self._offsets)

    def put(self, key: bytes, offset: int) -> bool:
        """Map ``key`` to ``offset``; False (nothing changed) if a new key finds it full."""
        offsets = self._offsets
        if key not in offsets and len(offsets) >= self._capacity:
            return False
        offsets[key] = offset
        return True

    def get(self, key: bytes) -> int:
        """The latest offset of ``key``, -1 if it is not mapped."""
        return self._offsets.get(key, -1)

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = max(self.latest_offset, offset)
