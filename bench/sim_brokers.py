"""Simulated brokers: registrations and heartbeats from the bench process, no broker processes.

``SimulatedBrokers(cluster, count)`` runs, on a thread of its own with one
``trio.run``, one task per broker: the broker's own ``LifecycleLoop`` over its
``BrokerLifecycle`` (BrokerRegistrationRequest, then a BrokerHeartbeatRequest
every ``broker.heartbeat.interval.ms``, re-registering when fenced), exactly as
a broker process runs them. Each broker's settings are what ``broker_settings``
maps from the cluster's own properties (heartbeat interval, session timeout,
voters), with the broker role, a node id from ``first_id`` up, and an
advertised listener nobody connects to.

A simulated broker holds no metadata image: its heartbeats report the
committed offset of the quorum (a task polls DescribeQuorum at the voters),
never below its own registration, which the controller committed before it
answered. So it stands for a broker that replays instantly; what such a broker
costs the controllers (registrations, heartbeats, partitions placed on it) is
all there.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Mapping
from typing import Final

import attrs
import trio

from broker.controller_channel import BrokerControllerChannel
from broker.lifecycle import (
    BrokerLifecycle,
    BrokerState,
    LifecycleConfig,
    features_supported,
    registration_listeners,
)
from broker.lifecycle_loop import LifecycleLoop
from broker.settings import BrokerListener, BrokerSettings, broker_settings
from deploy import LocalCluster
from quorum.client import ClientError, TrioKafkaConnection
from quorum.config import read_properties_file, server_config_from_properties
from quorum.describe import describe_quorum_request
from quorum.node.driver import NodeClock
from quorum.storage import PYKRAFT_METADATA_VERSION
from quorum.wire.error_codes import Errors

__all__ = ["SimulatedBrokers"]

_POLL_S: Final = 0.5
# advertised ports of simulated brokers: never bound, never connected to
_FAKE_PORT_BASE: Final = 40_000


@attrs.define
class _Committed:
    """The quorum's high watermark, as the last DescribeQuorum answer said."""

    offset: int = 0


def simulated_settings(cluster: LocalCluster, broker_id: int) -> BrokerSettings:
    """The settings ``broker_settings`` gives a broker of this cluster with id ``broker_id``."""
    properties = dict(read_properties_file(cluster.layout[cluster.node_ids[0]].config_path))
    host = cluster.address(cluster.node_ids[0])[0]
    properties.update({
        "process.roles": "broker",
        "node.id": str(broker_id),
        "listeners": f"PLAINTEXT://{host}:{_FAKE_PORT_BASE + broker_id % 20_000}",
    })
    properties.pop("metrics.http.listener", None)
    return broker_settings(server_config_from_properties(properties), cluster.cluster_id)


def lifecycle_config(settings: BrokerSettings) -> LifecycleConfig:
    """What ``BrokerNode`` gives its lifecycle, for a broker process started now."""
    listener = settings.served_listener
    served = BrokerListener(settings.listener_name, listener.host, listener.port,
                            listener.security_protocol)
    return LifecycleConfig(
        broker_id=settings.node_id,
        cluster_id=settings.cluster_id,
        incarnation_id=uuid.uuid4(),
        listeners=registration_listeners([served]),
        features=features_supported(PYKRAFT_METADATA_VERSION.feature_level),
        rack=settings.rack,
        voter_ids=tuple(sorted(settings.voters)),
        heartbeat_interval_ms=settings.heartbeat_interval_ms,
        session_timeout_ms=settings.session_timeout_ms,
        initial_registration_timeout_ms=settings.initial_registration_timeout_ms,
        request_timeout_ms=settings.raft.request_timeout_ms,
        registration_timeout_ms=settings.controller_socket_timeout_ms,
    )


class SimulatedBrokers:
    def __init__(self, cluster: LocalCluster, count: int, first_id: int) -> None:
        self.ids = list(range(first_id, first_id + count))
        self._settings = [simulated_settings(cluster, b) for b in self.ids]
        self._loops: list[LifecycleLoop] = []
        self._committed = _Committed()
        self._thread: threading.Thread | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._cancel: trio.CancelScope | None = None
        self._started = threading.Event()
        self.failure: BaseException | None = None

    @property
    def heartbeat_interval_ms(self) -> int:
        return self._settings[0].heartbeat_interval_ms if self._settings else 0

    def states(self) -> dict[int, BrokerState]:
        """Each simulated broker's lifecycle state (read from another thread: a snapshot)."""
        return {loop.lifecycle.config.broker_id: loop.state for loop in list(self._loops)}

    def running(self) -> int:
        return sum(1 for s in self.states().values() if s is BrokerState.RUNNING)

    def lifecycle_samples(self, kind: str, since: float) -> list[float]:
        """Every simulated broker's answer times (ms) of ``kind`` ("BrokerHeartbeat", ...)
        since the wall-clock time ``since`` (read from another thread: a copy each)."""
        return [ms for loop in list(self._loops) for at, k, ms in list(loop.times.samples)
                if k == kind and at >= since]

    def unanswered(self, kind: str, reason: str) -> int:
        """Requests of ``kind`` that got no answer for ``reason``, over every simulated
        broker's life."""
        return sum(loop.times.unanswered_count(kind, reason) for loop in list(self._loops))

    def start(self) -> None:
        if not self.ids:
            return
        self._thread = threading.Thread(target=self._run, name="simulated-brokers", daemon=True)
        self._thread.start()
        self._started.wait()

    def close(self) -> None:
        if self._thread is None:
            return
        if self._token is not None and self._cancel is not None:
            cancel = self._cancel
            with contextlib.suppress(trio.RunFinishedError):  # it ended by itself
                trio.from_thread.run_sync(cancel.cancel, trio_token=self._token)
        self._thread.join()
        self._thread = None

    def __enter__(self) -> SimulatedBrokers:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- the trio side ----------------------------------------------------------------------

    def _run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:  # reported by the bench, which checks ``failure``
            self.failure = exc
        finally:
            self._started.set()

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        clock = NodeClock()
        voters = self._settings[0].voters
        channels: list[BrokerControllerChannel] = []
        with trio.CancelScope() as self._cancel:
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._poll_committed, voters)
                    for settings in self._settings:
                        lifecycle = BrokerLifecycle(lifecycle_config(settings), clock.now_ms())
                        channel = BrokerControllerChannel(
                            settings.voters,
                            leader_id=lambda: None,
                            client_id=f"simulated-broker-{settings.node_id}",
                        )
                        channels.append(channel)
                        loop = LifecycleLoop(
                            lifecycle,
                            channel=channel,
                            leader_id=lambda: None,
                            image_offset=self._image_offset(lifecycle),
                            clock=clock,
                        )
                        self._loops.append(loop)
                        nursery.start_soon(loop.run)
                    self._started.set()
            finally:
                with trio.CancelScope(shield=True):
                    for channel in channels:
                        await channel.aclose()

    def _image_offset(self, lifecycle: BrokerLifecycle) -> _ImageOffset:
        return _ImageOffset(self._committed, lifecycle)

    async def _poll_committed(self, voters: Mapping[int, tuple[str, int]]) -> None:
        """The quorum's high watermark every ``_POLL_S``, from whichever voter answers."""
        addresses = list(voters.values())
        while True:
            for host, port in addresses:
                found = await _high_watermark(host, port)
                if found is not None:
                    self._committed.offset = max(self._committed.offset, found)
                    break
            await trio.sleep(_POLL_S)


@attrs.frozen
class _ImageOffset:
    """A simulated broker's image offset: the committed offset, and at least past its own
    registration record (the broker epoch is that record's offset)."""

    committed: _Committed
    lifecycle: BrokerLifecycle

    def __call__(self) -> int:
        return max(self.committed.offset, self.lifecycle.broker_epoch + 1)


async def _high_watermark(host: str, port: int) -> int | None:
    try:
        with trio.fail_after(2):
            async with await TrioKafkaConnection.connect(host, port) as conn:
                answer = await conn.request(describe_quorum_request())
    except (ClientError, OSError, trio.TooSlowError):
        return None
    if answer.error_code != Errors.NONE or not answer.topics:
        return None
    partition = answer.topics[0].partitions[0]
    if partition.error_code != Errors.NONE:
        return None
    high_watermark: int = partition.high_watermark
    return high_watermark
