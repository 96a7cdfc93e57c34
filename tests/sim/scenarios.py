"""Safety phases: each scenario drives faults into a started world, then returns.

The list follows Kafka's RaftEventSimulationTest (kraft-facts 7.5) plus the
fault families of issue 3: initial election, a steady stream of appends,
leader crashes with and without a wiped disk, the leader partitioned into a
minority or kept in a majority, asymmetric partitions, message loss,
duplication and reordering, a paused (SIGSTOP) leader, observers catching up, rolling restarts, all
nodes killed, a random mix, and a node that can only catch up through a snapshot. The liveness phase (``liveness``) follows
every one of them.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import attrs

from quorum.raft.core import RaftCore

from .network import LinkFaults
from .simulator import SimError, Simulation, World
from .worlds import random_world, with_snapshots

__all__ = ["SCENARIOS", "Scenario"]


@attrs.frozen
class Scenario:
    make_world: Callable[[random.Random], World]
    safety: Callable[[Simulation], None]


# -- helpers -----------------------------------------------------------------------------------


def await_leader(sim: Simulation, bound_ms: int = 20_000) -> RaftCore | None:
    """Run until some live node leads with a high watermark (its epoch has a commit).

    None if there is none within ``bound_ms``: on a lossy network a lost vote
    response is only retried after the request timeout, so an election can take
    many rounds; the safety phase goes on, and the liveness phase (no loss)
    decides whether the cluster recovers.
    """

    def found() -> bool:
        leader = sim.leader()
        return leader is not None and leader.high_watermark is not None

    return sim.leader() if sim.run_until(found, bound_ms) else None


def require_leader(sim: Simulation, bound_ms: int = 20_000) -> RaftCore:
    """``await_leader`` for worlds without message loss, where an election must succeed."""
    leader = await_leader(sim, bound_ms)
    if leader is None:
        raise SimError(f"no leader with a high watermark within {bound_ms} ms")
    return leader


def max_high_watermark(sim: Simulation, node_ids: list[int] | None = None) -> int:
    nodes = sim.live_nodes() if node_ids is None else [sim.nodes[n] for n in node_ids]
    return max((n.raft.high_watermark or 0 for n in nodes if n.alive), default=0)


def others(sim: Simulation, node_id: int) -> list[int]:
    return [n for n in sim.nodes if n != node_id]


def kill(sim: Simulation, node_id: int, *, resets: bool | None = None) -> None:
    """Kill now, or (half the time) at the next moment the node waits for an fsync."""
    node = sim.nodes[node_id]
    if sim.rng.random() < 0.5:
        sim.run_until(lambda: node.busy or not node.alive, 300)
    if node.alive:
        sim.kill(node_id, resets=resets)


def begin(sim: Simulation, mean_interval_ms: int = 40) -> None:
    sim.start_all()
    sim.client.start(mean_interval_ms)


# -- scenarios ---------------------------------------------------------------------------------


def initial_election(sim: Simulation) -> None:
    """Nodes start at scattered times over a lossy network; one leader emerges and commits."""
    for node_id in sim.rng.sample(sorted(sim.nodes), len(sim.nodes)):
        sim.run_for(sim.rng.randint(0, 400))
        sim.start(node_id)
    sim.client.start(40)
    await_leader(sim)
    sim.run_for(1_000)


def steady_appends(sim: Simulation) -> None:
    """A steady stream of proposals over a lossy, reordering network."""
    begin(sim, sim.rng.choice([10, 30, 60]))
    await_leader(sim)
    sim.run_for(3_000)


def leader_crash(sim: Simulation) -> None:
    """The leader is killed (connections reset or not), the rest elect, it restarts."""
    begin(sim)
    for _ in range(sim.rng.randint(1, 3)):
        leader = await_leader(sim)
        sim.run_for(sim.rng.randint(0, 800))
        if leader is None or not sim.nodes[leader.node_id].alive:
            continue
        kill(sim, leader.node_id, resets=sim.rng.random() < 0.5)
        sim.run_for(sim.rng.choice([5, 200, 1_500, 4_000]))
        sim.start(leader.node_id)


def leader_wipe(sim: Simulation) -> None:
    """A node's disk is lost; it restarts empty only after another leader is elected."""
    begin(sim)
    if not sim.run_until(lambda: max_high_watermark(sim) >= 10, 20_000):
        raise SimError("the cluster never reached a high watermark of 10")
    victim = sim.rng.choice(sorted(n.node_id for n in sim.live_nodes()))
    sim.kill(victim)
    sim.wipe(victim)

    def another_leader() -> bool:
        leader = sim.leader()
        return leader is not None and leader.node_id != victim and leader.high_watermark is not None

    if not sim.run_until(another_leader, 20_000):
        raise SimError(f"no leader other than wiped node {victim} was elected")
    sim.start(victim)
    sim.run_for(sim.rng.randint(500, 2_000))


def leader_partitioned(sim: Simulation) -> None:
    """The leader ends up in a minority (back to back) or keeps a majority around it."""
    begin(sim)
    voters = list(sim.voters)
    for _ in range(sim.rng.randint(1, 2)):
        leader = await_leader(sim, 30_000)
        if leader is None:
            break
        rest = [n for n in sim.nodes if n != leader.node_id]
        sim.rng.shuffle(rest)
        rest_voters = [n for n in rest if n in voters]
        if sim.rng.random() < 0.5:
            size = sim.rng.randint(1, (len(voters) - 1) // 2)  # a minority of the voters
        else:
            size = len(voters) // 2 + 1  # a majority: the leader keeps leading
        side = {leader.node_id, *rest_voters[: size - 1]}
        side |= {n for n in rest if n not in voters and sim.rng.random() < 0.5}
        sim.network.partition(side, [n for n in sim.nodes if n not in side])
        sim.run_for(sim.rng.choice([500, 3_000, 6_000]))
        if sim.rng.random() < 0.5:
            sim.network.heal()


def majority_progress(sim: Simulation) -> None:
    """Five voters split 2/3: the majority side commits past the minority side."""
    begin(sim)
    require_leader(sim)
    voters = list(sim.voters)
    sim.rng.shuffle(voters)
    small, large = voters[:2], voters[2:]
    observers = [n for n in sim.nodes if n not in sim.voters]
    sim.network.partition(small, large + observers)
    floor = max_high_watermark(sim, small)
    if not sim.run_until(lambda: max_high_watermark(sim, large) > floor + 5, 20_000):
        raise SimError(f"the majority {large} made no progress while split from {small}")
    sim.run_for(1_000)


def asymmetric_partition(sim: Simulation) -> None:
    """One-way cuts around the leader: it can send but not hear, or hear but not send."""
    begin(sim)
    for _ in range(sim.rng.randint(1, 3)):
        leader = await_leader(sim, 30_000)
        if leader is None:
            break
        victims = sim.rng.sample(others(sim, leader.node_id), sim.rng.randint(1, 2))
        for victim in victims:
            if sim.rng.random() < 0.5:
                sim.network.cut_one_way(victim, leader.node_id)
            else:
                sim.network.cut_one_way(leader.node_id, victim)
        sim.run_for(sim.rng.choice([1_000, 4_000]))
        sim.network.heal()


def leader_paused(sim: Simulation) -> None:
    """SIGSTOP the leader past the fetch timeout; on SIGCONT it steps down and follows."""
    begin(sim)
    for _ in range(sim.rng.randint(1, 2)):
        leader = await_leader(sim, 30_000)
        if leader is None:
            break
        pause_ms = sim.rng.choice([300, 2_500, 4_000, 8_000])
        sim.pause(leader.node_id, pause_ms)
        sim.run_for(pause_ms + sim.rng.randint(0, 2_000))


def message_chaos(sim: Simulation) -> None:
    """Heavy loss, duplication and reordering, with the odd node restart."""
    sim.network.faults = LinkFaults(
        min_delay_ms=1,
        max_delay_ms=sim.rng.choice([20, 60]),
        loss=sim.rng.choice([0.1, 0.25]),
        duplicate=sim.rng.choice([0.1, 0.2]),
    )
    begin(sim)
    for _ in range(5):
        sim.run_for(sim.rng.randint(500, 2_000))
        if sim.rng.random() < 0.3:
            victim = sim.rng.choice(sorted(sim.nodes))
            if sim.nodes[victim].alive:
                kill(sim, victim)
                sim.run_for(sim.rng.randint(0, 500))
                sim.start(victim)


def observers_catch_up(sim: Simulation) -> None:
    """Observers start late, are killed or isolated while the voters commit, then catch up."""
    observers = [n for n in sim.nodes if n not in sim.voters]
    for voter in sim.voters:
        sim.start(voter)
    sim.client.start(30)
    await_leader(sim)
    sim.run_for(sim.rng.randint(200, 1_500))
    for observer in observers:
        sim.start(observer)
    for observer in observers:
        sim.run_for(sim.rng.randint(100, 1_000))
        if sim.rng.random() < 0.5:
            sim.kill(observer)
        else:
            sim.network.isolate(observer, sim.nodes)
    sim.run_for(sim.rng.randint(500, 2_000))


def rolling_restarts(sim: Simulation) -> None:
    """Every voter in turn is stopped (gracefully or killed) and restarted."""
    begin(sim)
    order = list(sim.voters)
    sim.rng.shuffle(order)
    for node_id in order:
        await_leader(sim, 30_000)
        node = sim.nodes[node_id]
        if sim.rng.random() < 0.5 and node.alive and node.raft.is_leader:
            sim.resign(node_id)
            sim.run_for(sim.rng.randint(0, 300))
        kill(sim, node_id)
        sim.run_for(sim.rng.randint(10, 1_000))
        sim.start(node_id)


def all_killed(sim: Simulation) -> None:
    """Every node dies; a bare majority restarts and commits past the old high watermark."""
    begin(sim)
    require_leader(sim)
    sim.run_for(sim.rng.randint(100, 1_500))
    for node_id in sorted(sim.nodes):
        kill(sim, node_id)
    before = sim.invariants.record.end
    sim.run_for(sim.rng.randint(0, 1_000))
    majority = sim.rng.sample(list(sim.voters), len(sim.voters) // 2 + 1)
    for node_id in majority:
        sim.start(node_id)
    if not sim.run_until(lambda: max_high_watermark(sim) > before + 5, 30_000):
        raise SimError(f"restarted majority {majority} made no progress past {before}")


def random_mix(sim: Simulation) -> None:
    """Random kills, restarts, wipes-free partitions, one-way cuts and resignations."""
    begin(sim)
    for _ in range(sim.rng.randint(5, 12)):
        _random_fault(sim, sim.rng)
        sim.run_for(sim.rng.choice([5, 50, 300, 1_000, 2_500]))


def _random_fault(sim: Simulation, rng: random.Random) -> None:
    roll = rng.random()
    alive = sorted(n.node_id for n in sim.live_nodes())
    dead = sorted(n for n in sim.nodes if not sim.nodes[n].alive)
    leader = sim.leader()
    if roll < 0.2 and alive:
        kill(sim, rng.choice(alive), resets=rng.random() < 0.5)
    elif roll < 0.4 and dead:
        sim.start(rng.choice(dead))
    elif roll < 0.5 and leader is not None:
        kill(sim, leader.node_id, resets=rng.random() < 0.5)
    elif roll < 0.6:
        a, b = rng.sample(sorted(sim.nodes), 2)
        sim.network.cut(a, b)
    elif roll < 0.7:
        a, b = rng.sample(sorted(sim.nodes), 2)
        sim.network.cut_one_way(a, b)
    elif roll < 0.75:
        sim.network.isolate(rng.choice(sorted(sim.nodes)), sim.nodes)
    elif roll < 0.9:
        sim.network.heal()
    elif roll < 0.95 and alive:
        sim.pause(rng.choice(alive), rng.choice([100, 1_000, 3_000]))
    elif leader is not None:
        sim.resign(leader.node_id)


def snapshot_catch_up(sim: Simulation) -> None:
    """A node is cut off, killed or wiped while the others snapshot and move their log start
    past its log end; back, it can only catch up by downloading a snapshot (FetchSnapshot).
    """
    begin(sim)
    leader = require_leader(sim)
    victim = sim.rng.choice(others(sim, leader.node_id))
    how = sim.rng.choice(["isolate", "kill", "wipe"])
    if how == "isolate":
        sim.network.isolate(victim, sim.nodes)
    else:
        sim.kill(victim)
        if how == "wipe":
            sim.wipe(victim)
    behind = sim.nodes[victim].disk.log.log_end_offset

    def left_behind() -> bool:
        return all(
            n.disk.log.log_start_offset > behind for n in sim.live_nodes() if n.node_id != victim
        )

    if not sim.run_until(left_behind, 30_000):
        raise SimError(f"the log start never passed node {victim}'s log end {behind}")
    node = sim.nodes[victim]
    if how == "isolate":
        sim.network.heal()
    else:
        sim.start(victim)

    def downloaded() -> bool:
        return node.alive and any(not at_start for _, at_start in node.machine.loads)

    if not sim.run_until(downloaded, 20_000):
        raise SimError(f"node {victim} ({how}) never loaded a snapshot from the leader")
    sim.run_for(sim.rng.randint(100, 800))


def _snapshotting(rng: random.Random) -> World:
    # short snapshot intervals and a small byte budget: the log start moves often
    world = random_world(rng, lossy=False)
    return with_snapshots(
        rng,
        world,
        every=(5, 10, 20),
        retention_bytes=(0, 500, 2_000),
        cleaner_ms=(300, 600, 1_200),
        chunk_bytes=(50, 1 << 20),
    )


def _five_voters(rng: random.Random) -> World:
    return random_world(rng, voters=(5,), lossy=False)


def _with_observers(rng: random.Random) -> World:
    return random_world(rng, observers=(1, 2, 3))


def _calm(rng: random.Random) -> World:
    return random_world(rng, lossy=False)


SCENARIOS: dict[str, Scenario] = {
    "initial_election": Scenario(random_world, initial_election),
    "steady_appends": Scenario(random_world, steady_appends),
    "leader_crash": Scenario(random_world, leader_crash),
    "leader_wipe": Scenario(_calm, leader_wipe),
    "leader_partitioned": Scenario(random_world, leader_partitioned),
    "majority_progress": Scenario(_five_voters, majority_progress),
    "asymmetric_partition": Scenario(random_world, asymmetric_partition),
    "leader_paused": Scenario(random_world, leader_paused),
    "message_chaos": Scenario(random_world, message_chaos),
    "observers_catch_up": Scenario(_with_observers, observers_catch_up),
    "rolling_restarts": Scenario(random_world, rolling_restarts),
    "all_killed": Scenario(_calm, all_killed),
    "random_mix": Scenario(random_world, random_mix),
    "snapshot_catch_up": Scenario(_snapshotting, snapshot_catch_up),
}
