"""The metadata quorum simulated with the production state machines.

``MetadataSimulation`` is the Raft simulation (``tests.sim.simulator``) whose
voters run ``ControllerMachine`` and whose observers are brokers running
``BrokerMetadataMachine`` (``MetadataNode``). Around them:

* one ``BrokerClient`` per broker observer registers and heartbeats with the
  controller it believes active, as a broker's lifecycle loop does, reporting
  the offset its observer node has applied; a killed broker stops sending and
  comes back as a new incarnation;
* an ``AdminClient`` sends CreateTopics and DeleteTopics, retrying a request
  that found no active controller or lost it before the answer (as Kafka's
  admin client does on NOT_CONTROLLER);
* ``MetadataChecks`` checks every published image and every answer after
  each event, beside the Raft invariants.

Requests travel as ``ControllerCall`` inputs of the receiving node, over the
simulated network in both directions.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from typing import Any

import attrs

from quorum.controller.results import ControllerConfig
from quorum.node.inputs import ControllerCall
from quorum.raft.config import RaftConfig
from quorum.raft.core import RaftCore
from quorum.raft.output import Ready
from quorum.wire.error_codes import Errors
from quorum.wire.messages.topics import (
    CreateTopicsRequest,
    CreateTopicsRequestTopic,
    DeleteTopicsRequest,
)

from ..controller.brokers import CLUSTER_ID, HEARTBEAT_INTERVAL_MS, SimBroker
from ..network import LinkFaults
from ..simulator import Simulation, World
from .checks import MetadataChecks, MetadataInvariants
from .nodes import MetadataNode

__all__ = ["AdminClient", "BrokerClient", "MetadataSimulation", "metadata_world"]

SESSION_TIMEOUT_MS = 9_000


def metadata_world(
    rng: random.Random, *, brokers: int = 3, lossy: bool = True, config: RaftConfig | None = None
) -> World:
    faults = LinkFaults(
        min_delay_ms=1,
        max_delay_ms=rng.choice([2, 5, 10]),
        loss=rng.choice([0.0, 0.01]) if lossy else 0.0,
        duplicate=rng.choice([0.0, 0.01]) if lossy else 0.0,
    )
    return World(
        voters=(1, 2, 3),
        observers=tuple(range(11, 11 + brokers)),
        faults=faults,
        fsync_ms=(1, rng.choice([2, 5])),
        config=config or RaftConfig(),
    )


class MetadataSimulation(Simulation):
    nodes: dict[int, MetadataNode]  # type: ignore[assignment]

    def __init__(self, seed: str, world: World, *, snapshot_bytes: int = 1 << 20) -> None:
        self.snapshot_bytes = snapshot_bytes
        super().__init__(seed, world, node_class=MetadataNode)  # type: ignore[arg-type]
        self.checks = MetadataChecks(self.invariants.record)
        self.invariants = MetadataInvariants(self, self.checks)
        self.checks.rebind(self.invariants.record)
        rng = random.Random(f"{seed}/clients")
        self.brokers = {
            n: BrokerClient(self, SimBroker(broker_id=n, incarnation=_uuid(rng)))
            for n in world.observers
        }
        self.admin = AdminClient(self, random.Random(f"{seed}/admin"))

    def controller_config(self, node_id: int) -> ControllerConfig:
        return ControllerConfig(
            node_id=node_id,
            cluster_id=CLUSTER_ID,
            broker_session_timeout_ms=SESSION_TIMEOUT_MS,
            broker_heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
            default_replication_factor=min(3, len(self.world.observers)),
            leader_imbalance_check_interval_ms=30_000,
            unclean_leader_election_check_interval_ms=30_000,
        )

    def step(self) -> bool:
        stepped = super().step()
        if stepped:
            self.checks.check_pending()
        return stepped

    # -- reaching the active controller --------------------------------------------------------

    def active_controller(self) -> MetadataNode | None:
        """The live node whose controller is active in the highest epoch (None: none)."""
        active = [
            n for n in self.nodes.values()
            if n.controller is not None and n.controller.controller.is_active
        ]
        return max(active, key=lambda n: n.raft.epoch) if active else None

    def call(
        self, source: int, request: Any, version: int, reply: Callable[[Any], None]
    ) -> None:
        """Send ``request`` to the controller ``source`` believes active (any voter if
        none is known); ``reply`` gets the answer, or None if none came."""
        leader = self.leader()
        target = leader.node_id if leader is not None else self.rng.choice(self.voters)
        node = self.nodes[target]
        delay = self.network.one_way_ms()
        life = node.incarnation

        def answer(response: object) -> None:
            self.checks.answered(node, response)
            self.queue.after(self.network.one_way_ms(), f"{target}->{source} answer",
                             lambda: reply(response))

        def deliver() -> None:
            if node.incarnation != life or not node.alive:
                reply(None)
                return
            item = ControllerCall(request, version, answer)

            def call(core: RaftCore, now_ms: int) -> Ready:
                assert node.hook is not None and node.controller is not None
                node.controller.call(item, core, now_ms)
                return core.poll(now_ms)

            node.feed(f"{source}->{target} {type(request).__name__}", call)

        self.queue.after(delay, f"{source}->{target} {type(request).__name__}", deliver)

    # -- clients ------------------------------------------------------------------------------

    def start_clients(self) -> None:
        for client in self.brokers.values():
            client.start()

    def kill_broker(self, broker_id: int) -> None:
        self.kill(broker_id)
        self.brokers[broker_id].stop()

    def restart_broker(self, broker_id: int) -> None:
        if self.nodes[broker_id].alive:
            return  # brought back already (by the healing)
        self.start(broker_id)
        self.brokers[broker_id].restarted(random.Random(f"{self.seed}/{broker_id}/{self.now_ms}"))


@attrs.define(eq=False)
class BrokerClient:
    """A broker's lifecycle loop: register, then heartbeat every interval."""

    sim: MetadataSimulation
    broker: SimBroker
    running: bool = False
    _token: int = 0

    def start(self) -> None:
        self.running = True
        self._token += 1
        self._tick(self._token)

    def stop(self) -> None:
        self.running = False
        self._token += 1

    def restarted(self, rng: random.Random) -> None:
        self.broker.restart(rng)
        self.start()

    def _tick(self, token: int) -> None:
        if token != self._token or not self.running:
            return
        node = self.sim.nodes[self.broker.broker_id]
        if node.alive and node.hook is not None:
            self.broker.view_offset = node.hook.follower.image.provenance.offset
            self._send()
        self.sim.queue.after(
            HEARTBEAT_INTERVAL_MS // 4, f"broker {self.broker.broker_id} tick",
            lambda: self._tick(token),
        )

    def _send(self) -> None:
        broker, sim, now = self.broker, self.sim, self.sim.now_ms
        if broker.epoch is None:
            if not broker.registering:
                request = broker.registration()
                sim.call(broker.broker_id, request, 3,
                         lambda r: broker.on_registration(request, r))
        elif now - broker.last_heartbeat_ms >= HEARTBEAT_INTERVAL_MS:
            heartbeat = broker.heartbeat(now)
            sim.call(broker.broker_id, heartbeat, 1,
                     lambda r: broker.on_heartbeat(heartbeat, r, sim.now_ms, sim.rng))


@attrs.define(eq=False)
class AdminClient:
    """Creates and deletes topics; a request without a good answer is sent again."""

    sim: MetadataSimulation
    rng: random.Random
    answers: list[tuple[str, Any]] = attrs.field(factory=list)
    in_flight: int = 0

    def create(self, name: str, partitions: int, *, retries: int = 20) -> None:
        request = CreateTopicsRequest(topics=(CreateTopicsRequestTopic(
            name=name, num_partitions=partitions, replication_factor=-1
        ),), timeout_ms=60_000)
        self._send(name, request, 5, retries)

    def delete(self, name: str, *, retries: int = 20) -> None:
        self._send(name, DeleteTopicsRequest(topic_names=(name,), timeout_ms=60_000), 4, retries)

    def _send(self, name: str, request: Any, version: int, retries: int) -> None:
        self.in_flight += 1
        self._attempt(name, request, version, retries)

    def _attempt(self, name: str, request: Any, version: int, retries: int) -> None:
        def reply(response: Any) -> None:
            if _retriable(response) and retries > 0:
                self.sim.queue.after(
                    self.rng.randint(50, 500), f"admin retry {name}",
                    lambda: self._attempt(name, request, version, retries - 1),
                )
                return
            self.in_flight -= 1  # answered for good
            self.answers.append((name, response))

        self.sim.call(0, request, version, reply)


def _retriable(response: Any) -> bool:
    if response is None:
        return True
    codes = [getattr(t, "error_code", 0) for t in getattr(response, "topics", None) or
             getattr(response, "responses", ())]
    return any(c in (Errors.NOT_CONTROLLER, Errors.REQUEST_TIMED_OUT) for c in codes)


def _uuid(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)
