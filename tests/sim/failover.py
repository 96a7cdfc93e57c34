"""Faster failure detection (issue 3, item 2), measured in the simulator.

The leader of a settled quorum is killed; either its peers see their
connections reset (a dead process: the kernel answers with RST and refuses new
connects) or they see nothing (a vanished host: only the fetch timeout tells).
We measure the simulated time from the kill to the next commit of a client
record by a new leader, and how many epochs the election took (more than one
means a split or failed vote). Safety is checked after every event as
everywhere; nothing here asserts on time.

Print the figures (default timeouts, 50 seeds each way, 3 and 5 voters):

    python -m tests.sim.failover [SEEDS]
"""

from __future__ import annotations

import statistics
import sys

import attrs

from quorum.raft.config import RaftConfig

from .network import LinkFaults
from .scenarios import require_leader
from .simulator import SimError, Simulation, World

__all__ = ["FailoverResult", "measure_failover", "summarize"]


@attrs.frozen
class FailoverResult:
    to_commit_ms: int
    epochs: int  # elections it took; 1 is a clean handover


def measure_failover(seed: int, *, resets: bool, voters: int = 3) -> FailoverResult:
    world = World(
        voters=tuple(range(1, voters + 1)),
        faults=LinkFaults(min_delay_ms=1, max_delay_ms=2),
        fsync_ms=(1, 4),
        resets=resets,
        config=RaftConfig(),
    )
    sim = Simulation(f"failover/{voters}/{seed}", world)
    sim.start_all()
    sim.client.start(5)
    require_leader(sim)
    sim.run_for(sim.rng.randint(200, 1_000))
    old = sim.leader()
    assert old is not None
    killed_at, old_epoch = sim.now_ms, old.epoch
    sim.kill(old.node_id, resets=resets)

    def new_commit() -> bool:
        acked = sim.client.acknowledged
        return bool(acked) and (acked[-1].epoch or 0) > old_epoch

    if not sim.run_until(new_commit, 30_000):
        raise SimError(sim.failure_report(AssertionError("no commit after the leader was killed")))
    epoch = sim.client.acknowledged[-1].epoch
    assert epoch is not None
    return FailoverResult(sim.now_ms - killed_at, epoch - old_epoch)


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


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
