"""The simulated network: per-message delay, loss, duplication, partitions.

Each message gets its own random delay within ``[min_delay_ms, max_delay_ms]``,
so messages overtake each other (reordering); it may be lost or delivered
twice. Links are directed: ``cut_one_way`` blocks one direction only
(asymmetric partitions). A message is dropped if its link is blocked when it
is sent or when it would arrive, as a partition also swallows packets in flight.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

import attrs

__all__ = ["LinkFaults", "SimNetwork"]


@attrs.frozen(kw_only=True)
class LinkFaults:
    min_delay_ms: int = 1
    max_delay_ms: int = 5
    loss: float = 0.0
    duplicate: float = 0.0

    def __attrs_post_init__(self) -> None:
        # a zero delay could loop forever at one instant
        assert 1 <= self.min_delay_ms <= self.max_delay_ms, self
        assert 0.0 <= self.loss < 1.0 and 0.0 <= self.duplicate < 1.0, self


class SimNetwork:
    def __init__(self, rng: random.Random, faults: LinkFaults) -> None:
        self.rng = rng
        self.faults = faults
        self.blocked: set[tuple[int, int]] = set()

    # -- partitions ----------------------------------------------------------------------

    def cut(self, a: int, b: int) -> None:
        self.blocked |= {(a, b), (b, a)}

    def cut_one_way(self, source: int, destination: int) -> None:
        self.blocked.add((source, destination))

    def isolate(self, node: int, everyone: Iterable[int]) -> None:
        for other in everyone:
            if other != node:
                self.cut(node, other)

    def partition(self, *groups: Iterable[int]) -> None:
        """Nodes talk only within their group."""
        sets = [set(g) for g in groups]
        for i, group in enumerate(sets):
            for other in sets[i + 1 :]:
                for a in group:
                    for b in other:
                        self.cut(a, b)

    def heal(self) -> None:
        self.blocked.clear()

    def allows(self, source: int, destination: int) -> bool:
        return (source, destination) not in self.blocked

    # -- delivery ------------------------------------------------------------------------

    def delays_ms(self, source: int, destination: int) -> list[int]:
        """When each copy of a message arrives, relative to now (empty: lost)."""
        if not self.allows(source, destination):
            return []
        faults = self.faults
        if faults.loss and self.rng.random() < faults.loss:
            return []
        copies = 2 if faults.duplicate and self.rng.random() < faults.duplicate else 1
        return [self.one_way_ms() for _ in range(copies)]

    def one_way_ms(self) -> int:
        return self.rng.randint(self.faults.min_delay_ms, self.faults.max_delay_ms)
