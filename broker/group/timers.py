"""Named deadlines for the coordinator: schedule, cancel, and pop what is due.

A heap with lazy deletion: rescheduling or cancelling a key leaves its old
entry in the heap, skipped when popped because the key's current deadline
differs.  Keys are frozen attrs values (``HeartbeatTimer`` ...), so a timer
for a member that has since left simply finds nothing to do.
"""

from __future__ import annotations

import heapq
import itertools

import attrs

__all__ = [
    "HeartbeatTimer",
    "JoinTimer",
    "RetentionTimer",
    "SyncTimer",
    "TimerKey",
    "Timers",
]


@attrs.frozen
class HeartbeatTimer:
    """A member's (or pending member's) session: removed when it expires."""

    group_id: str
    member_id: str


@attrs.frozen
class JoinTimer:
    """The end of a group's join phase (rebalance timeout or initial delay)."""

    group_id: str


@attrs.frozen
class SyncTimer:
    """Members that have not sent SyncGroup for ``generation_id`` are removed."""

    group_id: str
    generation_id: int


@attrs.frozen
class RetentionTimer:
    """The periodic offset-expiry check of one ``__consumer_offsets`` partition."""

    partition: int


TimerKey = HeartbeatTimer | JoinTimer | SyncTimer | RetentionTimer


@attrs.define
class Timers:
    _deadlines: dict[TimerKey, tuple[int, int]] = attrs.field(factory=dict)
    _heap: list[tuple[int, int, TimerKey]] = attrs.field(factory=list)
    _seq: itertools.count[int] = attrs.field(factory=itertools.count)

    def schedule(self, key: TimerKey, deadline_ms: int) -> None:
        entry = (deadline_ms, next(self._seq))
        self._deadlines[key] = entry
        heapq.heappush(self._heap, (*entry, key))

    def cancel(self, key: TimerKey) -> None:
        self._deadlines.pop(key, None)

    def deadline_of(self, key: TimerKey) -> int | None:
        entry = self._deadlines.get(key)
        return None if entry is None else entry[0]

    def pop_due(self, now_ms: int) -> TimerKey | None:
        """The earliest timer due at ``now_ms`` (removed), or None."""
        while self._heap and self._heap[0][0] <= now_ms:
            deadline, seq, key = heapq.heappop(self._heap)
            if self._deadlines.get(key) == (deadline, seq):
                del self._deadlines[key]
                return key
        return None

    def next_deadline_ms(self) -> int | None:
        while self._heap:
            deadline, seq, key = self._heap[0]
            if self._deadlines.get(key) == (deadline, seq):
                return deadline
            heapq.heappop(self._heap)
        return None

    def __len__(self) -> int:
        return len(self._deadlines)
