"""The metadata quorum simulated with the production state machines.

``MetadataSimulation`` is the Raft simulation (``tests.sim.simulator``) whose
voters run ``ControllerMachine`` and whose observers are brokers running
``BrokerMetadataMachine`` (``MetadataNode``). Around them:

* one ``BrokerClient`` per broker observer registers and heartbeats with the
  controller it believes active, reporting the offset its observer node has
  applied; a killed broker stops sending and comes back as a new
  incarnation (``clients``);
* an ``AdminClient`` sends every admin request kind (``clients``);
* ``MetadataChecks`` checks every published image and every answer after
  each event, beside the Raft invariants; ``stats`` counts the answers by
  request kind and outcome.

Requests travel as ``ControllerCall`` inputs of the receiving node, over the
simulated network in both directions.
"""

from __future__ import annotations

import collections
import random
import uuid
from collections.abc import Callable
from typing import Any

import attrs

from quorum.controller.image import EMPTY_IMAGE, MetadataImage
from quorum.controller.results import ControllerConfig
from quorum.node.inputs import ControllerCall
from quorum.node.snapshot_policy import MIN_RECORDS_BETWEEN_SNAPSHOTS
from quorum.raft.config import RaftConfig
from quorum.raft.core import RaftCore
from quorum.raft.output import Ready
from quorum.wire.error_codes import Errors
from quorum.wire.messages.broker_lifecycle import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
)
from quorum.wire.messages.topics import DeleteTopicsRequest

from ..network import LinkFaults
from ..simulator import Simulation, World
from .answers import Answer, error_codes
from .brokers import CLUSTER_ID, HEARTBEAT_INTERVAL_MS, SimBroker
from .checks import MetadataChecks, MetadataInvariants
from .clients import AdminClient, BrokerClient
from .nodes import MetadataNode, RecordingController

__all__ = ["LifecycleWait", "MetadataSimulation", "metadata_world"]

SESSION_TIMEOUT_MS = 9_000


@attrs.frozen
class LifecycleWait:
    """A broker's registration or heartbeat, from its arrival at a controller to its answer:
    how many slices that controller ran meanwhile, and which operation ran at arrival."""

    request: Any
    response: Any
    slices: int
    running: str | None  # the operation running when it arrived (None: none)
    arrived_ms: int


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

    def __init__(
        self,
        seed: str,
        world: World,
        *,
        snapshot_bytes: int = 1 << 20,
        knobs: dict[str, Any] | None = None,
        reference: bool = True,
        snapshot_by_records: bool = True,
    ) -> None:
        self.snapshot_bytes = snapshot_bytes
        # the records rule (``SnapshotPolicy``) off: a scale scenario that checks every
        # snapshot's image would read a 100,000-partition one after each large operation
        self.snapshot_min_records = MIN_RECORDS_BETWEEN_SNAPSHOTS if snapshot_by_records else None
        self.knobs = knobs or {}  # ControllerConfig fields the seed picked
        self.stats: collections.Counter[str] = collections.Counter()
        self.lifecycle_waits: list[LifecycleWait] = []
        # node -> the calls delivered to it that its core has not taken yet
        self._unheard: dict[int, dict[int, Callable[[], None]]] = {}
        self._unheard_count = 0
        super().__init__(seed, world, node_class=MetadataNode)  # type: ignore[arg-type]
        self.checks = MetadataChecks(
            self.invariants.record, self.controller_config(0), reference=reference
        )
        self.invariants = MetadataInvariants(self, self.checks)
        self.checks.rebind(self.invariants.record)
        rng = random.Random(f"{seed}/clients")
        self.brokers = {
            n: BrokerClient(self, SimBroker(broker_id=n, incarnation=_uuid(rng)),
                            random.Random(f"{seed}/broker/{n}"))
            for n in world.observers
        }
        self.admin = AdminClient(self, random.Random(f"{seed}/admin"))

    def controller_config(self, node_id: int) -> ControllerConfig:
        config = ControllerConfig(
            node_id=node_id,
            cluster_id=CLUSTER_ID,
            broker_session_timeout_ms=SESSION_TIMEOUT_MS,
            broker_heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
            default_replication_factor=min(3, len(self.world.observers)),
            leader_imbalance_check_interval_ms=30_000,
            unclean_leader_election_check_interval_ms=30_000,
        )
        return attrs.evolve(config, **self.knobs)

    def latest_image(self) -> MetadataImage:
        """The newest image a live node published (what an admin client would see)."""
        images = [n.published for n in self.nodes.values() if n.alive and n.published is not None]
        return max(images, key=lambda i: i.provenance.offset, default=EMPTY_IMAGE)

    def count(self, request: Any, response: Any) -> None:
        kind = type(request).__name__.removesuffix("Request")
        codes = [] if response is None else [c for c in error_codes(response) if c]
        outcome = "unanswered" if response is None else Errors(codes[0]).name if codes else "NONE"
        self.stats[f"{kind} {outcome}"] += 1

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
        # when the request arrived: the node's log end offset, its published image's, the time,
        # the node's slices so far
        arrived = [0, 0, 0, 0]
        running_at_arrival: list[str | None] = [None]

        def counted(response: Any) -> None:
            self.count(request, response)
            reply(response)

        def answer(response: object) -> None:
            published = node.published
            machine = node.controller
            recorder = None if machine is None else machine.controller
            written = (recorder.records_of(request)
                       if isinstance(recorder, RecordingController) else None)
            if isinstance(request, BrokerRegistrationRequest | BrokerHeartbeatRequest):
                self.lifecycle_waits.append(LifecycleWait(
                    request, response, node.slices - arrived[3], running_at_arrival[0],
                    arrived[2],
                ))
            if published is not None:
                self.checks.answered(node, Answer(
                    node_id=target, request=request, version=version, response=response,
                    arrived_end=arrived[0], arrived_published=arrived[1], arrived_ms=arrived[2],
                    published_offset=published.provenance.offset,
                    written=None if written is None else tuple(written),
                ))
            self.queue.after(self.network.one_way_ms(), f"{target}->{source} answer",
                             lambda: counted(response))

        def deliver() -> None:
            if node.incarnation != life or not node.alive:
                counted(None)
                return
            item = ControllerCall(request, version, answer)
            # a kill drops the node's inbox: the sender then sees its connection fail
            self._unheard_count += 1
            token = self._unheard_count
            self._unheard.setdefault(target, {})[token] = lambda: counted(None)

            def call(core: RaftCore, now_ms: int) -> Ready:
                assert node.hook is not None and node.controller is not None
                self._unheard[target].pop(token, None)
                end = core.next_append_offset
                published = node.controller.follower.image.provenance.offset
                arrived[:] = [core.log.log_end_offset if end is None else end, published, now_ms,
                              node.slices]
                running = node.controller.running_operation
                running_at_arrival[0] = None if running is None else running.name
                if isinstance(request, DeleteTopicsRequest):
                    self.checks.watches.delete_requested(request.topic_names, now_ms)
                node.controller.call(item, core, now_ms)
                return core.poll(now_ms)

            node.feed(f"{source}->{target} {type(request).__name__}", call)

        self.queue.after(delay, f"{source}->{target} {type(request).__name__}", deliver)

    # -- clients ------------------------------------------------------------------------------

    def start_clients(self) -> None:
        for client in self.brokers.values():
            client.start()

    def kill(self, node_id: int, *, resets: bool | None = None) -> None:
        super().kill(node_id, resets=resets)
        for token, fail in self._unheard.pop(node_id, {}).items():
            self.queue.after(self.network.one_way_ms(), f"{node_id} lost call {token}", fail)

    def kill_broker(self, broker_id: int) -> None:
        self.kill(broker_id)
        self.brokers[broker_id].stop()

    def restart_broker(self, broker_id: int) -> None:
        if self.nodes[broker_id].alive:
            return  # brought back already (by the healing)
        self.start(broker_id)
        self.brokers[broker_id].restarted(random.Random(f"{self.seed}/{broker_id}/{self.now_ms}"))


def _uuid(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)
