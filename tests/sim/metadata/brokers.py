"""Simulated brokers: registration, heartbeats, silences, restarts, controlled shutdown.

A broker follows the committed log at its own pace (``view_offset``, a
committed batch boundary) and heartbeats the offset it has applied. It
learns its broker epoch only from an answered registration. A silent broker
sends nothing until ``back_at_ms``; it returns either as the same process
(same incarnation, a healed partition) or restarted (a new incarnation,
which registers again). A broker told to shut down stops, then restarts.
"""

from __future__ import annotations

import enum
import random
import uuid

import attrs

from quorum.wire.error_codes import Errors
from quorum.wire.messages.broker_lifecycle import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationRequestFeature,
    BrokerRegistrationRequestListener,
    BrokerRegistrationResponse,
)

__all__ = ["CLUSTER_ID", "BrokerMode", "SimBroker"]

CLUSTER_ID = "controller-sim"
HEARTBEAT_INTERVAL_MS = 2000


class BrokerMode(enum.Enum):
    RUNNING = "running"
    SILENT = "silent"  # alive but cut off, or dead, until back_at_ms
    SHUTTING_DOWN = "shutting down"  # heartbeats WantShutDown until told to stop
    STOPPED = "stopped"  # shut down cleanly; restarts at back_at_ms


@attrs.define
class SimBroker:
    broker_id: int
    incarnation: uuid.UUID
    mode: BrokerMode = BrokerMode.RUNNING
    epoch: int | None = None  # from the last answered registration
    registering: bool = False
    view_offset: int = 0  # the committed offset this broker has applied up to (exclusive)
    back_at_ms: int = 0
    restart_on_return: bool = False
    last_heartbeat_ms: int = -(10**9)

    @property
    def sends(self) -> bool:
        return self.mode in (BrokerMode.RUNNING, BrokerMode.SHUTTING_DOWN)

    def restart(self, rng: random.Random) -> None:
        """A new process: new incarnation, no epoch, running; its log stays on disk."""
        self.incarnation = uuid.UUID(int=rng.getrandbits(128), version=4)
        self.mode = BrokerMode.RUNNING
        self.epoch = None
        self.registering = False
        self.restart_on_return = False

    def go_silent(self, until_ms: int, *, restart: bool) -> None:
        self.mode = BrokerMode.SILENT
        self.back_at_ms = until_ms
        self.restart_on_return = restart

    def maybe_return(self, now_ms: int, rng: random.Random) -> bool:
        if self.mode in (BrokerMode.SILENT, BrokerMode.STOPPED) and now_ms >= self.back_at_ms:
            if self.restart_on_return or self.mode is BrokerMode.STOPPED:
                self.restart(rng)
            else:
                self.mode = BrokerMode.RUNNING
            return True
        return False

    # -- requests ------------------------------------------------------------------------

    def registration(self, *, cluster_id: str = CLUSTER_ID) -> BrokerRegistrationRequest:
        self.registering = True
        return BrokerRegistrationRequest(
            broker_id=self.broker_id,
            cluster_id=cluster_id,
            incarnation_id=self.incarnation,
            listeners=(
                BrokerRegistrationRequestListener(
                    name="PLAINTEXT", host=f"broker{self.broker_id}", port=9092,
                    security_protocol=0,
                ),
            ),
            features=(
                BrokerRegistrationRequestFeature(
                    name="metadata.version", min_supported_version=1, max_supported_version=21
                ),
            ),
            rack=None,
        )

    def heartbeat(self, now_ms: int, *, stale_epoch: bool = False) -> BrokerHeartbeatRequest:
        assert self.epoch is not None
        self.last_heartbeat_ms = now_ms
        applied = self.view_offset - 1
        return BrokerHeartbeatRequest(
            broker_id=self.broker_id,
            broker_epoch=self.epoch - 1 if stale_epoch else self.epoch,
            current_metadata_offset=applied,
            # as Kafka's brokers: ask to stay fenced until the own registration is applied
            want_fence=applied < self.epoch,
            want_shut_down=self.mode is BrokerMode.SHUTTING_DOWN,
        )

    # -- answers (None: no answer, the controller lost leadership first) ----------------

    def on_registration(
        self, request: BrokerRegistrationRequest, response: BrokerRegistrationResponse | None
    ) -> None:
        if request.incarnation_id != self.incarnation:
            return  # an answer to a previous process
        self.registering = False
        if response is not None and response.error_code == Errors.NONE:
            self.epoch = response.broker_epoch

    def on_heartbeat(
        self,
        request: BrokerHeartbeatRequest,
        response: BrokerHeartbeatResponse | None,
        now_ms: int,
        rng: random.Random,
    ) -> None:
        if response is None or request.broker_epoch != self.epoch:
            return
        if response.error_code in (Errors.STALE_BROKER_EPOCH, Errors.BROKER_ID_NOT_REGISTERED):
            self.epoch = None  # register again, same process
        elif response.should_shut_down and self.mode is BrokerMode.SHUTTING_DOWN:
            self.mode = BrokerMode.STOPPED
            self.back_at_ms = now_ms + rng.randint(2_000, 20_000)
