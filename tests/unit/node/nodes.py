"""Formatted controller nodes on 127.0.0.1 for in-process tests, and a few probes."""

from __future__ import annotations

import socket
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import trio

from broker import BrokerNode, RecordingReplicaManager
from quorum.client import TrioKafkaConnection
from quorum.config import ServerConfig, load_server_config
from quorum.controller.image import MetadataImage
from quorum.node import ControllerNode, FsyncPlacement
from quorum.storage import format_storage

__all__ = [
    "CLUSTER_ID",
    "FAST",
    "controller_and_brokers",
    "controller_config",
    "controller_image_until",
    "free_ports",
    "start_nodes",
    "wait_for_leader",
    "write_server_config",
]

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
# short timeouts: in-process clusters elect in well under a second
FAST = {
    "controller.quorum.election.timeout.ms": "100",
    "controller.quorum.fetch.timeout.ms": "400",
    "controller.quorum.election.backoff.max.ms": "100",
    "controller.quorum.request.timeout.ms": "1000",
    "controller.quorum.append.linger.ms": "5",
}


def free_ports(count: int) -> list[int]:
    socks = [socket.socket() for _ in range(count)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def write_server_config(
    base: Path, *, roles: str, node_id: int, voters: str, listeners: str,
    overrides: dict[str, str], format_as: str | None = CLUSTER_ID,
) -> ServerConfig:
    """Write a node's properties in ``base`` (its directories too) and format its storage."""
    base.mkdir(parents=True, exist_ok=True)
    path = base / "server.properties"
    path.write_text(
        f"process.roles={roles}\n"
        f"node.id={node_id}\n"
        f"controller.quorum.voters={voters}\n"
        f"listeners={listeners}\n"
        "controller.listener.names=CONTROLLER\n"
        f"log.dirs={base}/logs\n"
        f"metadata.log.dir={base}/metadata\n"
    )
    config = load_server_config(path, overrides=overrides)
    if format_as is not None:
        format_storage(config, format_as)
    return config


def controller_config(
    root: Path, node_id: int, ports: Sequence[int], *, format_as: str | None = CLUSTER_ID,
    extra: dict[str, str] | None = None,
) -> ServerConfig:
    """Write node ``node_id``'s properties under ``root`` and format its storage."""
    return write_server_config(
        root / f"node-{node_id}", roles="controller", node_id=node_id,
        voters=",".join(f"{i + 1}@127.0.0.1:{port}" for i, port in enumerate(ports)),
        listeners=f"CONTROLLER://127.0.0.1:{ports[node_id - 1]}",
        overrides={**FAST, **(extra or {})}, format_as=format_as,
    )


async def start_nodes(
    nursery: trio.Nursery,
    root: Path,
    count: int,
    *,
    fsync: FsyncPlacement = FsyncPlacement.INLINE_WHEN_FOLLOWING,
    **kwargs: Any,
) -> list[ControllerNode]:
    ports = free_ports(count)
    nodes = []
    for node_id in range(1, count + 1):
        node = ControllerNode.from_config(
            controller_config(root, node_id, ports, **kwargs), seed=node_id, fsync=fsync
        )
        await nursery.start(node.run)
        nodes.append(node)
    return nodes


async def wait_for_leader(nodes: Sequence[ControllerNode]) -> ControllerNode:
    """Until one running node leads with a high watermark and the others follow it."""
    while True:
        leaders = [n for n in nodes if n.is_leader and n.high_watermark]
        if len(leaders) == 1 and all(n.leader_id == leaders[0].node_id for n in nodes):
            return leaders[0]
        async with trio.open_nursery() as waiters:
            for node in nodes:
                waiters.start_soon(_first_change, node, waiters.cancel_scope)


async def _first_change(node: ControllerNode, scope: trio.CancelScope) -> None:
    await node.wait_changed()
    scope.cancel()


async def controller_image_until(
    node: ControllerNode, predicate: Callable[[MetadataImage], bool]
) -> MetadataImage:
    """The controller's committed image once ``predicate`` holds (bounded by the caller)."""
    while True:
        assert node.machine is not None
        image = node.machine.controller.committed
        if predicate(image):
            return image
        await node.wait_changed()


async def connect(node: ControllerNode) -> TrioKafkaConnection:
    assert node.address is not None
    return await TrioKafkaConnection.connect(node.address.host, node.address.port)


# brokers that heartbeat often, for in-process tests with brokers
LIVENESS = {"broker.heartbeat.interval.ms": "200", "broker.session.timeout.ms": "2000"}


def broker_config(root: Path, broker_id: int, controller_port: int) -> ServerConfig:
    base = root / f"broker-{broker_id}"
    base.mkdir(parents=True)
    path = base / "broker.properties"
    path.write_text(
        "process.roles=broker\n"
        f"node.id={broker_id}\n"
        f"controller.quorum.voters=1@127.0.0.1:{controller_port}\n"
        f"listeners=PLAINTEXT://127.0.0.1:{free_ports(1)[0]}\n"
        "controller.listener.names=CONTROLLER\n"
        f"log.dirs={base}/logs\n"
        f"metadata.log.dir={base}/metadata\n"
    )
    config = load_server_config(path, overrides={**FAST, **LIVENESS})
    format_storage(config, CLUSTER_ID)
    return config


def controller_and_brokers(
    root: Path, broker_ids: Sequence[int], *, without_data: Collection[int] = ()
) -> tuple[int, ControllerNode, list[BrokerNode]]:
    """A one-voter controller (its port) and brokers of its quorum, none started yet; the
    brokers in ``without_data`` host no partition data (their replicas never catch up)."""
    [port] = free_ports(1)
    controller = ControllerNode.from_config(
        controller_config(root, 1, [port], extra=LIVENESS), seed=1
    )
    brokers = [
        BrokerNode.from_config(
            broker_config(root, b, port), seed=b,
            replica_manager=RecordingReplicaManager() if b in without_data else None,
        )
        for b in broker_ids
    ]
    return port, controller, brokers
