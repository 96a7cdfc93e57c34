"""``ControllerNode``: one controller process's worth of tasks, in one nursery.

``ControllerNode.from_config(config)`` checks the storage (formatted, this
cluster, this node); ``await nursery.start(node.run)`` opens the metadata log
and the quorum-state file (a corrupt one stops the start with an error that
names it), builds the Raft core, starts the core's task, one link per other
voter and the listener, and reports the bound address. ``stop()`` asks for an
orderly shutdown: a leader resigns (EndQuorumEpoch to every voter), waits up
to ``shutdown_grace_ms`` for the answers, then everything is cancelled and
the log is closed. ``append_and_wait_committed`` is the in-process writer.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from functools import partial

import attrs
import trio

from quorum.config import ServerConfig
from quorum.controller.controller import QuorumController
from quorum.log import FileLog
from quorum.node.controller_machine import ControllerMachine
from quorum.node.driver import CoreDriver, NodeClock
from quorum.node.errors import NodeStartupError
from quorum.node.inputs import Append, AppendOutcome, AppendWaiter, Resign, append_problem
from quorum.node.listener import serve_connection
from quorum.node.peers import PeerLink
from quorum.node.quorum_state import QuorumStateFile
from quorum.node.router import RequestRouter
from quorum.node.settings import NodeSettings, node_settings
from quorum.raft import OutboundRequest, RaftCore
from quorum.storage import StorageError, check_storage_for_start
from quorum.wire.messages import DescribeQuorumResponseListener, DescribeQuorumResponseNode

__all__ = ["ControllerNode", "NodeAddress"]

logger = logging.getLogger(__name__)


@attrs.frozen
class NodeAddress:
    """Where the node's controller listener is reachable (the bound port if 0 was asked)."""

    listener_name: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.listener_name}://{self.host}:{self.port}"


class ControllerNode:
    def __init__(
        self, settings: NodeSettings, *, seed: int | None = None, fsync_in_thread: bool = True
    ) -> None:
        self.settings = settings
        self._rng = random.Random(seed)
        self._fsync_in_thread = fsync_in_thread
        self._driver: CoreDriver | None = None
        self.machine: ControllerMachine | None = None
        self._stop = trio.Event()
        self._started = trio.Event()
        self.address: NodeAddress | None = None

    @classmethod
    def from_config(
        cls, config: ServerConfig, *, seed: int | None = None, fsync_in_thread: bool = True
    ) -> ControllerNode:
        """Check the storage and map the config; raises NodeStartupError or StorageError."""
        meta = check_storage_for_start(config)
        if meta.cluster_id is None:
            raise StorageError(f"{config.metadata_log_dir} has no cluster.id in meta.properties")
        settings = node_settings(config, meta.cluster_id)
        return cls(settings, seed=seed, fsync_in_thread=fsync_in_thread)

    # -- views ------------------------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self.settings.node_id

    @property
    def driver(self) -> CoreDriver:
        assert self._driver is not None, "the node is not running"
        return self._driver

    @property
    def leader_id(self) -> int | None:
        return None if self._driver is None else self._driver.leader.leader_id

    @property
    def epoch(self) -> int:
        return self.driver.leader.epoch

    @property
    def is_leader(self) -> bool:
        return self._driver is not None and self._driver.role == "Leader"

    @property
    def high_watermark(self) -> int | None:
        return self.driver.high_watermark

    async def wait_started(self) -> None:
        """Until the node serves requests (``address`` is set)."""
        await self._started.wait()

    async def wait_changed(self) -> None:
        """Until the core's next Ready (leader, role or high watermark may have moved)."""
        await self.driver.changed.wait()

    # -- control ----------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask for an orderly shutdown (safe to call from any task, more than once)."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    async def append_and_wait_committed(self, payloads: Sequence[bytes]) -> AppendOutcome:
        """Append records through this node (it must lead) and wait until committed.

        Raises AppendError otherwise: NOT_LEADER_OR_FOLLOWER with the leader
        it knows, or BROKER_NOT_AVAILABLE once the node is stopping; ValueError
        for no records or a record over ``MAX_APPEND_RECORD_BYTES``.
        """
        problem = append_problem(payloads)
        if problem is not None:
            raise ValueError(problem[1])
        waiter = AppendWaiter()
        await self.driver.submit(Append(payloads, waiter))
        return await waiter.wait()

    # -- running ----------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[NodeAddress] = trio.TASK_STATUS_IGNORED) -> None:
        settings = self.settings
        state_file = QuorumStateFile(settings.metadata_partition_dir)
        log = FileLog(settings.metadata_partition_dir, settings.log)
        try:
            stored = state_file.read()
            clock = NodeClock()
            core = RaftCore(
                node_id=settings.node_id,
                voters=settings.voters,
                log=log,
                cluster_id=settings.cluster_id,
                rng=self._rng,
                now_ms=clock.now_ms(),
                config=settings.raft,
                election_state=stored,
            )
            links: dict[int, PeerLink] = {}
            self.machine = ControllerMachine(
                QuorumController(settings.controller, rng=self._rng),
                snapshot_max_bytes=settings.snapshot_max_bytes,
            )
            driver = CoreDriver(
                core=core,
                log=log,
                clock=clock,
                state_file=state_file,
                send_request=lambda out: self._route(links, out),
                voter_nodes=self._voter_nodes(),
                fsync_in_thread=self._fsync_in_thread,
                machine=self.machine,
            )
            links.update(self._links(driver))
            self._driver = driver
            await self._serve(driver, links, task_status)
        finally:
            log.close()

    async def _serve(
        self,
        driver: CoreDriver,
        links: dict[int, PeerLink],
        task_status: trio.TaskStatus[NodeAddress],
    ) -> None:
        try:
            async with trio.open_nursery() as nursery:
                for link in links.values():
                    nursery.start_soon(link.run)
                await nursery.start(driver.run)
                self.address = await self._listen(nursery, driver)
                logger.info("node %d ready: %s", self.node_id, self.address)
                self._started.set()
                task_status.started(self.address)
                await self._stop.wait()
                await self._resign(driver)
                nursery.cancel_scope.cancel()
        finally:
            driver.close()

    def _links(self, driver: CoreDriver) -> dict[int, PeerLink]:
        settings = self.settings
        return {
            peer: PeerLink(
                local_id=settings.node_id,
                peer_id=peer,
                address=address,
                deliver=driver.submit,
                request_timeout_ms=settings.raft.request_timeout_ms,
                retry_backoff_ms=settings.raft.retry_backoff_ms,
                reconnect_backoff_max_ms=settings.reconnect_backoff_max_ms,
            )
            for peer, address in sorted(settings.voters.items())
            if peer != settings.node_id
        }

    def _route(self, links: dict[int, PeerLink], out: OutboundRequest) -> None:
        link = links.get(out.destination)
        assert link is not None, f"the core sent to {out.destination}, which is not a voter"
        link.submit(out)

    def _voter_nodes(self) -> tuple[DescribeQuorumResponseNode, ...]:
        name = self.settings.listener_name
        return tuple(
            DescribeQuorumResponseNode(
                node_id=node_id,
                listeners=(DescribeQuorumResponseListener(name=name, host=host, port=port),),
            )
            for node_id, (host, port) in sorted(self.settings.voters.items())
        )

    async def _listen(self, nursery: trio.Nursery, driver: CoreDriver) -> NodeAddress:
        settings = self.settings
        machine = self.machine
        assert machine is not None
        router = RequestRouter(
            settings=settings,
            leader_id=lambda: driver.leader.leader_id,
            submit=driver.submit,
            image=lambda: machine.controller.committed,
        )
        handler = partial(_serve_one, router=router, max_frame_bytes=settings.max_request_bytes)
        try:
            listeners = await nursery.start(
                partial(trio.serve_tcp, handler, settings.bind_port, host=settings.bind_host)
            )
        except OSError as exc:
            raise NodeStartupError(
                f"cannot listen on {settings.bind_host or '*'}:{settings.bind_port} "
                f"({settings.listener_name}): {exc}"
            ) from exc
        port = listeners[0].socket.getsockname()[1]
        advertised_port = settings.advertised_port or port
        return NodeAddress(settings.listener_name, settings.advertised_host, advertised_port)

    async def _resign(self, driver: CoreDriver) -> None:
        if driver.role != "Leader":
            return
        await driver.submit(Resign())
        with trio.move_on_after(self.settings.shutdown_grace_ms / 1000):
            while driver.role == "Leader":
                await driver.changed.wait()
            while not driver.handover_done:
                await driver.changed.wait()
        logger.info("handed over leadership: %s", "done" if driver.handover_done else "timed out")


async def _serve_one(stream: trio.SocketStream, *, router: RequestRouter, max_frame_bytes: int) -> None:
    await serve_connection(stream, router, max_frame_bytes=max_frame_bytes)
