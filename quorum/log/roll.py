"""When an append starts a new segment: Kafka's ``LogSegment.shouldRoll``, as pure arithmetic.

The file log and the memory log's segment model both ask this before an
append.  A non-empty active segment rolls when:

* the incoming batches would grow it past ``segment.bytes``;
* it has waited ``segment.ms`` (minus its jitter; for a compacted log at most
  ``max.compaction.lag.ms``, Kafka's ``maxSegmentMs``) for a roll: the incoming
  max timestamp minus the max timestamp of its first batch, or, when the first
  batch has no timestamp, the wall clock minus the segment's creation time;
* its offset index or time index is full (``segment.index.bytes``);
* the incoming last offset does not fit in the index's 32-bit relative offset.

The new segment starts at the log end, so segments stay contiguous. Only a
data partition's follower, copying a cleaned leader, can append batches that
cannot be indexed even from the log end (``beyond_reach``: more than
``MAX_RELATIVE_OFFSET`` offsets were removed in one stretch); then the new
segment starts at the first incoming offset, as Kafka's roll does
(``roll_offset``), and the segment before claims the gap
(``Segment.claim_gap_to``). The batches of one append lie within reach of
the first (``quorum.log.appends``), so they fit.
"""

from __future__ import annotations

import enum
import random
from typing import Final

import attrs

from quorum.log.config import LogConfig

__all__ = [
    "MAX_RELATIVE_OFFSET",
    "ActiveSegment",
    "Incoming",
    "RollReason",
    "beyond_reach",
    "roll_jitter_ms",
    "roll_offset",
    "should_roll",
    "time_waited_for_roll",
]

MAX_RELATIVE_OFFSET: Final = 2**31 - 1


class RollReason(enum.Enum):
    SIZE = "segment.bytes"
    TIME = "segment.ms"
    INDEX_FULL = "segment.index.bytes"
    OFFSET_OVERFLOW = "relative offset overflow"


@attrs.frozen(kw_only=True)
class ActiveSegment:
    """What the roll rule reads of the active segment."""

    base_offset: int
    size: int
    # max timestamp of the first batch, -1 if it has none (or there is no batch)
    first_batch_timestamp: int
    created_ms: int
    roll_jitter_ms: int
    index_full: bool


@attrs.frozen(kw_only=True)
class Incoming:
    """What the roll rule reads of the batches about to be appended."""

    size: int
    last_offset: int
    max_timestamp: int


def time_waited_for_roll(segment: ActiveSegment, *, now_ms: int, max_timestamp: int) -> int:
    """Kafka's ``timeWaitedForRoll``: by batch timestamps when the first batch has one."""
    if segment.first_batch_timestamp >= 0:
        return max_timestamp - segment.first_batch_timestamp
    return now_ms - segment.created_ms


def should_roll(
    segment: ActiveSegment, incoming: Incoming, *, config: LogConfig, now_ms: int
) -> RollReason | None:
    """Why the append of ``incoming`` starts a new segment, or None if it does not."""
    if segment.size == 0:
        # an empty segment takes any batch (max.message.bytes bounds a batch, not the segment)
        return None
    if segment.size + incoming.size > config.segment_bytes:
        return RollReason.SIZE
    waited = time_waited_for_roll(segment, now_ms=now_ms, max_timestamp=incoming.max_timestamp)
    if waited > config.max_segment_ms - segment.roll_jitter_ms:
        return RollReason.TIME
    if segment.index_full:
        return RollReason.INDEX_FULL
    if incoming.last_offset - segment.base_offset > MAX_RELATIVE_OFFSET:
        return RollReason.OFFSET_OVERFLOW
    return None


def beyond_reach(base_offset: int, last_offset: int) -> bool:
    """Whether ``last_offset`` cannot be indexed relative to ``base_offset``."""
    return last_offset - base_offset > MAX_RELATIVE_OFFSET


def roll_offset(log_end_offset: int, first_offset: int, last_offset: int) -> int | None:
    """Where an append of offsets ``first_offset..last_offset`` must roll to, whatever
    ``should_roll`` says: its first offset if its last cannot be indexed from the log
    end (a follower's wide gap), else None."""
    if beyond_reach(log_end_offset, last_offset):
        return first_offset
    return None


def roll_jitter_ms(config: LogConfig, rng: random.Random) -> int:
    """A new segment's jitter (Kafka's ``randomSegmentJitter``): below ``min(jitter, segment.ms)``."""
    if config.segment_jitter_ms == 0:
        return 0
    return rng.randrange(min(config.segment_jitter_ms, config.segment_ms))
