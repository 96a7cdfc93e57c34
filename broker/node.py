"""``BrokerNode``: one broker process's worth of tasks, in one nursery.

``BrokerNode.from_config(config)`` checks the storage (formatted, this
cluster, this node) and maps the config; ``await nursery.start(node.run)``
opens the metadata log (``__cluster_metadata-0`` under ``metadata.log.dir``)
and its quorum-state file, builds the Raft core as an observer (the broker is
not a voter: it fetches from the leader it learns, from any voter at first),
starts the core's task with a ``BrokerMetadataMachine``, one link per voter,
binds the broker listener and runs the lifecycle loop (registration,
heartbeats). Once the controller has unfenced the broker it serves the
listener and reports its address (Kafka's broker takes client connections
only then; until then they wait in the listen backlog). ``stop()`` asks for
a controlled shutdown (bounded by the session timeout); then everything is
cancelled and the log is closed.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from broker.errors import BrokerStartupError
from broker.lifecycle import (
    BrokerLifecycle,
    BrokerState,
    LifecycleConfig,
    features_supported,
    registration_listeners,
)
from broker.lifecycle_loop import LifecycleLoop
from broker.metadata_answers import ListenerView
from broker.metadata_machine import BrokerMetadataMachine
from broker.replica_manager import RecordingReplicaManager, ReplicaManager
from broker.router import BrokerRouter
from broker.settings import BrokerListener, BrokerSettings, broker_settings
from quorum.config import ServerConfig
from quorum.controller.image import MetadataImage
from quorum.log import FileLog
from quorum.node import NodeAddress, QuorumStateFile
from quorum.node.driver import CoreDriver, NodeClock
from quorum.node.listener import serve_connection
from quorum.node.peers import PeerLink
from quorum.raft import OutboundRequest, RaftCore
from quorum.storage import PYKRAFT_METADATA_VERSION, StorageError, check_storage_for_start
from quorum.wire.uuids import random_uuid

__all__ = ["BrokerNode"]

logger = logging.getLogger(__name__)


class BrokerNode:
    def __init__(
        self,
        settings: BrokerSettings,
        *,
        seed: int | None = None,
        fsync_in_thread: bool = True,
        replica_manager: ReplicaManager | None = None,
    ) -> None:
        self.settings = settings
        self._rng = random.Random(seed)
        self._fsync_in_thread = fsync_in_thread
        self.replica_manager = replica_manager or RecordingReplicaManager()
        self.machine = BrokerMetadataMachine(
            broker_id=settings.node_id,
            replica_manager=self.replica_manager,
            snapshot_max_bytes=settings.snapshot_max_bytes,
        )
        self.incarnation_id = random_uuid()  # one per process start
        self._driver: CoreDriver | None = None
        self._lifecycle: LifecycleLoop | None = None
        self._router: BrokerRouter | None = None
        self._stop = trio.Event()
        self._started = trio.Event()
        self.address: NodeAddress | None = None

    @classmethod
    def from_config(
        cls, config: ServerConfig, *, seed: int | None = None, fsync_in_thread: bool = True
    ) -> BrokerNode:
        """Check the storage and map the config; raises BrokerStartupError or StorageError."""
        if config.is_controller:
            raise BrokerStartupError(
                "process.roles=broker,controller: combined nodes are not supported yet; run "
                "the controllers and the brokers as separate processes"
            )
        settings = broker_settings(config, _cluster_id(config))
        return cls(settings, seed=seed, fsync_in_thread=fsync_in_thread)

    # -- views ------------------------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self.settings.node_id

    @property
    def driver(self) -> CoreDriver:
        assert self._driver is not None, "the broker is not running"
        return self._driver

    @property
    def leader_id(self) -> int | None:
        """The Raft leader (the active controller) as this broker's observer core knows it."""
        return None if self._driver is None else self._driver.leader.leader_id

    @property
    def image(self) -> MetadataImage:
        return self.machine.image

    @property
    def state(self) -> BrokerState:
        return BrokerState.NOT_RUNNING if self._lifecycle is None else self._lifecycle.state

    @property
    def broker_epoch(self) -> int:
        return -1 if self._lifecycle is None else self._lifecycle.lifecycle.broker_epoch

    async def wait_started(self) -> None:
        """Until the broker is unfenced and serves clients (``address`` is set)."""
        await self._started.wait()

    async def wait_changed(self) -> None:
        """Until the next metadata image is published."""
        await self.machine.changed.wait()

    # -- control ----------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask for a controlled shutdown (safe to call from any task, more than once)."""
        self._stop.set()
        if self._lifecycle is not None:
            self._lifecycle.begin_shutdown()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    # -- running ----------------------------------------------------------------------------

    async def run(
        self, *, task_status: trio.TaskStatus[NodeAddress] = trio.TASK_STATUS_IGNORED
    ) -> None:
        settings = self.settings
        state_file = QuorumStateFile(settings.metadata_partition_dir)
        log = FileLog(settings.metadata_partition_dir, settings.log)
        try:
            clock = NodeClock()
            core = RaftCore(
                node_id=settings.node_id,
                voters=settings.voters.keys(),
                log=log,
                cluster_id=settings.cluster_id,
                rng=self._rng,
                now_ms=clock.now_ms(),
                config=settings.raft,
                election_state=state_file.read(),
            )
            assert not core.is_voter, f"broker {settings.node_id} is among the voters"
            links: dict[int, PeerLink] = {}
            driver = CoreDriver(
                core=core,
                log=log,
                clock=clock,
                state_file=state_file,
                send_request=lambda out: _route(links, out),
                fsync_in_thread=self._fsync_in_thread,
                machine=self.machine,
            )
            links.update(self._links(driver))
            self._driver = driver
            await self._serve(driver, links, clock, task_status)
        finally:
            log.close()

    async def _serve(
        self,
        driver: CoreDriver,
        links: dict[int, PeerLink],
        clock: NodeClock,
        task_status: trio.TaskStatus[NodeAddress],
    ) -> None:
        try:
            async with trio.open_nursery() as nursery:
                for link in links.values():
                    nursery.start_soon(link.run)
                await nursery.start(driver.run)
                listeners, address = await self._bind()
                try:
                    loop = self._lifecycle = self._lifecycle_loop(driver, clock, address)
                    self.machine.subscribe(lambda _old, _new: loop.notify())
                    finished = trio.Event()
                    nursery.start_soon(_run_then_set, loop.run, finished)
                    if self._stop.is_set():
                        loop.begin_shutdown()
                    await _first_of(loop.running, self._stop)
                    self.address = address
                    if loop.running.is_set():
                        # Kafka's broker takes client connections once unfenced, not before
                        serving, listeners = listeners, []
                        await nursery.start(trio.serve_listeners, self._serve_one, serving)
                        logger.info("broker %d ready: %s", self.node_id, address)
                    self._started.set()
                    task_status.started(address)
                    await finished.wait()
                    nursery.cancel_scope.cancel()
                finally:
                    for listener in listeners:  # bound but never served
                        await trio.aclose_forcefully(listener)
        finally:
            driver.close()

    def _lifecycle_loop(
        self, driver: CoreDriver, clock: NodeClock, address: NodeAddress
    ) -> LifecycleLoop:
        settings = self.settings
        protocol = settings.served_listener.security_protocol
        served = BrokerListener(settings.listener_name, address.host, address.port, protocol)
        config = LifecycleConfig(
            broker_id=settings.node_id,
            cluster_id=settings.cluster_id,
            incarnation_id=self.incarnation_id,
            listeners=registration_listeners([served]),
            features=features_supported(PYKRAFT_METADATA_VERSION.feature_level),
            rack=settings.rack,
            voter_ids=tuple(sorted(settings.voters)),
            heartbeat_interval_ms=settings.heartbeat_interval_ms,
            session_timeout_ms=settings.session_timeout_ms,
            initial_registration_timeout_ms=settings.initial_registration_timeout_ms,
            request_timeout_ms=settings.raft.request_timeout_ms,
            controlled_shutdown_timeout_ms=settings.session_timeout_ms,
        )
        return LifecycleLoop(
            BrokerLifecycle(config, clock.now_ms()),
            voters=settings.voters,
            leader_id=lambda: driver.leader.leader_id,
            image_offset=lambda: self.machine.image_offset,
            clock=clock,
        )

    def _links(self, driver: CoreDriver) -> dict[int, PeerLink]:
        settings = self.settings
        return {
            voter: PeerLink(
                local_id=settings.node_id,
                peer_id=voter,
                address=address,
                deliver=driver.submit,
                request_timeout_ms=settings.raft.request_timeout_ms,
                retry_backoff_ms=settings.raft.retry_backoff_ms,
                reconnect_backoff_max_ms=settings.reconnect_backoff_max_ms,
            )
            for voter, address in sorted(settings.voters.items())
        }

    async def _bind(self) -> tuple[list[trio.SocketListener], NodeAddress]:
        """Bind the broker listener (serving starts later) and learn its address."""
        settings = self.settings
        try:
            listeners = await trio.open_tcp_listeners(settings.bind_port, host=settings.bind_host)
        except OSError as exc:
            raise BrokerStartupError(
                f"cannot listen on {settings.bind_host or '*'}:{settings.bind_port} "
                f"({settings.listener_name}): {exc}"
            ) from exc
        bound_port = listeners[0].socket.getsockname()[1]
        advertised = settings.served_listener
        address = NodeAddress(advertised.name, advertised.host, advertised.port or bound_port)
        view = ListenerView(
            node_id=settings.node_id, cluster_id=settings.cluster_id,
            listener_name=address.listener_name, host=address.host, port=address.port,
            rack=settings.rack,
        )
        self._router = BrokerRouter(view=view, image=lambda: self.machine.image)
        return listeners, address

    async def _serve_one(self, stream: trio.SocketStream) -> None:
        # TODO(lead): serve_connection is typed with the controller's RequestRouter; it
        # only calls ``dispatch``, which BrokerRouter has (a Router protocol would say so)
        router: Any = self._router
        assert router is not None, "connections are served only once the router exists"
        await serve_connection(stream, router, max_frame_bytes=self.settings.max_request_bytes)


def _cluster_id(config: ServerConfig) -> str:
    meta = check_storage_for_start(config)
    if meta.cluster_id is None:
        raise StorageError(f"{config.metadata_log_dir} has no cluster.id in meta.properties")
    return meta.cluster_id


def _route(links: dict[int, PeerLink], out: OutboundRequest) -> None:
    link = links.get(out.destination)
    assert link is not None, f"the core sent to {out.destination}, which is not a voter"
    link.submit(out)


async def _run_then_set(fn: Callable[[], Awaitable[None]], done: trio.Event) -> None:
    try:
        await fn()
    finally:
        done.set()


async def _first_of(*events: trio.Event) -> None:
    """Until any of ``events`` is set."""
    async with trio.open_nursery() as nursery:
        for event in events:
            nursery.start_soon(_wait_then_cancel, event, nursery.cancel_scope)


async def _wait_then_cancel(event: trio.Event, scope: trio.CancelScope) -> None:
    await event.wait()
    scope.cancel()
