"""The clock the logs read when the caller gives none."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeAlias

__all__ = ["Clock", "wall_clock_ms"]

# milliseconds since the epoch, as Kafka's ``time.milliseconds``
Clock: TypeAlias = Callable[[], int]


def wall_clock_ms() -> int:
    """Segment creation and flush times (the roll and flush rules); tests pass their own."""
    return time.time_ns() // 1_000_000
