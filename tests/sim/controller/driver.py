"""One seeded run: a safety phase of random events, then a liveness phase.

The seed picks the controller settings, the number of brokers (3-5) and
every event. After each event ``ControllerWorld.check`` compares every
replica with the committed log; committing checks every new image and every
answer. The liveness phase heals everything (no more failovers, every
broker back and heartbeating) and then requires every broker unfenced and
every partition with an active replica in its ISR to have a leader.
"""

from __future__ import annotations

import collections
import hashlib
import random
import uuid
from collections.abc import Callable
from typing import Any, Final

import attrs

from quorum.controller.image import NO_LEADER
from quorum.controller.results import ControllerConfig
from quorum.wire.error_codes import Errors
from quorum.wire.messages.allocate_producer_ids import AllocateProducerIdsRequest
from quorum.wire.messages.partition_reassignments import ListPartitionReassignmentsRequest
from quorum.wire.messages.unregister_broker import UnregisterBrokerRequest

from .brokers import CLUSTER_ID, HEARTBEAT_INTERVAL_MS, BrokerMode, SimBroker
from .checks import InvariantViolation, require
from .requests import (
    alter_partition_request,
    alter_reassignments_request,
    alter_topic_config_request,
    create_partitions_request,
    create_topics_request,
    delete_topics_request,
    elect_leaders_request,
)
from .world import ControllerWorld, ReplayFilter, describe_failure

__all__ = ["EVENT_WEIGHTS", "SimResult", "random_config", "run_controller_sim"]

SAFETY_EVENTS: Final = 400
LIVENESS_ROUNDS: Final = 40
# safety-phase events (Driver methods) and how often each is picked
EVENT_WEIGHTS: Final = {
    "advance_time": 12.0, "commit": 12.0, "replay_replica": 10.0, "broker_catches_up": 8.0,
    "random_heartbeat": 5.0, "admin": 13.0, "alter_partition": 6.0,
    "allocate_producer_ids": 3.0, "broker_goes_silent": 1.5, "broker_shuts_down": 0.7,
    "unregister_broker": 0.4, "failover": 1.2, "load_snapshot": 1.5, "claim": 8.0,
}


@attrs.frozen
class SimResult:
    seed: int
    trace_digest: str
    committed_offset: int
    stats: collections.Counter[str]


def random_config(rng: random.Random) -> ControllerConfig:
    return ControllerConfig(
        node_id=0,
        cluster_id=CLUSTER_ID,
        broker_session_timeout_ms=9000,
        broker_heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
        num_partitions=rng.choice((1, 2, 3)),
        default_replication_factor=rng.choice((1, 2, 3)),
        unclean_leader_election_enable=rng.random() < 0.3,
        auto_leader_rebalance_enable=rng.random() < 0.7,
        leader_imbalance_check_interval_ms=rng.choice((5_000, 30_000)),
        unclean_leader_election_check_interval_ms=rng.choice((5_000, 30_000)),
    )


class Driver:
    def __init__(self, seed: int, replay_filter: ReplayFilter | None = None) -> None:
        self.seed = seed
        self.rng = rng = random.Random(seed)
        self.world = ControllerWorld(random_config(rng), rng)
        self.world.replay_filter = replay_filter
        self.brokers = [
            SimBroker(broker_id=i, incarnation=_uuid(rng)) for i in range(rng.randint(3, 5))
        ]
        self.stats: collections.Counter[str] = collections.Counter()

    # -- sending -----------------------------------------------------------------------------

    def send(self, request: Any, version: int, then: Callable[[Any], None] | None = None) -> None:
        name = type(request).__name__.removesuffix("Request")

        def reply(response: Any) -> None:
            self.stats[f"{name} {_outcome(response)}"] += 1
            if then is not None:
                then(response)

        self.world.send(request, version, reply)

    def _maybe_send(self, request: Any, version: int) -> None:
        if request is not None:
            self.send(request, version)

    def register(self, broker: SimBroker) -> None:
        wrong = self.rng.random() < 0.03
        request = broker.registration(cluster_id="someone-else" if wrong else CLUSTER_ID)
        self.send(request, 3, lambda r: broker.on_registration(request, r))

    def heartbeat(self, broker: SimBroker, *, stale: bool = False) -> None:
        request = broker.heartbeat(self.world.now_ms, stale_epoch=stale)
        now, rng = self.world.now_ms, self.rng
        self.send(request, 1, lambda r: broker.on_heartbeat(request, r, now, rng))

    def _running(self, *, with_epoch: bool = True) -> list[SimBroker]:
        return [b for b in self.brokers if b.sends and (b.epoch is not None or not with_epoch)]

    # -- events ------------------------------------------------------------------------------

    def advance_time(self, ms: int | None = None) -> None:
        world = self.world
        world.now_ms += self.rng.randint(100, 2500) if ms is None else ms
        if ms is None and self.rng.random() < 0.04:
            # the controller stalled: its timers run before the late heartbeats arrive
            world.now_ms += self.rng.randint(8_000, 30_000)
            world.note("time jumps")
            world.tick()
        for broker in self.brokers:
            if broker.maybe_return(world.now_ms, self.rng):
                world.note(f"broker {broker.broker_id} back ({broker.incarnation})")
        for broker in self._running(with_epoch=False):
            self._fetch(broker)
            if broker.epoch is None and not broker.registering:
                self.register(broker)
            elif broker.epoch is not None and (
                world.now_ms - broker.last_heartbeat_ms >= HEARTBEAT_INTERVAL_MS
            ):
                self.heartbeat(broker)
        world.tick()

    def commit(self) -> None:
        tail = len(self.world.log.tail)
        self.world.commit(self.rng.randint(1, tail) if tail else 0)

    def replay_replica(self) -> None:
        world = self.world
        node = self.rng.randrange(len(world.replicas))
        offsets = world.images.offsets
        mine = world.replicas[node].committed.provenance.offset
        later = [o for o in offsets if o >= mine]
        world.replay(node, offsets[-1] if self.rng.random() < 0.5 else self.rng.choice(later))

    def load_snapshot(self) -> None:
        if self.world.load_snapshot(self.rng.randrange(len(self.world.replicas))):
            self.stats["snapshot loaded"] += 1

    def _fetch(self, broker: SimBroker) -> None:
        """The broker applies committed batches: often all of them, sometimes a few."""
        offsets = self.world.images.offsets
        if self.rng.random() < 0.6:
            broker.view_offset = offsets[-1]
        else:
            broker.view_offset = self.rng.choice([o for o in offsets if o >= broker.view_offset])

    def broker_catches_up(self) -> None:
        running = self._running(with_epoch=False)
        if running:
            self._fetch(self.rng.choice(running))

    def random_heartbeat(self) -> None:
        running = self._running()
        if running:
            self.heartbeat(self.rng.choice(running), stale=self.rng.random() < 0.05)

    def broker_goes_silent(self) -> None:
        running = [b for b in self.brokers if b.mode is BrokerMode.RUNNING]
        if len(running) > 1:
            broker = self.rng.choice(running)
            until = self.world.now_ms + self.rng.randint(3_000, 40_000)
            broker.go_silent(until, restart=self.rng.random() < 0.6)
            self.world.note(f"broker {broker.broker_id} silent until {until}")

    def broker_shuts_down(self) -> None:
        running = [b for b in self._running() if b.mode is BrokerMode.RUNNING]
        if len(running) > 1:
            self.rng.choice(running).mode = BrokerMode.SHUTTING_DOWN

    def unregister_broker(self) -> None:
        """Mostly a broker that is away; now and then one that is running."""
        away = [b for b in self.brokers if not b.sends]
        if away or self.rng.random() < 0.2:
            broker = self.rng.choice(away or self.brokers)
            self.send(UnregisterBrokerRequest(broker_id=broker.broker_id), 0)

    def allocate_producer_ids(self) -> None:
        running = self._running()
        if running:
            broker = self.rng.choice(running)
            assert broker.epoch is not None
            epoch = broker.epoch - (1 if self.rng.random() < 0.05 else 0)
            self.send(AllocateProducerIdsRequest(broker_id=broker.broker_id, broker_epoch=epoch), 0)

    def alter_partition(self) -> None:
        running = self._running()
        if not running:
            return
        broker = self.rng.choice(running)
        assert broker.epoch is not None
        view = self.world.images.at(broker.view_offset)
        made = alter_partition_request(self.rng, view, broker.broker_id, broker.epoch)
        if made is not None:
            self.send(*made)

    def admin(self) -> None:
        rng, image = self.rng, self.world.images.latest
        kinds = ("create", "delete", "elect", "partitions", "reassign", "config", "list")
        kind = rng.choices(kinds, (6, 2, 3, 2, 2, 1, 1))[0]
        if kind == "list":
            self.send(ListPartitionReassignmentsRequest(topics=None), 0)
        elif kind == "reassign":
            ids = [b.broker_id for b in self.brokers]
            self._maybe_send(alter_reassignments_request(rng, image, ids), 0)
        elif kind == "config":
            self._maybe_send(alter_topic_config_request(rng, image), 1)
        elif kind == "create":
            self.send(create_topics_request(rng), 5)
        elif kind == "delete":
            request = delete_topics_request(rng)
            self.world.watches.delete_requested(
                set(request.topic_names), self.world.log.end_offset
            )
            self.send(request, 4)
        elif kind == "elect":
            self.send(elect_leaders_request(rng, image), 2)
        else:
            self.send(create_partitions_request(rng, image), 3)

    def failover(self) -> None:
        rng = self.rng
        keep = rng.random() < 0.5
        self.world.failover(
            rng.randrange(len(self.world.replicas)), keep_tail=keep, zombie=rng.random() < 0.3
        )
        self.stats["failover keeping the tail" if keep else "failover cutting the tail"] += 1

    def claim(self) -> None:
        if self.world.can_claim():
            self.world.claim(via_snapshot=self.rng.random() < 0.2)

    # -- phases ------------------------------------------------------------------------------

    def safety(self, events: int) -> None:
        names = list(EVENT_WEIGHTS)
        weights = [EVENT_WEIGHTS[name] for name in names]
        self.failover()
        for step in range(events):
            name = self.rng.choices(names, weights)[0]
            self.world.note(f"#{step} {name}")
            getattr(self, name)()
            self.world.check()

    def liveness(self, rounds: int) -> None:
        world = self.world
        for broker in self.brokers:
            if broker.mode is BrokerMode.SHUTTING_DOWN:
                broker.restart(self.rng)  # its answer to shut down may have been lost
            elif broker.mode is not BrokerMode.RUNNING:
                broker.back_at_ms = world.now_ms
                broker.maybe_return(world.now_ms, self.rng)
        world.note("healed")
        for _ in range(rounds):
            world.commit(len(world.log.tail))
            if world.can_claim():
                world.claim(via_snapshot=False)
            for node in range(len(world.replicas)):
                world.replay(node, world.log.committed_end)
            for broker in self.brokers:
                broker.view_offset = world.log.committed_end
            self.advance_time(1000)
            world.commit(len(world.log.tail))
            world.check()
            if self._all_brokers_active() and not world.log.tail:
                break
        self._check_liveness()

    def _all_brokers_active(self) -> bool:
        image = self.world.images.latest
        registered = [image.broker(b.broker_id) for b in self.brokers]
        return all(r is not None and r.is_active for r in registered)

    def _check_liveness(self) -> None:
        image = self.world.images.latest
        require(self._all_brokers_active(),
                f"after healing, brokers are not all active: {dict(image.brokers)}")
        for topic, index, p in image.iter_partitions():
            active_in_isr = [r for r in p.isr if (b := image.broker(r)) is not None and b.is_active]
            require(not active_in_isr or p.leader != NO_LEADER,
                    f"after healing, {topic.name}-{index} has active ISR members {active_in_isr} "
                    f"but no leader: {p}")
        self.world.check_fresh_fold()

    def result(self) -> SimResult:
        digest = hashlib.sha256("\n".join(self.world.trace).encode()).hexdigest()
        return SimResult(self.seed, digest, self.world.log.committed_end, self.stats)


def _uuid(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)


def _outcome(response: Any) -> str:
    if response is None:
        return "unanswered"
    code = getattr(response, "error_code", Errors.NONE)
    if code == Errors.NONE:
        for items in ("topics", "responses", "results", "replica_election_results"):
            for item in getattr(response, items, ()):
                code = getattr(item, "error_code", code)
                for part in getattr(item, "partitions", getattr(item, "partition_result", ())):
                    code = getattr(part, "error_code", 0) or code
    return Errors(code).name


def run_controller_sim(
    seed: int,
    *,
    events: int = SAFETY_EVENTS,
    replay_filter: ReplayFilter | None = None,
) -> SimResult:
    """Run one seed; an ``InvariantViolation`` names the seed and the last events."""
    driver = Driver(seed, replay_filter)
    try:
        driver.safety(events)
        driver.liveness(LIVENESS_ROUNDS)
    except InvariantViolation as exc:
        raise InvariantViolation(
            f"seed {seed}: {describe_failure(exc, driver.world)}\n"
            f"replay with: pytest tests/sim --seed {seed}"
        ) from exc
    return driver.result()
