"""Random worlds: how many nodes, how slow and lossy the network, how slow the disk,
how often the state machine snapshots and how much log the nodes keep."""

from __future__ import annotations

import random

import attrs

from quorum.raft.config import RaftConfig

from .network import LinkFaults
from .simulator import World

__all__ = ["OBSERVER_BASE", "random_world", "with_snapshots"]

OBSERVER_BASE = 11  # voters are 1..n, observers 11..
# a snapshot age limit short enough to move the log start within a scenario on its own
TIME_RULE_ALONE_MAX_MS = 10_000


def random_world(
    rng: random.Random,
    *,
    voters: tuple[int, ...] = (3, 3, 4, 5),
    observers: tuple[int, ...] = (0, 0, 1, 2, 3),
    lossy: bool = True,
) -> World:
    """A world drawn from ``rng``: voter and observer counts are picked from the tuples."""
    n_voters = rng.choice(voters)
    n_observers = rng.choice(observers)
    faults = LinkFaults(
        min_delay_ms=1,
        max_delay_ms=rng.choice([2, 5, 10, 25]),
        loss=rng.choice([0.0, 0.01, 0.05]) if lossy else 0.0,
        duplicate=rng.choice([0.0, 0.01, 0.05]) if lossy else 0.0,
    )
    config = attrs.evolve(
        RaftConfig(),
        append_linger_ms=rng.choice([0, 5, 25]),
        fetch_max_wait_ms=rng.choice([100, 500]),
    )
    world = World(
        voters=tuple(range(1, n_voters + 1)),
        observers=tuple(range(OBSERVER_BASE, OBSERVER_BASE + n_observers)),
        faults=faults,
        fsync_ms=(1, rng.choice([2, 5, 10])),
        fsync_stall=rng.choice([0.0, 0.0, 0.01, 0.05]),
        resets=rng.random() < 0.5,
        config=config,
    )
    world = with_snapshots(rng, world)
    # drawn last, so the draws above (and every seed's world) stay as they were
    notice_ms = rng.choice([0, 5])
    return attrs.evolve(
        world, config=attrs.evolve(world.config, high_watermark_notice_ms=notice_ms)
    )


def with_snapshots(
    rng: random.Random,
    world: World,
    *,
    every: tuple[int | None, ...] = (None, 10, 25, 60),
    retention_bytes: tuple[int, ...] = (0, 1_500, 6_000, 30_000),
    cleaner_ms: tuple[int, ...] = (500, 1_500, 5_000),
    chunk_bytes: tuple[int, ...] = (16, 50, 1 << 20),
    retention_ms: tuple[int, ...] = (-1, 1_000, 5_000, 604_800_000),
) -> World:
    """Snapshots every N committed offsets, a retention budget (bytes and age) and cleaning
    interval, and a FetchSnapshot chunk size; in some worlds with a short age limit the age
    limit is the only retention rule.

    Drawn after everything else, so a seed's world is otherwise what it was
    before snapshots existed.
    """
    config = attrs.evolve(
        world.config,
        metadata_max_retention_bytes=rng.choice(retention_bytes),
        fetch_snapshot_max_bytes=rng.choice(chunk_bytes),
        # longer than a download of a few chunks: a cleaning may restart one, not starve it
        log_cleaner_interval_ms=rng.choice(cleaner_ms),
    )
    every_choice = rng.choice(every)
    # drawn last: the draws above (and so a seed's world) are what they were before it
    max_age_ms = rng.choice(retention_ms)
    config = attrs.evolve(config, metadata_max_retention_ms=max_age_ms)
    if 0 <= max_age_ms <= TIME_RULE_ALONE_MAX_MS and rng.random() < 0.5:
        # the time rule alone moves the log start (a byte budget would clean first)
        config = attrs.evolve(config, metadata_max_retention_bytes=-1)
    return attrs.evolve(world, config=config, snapshot_every=every_choice)
