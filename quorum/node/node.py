"""``ControllerNode``: one controller process's worth of tasks, in one nursery.

``ControllerNode.from_config(config)`` checks the storage (formatted, this
cluster, this node); ``await nursery.start(node.run)`` opens the metadata log
and the quorum-state file (a corrupt one stops the start with an error that
names it), builds the Raft core, starts the core's task and one link per
other voter (``quorum.node.raft_parts``, as every node), then the controller
listener (``quorum.node.controller_part``, as a combined node), and reports
the bound address. ``stop()`` asks for an
orderly shutdown: a leader resigns (EndQuorumEpoch to every voter), waits up
to ``shutdown_grace_ms`` until another voter leads, then everything is cancelled and
the log is closed. ``append_and_wait_committed`` is the in-process writer.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import trio

from quorum.config import ServerConfig
from quorum.metrics import NodeMetrics
from quorum.node.controller_machine import ControllerMachine
from quorum.node.controller_part import (
    controller_machine,
    hand_over_leadership,
    serve_controller_listener,
    voter_nodes,
)
from quorum.node.driver import FsyncPlacement
from quorum.node.errors import NodeStartupError
from quorum.node.inputs import Append, AppendOutcome, AppendWaiter, append_problem
from quorum.node.listener import NodeAddress
from quorum.node.metadata_node import MetadataNode
from quorum.node.raft_parts import RaftParts, storage_cluster_id
from quorum.node.settings import NodeSettings, node_settings

__all__ = ["ControllerNode", "NodeAddress"]

logger = logging.getLogger(__name__)


class ControllerNode(MetadataNode):
    def __init__(
        self,
        settings: NodeSettings,
        *,
        seed: int | None = None,
        fsync: FsyncPlacement = FsyncPlacement.INLINE_WHEN_FOLLOWING,
    ) -> None:
        super().__init__(settings.node_id, seed=seed, fsync=fsync)
        self.settings = settings
        self.machine: ControllerMachine | None = None

    @classmethod
    def from_config(
        cls,
        config: ServerConfig,
        *,
        seed: int | None = None,
        fsync: FsyncPlacement = FsyncPlacement.INLINE_WHEN_FOLLOWING,
    ) -> ControllerNode:
        """Check the storage and map the config; raises NodeStartupError or StorageError."""
        if config.is_broker:
            roles = ",".join(sorted(r.value for r in config.process_roles))
            raise NodeStartupError(
                f"process.roles={roles}: a node with the broker role runs as a broker node "
                "(kraft server-start starts brokers and combined nodes too)"
            )
        settings = node_settings(config, storage_cluster_id(config))
        return cls(settings, seed=seed, fsync=fsync)

    # -- views ------------------------------------------------------------------------------

    @property
    def epoch(self) -> int:
        return self.driver.leader.epoch

    @property
    def is_leader(self) -> bool:
        return self._driver is not None and self._driver.role == "Leader"

    @property
    def high_watermark(self) -> int | None:
        return self.driver.high_watermark

    async def wait_changed(self) -> None:
        """Until the core's next Ready (leader, role or high watermark may have moved)."""
        await self.driver.changed.wait()

    # -- control ----------------------------------------------------------------------------

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

    async def run(
        self, *, task_status: trio.TaskStatus[NodeAddress] = trio.TASK_STATUS_IGNORED
    ) -> None:
        settings = self.settings
        self.machine = machine = controller_machine(settings, self._rng)
        with self.open_parts(settings, machine, voter_nodes(settings)) as parts:
            await self._serve(parts, machine, task_status)

    async def _serve(
        self,
        parts: RaftParts,
        machine: ControllerMachine,
        task_status: trio.TaskStatus[NodeAddress],
    ) -> None:
        async with trio.open_nursery() as nursery:
            await parts.start(nursery)
            metrics = NodeMetrics(
                core=lambda: parts.core, image=lambda: machine.controller.committed,
                controller_active=lambda: machine.controller.is_active,
                activity=self.activity,
            )
            await self.serve_metrics(nursery, self.settings, metrics)
            self.address = await serve_controller_listener(
                nursery, self.settings, parts.driver, machine
            )
            logger.info("node %d ready: %s", self.node_id, self.address)
            self._started.set()
            task_status.started(self.address)
            await self._stop.wait()
            await hand_over_leadership(parts.driver, self.settings.shutdown_grace_ms)
            nursery.cancel_scope.cancel()
