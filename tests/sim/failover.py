"""Faster failure detection (issue 3, item 2), measured in the simulator.

The leader of a settled quorum is killed; either its peers see their
connections reset (a dead process: the kernel answers with RST and refuses new
connects) or they see nothing (a vanished host: only the fetch timeout tells).
We measure the simulated time from the kill to the next commit of a client
record by a new leader, and how many epochs the election took (more than one
means a split or failed vote). Safety is checked after every event as
everywhere; nothing here asserts on time.

Print the figures (default timeouts, 50 seeds each way, 3 to 5 voters; kills
at a random moment, kills once one follower alone holds the last entry, and
SIGTERM hand-overs):

    python -m tests.sim.failover [SEEDS]
"""

from __future__ import annotations

import statistics
import sys

import attrs

from quorum.raft.config import RaftConfig
from quorum.raft.core import RaftCore

from .network import LinkFaults
from .scenarios import require_leader
from .simulator import SimError, Simulation, World

__all__ = ["FailoverResult", "measure_failover", "measure_handover", "summarize"]

# NodeSettings.shutdown_grace_ms: how long a resigned leader waits before it exits regardless
_GRACE_MS = 500


@attrs.frozen
class FailoverResult:
    to_commit_ms: int
    epochs: int  # elections it took; 1 is a clean handover


def measure_failover(
    seed: int, *, resets: bool, voters: int = 3, one_longer_log: bool = False
) -> FailoverResult:
    """kill -9 of a settled leader at a random moment.

    With ``one_longer_log`` the kill waits for the moment when one follower,
    not the first survivor by id, holds an entry the other followers lack: the
    first survivor then stands with the shorter log, as in the worst case of
    the ranked fast failover.
    """
    sim, old = _settled(f"failover/{voters}/{seed}", voters, resets=resets)
    if one_longer_log:
        sim.run_until(lambda: _one_longer_log(sim, old.node_id), 30_000)
    killed_at, old_epoch = sim.now_ms, old.epoch
    sim.kill(old.node_id, resets=resets)
    return _until_a_new_leader_commits(sim, old_epoch, since_ms=killed_at)


def _one_longer_log(sim: Simulation, leader_id: int) -> bool:
    ends = {n.node_id: n.raft.log.log_end_offset for n in sim.live_nodes() if n.node_id != leader_id}
    longest = max(ends.values())
    holders = [n for n, end in ends.items() if end == longest]
    return len(holders) == 1 and holders[0] != min(ends) and len(set(ends.values())) == 2


def measure_handover(seed: int, *, voters: int = 3) -> FailoverResult:
    """SIGTERM of the leader as the node does it: resign, wait until the node may stop, exit.

    The exit is a kill with connection resets at the moment the resigned
    leader's core says it has handed over (``RaftCore.handed_over``); the time
    runs from the resignation to the next commit of a client record by a new
    leader.
    """
    sim, old = _settled(f"handover/{voters}/{seed}", voters, resets=True)
    resigned_at, old_epoch = sim.now_ms, old.epoch  # the core's epoch moves on after it
    sim.resign(old.node_id)
    node = sim.nodes[old.node_id]
    sim.run_until(lambda: node.raft.handed_over, _GRACE_MS)  # or the grace ran out: it exits
    sim.kill(old.node_id, resets=True)
    return _until_a_new_leader_commits(sim, old_epoch, since_ms=resigned_at)


def _settled(name: str, voters: int, *, resets: bool) -> tuple[Simulation, RaftCore]:
    """A quorum with 1-2 ms links under a steady client, some time after its first election."""
    world = World(
        voters=tuple(range(1, voters + 1)),
        faults=LinkFaults(min_delay_ms=1, max_delay_ms=2),
        fsync_ms=(1, 4),
        resets=resets,
        config=RaftConfig(),
    )
    sim = Simulation(name, world)
    sim.start_all()
    sim.client.start(5)
    require_leader(sim)
    sim.run_for(sim.rng.randint(200, 1_000))
    leader = sim.leader()
    assert leader is not None
    return sim, leader


def _until_a_new_leader_commits(sim: Simulation, old_epoch: int, *, since_ms: int) -> FailoverResult:
    def new_commit() -> bool:
        acked = sim.client.acknowledged
        return bool(acked) and (acked[-1].epoch or 0) > old_epoch

    if not sim.run_until(new_commit, 30_000):
        raise SimError(sim.failure_report(AssertionError("no commit by a new leader")))
    epoch = sim.client.acknowledged[-1].epoch
    assert epoch is not None
    return FailoverResult(sim.now_ms - since_ms, epoch - old_epoch)


def summarize(results: list[FailoverResult]) -> str:
    times = [r.to_commit_ms for r in results]
    extra = sum(1 for r in results if r.epochs > 1)
    return (
        f"median {statistics.median(times):7.1f} ms  max {max(times):5d} ms  "
        f"min {min(times):5d} ms  runs needing >1 election {extra}/{len(results)}"
    )


def main(seeds: int) -> None:
    print(f"kill -9 of the leader -> next client commit, {seeds} seeds, default timeouts")
    for voters in (3, 5):
        for resets in (True, False):
            results = [measure_failover(s, resets=resets, voters=voters) for s in range(seeds)]
            how = "resets seen " if resets else "no resets   "
            print(f"{voters} voters, {how}: {summarize(results)}")
    print(f"kill -9 once one follower alone holds the last entry -> next client commit, {seeds} seeds")
    for voters in (3, 4, 5):
        results = [measure_failover(s, resets=True, voters=voters, one_longer_log=True) for s in range(seeds)]
        print(f"{voters} voters, resets seen : {summarize(results)}")
    print(f"SIGTERM of the leader (resign, exit once handed over) -> next client commit, {seeds} seeds")
    for voters in (3, 5):
        results = [measure_handover(s, voters=voters) for s in range(seeds)]
        print(f"{voters} voters: {summarize(results)}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
