"""A broker killed under acks=all load, and left down: the other partitions still commit.

The killed broker follows the partitions the others lead. The controller takes it
out of their ISRs when its session expires and writes its fence after those
changes (``fence_apart``, as the production controller's departure job does), so
the leaders first see it out of the ISR but registered, unfenced and, within
replica.lag.time.max.ms of its last fetch, caught up: it still counts toward their
high watermarks (Kafka's maybeIncrementLeaderHW), which stay at its log end. With
the producers' last batches appended, no fetch or append follows to recompute them
once its lag time runs out or its fence comes: the leaders' ISR check must, or every
acks=all batch waits for its timeout (seen with aiokafka against a 6-node cluster).
"""

from __future__ import annotations

import random

import pytest

from quorum.wire.error_codes import Errors

from ..network import LinkFaults
from .checks import InvariantViolation
from .clients import TOPIC
from .cluster import SimFailure, Simulation
from .scenario import bootstrap, require_progress
from .world import ReplicationWorld

WORLD = ReplicationWorld(
    brokers=(1, 2, 3),
    partitions=3,
    replica_lag_time_max_ms=600,
    fetch_wait_max_ms=100,
    fetch_backoff_ms=50,
    session_timeout_ms=400,
    heartbeat_ms=100,
    checkpoint_ms=500,
    write_back_ms=(50, 300),
    request_timeout_ms=1_000,
    links=LinkFaults(min_delay_ms=1, max_delay_ms=5, loss=0.0),
    producers=3,
    acks_all_share=1.0,
    idempotent_producers=0,
    consumers=0,
    fence_apart=True,
)


def _settled(sim: Simulation, victim: int) -> bool:
    """Every partition led by a live broker that knows it, its high watermark at its end."""
    image = sim.controller.image
    topic = image.topic(TOPIC)
    assert topic is not None
    for index, registration in topic.partitions.items():
        if registration.leader in (-1, victim):
            return False
        core = sim.brokers[registration.leader].core
        led = None if core is None else core.partitions.by_name(TOPIC, index)
        if led is None or not led.is_leader or led.high_watermark != led.log_end_offset:
            return False
    return True


@pytest.mark.sim_seeds(4)
def test_a_dead_followers_partitions_commit_once_its_lag_time_runs_out(seed: int) -> None:
    sim = Simulation(seed, WORLD, random.Random(f"dead-follower-{seed}"))
    lag = WORLD.replica_lag_time_max_ms
    try:
        bootstrap(sim)
        for producer in sim.producers:
            producer.start()
        require_progress(
            sim.run_until(lambda: sum(p.acked_all for p in sim.producers) >= 60, 10_000),
            "no acks=all batches before the kill",
        )
        topic = sim.controller.image.topic(TOPIC)
        assert topic is not None
        victim = topic.partitions[0].leader
        sim.note(f"kill {victim}, for good")
        sim.brokers[victim].kill()
        # each producer soon waits on a batch the dead broker's partitions hold back
        acked = sum(p.acked_all for p in sim.producers)
        def fenced() -> bool:
            registration = sim.controller.image.broker(victim)
            return registration is not None and registration.fenced

        require_progress(sim.run_until(fenced, 2 * WORLD.session_timeout_ms),
                         f"broker {victim} was not fenced")
        # its lag time runs out, then the next ISR check (every lag / 2) lets them go, well
        # before the batches' produce timeout (1,500 ms); nothing else would
        sim.run_for(2 * lag)
        timed_out = [
            number for p in sim.producers for number, code in p.outcomes.items()
            if code == Errors.REQUEST_TIMED_OUT
        ]
        assert not timed_out, f"acks=all batches timed out after broker {victim} died"
        assert sum(p.acked_all for p in sim.producers) > acked
        for producer in sim.producers:
            producer.stop()
        require_progress(sim.run_until(lambda: _settled(sim, victim), 2 * lag),
                         "high watermarks held under the log ends")
    except (InvariantViolation, SimFailure) as error:
        raise SimFailure(sim.failure_report(error)) from error
