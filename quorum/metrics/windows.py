"""Bounded-memory windows over a stream of samples: a rolling max, a rolling sum
(a rate), the last N samples with their quantiles, and a gate that rate-limits
a warning. Pure bookkeeping: callers pass the time, nothing here reads a clock.

Times are seconds of one monotonic clock, never decreasing from one call to
the next of one object (a sample older than the window's oldest slot only
counts in the all-time figures). The rolling windows keep one slot per
``window_s / slots`` seconds: "the last minute" is the current slot and the
``slots - 1`` slots before it, so it spans between ``window_s - slot`` and
``window_s`` seconds. Recording is O(1); reading is O(slots) (scrapes, not
the hot path).
"""

from __future__ import annotations

import math

__all__ = ["RecentSamples", "WarningGate", "WindowMax", "WindowSum"]


class _SlotRing:
    """``slots`` slots, each the aggregate of the samples of one slot-wide span of time."""

    def __init__(self, window_s: float, slots: int) -> None:
        assert window_s > 0 and slots > 0, f"a window of {window_s} s in {slots} slots"
        self.window_s = window_s
        self.slots = slots
        self.slot_s = window_s / slots
        # invariant: _ids[i] % slots == i for every slot in use (-1: never used)
        self._ids = [-1] * slots
        self._values = [0.0] * slots

    def _slot_id(self, now_s: float) -> int:
        return math.floor(now_s / self.slot_s)

    @staticmethod
    def _merge(old: float, value: float) -> float:
        raise NotImplementedError

    def _add(self, value: float, now_s: float) -> None:
        slot_id = self._slot_id(now_s)
        i = slot_id % self.slots
        current = self._ids[i]
        if current == slot_id:
            self._values[i] = self._merge(self._values[i], value)
        elif current < slot_id:  # the slot held a span that has left the window
            self._ids[i] = slot_id
            self._values[i] = value
        # else: older than the span the slot holds now, so outside every later window

    def _in_window(self, now_s: float) -> list[float]:
        newest = self._slot_id(now_s)
        return [
            value for slot_id, value in zip(self._ids, self._values, strict=True)
            if newest - self.slots < slot_id <= newest
        ]


class WindowMax(_SlotRing):
    """The largest sample of the last ``window_s`` seconds, and of all time (0.0: none)."""

    def __init__(self, window_s: float = 60.0, slots: int = 60) -> None:
        super().__init__(window_s, slots)
        self.all_time = 0.0

    def record(self, value: float, now_s: float) -> None:
        if value > self.all_time:
            self.all_time = value
        self._add(value, now_s)

    @staticmethod
    def _merge(old: float, value: float) -> float:
        return value if value > old else old

    def current(self, now_s: float) -> float:
        return max(self._in_window(now_s), default=0.0)


class WindowSum(_SlotRing):
    """The sum of the samples of the last ``window_s`` seconds, as a rate, and the total."""

    def __init__(self, window_s: float = 10.0, slots: int = 10) -> None:
        # two slots at least: the span a rate divides by is never zero
        assert slots >= 2, f"a rate over {slots} slot"
        super().__init__(window_s, slots)
        self.total = 0.0

    def record(self, value: float, now_s: float) -> None:
        self.total += value
        self._add(value, now_s)

    @staticmethod
    def _merge(old: float, value: float) -> float:
        return old + value

    def per_second(self, now_s: float) -> float:
        """The window's sum over the time its slots span: whole older slots plus
        the elapsed part of the current one (so a steady rate reads as itself)."""
        span_s = (self.slots - 1) * self.slot_s + (now_s - self._slot_id(now_s) * self.slot_s)
        return math.fsum(self._in_window(now_s)) / span_s


class RecentSamples:
    """The last ``size`` samples (a ring), for quantiles over recent behaviour."""

    def __init__(self, size: int = 1024) -> None:
        assert size > 0, f"a ring of {size} samples"
        self._ring = [0.0] * size
        self._next = 0
        self.count = 0  # every sample ever recorded

    def record(self, value: float) -> None:
        self._ring[self._next] = value
        self._next = (self._next + 1) % len(self._ring)
        self.count += 1

    def samples(self) -> list[float]:
        """The samples the ring holds, oldest first."""
        if self.count < len(self._ring):
            return self._ring[: self.count]
        return self._ring[self._next:] + self._ring[: self._next]

    def quantiles(self, qs: tuple[float, ...]) -> tuple[float, ...]:
        """Nearest-rank quantiles of the held samples (NaN for each while there are none):
        the smallest sample with at least ``q`` of the samples at or below it."""
        held = sorted(self.samples())
        if not held:
            return tuple(math.nan for _ in qs)
        n = len(held)
        return tuple(held[max(math.ceil(q * n), 1) - 1] for q in qs)


class WarningGate:
    """Admits at most one warning per key every ``interval_s`` seconds.

    ``admit`` returns None for a warning to drop, or, for one to write, how
    many of that key were dropped since the last one written (so the line it
    writes can say so: a flood of slow steps costs one line per interval).
    """

    def __init__(self, interval_s: float = 5.0) -> None:
        self.interval_s = interval_s
        self._last_s: dict[str, float] = {}
        self._dropped: dict[str, int] = {}

    def admit(self, key: str, now_s: float) -> int | None:
        last = self._last_s.get(key)
        if last is not None and now_s - last < self.interval_s:
            self._dropped[key] = self._dropped.get(key, 0) + 1
            return None
        self._last_s[key] = now_s
        return self._dropped.pop(key, 0)
