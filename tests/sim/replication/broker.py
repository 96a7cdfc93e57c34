"""A simulated broker process: the thin driver around the production ``ReplicaCore``.

What the trio task of a broker will do, with simulated time and network: it
registers (a new incarnation per process start, refused while the previous
one still holds a live session), heartbeats, applies each newer metadata
image it hears of, and performs every ``ReplicaOutput`` completely before the
next input (requests out, answers back, a poll at the deadline). The core is
created only once the image holds this incarnation's registration. A paused
broker (SIGSTOP) runs nothing: what arrives waits in its inbox until it
resumes. The disk (logs and checkpoints) outlives the process.
"""

from __future__ import annotations

import random
import uuid
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from broker.replica import ReplicaConfig, ReplicaCore, ReplicaOutput
from broker.replica.manager import assignment_changes
from quorum.controller.image import EMPTY_IMAGE, MetadataImage
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    BrokerRegistrationRequestListener,
)

from .controller import CONTROLLER_ID
from .disk import BrokerDisk

if TYPE_CHECKING:
    from .cluster import Simulation

__all__ = ["SimBroker"]

REGISTRATION_RETRY_MS = 100
METADATA_PULL_MS = 100


class SimBroker:
    def __init__(self, sim: Simulation, node_id: int, config: ReplicaConfig) -> None:
        self.sim = sim
        self.node_id = node_id
        self.config = config
        self.disk = BrokerDisk()
        self.alive = False
        self.paused = False
        self.incarnation = 0
        self.epoch = -1  # the broker epoch of this incarnation, once registered
        self.core: ReplicaCore | None = None
        self.image = EMPTY_IMAGE
        self.inbox: deque[tuple[str, Callable[[], None]]] = deque()
        self._poll_at: int | None = None
        self._attempt = 0  # registration attempts: a late answer to an older one is dropped
        self._rng = random.Random(sim.rng.getrandbits(64))

    def __repr__(self) -> str:
        state = "down" if not self.alive else ("paused" if self.paused else "up")
        return f"broker {self.node_id} ({state}, life {self.incarnation}, epoch {self.epoch})"

    # -- process lifecycle ---------------------------------------------------------------

    def start(self) -> None:
        assert not self.alive
        self.alive, self.paused = True, False
        self.incarnation += 1
        self.incarnation_id = uuid.UUID(int=self._rng.getrandbits(128))
        self.epoch, self.core, self.image, self._poll_at = -1, None, EMPTY_IMAGE, None
        self.inbox.clear()
        self._register()
        self._every(METADATA_PULL_MS, "metadata pull", self._pull_metadata)
        self._every(self.sim.world.checkpoint_ms, "checkpoint", self._checkpoint)

    def kill(self) -> None:
        """kill -9: the process and its memory are gone, the page cache stays."""
        self.alive, self.paused, self.core = False, False, None
        self.inbox.clear()

    def crash(self) -> None:
        """The machine loses power: the process and every unflushed tail are gone."""
        self.kill()
        self.disk.crash()

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        while self.inbox and self.alive and not self.paused:
            label, action = self.inbox.popleft()
            self.sim.trace.record(self.sim.now_ms, f"  {self.node_id} runs {label}")
            action()

    def life(self) -> Callable[[], bool]:
        """True while this incarnation runs (events of an earlier life are dropped)."""
        incarnation = self.incarnation
        return lambda: self.alive and self.incarnation == incarnation

    def feed(self, label: str, action: Callable[[], None], alive: Callable[[], bool]) -> None:
        """Run ``action`` in this incarnation now, or after a pause."""
        if not alive():
            return
        if self.paused:
            self.inbox.append((label, action))
        else:
            action()

    def _every(self, period_ms: int, label: str, action: Callable[[], None]) -> None:
        alive = self.life()

        def tick() -> None:
            if alive():
                self.feed(label, action, alive)
                self.sim.queue.after(period_ms, f"{self.node_id} {label}", tick)

        self.sim.queue.after(self._rng.randint(1, period_ms), f"{self.node_id} {label}", tick)

    # -- the controller --------------------------------------------------------------------

    def _register(self) -> None:
        request = BrokerRegistrationRequest(
            broker_id=self.node_id,
            cluster_id=self.sim.controller.config.cluster_id,
            incarnation_id=self.incarnation_id,
            listeners=(BrokerRegistrationRequestListener(
                name="PLAINTEXT", host=f"broker-{self.node_id}", port=9092, security_protocol=0
            ),),
        )
        alive = self.life()
        self._attempt += 1
        attempt = self._attempt

        def retry() -> None:
            if self.epoch < 0 and self._attempt == attempt:
                self._register()

        # an answer lost on the way is asked again
        self.sim.queue.after(self.sim.world.request_timeout_ms, f"{self.node_id} register timeout",
                             lambda: self.feed("register timeout", retry, alive))

        def answered(error: int, epoch: int) -> None:
            if self.epoch >= 0 or self._attempt != attempt:
                return
            if error == Errors.NONE:
                self.epoch = epoch
                self.sim.trace.record(self.sim.now_ms, f"  {self.node_id} registered epoch {epoch}")
                self._every(self.sim.world.heartbeat_ms, "heartbeat", self._heartbeat)
                self._pull_metadata()
            else:
                self.sim.queue.after(REGISTRATION_RETRY_MS, f"{self.node_id} register",
                                     lambda: self.feed("register", retry, alive))

        def at_controller() -> None:
            response = self.sim.controller.register(request, self.sim.now_ms)
            self.sim.send(CONTROLLER_ID, self.node_id, "registered", lambda: self.feed(
                "registered", lambda: answered(response.error_code, response.broker_epoch), alive
            ))

        self.sim.send(self.node_id, CONTROLLER_ID, "register", at_controller)

    def _heartbeat(self) -> None:
        request = BrokerHeartbeatRequest(
            broker_id=self.node_id,
            broker_epoch=self.epoch,
            current_metadata_offset=self.image.provenance.offset,
        )
        self.sim.send(self.node_id, CONTROLLER_ID, "heartbeat",
                      lambda: self.sim.controller.heartbeat(request, self.sim.now_ms))

    def _pull_metadata(self) -> None:
        alive = self.life()

        def at_controller() -> None:
            image = self.sim.controller.image
            self.sim.send(CONTROLLER_ID, self.node_id, "metadata",
                          lambda: self.feed("metadata", lambda: self.on_image(image), alive))

        self.sim.send(self.node_id, CONTROLLER_ID, "metadata pull", at_controller)

    def on_image(self, image: MetadataImage) -> None:
        if self.epoch < 0 or image.provenance.offset <= self.image.provenance.offset:
            return
        if self.core is None:
            registration = image.broker(self.node_id)
            if registration is None or registration.epoch != self.epoch:
                return  # not our registration yet: host nothing before it
            self.core = ReplicaCore(self.config, self.disk, random.Random(self._rng.getrandbits(64)))
        changes = assignment_changes(self.image, image, self.node_id)
        self.image = image
        self.perform(self.core.apply_changes(changes.changed, changes.removed, image,
                                             self.sim.now_ms))

    # -- outputs ---------------------------------------------------------------------------

    def perform(self, output: ReplicaOutput) -> None:
        sim = self.sim
        for fetch in output.fetches:
            sim.replica_fetch(self, fetch)
        if output.alter_partition is not None:
            sim.alter_partition(self, output.alter_partition)
        for answer in output.produce_answers:
            sim.answer(self.node_id, answer.handle, answer.response)
        for fetch_answer in output.fetch_answers:
            sim.answer(self.node_id, fetch_answer.handle, fetch_answer.response)
        for source in output.fetch_answers_left:  # a large answer: its next slice as an input
            self._continue_later(source)
        deadline = output.next_deadline_ms
        if deadline is not None and (self._poll_at is None or deadline < self._poll_at
                                     or self._poll_at <= sim.now_ms):
            self._poll_at = deadline
            alive = self.life()

            def poll() -> None:
                if self.core is not None and self._poll_at == deadline:
                    self._poll_at = None
                    self.perform(self.core.poll(self.sim.now_ms))

            sim.queue.at(deadline, f"{self.node_id} poll",
                         lambda: self.feed("poll", poll, alive))

    def _continue_later(self, source: int) -> None:
        alive = self.life()

        def step() -> None:
            if self.core is not None:
                self.perform(self.core.continue_fetch_response(source, self.sim.now_ms))

        self.sim.queue.after(0, f"{self.node_id} fetch answer from {source}, more",
                             lambda: self.feed("fetch answer, more", step, alive))

    def _checkpoint(self) -> None:
        if self.core is not None:
            self.disk.checkpoint.update(self.core.high_watermarks())
