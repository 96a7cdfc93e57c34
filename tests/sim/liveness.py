"""The liveness phase: heal everything, then require convergence within a bound.

After the faults stop (partitions healed, loss and duplication off, every
node restarted), within ``bound_ms`` of simulated time there must be one
leader that every live node follows, a new proposal must commit, and every
live node (observers included) must reach the leader's high watermark.
"""

from __future__ import annotations

import attrs

from .simulator import SimError, Simulation

__all__ = ["LIVENESS_BOUND_MS", "heal", "require_convergence"]

# a few election rounds: election timeout [1 s, 2 s), fetch timeout 2 s, check quorum 3 s
LIVENESS_BOUND_MS = 30_000


def heal(sim: Simulation) -> None:
    sim.client.stop()
    sim.network.heal()
    sim.network.faults = attrs.evolve(sim.network.faults, loss=0.0, duplicate=0.0)
    for node_id, node in sorted(sim.nodes.items()):
        if not node.alive:
            sim.start(node_id)


def _settled(sim: Simulation) -> bool:
    leaders = sim.leaders()
    if len(leaders) != 1 or leaders[0].high_watermark is None:
        return False
    leader = leaders[0]
    return all(
        n.raft.epoch == leader.epoch and (n.raft.leader_id == leader.node_id or n.raft is leader)
        for n in sim.live_nodes()
    )


def _caught_up(sim: Simulation, end: int) -> bool:
    leader = sim.leader()
    if leader is None or not _settled(sim):
        return False
    hw = leader.high_watermark
    return (
        hw is not None and hw >= end and all(n.raft.high_watermark == hw for n in sim.live_nodes())
    )


def _commit_once(sim: Simulation, deadline_ms: int) -> bool:
    """Propose to the settled leader; True once it commits and every live node caught up."""
    proposal = sim.client.propose_to_leader(2)
    assert proposal is not None
    # a proposal to a leader deposed before it commits is lost: the caller tries again
    sim.run_until(
        lambda: proposal.acknowledged_at_ms is not None or not _settled(sim),
        deadline_ms - sim.now_ms,
    )
    if proposal.acknowledged_at_ms is None or proposal.accepted is None:
        return False
    end = proposal.accepted.end
    return sim.run_until(lambda: _caught_up(sim, end), deadline_ms - sim.now_ms)


def require_convergence(sim: Simulation, bound_ms: int = LIVENESS_BOUND_MS) -> int:
    """Heal, then wait for a leader, a new commit and equal high watermarks; the time taken."""
    heal(sim)
    started = sim.now_ms
    deadline = started + bound_ms
    while sim.now_ms < deadline:
        if not sim.run_until(lambda: _settled(sim), deadline - sim.now_ms):
            break
        if _commit_once(sim, deadline):
            return sim.now_ms - started
    raise SimError(f"no convergence within {bound_ms} ms after healing")
