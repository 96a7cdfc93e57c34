"""The simulated cluster: brokers, the controller stand-in, clients, network and clock.

One seed fixes everything (``world_for`` picks the world; every random
choice after that comes from generators split off the seed). Each event runs
alone and the checks run after it. Node ids: the controller is 0, brokers
1..n, clients from 100. Requests that get no answer fail at the requester
after ``request_timeout_ms`` (a request to a process that is down fails at
once: connection refused).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable
from typing import cast

from broker.replica import (
    OutboundAlterPartition,
    OutboundFetch,
    ReplicaConfig,
    ReplicaCore,
    ReplicaOutput,
)
from quorum.controller.results import ControllerConfig
from quorum.wire.messages import FetchResponse, ProduceResponse

from ..events import EventQueue, Trace
from ..network import SimNetwork
from .broker import SimBroker
from .checks import Checks, InvariantViolation
from .clients import Consumer, Producer
from .controller import CONTROLLER_ID, ControllerStandIn
from .world import ReplicationWorld

__all__ = ["MAX_EVENTS", "SimFailure", "Simulation"]

MAX_EVENTS = 2_000_000
CONTROLLER_TICK_MS = 50


class SlowLinks(SimNetwork):
    """The simulator's network, with extra delay on every link of one broker."""

    def __init__(self, rng: random.Random, world: ReplicationWorld) -> None:
        super().__init__(rng, world.links)
        self._slow = world.slow_broker
        self._extra_ms = world.slow_extra_ms

    def delays_ms(self, source: int, destination: int) -> list[int]:
        delays = super().delays_ms(source, destination)
        if self._slow in (source, destination):
            delays = [d + self.rng.randint(0, self._extra_ms) for d in delays]
        return delays


class SimFailure(AssertionError):
    """A run failed; the message carries the seed, the cluster and the last events."""


class Simulation:
    def __init__(self, seed: int, world: ReplicationWorld, rng: random.Random) -> None:
        self.seed = seed
        self.world = world
        self.rng = rng
        self.queue = EventQueue()
        self.trace = Trace(keep=60)
        self.network = SlowLinks(random.Random(rng.getrandbits(64)), world)
        self.controller = ControllerStandIn(
            ControllerConfig(
                node_id=CONTROLLER_ID,
                cluster_id="replication-sim",
                broker_session_timeout_ms=world.session_timeout_ms,
                broker_heartbeat_interval_ms=world.heartbeat_ms,
                min_insync_replicas=world.min_insync_replicas,
            ),
            random.Random(rng.getrandbits(64)),
            fence_apart=world.fence_apart,
        )
        self.brokers = {b: SimBroker(self, b, self._config(b)) for b in world.brokers}
        self.checks = Checks(self)
        self.producers = [Producer(self, 100 + i) for i in range(world.producers)] + [
            Producer(self, 120 + i, idempotent=True) for i in range(world.idempotent_producers)
        ]
        self.consumers = [Consumer(self, 110 + i) for i in range(world.consumers)]
        # (condition, action, give-up time): run an action right after the event that makes
        # its condition true (faults aimed at a moment, not only at a time)
        self.triggers: list[tuple[Callable[[], bool], Callable[[], None], int]] = []
        self.controller.on_change.append(self._publish)
        self._write_back_timers()
        self.queue.after(CONTROLLER_TICK_MS, "controller tick", self._controller_tick)

    def _config(self, broker_id: int) -> ReplicaConfig:
        world = self.world
        return ReplicaConfig(
            broker_id=broker_id,
            replica_lag_time_max_ms=world.replica_lag_time_max_ms,
            replica_fetch_wait_max_ms=world.fetch_wait_max_ms,
            replica_fetch_backoff_ms=world.fetch_backoff_ms,
            replica_fetch_max_bytes=4096,
        )

    @property
    def now_ms(self) -> int:
        return self.queue.now_ms

    def note(self, text: str) -> None:
        self.trace.record(self.now_ms, text)

    # -- the network -----------------------------------------------------------------------

    def send(self, source: int, destination: int, label: str, deliver: Callable[[], None]) -> None:
        """Deliver after the link's delay, unless it is cut at sending or arrival."""
        for delay in self.network.delays_ms(source, destination):

            def arrive() -> None:
                if self.network.allows(source, destination):
                    deliver()

            self.queue.after(delay, f"{source}->{destination} {label}", arrive)

    def call(
        self,
        broker: SimBroker,
        label: str,
        step: Callable[[ReplicaCore, int], ReplicaOutput],
        alive: Callable[[], bool],
    ) -> None:
        """Give ``broker``'s core one input (after a pause if it is stopped)."""

        def run() -> None:
            if broker.core is not None:
                broker.perform(step(broker.core, self.now_ms))

        broker.feed(label, run, alive)

    def replica_fetch(self, follower: SimBroker, fetch: OutboundFetch) -> None:
        alive = follower.life()
        handle = ("replica", follower.node_id, follower.incarnation, fetch.request_id)

        def failed() -> None:
            self.call(follower, "fetch failed",
                      lambda core, now: core.fetch_failed(fetch.destination, fetch.request_id, now),
                      alive)

        leader = self.brokers[fetch.destination]
        if not leader.alive:
            self.queue.after(2 * self.network.one_way_ms(), "connection refused", failed)
            return
        self.queue.after(self.world.request_timeout_ms + fetch.request.max_wait_ms,
                         f"{follower.node_id} fetch timeout", failed)
        leader_alive = leader.life()
        self.send(follower.node_id, leader.node_id, "Fetch", lambda: self.call(
            leader, "Fetch", lambda core, now: core.fetch(handle, fetch.request, 12, now),
            leader_alive,
        ))

    def alter_partition(self, broker: SimBroker, out: OutboundAlterPartition) -> None:
        alive = broker.life()

        def failed() -> None:
            self.call(broker, "AlterPartition failed",
                      lambda core, now: core.alter_partition_failed(out.request_id, now), alive)

        def at_controller() -> None:
            response = self.controller.alter_partition(out.request, self.now_ms)
            self.send(CONTROLLER_ID, broker.node_id, "AlterPartition answer", lambda: self.call(
                broker, "AlterPartition answer",
                lambda core, now: core.handle_alter_partition_response(out.request_id, response,
                                                                       now),
                alive,
            ))

        self.queue.after(self.world.request_timeout_ms, f"{broker.node_id} AlterPartition timeout",
                         failed)
        self.send(broker.node_id, CONTROLLER_ID, "AlterPartition", at_controller)

    def answer(self, source: int, handle: Hashable, response: FetchResponse | ProduceResponse) -> None:
        kind, *rest = cast(tuple[object, ...], handle)
        if kind == "replica":
            follower_id, incarnation, request_id = cast(tuple[int, int, int], tuple(rest))
            follower = self.brokers[follower_id]
            alive = follower.life()
            if follower.incarnation != incarnation:
                return
            assert isinstance(response, FetchResponse)
            self.send(source, follower_id, "Fetch answer", lambda: self.call(
                follower, "Fetch answer",
                lambda core, now: core.handle_fetch_response(source, request_id, response, now),
                alive,
            ))
            return
        client_id, request_no = cast(tuple[int, int], tuple(rest))
        client = self.client(client_id)
        self.send(source, client_id, f"{type(response).__name__} answer",
                  lambda: client.on_answer(request_no, source, response))

    def client(self, node_id: int) -> Producer | Consumer:
        return next(c for c in [*self.producers, *self.consumers] if c.node_id == node_id)

    # -- metadata and the machines ---------------------------------------------------------

    def _publish(self, image: object) -> None:
        for broker in self.brokers.values():
            if broker.alive and broker.epoch >= 0:
                alive = broker.life()
                current = self.controller.image
                self.send(CONTROLLER_ID, broker.node_id, "metadata", lambda b=broker, a=alive,
                          i=current: b.feed("metadata", lambda: b.on_image(i), a))

    def _controller_tick(self) -> None:
        self.controller.fence_expired(self.now_ms)
        self.queue.after(CONTROLLER_TICK_MS, "controller tick", self._controller_tick)

    def _write_back_timers(self) -> None:
        for broker in self.brokers.values():
            self._write_back(broker)

    def _write_back(self, broker: SimBroker) -> None:
        low, high = self.world.write_back_ms

        def tick() -> None:
            broker.disk.write_back()
            self._write_back(broker)

        self.queue.after(self.rng.randint(low, high), f"{broker.node_id} write-back", tick)

    def metadata_view(self) -> object:
        """The image a client learns from some live broker (the controller's if none is)."""
        live = [b for b in self.brokers.values() if b.core is not None]
        return self.rng.choice(live).image if live else self.controller.image

    # -- running ---------------------------------------------------------------------------

    def step(self) -> bool:
        if not len(self.queue):
            return False
        label, action = self.queue.pop()
        self.trace.record(self.now_ms, label)
        action()
        self.checks.check()
        if self.triggers:
            self._fire_triggers()
        return True

    def when(self, condition: Callable[[], bool], action: Callable[[], None], within_ms: int) -> None:
        """Run ``action`` after the first event that makes ``condition`` true (or at the limit)."""
        self.triggers.append((condition, action, self.now_ms + within_ms))

    def _fire_triggers(self) -> None:
        waiting = []
        for condition, action, limit in self.triggers:
            if condition() or self.now_ms >= limit:
                action()
                self.checks.check()
            else:
                waiting.append((condition, action, limit))
        self.triggers = waiting

    def run_until(self, condition: Callable[[], bool], timeout_ms: int) -> bool:
        end = self.now_ms + timeout_ms
        for _ in range(MAX_EVENTS):
            if condition():
                return True
            when = self.queue.next_time_ms()
            if when is None or when > end:
                self.queue.now_ms = max(self.now_ms, end)
                return condition()
            self.step()
        raise SimFailure(f"more than {MAX_EVENTS} events without reaching the condition")

    def run_for(self, duration_ms: int) -> None:
        self.run_until(lambda: False, duration_ms)

    def describe(self) -> str:
        lines = []
        for broker in self.brokers.values():
            parts = [repr(broker)]
            if broker.core is not None:
                parts += [repr(p) for p in broker.core.partitions]
            else:
                parts += [f"{key.partition}: disk leo {log.log_end_offset}"
                          for key, log in broker.disk.logs.items()]
            lines.append("; ".join(parts))
        for _, index, partition in self.controller.image.iter_partitions():
            lines.append(f"controller: partition {index} leader {partition.leader} "
                         f"e{partition.leader_epoch} isr {partition.isr}")
        return "\n".join(lines)

    def failure_report(self, error: BaseException) -> str:
        return (
            f"{type(error).__name__} at {self.now_ms} ms (seed {self.seed}): {error}\n"
            f"-- cluster --\n{self.describe()}\n-- last events --\n{self.trace.tail()}"
        )


__all__ += ["InvariantViolation"]
