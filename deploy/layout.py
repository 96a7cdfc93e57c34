"""The files of a local cluster: addresses, one config per node, formatted storage.

``plan_layout`` picks every node's address (free ports found by binding
port 0, or ``base_port + i``; one shared loopback address or 127.0.0.N per
node) and, when asked, one ``LinkProxy`` per directed link;
``write_configs`` writes ``<base>/controller-N/server.properties`` from
the template below plus the test profile and extra settings;
``format_all`` formats every node with one cluster id (reusing the id of
directories formatted before, so that a dev cluster survives restarts).
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import attrs

from deploy.proxy import LinkProxy
from quorum.config import TEST_PROFILE_OVERRIDES, format_properties, load_server_config
from quorum.storage import format_storage, read_meta_properties
from quorum.wire.uuids import random_uuid, uuid_to_str

__all__ = [
    "ClusterSpec",
    "LaunchError",
    "NodeLayout",
    "existing_cluster_id",
    "format_all",
    "free_ports",
    "link_proxies",
    "node_properties",
    "plan_layout",
    "write_configs",
]

LISTENER: Final = "CONTROLLER"
# with a base port, node i's metrics are at base_port + this + i
METRICS_PORT_OFFSET: Final = 100
BROKER_LISTENER: Final = "PLAINTEXT"


class LaunchError(Exception):
    """The local cluster could not be set up or a node did not start or stop as asked."""


@attrs.frozen(kw_only=True)
class ClusterSpec:
    controllers: int = 3
    # broker processes (process.roles=broker); their node ids follow the controllers'
    brokers: int = 0
    # every node on this address, unless per_node_hosts puts node N on 127.0.0.N
    host: str = "127.0.0.1"
    per_node_hosts: bool = False
    # None: free ports chosen by the kernel; else node i (from 0) gets base_port + i
    base_port: int | None = None
    test_profile: bool = True
    # route every directed link through a LinkProxy (cut/heal for partition tests)
    link_proxies: bool = False
    # every node serves GET /metrics (metrics.http.listener) on a port of its own: free
    # ones, or base_port + METRICS_PORT_OFFSET + i
    metrics: bool = False
    # extra settings for every node, applied last
    properties: Mapping[str, str] = attrs.field(factory=dict)
    ready_timeout_s: float = 30.0
    # the program that runs one node, given its config path last; empty means
    # ``sys.executable -m cli server-start`` (benches may run their own module)
    command: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class NodeLayout:
    node_id: int
    host: str
    port: int
    directory: Path
    role: str = "controller"  # or "broker"
    metrics_port: int | None = None

    @property
    def is_broker(self) -> bool:
        return self.role == "broker"

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.port)

    @property
    def config_path(self) -> Path:
        return self.directory / "server.properties"

    @property
    def log_path(self) -> Path:
        return self.directory / "node.log"

    @property
    def metadata_dir(self) -> Path:
        return self.directory / "metadata"


def free_ports(host: str, count: int) -> list[int]:
    """``count`` distinct ports free on ``host`` right now (all held until all are found)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.create_server((host, 0))) for _ in range(count)]
        return [s.getsockname()[1] for s in sockets]


def _chunks(values: list[int], size: int) -> list[list[int]]:
    return [values[i:i + size] for i in range(0, len(values), size)]


def plan_layout(base_dir: Path, spec: ClusterSpec) -> list[NodeLayout]:
    count = spec.controllers + spec.brokers
    ids = range(1, count + 1)
    hosts = [f"127.0.0.{i}" if spec.per_node_hosts else spec.host for i in ids]
    per_node = 2 if spec.metrics else 1
    if spec.base_port is not None:
        ports = [spec.base_port + i for i in range(count)]
        metrics = [spec.base_port + METRICS_PORT_OFFSET + i for i in range(count)]
    else:
        # all of one host's ports in one call, so none is handed out twice
        found = [free_ports(host, per_node) for host in hosts] if spec.per_node_hosts else \
            _chunks(free_ports(spec.host, count * per_node), per_node)
        ports = [f[0] for f in found]
        metrics = [f[-1] for f in found]
    roles = ["controller"] * spec.controllers + ["broker"] * spec.brokers
    metrics_ports: list[int | None] = list(metrics) if spec.metrics else [None] * count
    return [
        NodeLayout(node_id=i, host=h, port=p, directory=base_dir / f"{role}-{i}", role=role,
                   metrics_port=m)
        for i, h, p, role, m in zip(ids, hosts, ports, roles, metrics_ports, strict=True)
    ]


def link_proxies(nodes: list[NodeLayout]) -> dict[tuple[int, int], LinkProxy]:
    """One proxy per directed link (source, target) to a controller, on the source's
    loopback address."""
    return {
        (a.node_id, b.node_id): LinkProxy(b.address, listen_host=a.host,
                                          name=f"{a.node_id}->{b.node_id}")
        for a in nodes
        for b in nodes
        if a.node_id != b.node_id and not b.is_broker
    }


_OFFSETS_REPLICATION_FACTOR = 3  # Kafka's offsets.topic.replication.factor


def _voters(node: NodeLayout, nodes: list[NodeLayout],
            proxies: Mapping[tuple[int, int], LinkProxy]) -> str:
    entries = []
    for peer in (n for n in nodes if not n.is_broker):
        proxy = proxies.get((node.node_id, peer.node_id))
        host, port = (proxy.host, proxy.port) if proxy is not None else peer.address
        entries.append(f"{peer.node_id}@{host}:{port}")
    return ",".join(entries)


def node_properties(node: NodeLayout, nodes: list[NodeLayout], spec: ClusterSpec,
                    proxies: Mapping[tuple[int, int], LinkProxy]) -> dict[str, str]:
    listener = BROKER_LISTENER if node.is_broker else LISTENER
    properties = {
        "process.roles": node.role,
        "node.id": str(node.node_id),
        "controller.quorum.voters": _voters(node, nodes, proxies),
        "listeners": f"{listener}://{node.host}:{node.port}",
        "controller.listener.names": LISTENER,
        "log.dirs": str(node.directory / "logs"),
        "metadata.log.dir": str(node.metadata_dir),
    }
    if node.metrics_port is not None:
        properties["metrics.http.listener"] = f"{node.host}:{node.metrics_port}"
    brokers = sum(1 for n in nodes if n.is_broker)
    if 0 < brokers < _OFFSETS_REPLICATION_FACTOR:
        # Kafka's 3 replicas of __consumer_offsets need 3 brokers; a smaller cluster would
        # answer every FindCoordinator with COORDINATOR_NOT_AVAILABLE
        properties["offsets.topic.replication.factor"] = str(brokers)
    if spec.test_profile:
        properties.update(TEST_PROFILE_OVERRIDES)
    properties.update(spec.properties)
    return properties


def write_configs(nodes: list[NodeLayout], spec: ClusterSpec,
                  proxies: Mapping[tuple[int, int], LinkProxy]) -> None:
    for node in nodes:
        node.directory.mkdir(parents=True, exist_ok=True)
        text = format_properties(
            node_properties(node, nodes, spec, proxies),
            comments=[f" {node.role} {node.node_id} of a local pykraft cluster (deploy.launcher)"],
        )
        node.config_path.write_text(text)


def existing_cluster_id(nodes: list[NodeLayout]) -> str | None:
    """The cluster id of directories formatted earlier; raises if they disagree."""
    found = {
        meta.cluster_id
        for node in nodes
        if (meta := read_meta_properties(node.metadata_dir)) is not None
    }
    if len(found) > 1:
        raise LaunchError(f"the nodes under {nodes[0].directory.parent} belong to "
                          f"different clusters {sorted(found)}: remove the directory")
    return next(iter(found), None)


def format_all(nodes: list[NodeLayout], cluster_id: str | None = None) -> str:
    """Format every node not formatted yet; returns the cluster id."""
    cluster_id = cluster_id or existing_cluster_id(nodes) or uuid_to_str(random_uuid())
    for node in nodes:
        format_storage(load_server_config(node.config_path), cluster_id, ignore_formatted=True)
    return cluster_id
