"""``BrokerNode``: one broker process's worth of tasks, in one nursery.

``BrokerNode.from_config(config)`` checks the storage (formatted, this
cluster, this node) and maps the config; ``await nursery.start(node.run)``
opens the metadata log (``__cluster_metadata-0`` under ``metadata.log.dir``)
and its quorum-state file and builds the Raft core as an observer (the broker
is not a voter: it fetches from the leader it learns, from any voter at
first), with a ``BrokerMetadataMachine`` in the core's task and one link per
voter (``quorum.node.raft_parts``, as every node); then it binds the broker
listener and runs the lifecycle loop (registration, heartbeats). Once the
controller has unfenced the broker it serves the listener and reports its
address (Kafka's broker takes client connections only then; until then they
wait in the listen backlog). ``stop()`` asks for a controlled shutdown
(bounded by the session timeout); then everything is cancelled and the log
is closed.

A combined node (``process.roles=broker,controller``, for development as in
Kafka) is a ``BrokerNode`` with controller settings: its one Raft core is a
voter, a ``FanOutHook`` feeds each Ready to the controller machine and then
to the broker's image (both follow the same committed log), it serves the
controller listener (``quorum.node.controller_part``) before the broker
starts, and its broker registers and heartbeats with the active controller
like any broker (possibly itself, over its own controller listener). On stop
the broker's controlled shutdown comes first, then a leader hands over.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Awaitable, Callable

import attrs
import trio

from broker.api.forwarding import ControllerForwarder
from broker.api.groups import OffsetsTopicCreator
from broker.api.metadata import ListenerView
from broker.api.producer_ids import BlockUnavailableError, ProducerIdBlock, ProducerIdSource
from broker.controller_channel import (
    BrokerControllerChannel,
    ControllerLane,
    ControllerUnavailableError,
)
from broker.group import GroupCoordinator
from broker.group.driver import GroupDriver
from broker.lifecycle import (
    BrokerLifecycle,
    BrokerState,
    LifecycleConfig,
    features_supported,
    registration_listeners,
)
from broker.lifecycle_loop import LifecycleLoop
from broker.metadata_machine import BrokerMetadataMachine
from broker.replica import ReplicaCore
from broker.replica.driver import LogMaintenance, ReplicaDriver
from broker.replica.links import PeerAddress
from broker.replica.log_cleaning import LogCleaning
from broker.replica.manager import RecordingReplicaManager, ReplicaManager
from broker.router import BrokerRouter
from broker.settings import BrokerListener, BrokerSettings, broker_settings
from quorum.config import ServerConfig
from quorum.controller.image import MetadataImage
from quorum.log.clock import wall_clock_ms
from quorum.log.log_dir import LogDirectory
from quorum.metrics import BrokerView, Family, NodeMetrics
from quorum.node import NodeAddress, NodeSettings, node_settings
from quorum.node.controller_machine import ControllerMachine
from quorum.node.controller_part import (
    controller_machine,
    hand_over_leadership,
    serve_controller_listener,
    voter_nodes,
)
from quorum.node.driver import CoreDriver, FsyncPlacement, NodeClock
from quorum.node.listener import bind_listener, bound_port, serve_listener
from quorum.node.metadata_node import MetadataNode
from quorum.node.raft_parts import RaftParts, storage_cluster_id
from quorum.node.state_machine import FanOutHook, StateMachineHook
from quorum.storage import PYKRAFT_METADATA_VERSION
from quorum.wire.error_codes import Errors
from quorum.wire.messages import AllocateProducerIdsRequest
from quorum.wire.uuids import random_uuid

__all__ = ["BrokerNode"]

logger = logging.getLogger(__name__)


class BrokerNode(MetadataNode):
    def __init__(
        self,
        settings: BrokerSettings,
        *,
        controller: NodeSettings | None = None,
        seed: int | None = None,
        fsync: FsyncPlacement = FsyncPlacement.WORKER_THREAD,
        replica_manager: ReplicaManager | None = None,
    ) -> None:
        # its trio thread serves clients: a sync of the metadata log must not stall them
        super().__init__(settings.node_id, seed=seed, fsync=fsync)
        if controller is not None:
            assert (controller.node_id, controller.metadata_partition_dir) == (
                settings.node_id, settings.metadata_partition_dir
            ), "a combined node's two parts share one node id and one metadata log"
        self.settings = settings
        self.controller_settings = controller
        # the data plane, unless a test gives its own replica manager
        self.replicas: ReplicaDriver | None = None
        self.log_directory: LogDirectory | None = None
        if replica_manager is None and not settings.data_plane:
            replica_manager = RecordingReplicaManager()  # an observer only: no partition data
        if replica_manager is None:
            self.log_directory = LogDirectory(settings.data_log_dir, settings.data_log)
            # each topic's log config: its own configs over the broker's (settings.data_log)
            replica_config = attrs.evolve(settings.replica, data_log=settings.data_log)
            self.replicas = ReplicaDriver(
                ReplicaCore(
                    replica_config, self.log_directory, self._rng,
                    log_configs=self.log_directory,
                ),
                clock_ms=wall_clock_ms,
                checkpoint=self.log_directory.write_high_watermarks,
                maintenance=LogMaintenance(
                    retention_check_interval_ms=settings.retention_check_interval_ms,
                    remove_deleted=self.log_directory.remove_deleted_logs,
                    cleaning=LogCleaning(),
                ),
                checkpoint_interval_ms=settings.high_watermark_checkpoint_interval_ms,
                request_timeout_ms=settings.raft.request_timeout_ms,
            )
            replica_manager = self.replicas
            self.groups: GroupDriver | None = GroupDriver(
                GroupCoordinator(settings.groups, rng=self._rng),
                replicas=self.replicas,
                image=lambda: self.machine.image,
                clock_ms=wall_clock_ms,
                commit_timeout_ms=settings.offsets_commit_timeout_ms,
            )
        else:
            self.groups = None
        self.replica_manager = replica_manager
        self.machine = BrokerMetadataMachine(
            broker_id=settings.node_id,
            replica_manager=self.replica_manager,
            # combined: the controller machine snapshots the same committed image
            snapshot_max_bytes=settings.snapshot_max_bytes if controller is None else sys.maxsize,
            snapshot_max_interval_ms=settings.snapshot_max_interval_ms if controller is None else 0,
        )
        if self.replicas is not None:
            replicas = self.replicas
            self.machine.subscribe(lambda _old, new: replicas.image_published(new))
        self.controller_machine: ControllerMachine | None = None
        self.controller_address: NodeAddress | None = None
        self.incarnation_id = random_uuid()  # one per process start
        self._lifecycle: LifecycleLoop | None = None
        self.controller_channel: BrokerControllerChannel

    @classmethod
    def from_config(
        cls,
        config: ServerConfig,
        *,
        seed: int | None = None,
        fsync: FsyncPlacement = FsyncPlacement.WORKER_THREAD,
        replica_manager: ReplicaManager | None = None,
    ) -> BrokerNode:
        """Check the storage and map the config; raises BrokerStartupError or StorageError.

        ``process.roles=broker,controller`` gives a combined node. ``replica_manager``
        (tests only) replaces the data plane: the broker then hosts no partition data.
        """
        cluster_id = storage_cluster_id(config)
        settings = broker_settings(config, cluster_id)
        controller = node_settings(config, cluster_id) if config.is_controller else None
        return cls(
            settings, controller=controller, seed=seed, fsync=fsync,
            replica_manager=replica_manager,
        )

    # -- views ------------------------------------------------------------------------------

    @property
    def is_combined(self) -> bool:
        return self.controller_settings is not None

    @property
    def image(self) -> MetadataImage:
        return self.machine.image

    @property
    def state(self) -> BrokerState:
        return BrokerState.NOT_RUNNING if self._lifecycle is None else self._lifecycle.state

    @property
    def broker_epoch(self) -> int:
        return -1 if self._lifecycle is None else self._lifecycle.lifecycle.broker_epoch

    async def wait_changed(self) -> None:
        """Until the next metadata image is published."""
        await self.machine.changed.wait()

    # -- control ----------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask for a controlled shutdown (safe to call from any task, more than once)."""
        super().stop()
        if self._lifecycle is not None:
            self._lifecycle.begin_shutdown()

    # -- running ----------------------------------------------------------------------------

    async def run(
        self, *, task_status: trio.TaskStatus[NodeAddress] = trio.TASK_STATUS_IGNORED
    ) -> None:
        try:
            await self._run(task_status)
        finally:
            if self.replicas is not None:
                try:
                    # a restart reads each producer's state from here, not from the log since
                    # the last roll (Kafka snapshots at a clean shutdown too)
                    self.replicas.core.snapshot_producer_states()
                except OSError as exc:
                    logger.warning("producer state snapshots not written at shutdown: %s", exc)
            if self.log_directory is not None:
                # flushes the logs and writes the checkpoints and the clean-shutdown marker
                self.log_directory.close(
                    broker_epoch=self.broker_epoch,
                    high_watermarks=None if self.replicas is None
                    else dict(self.replicas.core.high_watermarks().items()),
                )

    async def _run(self, task_status: trio.TaskStatus[NodeAddress]) -> None:
        controller = self.controller_settings
        if controller is None:
            with self.open_parts(self.settings, self.machine) as parts:
                assert not parts.core.is_voter, f"broker {self.node_id} is among the voters"
                await self._serve(parts, task_status)
            return
        self.controller_machine = controller_machine(controller, self._rng)
        hook: StateMachineHook = FanOutHook(self.controller_machine, [self.machine])
        with self.open_parts(controller, hook, voter_nodes(controller)) as parts:
            assert parts.core.is_voter, f"combined node {self.node_id} is not among the voters"
            await self._serve(parts, task_status)

    async def _serve(self, parts: RaftParts, task_status: trio.TaskStatus[NodeAddress]) -> None:
        async with trio.open_nursery() as nursery:
            await parts.start(nursery)
            await self.serve_metrics(nursery, self.settings, self._metrics(parts))
            await self._serve_controller(nursery, parts.driver)
            channel = self._controller_channel(parts.driver)
            nursery.start_soon(_close_when_cancelled, channel)
            if self.replicas is not None:
                await nursery.start(functools.partial(
                    self.replicas.run,
                    controller=channel,
                    peers=self._peer_address,
                    client_id=f"pykraft-replica-fetcher-{self.node_id}",
                ))
            if self.groups is not None:
                await nursery.start(self.groups.run)
                groups = self.groups
                self.machine.subscribe(lambda _old, _new: groups.notify())
            listeners, address = await self._bind()
            try:
                loop = self._lifecycle = self._lifecycle_loop(parts.driver, parts.clock, address)
                self.machine.subscribe(lambda _old, _new: loop.notify())
                finished = trio.Event()
                nursery.start_soon(_run_then_set, loop.run, finished)
                if self._stop.is_set():
                    loop.begin_shutdown()
                await _first_of(loop.running, self._stop)
                self.address = address
                if loop.running.is_set() and self.replicas is not None:
                    # registered and caught up: the image's partitions may be hosted now
                    self.replicas.activate()
                if loop.running.is_set():
                    # Kafka's broker takes client connections once unfenced, not before
                    serving, listeners = listeners, []
                    await self._serve_clients(nursery, serving, address)
                self._started.set()
                task_status.started(address)
                await finished.wait()
                if self.controller_settings is not None:
                    await hand_over_leadership(
                        parts.driver, self.controller_settings.shutdown_grace_ms
                    )
                nursery.cancel_scope.cancel()
            finally:
                for listener in listeners:  # bound but never served
                    await trio.aclose_forcefully(listener)

    def _metrics(self, parts: RaftParts) -> NodeMetrics:
        controller = self.controller_machine
        return NodeMetrics(
            core=lambda: parts.core,
            image=lambda: self.machine.image,
            controller_active=None if controller is None else (
                lambda: controller.controller.is_active
            ),
            broker=lambda: BrokerView(int(self.state), self.broker_epoch),
            activity=self.activity,
            extra=self._metric_families,
        )

    async def _metric_families(self) -> list[Family]:
        """The broker's own: its lifecycle's answer times, and the data plane's."""
        loop = self._lifecycle
        families = [] if loop is None else loop.times.families(trio.current_time())
        if self.replicas is not None:
            families += await self.replicas.metric_families()
        return families

    async def _serve_controller(self, nursery: trio.Nursery, driver: CoreDriver) -> None:
        """A combined node's controller listener (brokers register through it, this one too)."""
        settings, machine = self.controller_settings, self.controller_machine
        if settings is None or machine is None:
            return
        self.controller_address = await serve_controller_listener(
            nursery, settings, driver, machine
        )
        logger.info("node %d ready: %s", self.node_id, self.controller_address)

    def _controller_channel(self, driver: CoreDriver) -> BrokerControllerChannel:
        """The one way this broker reaches the active controller (the quorum's leader)."""
        self.controller_channel = BrokerControllerChannel(
            self.settings.voters,
            leader_id=lambda: driver.leader.leader_id,
            client_id=f"pykraft-broker-{self.node_id}",
        )
        return self.controller_channel

    async def _allocate_producer_ids(self) -> ProducerIdBlock:
        """A block of producer ids from the active controller (AllocateProducerIds)."""
        request = AllocateProducerIdsRequest(
            broker_id=self.node_id, broker_epoch=self.broker_epoch
        )
        try:
            response = await self.controller_channel.call(
                request,
                lane=ControllerLane.PRODUCER_IDS,
                timeout_ms=self.settings.raft.request_timeout_ms,
            )
        except ControllerUnavailableError as exc:
            raise BlockUnavailableError(str(exc)) from exc
        if response.error_code != Errors.NONE:
            raise BlockUnavailableError(
                f"AllocateProducerIds answered {Errors(response.error_code).name}"
            )
        return ProducerIdBlock(response.producer_id_start, response.producer_id_len)

    def _peer_address(self, broker_id: int) -> PeerAddress | None:
        """Where another broker takes replica fetches: its inter-broker listener."""
        registration = self.machine.image.broker(broker_id)
        if registration is None or not registration.listeners:
            return None
        endpoint = registration.listener(self.settings.inter_broker_listener_name)
        if endpoint is None:
            endpoint = registration.listener(self.settings.listener_name)
        if endpoint is None:
            endpoint = registration.listeners[0]
        return PeerAddress(endpoint.host, endpoint.port)

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
            registration_timeout_ms=settings.controller_socket_timeout_ms,
        )
        return LifecycleLoop(
            BrokerLifecycle(config, clock.now_ms()),
            channel=self.controller_channel,
            leader_id=lambda: driver.leader.leader_id,
            image_offset=lambda: self.machine.image_offset,
            clock=clock,
        )

    async def _bind(self) -> tuple[list[trio.SocketListener], NodeAddress]:
        """Bind the broker listener (serving starts later) and learn its address."""
        settings = self.settings
        listeners = await bind_listener(
            settings.listener_name, settings.bind_host, settings.bind_port
        )
        advertised = settings.served_listener
        port = advertised.port or bound_port(listeners)
        return listeners, NodeAddress(advertised.name, advertised.host, port)

    async def _serve_clients(
        self, nursery: trio.Nursery, listeners: list[trio.SocketListener], address: NodeAddress
    ) -> None:
        settings = self.settings
        view = ListenerView(
            node_id=settings.node_id, cluster_id=settings.cluster_id,
            listener_name=address.listener_name, host=address.host, port=address.port,
            rack=settings.rack,
        )
        forwarder = ControllerForwarder(self.controller_channel, image_wait=self.machine.wait_for)
        router = BrokerRouter(
            view=view,
            image=lambda: self.machine.image,
            forwarder=forwarder,
            nursery=nursery,
            static_configs=settings.static_configs,
            replicas=self.replicas,
            log_dir=settings.data_log_dir,
            auto_create_topics=settings.auto_create_topics,
            producer_ids=None if self.replicas is None else ProducerIdSource(
                self._allocate_producer_ids, nursery, wait_ms=settings.raft.request_timeout_ms
            ),
            groups=self.groups,
            offsets_topic=OffsetsTopicCreator(
                forwarder, nursery,
                partitions=settings.offsets_topic.partitions,
                replication_factor=settings.offsets_topic.replication_factor,
                segment_bytes=settings.offsets_topic.segment_bytes,
            ),
        )
        await serve_listener(nursery, listeners, router, max_frame_bytes=settings.max_request_bytes)
        logger.info("broker %d ready: %s", self.node_id, address)


async def _close_when_cancelled(channel: BrokerControllerChannel) -> None:
    try:
        await trio.sleep_forever()
    finally:
        with trio.CancelScope(shield=True):
            await channel.aclose()


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
