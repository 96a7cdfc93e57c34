"""A few seeded runs of random faults with the safety checks after every event.

A taste of the simulator (``tests/sim`` goes much further): proposals, crashes
(some between sending and fsync), restarts, cut links, isolation, graceful
resignations; then heal and require that a new record commits everywhere.
"""

from __future__ import annotations

import random

import pytest

from .harness import Cluster, CommittedHistory, check_committed_prefixes


def chaos(cluster: Cluster, rng: random.Random, steps: int) -> None:
    counter = 0
    for _ in range(steps):
        roll = rng.random()
        alive = [n.node_id for n in cluster.alive_nodes()]
        leader = cluster.leader()
        if roll < 0.4 and leader is not None:
            counter += 1
            cluster.propose(leader.node_id, [str(counter).encode()])
        elif roll < 0.5 and alive:
            cluster.crash(rng.choice(alive), reset_connections=rng.random() < 0.5)
        elif roll < 0.6:
            dead = [n for n in cluster.nodes if not cluster.nodes[n].alive]
            if dead:
                cluster.restart(rng.choice(dead))
        elif roll < 0.7 and len(cluster.nodes) > 1:
            a, b = rng.sample(sorted(cluster.nodes), 2)
            cluster.network.cut(a, b)
        elif roll < 0.75:
            cluster.network.isolate(rng.choice(cluster.voters), cluster.nodes)
        elif roll < 0.85:
            cluster.network.heal()
        elif roll < 0.9 and leader is not None:
            cluster.apply(cluster.nodes[leader.node_id], leader.resign(cluster.now_ms))
        cluster.run_for(rng.choice([5, 50, 300, 1500, 4000]))


def converge(cluster: Cluster) -> None:
    cluster.crash_before_durable = lambda node, ready: False
    cluster.network.heal()
    for node_id, node in cluster.nodes.items():
        if not node.alive:
            cluster.restart(node_id)
    for _ in range(20):  # a proposal to a leader that is then deposed is lost: retry
        leader = cluster.elect(60_000)
        cluster.propose(leader.node_id, [b"final"])
        if cluster.run_until(
            lambda: all(cluster.committed_values(n)[-1:] == [b"final"] for n in cluster.nodes),
            3_000,
        ):
            return
    raise AssertionError("the healed cluster never committed a new record everywhere")


@pytest.mark.parametrize("seed", range(6))
def test_random_faults_never_lose_or_change_committed_records(seed: int) -> None:
    rng = random.Random(seed)
    voters = list(range(1, 1 + rng.choice([3, 3, 5])))
    cluster = Cluster(voters, observers=[7][: seed % 2], seed=seed, latency_ms=rng.randint(1, 5))
    history = CommittedHistory()
    cluster.invariant_checks += [check_committed_prefixes, history]
    crash_rate = rng.choice([0.0, 0.002, 0.01])
    cluster.crash_before_durable = lambda node, ready: rng.random() < crash_rate
    chaos(cluster, rng, steps=40)
    converge(cluster)
    check_committed_prefixes(cluster)
    assert history.longest[-1:] == [b"final"]
