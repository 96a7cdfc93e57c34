"""``RaftParts``: what every node with a metadata log runs, assembled in one place.

A controller, a broker and a combined node differ in their listeners and in
the state machine the core's task feeds; the rest is the same and is built
here. ``open_raft_parts(settings, machine=...)`` opens the metadata log and
its quorum-state file (a corrupt one raises here, before any task starts),
builds the Raft core (a voter if the node is among the voters, else an
observer that fetches from the leader it learns), the ``CoreDriver`` that
owns it with the node's ``StateMachineHook``, and one ``PeerLink`` per other
voter. ``start(nursery)`` runs the links and the core's task. Leaving the
context fails whatever still waits on the driver, then closes the log.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from functools import partial

import attrs
import trio

from quorum.config import ServerConfig
from quorum.log import FileLog
from quorum.metrics.activity import NodeActivity
from quorum.node.driver import CoreDriver, FsyncPlacement, NodeClock
from quorum.node.peers import PeerLink
from quorum.node.quorum_state import QuorumStateFile
from quorum.node.settings import RaftNodeSettings
from quorum.node.state_machine import StateMachineHook
from quorum.raft import OutboundRequest, RaftCore
from quorum.storage import StorageError, check_storage_for_start
from quorum.wire.messages import DescribeQuorumResponseNode

__all__ = ["RaftParts", "open_raft_parts", "storage_cluster_id"]


def storage_cluster_id(config: ServerConfig) -> str:
    """The cluster id of formatted storage for this node; raises StorageError otherwise."""
    meta = check_storage_for_start(config)
    if meta.cluster_id is None:
        raise StorageError(f"{config.metadata_log_dir} has no cluster.id in meta.properties")
    return meta.cluster_id


@attrs.frozen(kw_only=True)
class RaftParts:
    core: RaftCore
    driver: CoreDriver
    clock: NodeClock
    links: dict[int, PeerLink]

    async def start(self, nursery: trio.Nursery) -> None:
        """Run the links and the core's task in ``nursery`` (the core has made its first step)."""
        for link in self.links.values():
            nursery.start_soon(link.run)
        await nursery.start(self.driver.run)


@contextlib.contextmanager
def open_raft_parts(
    settings: RaftNodeSettings,
    *,
    machine: StateMachineHook,
    rng: random.Random,
    fsync: FsyncPlacement = FsyncPlacement.WORKER_THREAD,
    voter_nodes: tuple[DescribeQuorumResponseNode, ...] = (),
    activity: NodeActivity | None = None,
) -> Iterator[RaftParts]:
    """The assembled parts; raises QuorumStateError for a quorum-state file it cannot read."""
    state_file = QuorumStateFile(settings.metadata_partition_dir)
    log = FileLog(settings.metadata_partition_dir, settings.log)
    try:
        stored = state_file.read()
        clock = NodeClock()
        core = RaftCore(
            node_id=settings.node_id,
            voters=settings.voters.keys(),
            log=log,
            cluster_id=settings.cluster_id,
            rng=rng,
            now_ms=clock.now_ms(),
            config=settings.raft,
            election_state=stored,
        )
        links: dict[int, PeerLink] = {}
        driver = CoreDriver(
            core=core,
            log=log,
            clock=clock,
            state_file=state_file,
            send_request=partial(_route, links),
            voter_nodes=voter_nodes,
            fsync=fsync,
            machine=machine,
            activity=activity,
        )
        links.update(_links(settings, driver))
        try:
            yield RaftParts(core=core, driver=driver, clock=clock, links=links)
        finally:
            driver.close()
    finally:
        log.close()


def _links(settings: RaftNodeSettings, driver: CoreDriver) -> dict[int, PeerLink]:
    """One link per voter other than this node."""
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


def _route(links: dict[int, PeerLink], out: OutboundRequest) -> None:
    link = links.get(out.destination)
    assert link is not None, f"the core sent to {out.destination}, which is not a voter"
    link.submit(out)
