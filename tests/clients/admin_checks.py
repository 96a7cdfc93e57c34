"""What every client's tests check, in one place."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence

__all__ = ["SPREAD_S", "check_partitions", "eventually", "eventually_async"]

# A change is visible on the broker that forwarded it when its answer arrives; every other
# broker learns it from the metadata log a moment later, so reads there poll (as Kafka's do).
SPREAD_S = 15.0


def check_partitions(
    leaders: Mapping[int, int],
    replicas: Mapping[int, Sequence[int]],
    *,
    partitions: int,
    brokers: Collection[int],
) -> None:
    """A new topic on every broker as a client described it: each partition led by a replica."""
    assert sorted(leaders) == list(range(partitions)), leaders
    for index, leader in leaders.items():
        assert sorted(replicas[index]) == sorted(brokers), (index, replicas[index])
        assert leader in replicas[index], (index, leader)
    # the controller spreads leadership over the brokers
    assert len(set(leaders.values())) == min(partitions, len(brokers)), leaders


def eventually(check: Callable[[], bool], what: str, timeout_s: float = SPREAD_S) -> None:
    """Poll ``check`` until it holds; fail naming ``what`` at the deadline."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout_s}s: {what}"
        time.sleep(0.05)


async def eventually_async(
    check: Callable[[], Awaitable[bool]], what: str, timeout_s: float = SPREAD_S
) -> None:
    """``eventually`` for asyncio clients."""
    deadline = time.monotonic() + timeout_s
    while not await check():
        assert time.monotonic() < deadline, f"not within {timeout_s}s: {what}"
        await asyncio.sleep(0.05)
