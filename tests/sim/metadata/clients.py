"""The clients of the simulated metadata quorum: brokers' lifecycle loops and an admin.

``BrokerClient`` registers and heartbeats as a broker's lifecycle loop does;
a chatty one also sends AlterPartition for partitions it leads in its own
(maybe stale) image and AllocateProducerIds, and now and then a stale epoch
or a wrong cluster id; asked to shut down, it heartbeats WantShutDown until
told to stop, then its node stops and restarts later. ``AdminClient`` sends
admin requests (``requests``) and retries those that found no active
controller, as Kafka's admin client does on NOT_CONTROLLER.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, Final

import attrs

from quorum.wire.error_codes import Errors
from quorum.wire.messages.allocate_producer_ids import AllocateProducerIdsRequest
from quorum.wire.messages.partition_reassignments import ListPartitionReassignmentsRequest
from quorum.wire.messages.topics import (
    CreateTopicsRequest,
    CreateTopicsRequestTopic,
    DeleteTopicsRequest,
)
from quorum.wire.messages.unregister_broker import UnregisterBrokerRequest

from .answers import error_codes
from .brokers import CLUSTER_ID, HEARTBEAT_INTERVAL_MS, BrokerMode, SimBroker
from .requests import (
    alter_partition_request,
    alter_reassignments_request,
    alter_topic_config_request,
    create_partitions_request,
    create_topics_request,
    delete_topics_request,
    elect_leaders_request,
)

if TYPE_CHECKING:
    from .world import MetadataSimulation

__all__ = ["AdminClient", "BrokerClient"]


@attrs.define(eq=False)
class BrokerClient:
    """A broker's lifecycle loop: register, then heartbeat every interval.

    A chatty one also sends what a broker sends between heartbeats."""

    sim: MetadataSimulation
    broker: SimBroker
    rng: random.Random
    running: bool = False
    chatty: bool = False
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

    def shut_down(self) -> None:
        """Controlled shutdown: heartbeat WantShutDown until the controller agrees."""
        if self.running and self.broker.mode is BrokerMode.RUNNING:
            self.broker.mode = BrokerMode.SHUTTING_DOWN

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
        broker, sim, now, rng = self.broker, self.sim, self.sim.now_ms, self.rng
        if broker.epoch is None:
            if not broker.registering:
                wrong = self.chatty and rng.random() < 0.03
                request = broker.registration(cluster_id="someone-else" if wrong else CLUSTER_ID)
                sim.call(broker.broker_id, request, 3,
                         lambda r: broker.on_registration(request, r))
        elif now - broker.last_heartbeat_ms >= HEARTBEAT_INTERVAL_MS:
            heartbeat = broker.heartbeat(now, stale_epoch=self.chatty and rng.random() < 0.03)
            sim.call(broker.broker_id, heartbeat, 1, lambda r: self._on_heartbeat(heartbeat, r))
        elif self.chatty:
            self._chatter(broker.epoch)

    def _chatter(self, epoch: int) -> None:
        broker, sim, rng = self.broker, self.sim, self.rng
        roll = rng.random()
        if roll < 0.25:
            view = sim.nodes[broker.broker_id].published
            made = None if view is None else alter_partition_request(
                rng, view, broker.broker_id, epoch
            )
            if made is not None:
                sim.call(broker.broker_id, made[0], made[1], lambda r: None)
        elif roll < 0.3:
            stale = epoch - (1 if rng.random() < 0.05 else 0)
            request = AllocateProducerIdsRequest(broker_id=broker.broker_id, broker_epoch=stale)
            sim.call(broker.broker_id, request, 0, lambda r: None)

    def _on_heartbeat(self, request: Any, response: Any) -> None:
        broker, sim = self.broker, self.sim
        broker.on_heartbeat(request, response, sim.now_ms, self.rng)
        if broker.mode is BrokerMode.STOPPED and self.running:
            # shut down cleanly: the process stops, and a new one starts later
            broker_id = broker.broker_id
            sim.stats["controlled shutdown"] += 1
            sim.kill_broker(broker_id)
            sim.queue.after(max(0, broker.back_at_ms - sim.now_ms), f"restart broker {broker_id}",
                            lambda: sim.restart_broker(broker_id))


# the admin requests a chatting client sends, and how often each
_ADMIN_WEIGHTS: Final = {
    "create": 6.0, "delete": 2.0, "elect": 3.0, "partitions": 2.0, "reassign": 2.0,
    "config": 1.0, "list": 1.0, "unregister": 0.3,
}


@attrs.define(eq=False)
class AdminClient:
    """Sends admin requests; a request without a good answer is sent again.

    While ``chatting``, it sends a random request of every kind now and then,
    built from the newest published image (``requests``)."""

    sim: MetadataSimulation
    rng: random.Random
    answers: list[tuple[str, Any]] = attrs.field(factory=list)
    deleted: set[str] = attrs.field(factory=set)  # every name a DeleteTopics asked for
    in_flight: int = 0
    chatting: bool = False

    def create(self, name: str, partitions: int, *, retries: int = 20) -> None:
        request = CreateTopicsRequest(topics=(CreateTopicsRequestTopic(
            name=name, num_partitions=partitions, replication_factor=-1
        ),), timeout_ms=60_000)
        self._send(name, request, 5, retries)

    def delete(self, name: str, *, retries: int = 20) -> None:
        self._send(name, DeleteTopicsRequest(topic_names=(name,), timeout_ms=60_000), 4, retries)

    def chatter(self) -> None:
        """Start sending random requests until ``chatting`` is turned off."""
        self.chatting = True
        self._chat()

    def _chat(self) -> None:
        if not self.chatting:
            return
        made = self._random_request()
        if made is not None:
            self._send("chatter", *made, 10)
        self.sim.queue.after(self.rng.randint(100, 900), "admin chatter", self._chat)

    def _random_request(self) -> tuple[Any, int] | None:
        rng, image, sim = self.rng, self.sim.latest_image(), self.sim
        kind = rng.choices(list(_ADMIN_WEIGHTS), list(_ADMIN_WEIGHTS.values()))[0]
        made: tuple[Any, int] | None = None
        if kind == "create":
            made = create_topics_request(rng), 5
        elif kind == "delete":
            made = delete_topics_request(rng), 4
        elif kind == "elect":
            made = elect_leaders_request(rng, image), 2
        elif kind == "partitions":
            made = create_partitions_request(rng, image), 3
        elif kind == "reassign":
            request = alter_reassignments_request(rng, image, sorted(sim.brokers))
            made = None if request is None else (request, 0)
        elif kind == "config":
            config = alter_topic_config_request(rng, image)
            made = None if config is None else (config, 1)
        elif kind == "list":
            made = ListPartitionReassignmentsRequest(topics=None), 0
        else:  # mostly a broker that is down, now and then one that runs
            down = [b for b in sorted(sim.brokers) if not sim.nodes[b].alive]
            if down or rng.random() < 0.2:
                made = UnregisterBrokerRequest(broker_id=rng.choice(down or sorted(sim.brokers))), 0
        return made

    def _send(self, name: str, request: Any, version: int, retries: int) -> None:
        if isinstance(request, DeleteTopicsRequest):
            self.deleted.update(request.topic_names)
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
    codes = error_codes(response)
    return Errors.NOT_CONTROLLER in codes or Errors.REQUEST_TIMED_OUT in codes
