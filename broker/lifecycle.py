"""``BrokerLifecycle``: registration, heartbeats and controlled shutdown, sans-I/O.

The broker talks to the active controller with one request at a time; this
object decides what to send, to which controller and when, from the answers
it is given and the offset of the broker's metadata image. Time is an
argument (milliseconds); the trio side is ``broker.lifecycle_loop``.

States (Kafka's BrokerState codes) and their moves::

    STARTING      --registered-------------------> RECOVERY
    STARTING      --no registration in time------> SHUTTING_DOWN (failure)
    RECOVERY      --heartbeat: not fenced--------> RUNNING
    RUNNING       --heartbeat: fenced------------> RECOVERY (register again)
    RECOVERY      --STALE_BROKER_EPOCH, unknown--> RECOVERY (register again)
    RUNNING       --STALE_BROKER_EPOCH, unknown--> RECOVERY (register again)
    RECOVERY, RUNNING --begin_shutdown-----------> PENDING_CONTROLLED_SHUTDOWN
    STARTING      --begin_shutdown---------------> SHUTTING_DOWN
    PENDING_CONTROLLED_SHUTDOWN --ShouldShutDown, timeout, stale epoch--> SHUTTING_DOWN

Each start of the process is a new incarnation (a fresh uuid); a broker that
registers again in the same process keeps it, so the controller keeps its
epoch if it still knows it. Heartbeats report the last offset the image
holds and ask to stay fenced until the image has replayed the broker's own
registration record (the broker epoch is that record's offset). Failures
and refusals back off exponentially up to the heartbeat interval, with
jitter (Kafka's 2% would keep brokers that failed together in step; here a
fifth either way). A heartbeat waits at most half the session timeout for
its answer (KAFKA-14392: a later answer cannot keep the session alive). A
registration keeps no session alive, so it waits ``registration_timeout_ms``
(``controller.socket.timeout.ms``): a busy controller that accepted it
answers when its record is committed, and giving up earlier only sends the
same registration again. (Kafka bounds both by half a session.) A
controlled shutdown waits up to ``controlled_shutdown_timeout_ms`` for the
controller's go-ahead (Kafka: 5 minutes), but gives up once no controller
has answered for a whole session: the quorum will fence the broker anyway.

The controller asked is the Raft leader the observer core knows, also after
a timeout (it is there, only busy) and after another voter refused with
NOT_CONTROLLER; the voters are tried in turn only while no leader is known,
or after the leader's connection failed twice in a row (the observer learns
of its successor soon).
"""

from __future__ import annotations

import enum
import random
import uuid
from collections.abc import Sequence
from typing import Final, TypeAlias

import attrs

from broker.settings import BrokerListener
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationRequestFeature,
    BrokerRegistrationRequestListener,
    BrokerRegistrationResponse,
)

__all__ = [
    "BrokerLifecycle",
    "BrokerState",
    "ControllerPicker",
    "IllegalLifecycleMove",
    "LifecycleConfig",
    "LifecycleRequest",
    "LifecycleResponse",
    "Outgoing",
    "features_supported",
    "registration_listeners",
]

LifecycleRequest: TypeAlias = BrokerRegistrationRequest | BrokerHeartbeatRequest
LifecycleResponse: TypeAlias = BrokerRegistrationResponse | BrokerHeartbeatResponse

_INITIAL_BACKOFF_MS: Final = 100  # Kafka's first resend backoff
_BACKOFF_JITTER: Final = 0.2  # each backoff drawn within a fifth either way
_FIRST_SHUTDOWN_POLL_MS: Final = 50  # Kafka: the first answer in shutdown is re-asked sooner
_LEADER_FAILURES_BEFORE_ROTATION: Final = 2
# how long a controlled shutdown waits for the controller's go-ahead (Kafka's BrokerServer)
CONTROLLED_SHUTDOWN_TIMEOUT_MS: Final = 300_000


class BrokerState(enum.IntEnum):
    NOT_RUNNING = 0
    STARTING = 1
    RECOVERY = 2
    RUNNING = 3
    PENDING_CONTROLLED_SHUTDOWN = 6
    SHUTTING_DOWN = 7


_S = BrokerState
_MOVES: Final[frozenset[tuple[BrokerState, BrokerState]]] = frozenset({
    (_S.STARTING, _S.RECOVERY),
    (_S.STARTING, _S.SHUTTING_DOWN),
    (_S.RECOVERY, _S.RUNNING),
    (_S.RUNNING, _S.RECOVERY),
    (_S.RECOVERY, _S.PENDING_CONTROLLED_SHUTDOWN),
    (_S.RUNNING, _S.PENDING_CONTROLLED_SHUTDOWN),
    (_S.PENDING_CONTROLLED_SHUTDOWN, _S.SHUTTING_DOWN),
})


class IllegalLifecycleMove(AssertionError):
    """A move the table in this module's docstring does not have: a bug."""


@attrs.frozen(kw_only=True)
class LifecycleConfig:
    broker_id: int
    cluster_id: str
    incarnation_id: uuid.UUID
    listeners: tuple[BrokerRegistrationRequestListener, ...]
    features: tuple[BrokerRegistrationRequestFeature, ...]
    rack: str | None
    voter_ids: tuple[int, ...]
    heartbeat_interval_ms: int
    session_timeout_ms: int
    initial_registration_timeout_ms: int
    request_timeout_ms: int
    # how long a registration waits for its answer (controller.socket.timeout.ms)
    registration_timeout_ms: int = 30_000
    # how long a controlled shutdown may wait for the controller's go-ahead
    controlled_shutdown_timeout_ms: int = CONTROLLED_SHUTDOWN_TIMEOUT_MS
    previous_broker_epoch: int = -1

    @property
    def effective_request_timeout_ms(self) -> int:
        """A heartbeat that waits longer than half a session cannot keep it alive."""
        return max(1, min(self.request_timeout_ms, self.session_timeout_ms // 2))

    def timeout_ms_for(self, request: LifecycleRequest) -> int:
        """How long ``request`` waits for its answer (the module docstring says why)."""
        if isinstance(request, BrokerRegistrationRequest):
            return max(self.registration_timeout_ms, self.effective_request_timeout_ms)
        return self.effective_request_timeout_ms


@attrs.frozen
class Outgoing:
    """Send ``request`` to voter ``destination``'s controller listener."""

    destination: int
    request: LifecycleRequest


class ControllerPicker:
    """Which voter to ask: the Raft leader, else the voters in turn (the module docstring)."""

    def __init__(self, voter_ids: tuple[int, ...]) -> None:
        assert voter_ids, "a broker needs at least one voter"
        self._voters = tuple(sorted(voter_ids))
        self._next = 0
        self._leader_failures = 0
        self._leader: int | None = None  # the leader those failures were counted against

    def pick(self, leader_id: int | None) -> int:
        if leader_id != self._leader:
            self._leader, self._leader_failures = leader_id, 0  # a new leader: ask it
        if leader_id in self._voters and self._leader_failures < _LEADER_FAILURES_BEFORE_ROTATION:
            return leader_id
        return self._voters[self._next % len(self._voters)]

    def succeeded(self) -> None:
        self._leader_failures = 0

    def unreachable(self, destination: int, leader_id: int | None) -> None:
        """``destination``'s connection failed (refused, reset): it may be gone."""
        if destination == leader_id:
            self._leader_failures += 1
        self._rotate_past(destination)

    def not_controller(self, destination: int, leader_id: int | None) -> None:
        """``destination`` answered that it is not the active controller: the leader the
        broker knows is asked next (it may lead and not have claimed yet)."""
        if destination != leader_id:
            self._leader_failures = 0
        self._rotate_past(destination)

    def _rotate_past(self, destination: int) -> None:
        if destination in self._voters:
            self._next = self._voters.index(destination) + 1


class BrokerLifecycle:
    def __init__(
        self, config: LifecycleConfig, now_ms: int, *, rng: random.Random | None = None
    ) -> None:
        self.config = config
        self._rng = rng or random.Random()
        self.state = BrokerState.STARTING
        self.broker_epoch = -1
        self.registered = False  # the controller holds the current registration
        self.ever_registered = False
        self.failure: str | None = None  # why the broker gives up (it must exit)
        self.shutdown_timed_out = False
        self.last_error: str | None = None
        self.picker = ControllerPicker(config.voter_ids)
        self._registration_deadline_ms = now_ms + config.initial_registration_timeout_ms
        self._shutdown_deadline_ms: int | None = None
        self._send_at_ms: int | None = now_ms
        self._in_flight: Outgoing | None = None
        self._failures = 0
        self._ready_to_unfence = False
        self._shutdown_answers = 0
        self._last_answer_ms = now_ms  # from any controller, any answer

    # -- views ------------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self.state is BrokerState.SHUTTING_DOWN

    @property
    def in_flight(self) -> bool:
        return self._in_flight is not None

    def next_deadline_ms(self) -> int | None:
        """When ``poll`` or ``next_request`` has something to do at the latest."""
        if self.done:
            return None
        silent_until = None if self._shutdown_deadline_ms is None else (
            self._last_answer_ms + self.config.session_timeout_ms + 1
        )
        deadlines = [
            None if self._in_flight is not None else self._send_at_ms,
            None if self.ever_registered else self._registration_deadline_ms,
            self._shutdown_deadline_ms,
            silent_until,
        ]
        known = [d for d in deadlines if d is not None]
        return min(known) if known else None

    # -- inputs -----------------------------------------------------------------------------

    def poll(self, now_ms: int) -> None:
        """Timers: the initial registration and the controlled shutdown are bounded."""
        if self.done:
            return
        if not self.ever_registered and now_ms >= self._registration_deadline_ms:
            last = "" if self.last_error is None else f" (last problem: {self.last_error})"
            self.failure = (
                f"broker {self.config.broker_id} was not registered with the controller quorum "
                f"within initial.broker.registration.timeout.ms="
                f"{self.config.initial_registration_timeout_ms}{last}"
            )
            self._move(BrokerState.SHUTTING_DOWN)
        elif self._shutdown_deadline_ms is not None and (
            now_ms >= self._shutdown_deadline_ms
            or now_ms - self._last_answer_ms > self.config.session_timeout_ms
        ):
            self.shutdown_timed_out = True
            self._move(BrokerState.SHUTTING_DOWN)

    def metadata_advanced(self, image_offset: int, now_ms: int) -> None:
        """The image now ends at ``image_offset``: once it holds the broker's own
        registration, the next heartbeat asks to be unfenced, at once if fenced."""
        if not self.registered or self._ready_to_unfence or image_offset <= self.broker_epoch:
            return
        self._ready_to_unfence = True
        if self.state is BrokerState.RECOVERY:
            self._send_at_ms = now_ms

    def begin_shutdown(self, now_ms: int) -> None:
        if self.state in (BrokerState.RECOVERY, BrokerState.RUNNING):
            self._move(BrokerState.PENDING_CONTROLLED_SHUTDOWN)
            self._shutdown_deadline_ms = now_ms + self.config.controlled_shutdown_timeout_ms
            self._last_answer_ms = now_ms
            self._send_at_ms = now_ms
        elif self.state is BrokerState.STARTING:
            self._move(BrokerState.SHUTTING_DOWN)

    def next_request(
        self, now_ms: int, image_offset: int, leader_id: int | None
    ) -> Outgoing | None:
        """The request to send now, if any (then it is in flight until answered)."""
        if self.done or self._in_flight is not None:
            return None
        if self._send_at_ms is None or now_ms < self._send_at_ms:
            return None
        self.metadata_advanced(image_offset, now_ms)
        request: LifecycleRequest = (
            self._heartbeat(image_offset) if self.registered else self._registration()
        )
        self._in_flight = Outgoing(self.picker.pick(leader_id), request)
        self._send_at_ms = None
        return self._in_flight

    def on_response(self, response: LifecycleResponse, now_ms: int, leader_id: int | None) -> None:
        sent = self._take_in_flight()
        self._last_answer_ms = now_ms
        if self.done:
            return
        if response.error_code == Errors.NOT_CONTROLLER:
            self.picker.not_controller(sent.destination, leader_id)
        else:
            self.picker.succeeded()
        if isinstance(response, BrokerRegistrationResponse):
            assert isinstance(sent.request, BrokerRegistrationRequest), (sent, response)
            self._on_registration(response, now_ms)
        else:
            assert isinstance(sent.request, BrokerHeartbeatRequest), (sent, response)
            self._on_heartbeat(response, now_ms)

    def on_failure(
        self, now_ms: int, reason: str, leader_id: int | None, *, timed_out: bool = False
    ) -> None:
        """The request got no answer: timed out (the controller is there, maybe busy), or
        its connection failed (refused or lost)."""
        sent = self._take_in_flight()
        if not timed_out:
            self.picker.unreachable(sent.destination, leader_id)
        if not self.done:
            self._back_off(now_ms, f"controller {sent.destination}: {reason}")

    # -- answers ----------------------------------------------------------------------------

    def _on_registration(self, response: BrokerRegistrationResponse, now_ms: int) -> None:
        error = Errors(response.error_code)
        if error is Errors.INCONSISTENT_CLUSTER_ID:
            self.failure = (
                f"the controller quorum refused broker {self.config.broker_id}: it belongs to "
                f"another cluster than {self.config.cluster_id} (INCONSISTENT_CLUSTER_ID)"
            )
            self._move(BrokerState.SHUTTING_DOWN)
            return
        if error is not Errors.NONE:
            self._back_off(now_ms, f"registration refused with {error.name}")
            return
        if response.broker_epoch != self.broker_epoch:
            self._ready_to_unfence = False
        self.broker_epoch = response.broker_epoch
        self.registered = self.ever_registered = True
        self._failures = 0
        if self.state is BrokerState.STARTING:
            self._move(BrokerState.RECOVERY)
        self._send_at_ms = now_ms  # a heartbeat at once

    def _on_heartbeat(self, response: BrokerHeartbeatResponse, now_ms: int) -> None:
        error = Errors(response.error_code)
        if error in (Errors.STALE_BROKER_EPOCH, Errors.BROKER_ID_NOT_REGISTERED):
            self._register_again(now_ms, error.name)
            return
        if error is not Errors.NONE:
            self._back_off(now_ms, f"heartbeat refused with {error.name}")
            return
        self._failures = 0
        next_ms = now_ms + self.config.heartbeat_interval_ms
        if self.state is BrokerState.RECOVERY and not response.is_fenced:
            self._move(BrokerState.RUNNING)
        elif self.state is BrokerState.RUNNING and response.is_fenced:
            self._register_again(now_ms, "fenced by the controller")
            return
        elif self.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN:
            if response.should_shut_down:
                self._move(BrokerState.SHUTTING_DOWN)
                return
            self._shutdown_answers += 1
            if self._shutdown_answers == 1:
                next_ms = now_ms + min(_FIRST_SHUTDOWN_POLL_MS, self.config.heartbeat_interval_ms)
        self._send_at_ms = next_ms

    def _register_again(self, now_ms: int, why: str) -> None:
        if self.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN:
            # the controller no longer counts on this registration: nothing to hand over
            self._move(BrokerState.SHUTTING_DOWN)
            return
        self.last_error = why
        self.registered = False
        self._ready_to_unfence = False
        if self.state is BrokerState.RUNNING:
            self._move(BrokerState.RECOVERY)
        self._send_at_ms = now_ms

    # -- helpers ----------------------------------------------------------------------------

    def _take_in_flight(self) -> Outgoing:
        sent = self._in_flight
        assert sent is not None, "an answer arrived for no request in flight"
        self._in_flight = None
        return sent

    def _back_off(self, now_ms: int, why: str) -> None:
        self.last_error = why
        cap = max(_INITIAL_BACKOFF_MS, self.config.heartbeat_interval_ms)
        delay = min(cap, _INITIAL_BACKOFF_MS * 2 ** min(self._failures, 16))
        # brokers that failed together (a controller's failover) do not retry in step
        delay *= 1 + self._rng.uniform(-_BACKOFF_JITTER, _BACKOFF_JITTER)
        self._failures += 1
        self._send_at_ms = now_ms + round(delay)

    def _move(self, to: BrokerState) -> None:
        if (self.state, to) not in _MOVES:
            raise IllegalLifecycleMove(
                f"broker {self.config.broker_id} cannot move from {self.state.name} to "
                f"{to.name}: not a move of the broker lifecycle (broker.lifecycle)"
            )
        self.state = to

    def _registration(self) -> BrokerRegistrationRequest:
        config = self.config
        return BrokerRegistrationRequest(
            broker_id=config.broker_id,
            cluster_id=config.cluster_id,
            incarnation_id=config.incarnation_id,
            listeners=config.listeners,
            features=config.features,
            rack=config.rack,
            previous_broker_epoch=config.previous_broker_epoch,
        )

    def _heartbeat(self, image_offset: int) -> BrokerHeartbeatRequest:
        return BrokerHeartbeatRequest(
            broker_id=self.config.broker_id,
            broker_epoch=self.broker_epoch,
            # the last offset the image holds (inclusive), as Kafka reports it
            current_metadata_offset=image_offset - 1,
            want_fence=not self._ready_to_unfence,
            want_shut_down=self.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN,
        )


def features_supported(metadata_version_max: int) -> tuple[BrokerRegistrationRequestFeature, ...]:
    """What a pykraft broker supports: metadata.version 1 (3.0-IV1) up to pykraft's own."""
    return (
        BrokerRegistrationRequestFeature(
            name="metadata.version", min_supported_version=1,
            max_supported_version=metadata_version_max,
        ),
    )


def registration_listeners(
    listeners: Sequence[BrokerListener],
) -> tuple[BrokerRegistrationRequestListener, ...]:
    """The broker's advertised listeners, as BrokerRegistration lists them."""
    return tuple(
        BrokerRegistrationRequestListener(
            name=e.name, host=e.host, port=e.port, security_protocol=e.security_protocol
        )
        for e in listeners
    )
