"""The seeded, event-driven simulation of a KRaft quorum running the real ``RaftCore``.

One seed string fixes everything: the world (voters, observers, delays,
fault rates), every core's election jitter, the network's choices, fsync
latencies and the client's timing. Each event runs alone, then the
invariants are checked. ``run_for``/``run_until`` drive the clock; the fault
methods (``kill``, ``restart``, ``wipe``, and ``network``'s partitions) are
what scenarios call between runs.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import cast

import attrs

from quorum.raft.config import RaftConfig
from quorum.raft.core import RaftCore
from quorum.raft.output import (
    InboundRequest,
    InboundResponse,
    Outbound,
    OutboundRequest,
    Ready,
)
from tests.unit.raft.harness import over_the_wire

from .client import Client
from .driver import SimNode
from .events import EventQueue, Trace
from .invariants import Invariants
from .network import LinkFaults, SimNetwork

__all__ = ["SimError", "Simulation", "World"]

# ~a minute of busy simulated time; a run that needs more is stuck
MAX_EVENTS_PER_RUN = 400_000


class SimError(AssertionError):
    """A run failed; the message carries the seed and the last events."""


@attrs.frozen(kw_only=True)
class World:
    voters: tuple[int, ...]
    observers: tuple[int, ...] = ()
    faults: LinkFaults = attrs.field(factory=LinkFaults)
    fsync_ms: tuple[int, int] = (1, 4)
    # the chance that one fsync stalls for 50-500 ms (a slow or busy disk)
    fsync_stall: float = 0.0
    # a killed node's peers see their connections reset (and connects refused)
    resets: bool = True
    config: RaftConfig = attrs.field(factory=RaftConfig)
    # the state machine snapshots after this many committed offsets (None: never)
    snapshot_every: int | None = None


class Simulation:
    def __init__(self, seed: str, world: World, *, node_class: type[SimNode] = SimNode) -> None:
        master = random.Random(seed)
        self.seed = seed
        self.world = world
        self.cluster_id = "sim-cluster"
        self.voters = world.voters
        self.resets = world.resets
        self.rng = random.Random(master.getrandbits(64))  # the scenario's choices
        self._disk_rng = random.Random(master.getrandbits(64))
        self._core_rng = random.Random(master.getrandbits(64))
        self.queue = EventQueue()
        self.trace = Trace()
        self.network = SimNetwork(random.Random(master.getrandbits(64)), world.faults)
        self.nodes = {n: node_class(self, n, is_voter=True) for n in world.voters}
        self.nodes.update({n: node_class(self, n, is_voter=False) for n in world.observers})
        self.client = Client(self, random.Random(master.getrandbits(64)))
        self.invariants = Invariants(self)

    @property
    def now_ms(self) -> int:
        return self.queue.now_ms

    # -- faults ------------------------------------------------------------------------------

    def start(self, node_id: int) -> None:
        self.trace.record(self.now_ms, f"start {node_id}")
        node = self.nodes[node_id]
        node.start(self.world.config, random.Random(self._core_rng.getrandbits(64)))
        self.invariants.check()

    def start_all(self) -> None:
        for node_id in sorted(self.nodes):
            if not self.nodes[node_id].alive:
                self.start(node_id)

    def kill(self, node_id: int, *, resets: bool | None = None) -> None:
        """kill -9; with resets, every peer's connection to it fails a moment later."""
        self.trace.record(self.now_ms, f"kill {node_id}")
        self.nodes[node_id].kill()
        if self.resets if resets is None else resets:
            for peer in self.live_nodes():
                if self.network.allows(node_id, peer.node_id):
                    self._connection_failed(peer, node_id, self.network.one_way_ms())
        self.invariants.check()

    def wipe(self, node_id: int) -> None:
        """The node's disk is lost (it must be down): empty log, no quorum-state."""
        node = self.nodes[node_id]
        assert not node.alive, "wipe a node only while it is down"
        self.trace.record(self.now_ms, f"wipe {node_id}")
        node.disk.wipe()
        self.invariants.wiped(node_id)

    def pause(self, node_id: int, duration_ms: int) -> None:
        """SIGSTOP the node (once it is idle) for ``duration_ms``, then SIGCONT."""
        node = self.nodes[node_id]
        self.run_until(lambda: not node.busy or not node.alive, 1_000)
        if not node.alive or node.busy or node.paused:
            return
        self.trace.record(self.now_ms, f"pause {node_id}")
        node.pause()
        life = node.incarnation

        def resume() -> None:
            if node.incarnation == life:
                node.resume()

        self.queue.after(duration_ms, f"resume {node_id}", resume)

    def resign(self, node_id: int) -> None:
        self.nodes[node_id].feed("resign", lambda core, t: core.resign(t))

    def _connection_failed(self, node: SimNode, peer: int, delay_ms: int) -> None:
        life = node.incarnation

        def fail() -> None:
            if node.incarnation == life:
                node.feed(f"reset {peer}", lambda core, t: core.connection_failed(peer, t))

        self.queue.after(delay_ms, f"reset {node.node_id}<-{peer}", fail)

    # -- the network ---------------------------------------------------------------------------

    def send(self, node: SimNode, outbound: Sequence[Outbound]) -> None:
        for out in outbound:
            if isinstance(out, OutboundRequest):
                destination = self.nodes[out.destination]
                if not destination.alive:
                    self._refused(node, out.destination)
                    continue
                handle = (node.node_id, node.incarnation, out.request_id)
                envelope: InboundRequest | InboundResponse = InboundRequest(
                    handle, over_the_wire(out.message)
                )
                self._transmit(node.node_id, destination, destination.incarnation, envelope)
            else:
                origin, life, request_id = cast(tuple[int, int, int], out.reply_to)
                envelope = InboundResponse(node.node_id, request_id, over_the_wire(out.message))
                self._transmit(node.node_id, self.nodes[origin], life, envelope)

    def _refused(self, node: SimNode, destination: int) -> None:
        if self.resets and self.network.allows(node.node_id, destination):
            self._connection_failed(node, destination, 2 * self.network.one_way_ms())

    def _transmit(
        self,
        source: int,
        destination: SimNode,
        life: int,
        envelope: InboundRequest | InboundResponse,
    ) -> None:
        label = f"{source}->{destination.node_id} {type(envelope.message).__name__}"
        for delay in self.network.delays_ms(source, destination.node_id):

            def deliver() -> None:
                # a connection to an earlier life of the node is gone with it
                if destination.incarnation == life and self.network.allows(
                    source, destination.node_id
                ):
                    destination.feed(
                        label, lambda core, t: core.handle(envelope, t), envelope
                    )

            self.queue.after(delay, label, deliver)

    # -- the disk and the state machine -----------------------------------------------------------

    def fsync_ms(self) -> int:
        if self.world.fsync_stall and self._disk_rng.random() < self.world.fsync_stall:
            return self._disk_rng.randint(50, 500)
        return self._disk_rng.randint(*self.world.fsync_ms)

    def observe_ready(self, node: SimNode, label: str, ready: Ready) -> None:
        self.trace.record(
            self.now_ms,
            f"  {node.node_id} {label}: {ready.role} e{ready.leader.epoch} "
            f"hw={ready.high_watermark} leo={node.disk.log.log_end_offset}",
        )

    def on_committed(self, node: SimNode, ready: Ready) -> None:
        self.client.on_committed(node, ready)

    # -- running -------------------------------------------------------------------------------

    def step(self) -> bool:
        if not len(self.queue):
            return False
        label, action = self.queue.pop()
        self.trace.record(self.now_ms, label)
        action()
        self.invariants.check()
        return True

    def run_until(self, condition: Callable[[], bool], timeout_ms: int) -> bool:
        """Run events until ``condition`` holds (True) or ``timeout_ms`` passes (False)."""
        end = self.now_ms + timeout_ms
        for _ in range(MAX_EVENTS_PER_RUN):
            if condition():
                return True
            when = self.queue.next_time_ms()
            if when is None or when > end:
                self.queue.now_ms = max(self.now_ms, end)
                return condition()
            self.step()
        raise SimError(f"more than {MAX_EVENTS_PER_RUN} events without reaching the condition")

    def run_for(self, duration_ms: int) -> None:
        self.run_until(lambda: False, duration_ms)

    # -- views -----------------------------------------------------------------------------------

    def live_nodes(self) -> list[SimNode]:
        return [n for n in self.nodes.values() if n.alive]

    def live_voters(self) -> list[SimNode]:
        return [n for n in self.live_nodes() if n.is_voter]

    def leaders(self) -> list[RaftCore]:
        return [n.raft for n in self.live_nodes() if n.raft.is_leader]

    def leader(self) -> RaftCore | None:
        """The live leader of the highest epoch, if any."""
        leaders = self.leaders()
        return max(leaders, key=lambda c: c.epoch) if leaders else None

    def describe(self) -> str:
        lines = []
        for node in self.nodes.values():
            log = node.disk.log
            state = (
                "down"
                if node.core is None
                else (
                    f"{node.raft.role} e{node.raft.epoch} leader={node.raft.leader_id} "
                    f"hw={node.raft.high_watermark}"
                )
            )
            lines.append(
                f"node {node.node_id}{'' if node.is_voter else ' (observer)'}: {state}; "
                f"log end {log.log_end_offset}, flushed {log.flushed_offset}, "
                f"quorum-state {node.disk.election}"
            )
        return "\n".join(lines)

    def failure_report(self, error: BaseException) -> str:
        return (
            f"{type(error).__name__} at {self.now_ms} ms (seed {self.seed!r}): {error}\n"
            f"-- cluster --\n{self.describe()}\n-- last events --\n{self.trace.tail()}"
        )
