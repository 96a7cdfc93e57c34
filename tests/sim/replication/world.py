"""What a seed picks: brokers, partitions, timings and how faulty the world is."""

from __future__ import annotations

import random

import attrs

from ..network import LinkFaults

__all__ = ["ReplicationWorld", "world_for"]


@attrs.frozen(kw_only=True)
class ReplicationWorld:
    brokers: tuple[int, ...]
    partitions: int
    replication_factor: int = 3
    min_insync_replicas: int = 2
    replica_lag_time_max_ms: int
    fetch_wait_max_ms: int
    fetch_backoff_ms: int
    session_timeout_ms: int
    heartbeat_ms: int
    checkpoint_ms: int
    # how often the OS writes a broker's dirty pages back
    write_back_ms: tuple[int, int]
    request_timeout_ms: int
    links: LinkFaults
    producers: int
    acks_all_share: float
    # producers with a producer id that retry each batch until it is acknowledged (not
    # drawn from the seed's stream: the worlds of existing seeds stay as they were)
    idempotent_producers: int = 2
    consumers: int = 1
    # one broker on a slower network (extra delay on its links): followers drift apart
    slow_broker: int | None = None
    slow_extra_ms: int = 0
    # the controller commits an expired broker's fence a tick after its partition changes
    # (``ControllerStandIn.fence_apart``; off for the seeded worlds, which stay as they were)
    fence_apart: bool = False


def world_for(rng: random.Random) -> ReplicationWorld:
    lag = rng.choice((400, 700, 1000, 1500))
    brokers = tuple(range(1, 1 + rng.choice((3, 3, 4))))
    slow = rng.choice((None, *brokers))
    return ReplicationWorld(
        brokers=brokers,
        slow_broker=slow,
        slow_extra_ms=0 if slow is None else rng.choice((5, 15, 30)),
        partitions=rng.choice((1, 2)),
        replica_lag_time_max_ms=lag,
        fetch_wait_max_ms=rng.choice((50, 100, 200)),
        fetch_backoff_ms=rng.choice((20, 50, 100)),
        session_timeout_ms=rng.choice((600, 900, 1200)),
        heartbeat_ms=rng.choice((100, 150)),
        checkpoint_ms=rng.choice((200, 500)),
        write_back_ms=(50, rng.choice((300, 800, 2000))),
        request_timeout_ms=rng.choice((500, 1000)),
        links=LinkFaults(
            min_delay_ms=1,
            max_delay_ms=rng.choice((2, 5, 10)),
            loss=rng.choice((0.0, 0.0, 0.01)),
        ),
        producers=rng.choice((2, 3)),
        acks_all_share=rng.choice((0.6, 0.8)),
    )
