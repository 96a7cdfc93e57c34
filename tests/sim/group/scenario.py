"""One seed of the group simulation: a safety phase with faults, then a liveness phase."""

from __future__ import annotations

import random
from functools import partial

from broker.group import GroupCoordinatorConfig

from .checks import Checks
from .world import GROUP, Client, World

SAFETY_MS = 60_000
LIVENESS_MS = 30_000


def build(seed: int) -> World:
    rng = random.Random(seed)
    config = GroupCoordinatorConfig(
        min_session_timeout_ms=100,
        initial_rebalance_delay_ms=rng.choice((0, 300)),
        offsets_topic_num_partitions=1,
    )
    world = World(seed=seed, rng=rng, config=config, checks=Checks())
    dynamic = rng.randint(2, 4)
    static = rng.randint(0, 2)
    world.clients = [Client(name=f"c-{i}") for i in range(dynamic)]
    world.clients += [Client(name=f"s-{i}", instance_id=f"instance-{i}") for i in range(static)]
    world.clients.append(Client(name="solo-0", simple=True))
    return world


def _schedule_faults(world: World) -> None:
    rng = world.rng
    for _ in range(rng.randint(1, 3)):
        world.at(rng.randint(5_000, SAFETY_MS - 5_000), world.failover)
    members = [c for c in world.clients if not c.simple]
    for _ in range(rng.randint(1, 4)):
        client = rng.choice(members)
        down = rng.randint(2_000, SAFETY_MS - 10_000)
        world.at(down, partial(world.crash, client))
        world.at(down + rng.randint(500, 6_000), partial(world.restart, client))


def run_seed(seed: int) -> World:
    world = build(seed)
    world.start_coordinator()
    for client in world.clients:
        world.at(world.rng.randint(0, 2_000), partial(world.rejoin, client, keep_id=False))
    _schedule_faults(world)
    world.run_until(SAFETY_MS)
    # liveness: no more faults; every live consumer settles into one Stable generation
    world.faults = False
    for client in world.clients:
        if not client.alive and client.instance_id is None and not client.simple:
            world.restart(client)
    world.run_until(SAFETY_MS + LIVENESS_MS)
    _check_liveness(world)
    return world


def _check_liveness(world: World) -> None:
    coordinator = world.coordinator
    assert coordinator is not None and world.loaded, f"seed {world.seed}: the coordinator never loaded"
    live = [c for c in world.clients if c.alive and not c.simple]
    state = coordinator.group_state(GROUP)
    assert state == "Stable", f"seed {world.seed}: the group is {state} after the liveness phase"
    generations = {c.generation for c in live}
    assert all(c.stable for c in live) and len(generations) == 1, (
        f"seed {world.seed}: live consumers did not settle: "
        + ", ".join(f"{c.name} gen {c.generation} stable={c.stable}" for c in live)
    )
