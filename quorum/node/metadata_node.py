"""``MetadataNode``: what every node process shares, whatever its roles.

A controller, a broker and a combined node each run one Raft core over the
metadata log (``quorum.node.raft_parts``). This base holds what they show
of it (node id, driver, Raft leader), its ``activity`` (one ``NodeActivity``
per node, so per process, behind its /metrics) and how they are started and
stopped: ``wait_started`` until the node serves requests, ``stop()`` to ask
for an orderly stop (safe from any task, more than once; subclasses add what
their roles do on stop), ``open_parts`` to assemble the core with the node's
seed and fsync mode.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator

import trio

from quorum.metrics import NodeActivity, NodeMetrics, serve_metrics
from quorum.node.driver import CoreDriver, FsyncPlacement
from quorum.node.listener import NodeAddress
from quorum.node.raft_parts import RaftParts, open_raft_parts
from quorum.node.settings import RaftNodeSettings
from quorum.node.state_machine import StateMachineHook
from quorum.wire.messages import DescribeQuorumResponseNode

__all__ = ["MetadataNode"]


class MetadataNode:
    def __init__(
        self, node_id: int, *, seed: int | None = None, fsync: FsyncPlacement
    ) -> None:
        self._node_id = node_id
        self._rng = random.Random(seed)
        self._fsync = fsync
        self._driver: CoreDriver | None = None
        self._stop = trio.Event()
        self._started = trio.Event()
        self._stopped = trio.Event()
        self.address: NodeAddress | None = None
        self.metrics_address: tuple[str, int] | None = None
        # what the node's trio thread spends its time on: fed by the loop monitor
        # (``quorum.node.process``) and the task that owns the core, shown at /metrics
        self.activity = NodeActivity()

    # -- views ------------------------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self._node_id

    @property
    def driver(self) -> CoreDriver:
        assert self._driver is not None, f"node {self._node_id} is not running"
        return self._driver

    @property
    def leader_id(self) -> int | None:
        """The Raft leader (the active controller) as this node's core knows it."""
        return None if self._driver is None else self._driver.leader.leader_id

    async def wait_started(self) -> None:
        """Until the node serves requests (``address`` is set)."""
        await self._started.wait()

    async def wait_stopped(self) -> None:
        """Until the node has stopped: its core, links and log are closed."""
        await self._stopped.wait()

    # -- control ----------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask for an orderly shutdown (safe to call from any task, more than once)."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    # -- running ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def open_parts(
        self,
        settings: RaftNodeSettings,
        machine: StateMachineHook,
        voter_nodes: tuple[DescribeQuorumResponseNode, ...] = (),
    ) -> Iterator[RaftParts]:
        """The node's Raft core and its task, links and log (``open_raft_parts``)."""
        with open_raft_parts(
            settings,
            machine=machine,
            rng=self._rng,
            fsync=self._fsync,
            voter_nodes=voter_nodes,
            activity=self.activity,
        ) as parts:
            self._driver = parts.driver
            try:
                yield parts
            finally:
                self._stopped.set()

    async def serve_metrics(
        self, nursery: trio.Nursery, settings: RaftNodeSettings, metrics: NodeMetrics
    ) -> None:
        """Serve ``metrics`` at ``settings.metrics_listener``, if one is set."""
        listener = settings.metrics_listener
        if listener is not None:
            self.metrics_address = await serve_metrics(
                nursery, listener.host, listener.port, metrics.text
            )
