"""A run: bootstrap, a safety phase of random faults, then a liveness phase.

Faults (``FaultSchedule``): process kills (the page cache survives; the
broker restarts later and registers again once the controller let its old
session go), machine crashes (unflushed tails lost), pauses (SIGSTOP), cut
links between two brokers, a broker cut from the controller (no heartbeats,
no metadata: it gets fenced and may act as a zombie leader).

Machine crashes stay within what RF 3 with min ISR 2 survives without
KIP-966's eligible leader replicas, which the controller does not have: at
most RF - min ISR = 1 broker has lost its tail at a time (until it is back in
every ISR); only a broker whose ISRs hold at least min ISR members crashes,
and only while no other broker is down, paused or cut from the controller;
from the crash until the controller has fenced the crashed broker, no other
broker is killed, paused or cut from the controller. (Otherwise the crashed
broker may be the last ISR member the controller keeps and elects back:
Kafka 3.x loses acknowledged records there too, which is why KIP-966 exists.)

Liveness: heal everything, restart every broker, then within a bound every
partition has an acting leader, a full ISR, equal log ends and its high
watermark at the log end, each idempotent producer's last batch (retried
after the faults) and a new acks=all batch are acknowledged.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import attrs

from quorum.wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestConfig,
    CreateTopicsRequestTopic,
)

from .checks import InvariantViolation
from .clients import TOPIC
from .cluster import SimFailure, Simulation
from .world import world_for

__all__ = ["LIVENESS_BOUND_MS", "FaultSchedule", "run_seed"]

SAFETY_MS = 10_000
LIVENESS_BOUND_MS = 20_000


@attrs.frozen(kw_only=True)
class FaultMix:
    """How often each fault is picked, how far apart faults come, and who they hit."""

    weights: dict[str, int] = attrs.field(factory=lambda: {
        "kill": 3, "crash": 2, "pause": 2, "cut": 3, "isolate": 2, "heal": 1,
    })
    interval_ms: tuple[int, int] = (300, 1200)
    leader_bias: float = 0.6
    # a leader is killed or crashed at a moment its followers' log ends differ
    # (so that the new leader is behind one of them), when that comes within 500 ms
    strike_apart: bool = False


MIXES = {
    "random": FaultMix(),
    # leaders killed or crashed one after another under load: every failover leaves
    # followers at different log ends, so divergence and truncation happen often
    "failovers": FaultMix(weights={"kill": 3, "crash": 2}, interval_ms=(700, 1800),
                          leader_bias=1.0, strike_apart=True),
}


class FaultSchedule:
    def __init__(self, sim: Simulation, rng: random.Random, mix: FaultMix | None = None) -> None:
        self.sim = sim
        self.rng = rng
        self.mix = mix or FaultMix()
        self.down: set[int] = set()
        self.paused: set[int] = set()
        self.isolated: set[int] = set()
        self.crashed_unfenced: set[int] = set()  # crashed, the controller has not fenced yet
        self.counts: dict[str, int] = {}
        self.active = True

    def start(self) -> None:
        self._next()

    def _next(self) -> None:
        if self.active:
            self.sim.queue.after(self.rng.randint(*self.mix.interval_ms), "fault", self._inject)

    def _later(self, delay_ms: int, label: str, action: Callable[[], None]) -> None:
        self.sim.queue.after(delay_ms, label, action)

    def _calm(self) -> bool:
        """No crashed broker is still waiting to be fenced."""
        image = self.sim.controller.image
        for broker_id in list(self.crashed_unfenced):
            registration = image.broker(broker_id)
            if registration is None or registration.fenced:
                self.crashed_unfenced.discard(broker_id)
        return not self.crashed_unfenced

    def _inject(self) -> None:
        kinds = sorted(self.mix.weights)
        kind = self.rng.choices(kinds, weights=[self.mix.weights[k] for k in kinds])[0]
        action = getattr(self, f"_{kind}")
        if action():
            self.counts[kind] = self.counts.get(kind, 0) + 1
        self._next()

    def _candidates(self) -> list[int]:
        busy = self.down | self.paused
        return [b for b in sorted(self.sim.brokers) if b not in busy]

    def _pick(self, victims: list[int]) -> int:
        """A victim, more often a partition leader (leader changes are what matter)."""
        leaders = {p.leader for _, _, p in self.sim.controller.image.iter_partitions()}
        preferred = [b for b in victims if b in leaders]
        if preferred and self.rng.random() < self.mix.leader_bias:
            return self.rng.choice(preferred)
        return self.rng.choice(victims)

    def _followers_apart(self, broker_id: int) -> bool:
        """Some partition led by ``broker_id`` has ISR followers with different log ends."""
        core = self.sim.brokers[broker_id].core
        if core is None:
            return False
        for partition in core.partitions:
            if partition.is_leader:
                ends = set()
                for replica in partition.isr_state.isr - {broker_id}:
                    log = self.sim.brokers[replica].disk.logs.get(partition.key)
                    ends.add(None if log is None else log.log_end_offset)
                if len(ends) > 1:
                    return True
        return False

    def _strike(self, victim: int, action: Callable[[], None]) -> None:
        if self.mix.strike_apart:
            self.sim.when(lambda: self._followers_apart(victim), action, 500)
        else:
            action()

    def _kill(self) -> bool:
        if not self._calm() or len(self.down) >= 2:
            return False
        victims = self._candidates()
        if not victims:
            return False
        victim = self._pick(victims)
        self._strike(victim, lambda: self._kill_now(victim))
        return True

    def _kill_now(self, victim: int) -> None:
        if (not self._calm() or len(self.down) >= 2 or victim in self.down
                or not self.sim.brokers[victim].alive):
            return
        self.sim.note(f"kill {victim}")
        self.sim.brokers[victim].kill()
        self.down.add(victim)
        self._later(self.rng.randint(100, 2000), f"restart {victim}", lambda: self._restart(victim))

    def _may_crash(self, broker_id: int) -> bool:
        sim = self.sim
        if (not self._calm() or sim.checks.tainted or self.down or self.paused or self.isolated
                or not sim.brokers[broker_id].alive):
            return False
        return all(
            len(p.isr) >= sim.world.min_insync_replicas
            for _, _, p in sim.controller.image.iter_partitions() if broker_id in p.isr
        )

    def _crash(self) -> bool:
        victims = [b for b in self._candidates() if self._may_crash(b)]
        if not victims:
            return False
        victim = self._pick(victims)
        self._strike(victim, lambda: self._crash_now(victim))
        return True

    def _crash_now(self, victim: int) -> None:
        sim = self.sim
        if not self._may_crash(victim):
            return
        sim.note(f"crash {victim}")
        sim.brokers[victim].crash()
        sim.checks.tainted.add(victim)
        self.crashed_unfenced.add(victim)
        self.down.add(victim)
        self._later(self.rng.randint(100, 3000), f"restart {victim}", lambda: self._restart(victim))

    def _restart(self, broker_id: int) -> None:
        if broker_id in self.down:
            self.down.discard(broker_id)
            self.sim.note(f"start {broker_id}")
            self.sim.brokers[broker_id].start()

    def _pause(self) -> bool:
        if not self._calm():
            return False
        victims = [b for b in self._candidates() if self.sim.brokers[b].alive]
        if not victims:
            return False
        victim = self._pick(victims)
        broker = self.sim.brokers[victim]
        self.sim.note(f"pause {victim}")
        broker.pause()
        self.paused.add(victim)
        alive = broker.life()

        def resume() -> None:
            self.paused.discard(victim)
            if alive():
                self.sim.note(f"resume {victim}")
                broker.resume()

        self._later(self.rng.randint(100, 2000), f"resume {victim}", resume)
        return True

    def _cut(self) -> bool:
        a, b = self.rng.sample(sorted(self.sim.brokers), 2)
        self.sim.note(f"cut {a}<->{b}")
        self.sim.network.cut(a, b)

        def heal() -> None:
            self.sim.network.blocked -= {(a, b), (b, a)}

        self._later(self.rng.randint(100, 3000), f"heal {a}<->{b}", heal)
        return True

    def _isolate(self) -> bool:
        if not self._calm():
            return False
        victim = self._pick(sorted(self.sim.brokers))
        self.sim.note(f"isolate {victim} from the controller")
        self.sim.network.cut(victim, 0)
        self.isolated.add(victim)

        def heal() -> None:
            self.sim.network.blocked -= {(victim, 0), (0, victim)}
            self.isolated.discard(victim)

        self._later(self.rng.randint(100, 3000), f"reconnect {victim}", heal)
        return True

    def _heal(self) -> bool:
        self.sim.network.heal()
        self.isolated.clear()
        return True

    def stop_and_heal(self) -> None:
        self.active = False
        self.sim.network.heal()
        self.isolated.clear()
        for broker_id in sorted(self.paused):
            self.sim.brokers[broker_id].resume()
        self.paused.clear()
        for broker_id in sorted(self.down):
            self._restart(broker_id)


def bootstrap(sim: Simulation) -> None:
    for broker in sim.brokers.values():
        broker.start()
    image = lambda: sim.controller.image  # noqa: E731
    ready = sim.run_until(
        lambda: len(image().active_broker_ids()) == len(sim.brokers), 5_000
    )
    require_progress(ready, "brokers did not register and unfence")
    world = sim.world
    sim.controller.create_topics(CreateTopicsRequest(topics=(CreateTopicsRequestTopic(
        name=TOPIC,
        num_partitions=world.partitions,
        replication_factor=world.replication_factor,
        configs=(CreateTopicsRequestConfig(
            name="min.insync.replicas", value=str(world.min_insync_replicas)
        ),),
    ),)), sim.now_ms)
    require_progress(sim.run_until(lambda: converged(sim), 5_000), "the topic got no leaders")


def require_progress(done: bool, what: str) -> None:
    if not done:
        raise SimFailure(what)


def converged(sim: Simulation) -> bool:
    """Every partition led by its image's leader, full ISR, equal ends, HW at the end."""
    image = sim.controller.image
    topic = image.topic(TOPIC)
    if topic is None:
        return False
    for index, registration in topic.partitions.items():
        if registration.leader < 0 or set(registration.isr) != set(registration.replicas):
            return False
        ends = set()
        for replica in registration.replicas:
            broker = sim.brokers[replica]
            partition = None if broker.core is None else broker.core.partitions.get(
                sim.checks.key_of(index)  # type: ignore[arg-type]
            )
            if partition is None or partition.leader_epoch != registration.leader_epoch:
                return False
            if replica == registration.leader and (
                not partition.is_leader or partition.high_watermark != partition.log_end_offset
            ):
                return False
            ends.add(partition.log_end_offset)
        if len(ends) != 1:
            return False
    return True


def liveness(sim: Simulation, faults: FaultSchedule) -> None:
    for client in [*sim.producers, *sim.consumers]:
        client.stop()
    faults.stop_and_heal()
    sim.network.faults = type(sim.network.faults)(
        min_delay_ms=sim.network.faults.min_delay_ms, max_delay_ms=sim.network.faults.max_delay_ms
    )
    deadline = sim.now_ms + LIVENESS_BOUND_MS
    require_progress(sim.run_until(lambda: converged(sim), deadline - sim.now_ms),
                     f"no convergence within {LIVENESS_BOUND_MS} ms after healing")
    for idempotent in (p for p in sim.producers if p.idempotent):
        require_progress(idempotent.finish_unacknowledged(deadline),
                         f"idempotent producer {idempotent.producer_id}'s last batch was "
                         f"never acknowledged")
    producer = sim.producers[0]
    for index in range(sim.world.partitions):
        require_progress(producer.send_until_acknowledged(index, deadline),
                         f"no new acks=all batch to partition {index} was acknowledged")


def run_seed(seed: int, *, mix: str = "random", safety_ms: int = SAFETY_MS) -> Simulation:
    rng = random.Random(f"replication-{mix}-{seed}")
    world = world_for(rng)
    sim = Simulation(seed, world, random.Random(rng.getrandbits(64)))
    faults = FaultSchedule(sim, random.Random(rng.getrandbits(64)), MIXES[mix])
    try:
        bootstrap(sim)
        for client in [*sim.producers, *sim.consumers]:
            client.start()
        faults.start()
        sim.run_for(safety_ms)
        liveness(sim, faults)
    except (InvariantViolation, SimFailure) as error:
        raise SimFailure(sim.failure_report(error)) from error
    sim.faults = faults  # type: ignore[attr-defined]
    return sim
