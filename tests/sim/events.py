"""The simulator's clock: a priority queue of timed events and a trace of what ran.

Events are ordered by (time, sequence number): two events due at the same
millisecond run in the order they were scheduled, so a run depends on nothing
but the seed. The clock jumps straight to the next event (no ticks).
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
from collections import deque
from collections.abc import Callable

__all__ = ["EventQueue", "Trace"]


class EventQueue:
    def __init__(self) -> None:
        self.now_ms = 0
        self._heap: list[tuple[int, int, str, Callable[[], None]]] = []
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._heap)

    def at(self, when_ms: int, label: str, action: Callable[[], None]) -> None:
        """Run ``action`` at ``when_ms`` (never in the past)."""
        heapq.heappush(self._heap, (max(when_ms, self.now_ms), next(self._seq), label, action))

    def after(self, delay_ms: int, label: str, action: Callable[[], None]) -> None:
        self.at(self.now_ms + delay_ms, label, action)

    def next_time_ms(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def pop(self) -> tuple[str, Callable[[], None]]:
        when, _, label, action = heapq.heappop(self._heap)
        self.now_ms = when
        return label, action


class Trace:
    """A running hash of every event, and the last few for failure reports."""

    def __init__(self, keep: int = 40) -> None:
        self._hash = hashlib.blake2b(digest_size=16)
        self._recent: deque[str] = deque(maxlen=keep)
        self.events = 0

    def record(self, now_ms: int, label: str) -> None:
        line = f"{now_ms} {label}"
        self._hash.update(line.encode())
        self._hash.update(b"\n")
        self._recent.append(line)
        self.events += 1

    @property
    def digest(self) -> str:
        return self._hash.hexdigest()

    def tail(self) -> str:
        return "\n".join(self._recent)
