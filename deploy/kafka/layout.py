"""The files of a local Apache Kafka cluster: nodes, ports and one server.properties each.

Node ids, roles and listeners follow ``kraft dev`` and ``deploy.LocalCluster``:
controllers 1..C, then brokers C+1..C+B, all on one loopback address with free ports;
or N combined nodes (``process.roles=broker,controller``), each with a broker and a
controller port. The quorum is static (``controller.quorum.voters``, kraft.version 0),
so formatting takes no ``--standalone`` / ``--initial-controllers``.

The settings are Kafka's defaults except where a setting names the cluster (ids,
listeners, directories) or where the cluster is too small for a default: internal topics
get a replication factor no larger than the broker count (Kafka's default of 3 cannot
be met by one broker) and ``group.initial.rebalance.delay.ms`` is 0 as in pykraft's test
profile. Anything else goes in ``KafkaClusterSpec.properties``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

import attrs

from deploy.layout import LaunchError, free_ports
from quorum.config import format_properties

__all__ = ["KafkaClusterSpec", "KafkaNode", "node_properties", "plan_nodes", "write_configs"]

CONTROLLER_LISTENER: Final = "CONTROLLER"
BROKER_LISTENER: Final = "PLAINTEXT"
# (setting, Kafka's default): internal topics created with at most the brokers there are
_INTERNAL_TOPIC_REPLICATION: Final = (
    ("offsets.topic.replication.factor", 3),
    ("transaction.state.log.replication.factor", 3),
    ("transaction.state.log.min.isr", 2),
    ("share.coordinator.state.topic.replication.factor", 3),
    ("share.coordinator.state.topic.min.isr", 2),
)


@attrs.frozen(kw_only=True)
class KafkaClusterSpec:
    controllers: int = 3
    brokers: int = 3
    # combined nodes: ``controllers`` nodes with both roles, and brokers must be 0
    combined: bool = False
    host: str = "127.0.0.1"
    # None: kafka-server-start.sh's -Xmx1G -Xms1G (deploy.kafka.jvm.SERVER_HEAP)
    heap: tuple[str, ...] | None = None
    properties: Mapping[str, str] = attrs.field(factory=dict)
    # six JVMs start on 2 cores in 15-40 s; a broker is ready once unfenced
    ready_timeout_s: float = 120.0

    def __attrs_post_init__(self) -> None:
        if self.controllers < 1:
            raise LaunchError("a Kafka cluster needs at least one controller")
        if self.combined and self.brokers:
            raise LaunchError("combined nodes are brokers already: set brokers=0")
        if not self.combined and self.brokers < 1:
            raise LaunchError("a Kafka cluster of controllers only serves no client")

    @property
    def broker_count(self) -> int:
        return self.controllers if self.combined else self.brokers


@attrs.frozen(kw_only=True)
class KafkaNode:
    node_id: int
    host: str
    directory: Path
    # the port of its PLAINTEXT listener (brokers), of its CONTROLLER listener (controllers)
    broker_port: int | None = None
    controller_port: int | None = None

    @property
    def is_broker(self) -> bool:
        return self.broker_port is not None

    @property
    def is_controller(self) -> bool:
        return self.controller_port is not None

    @property
    def roles(self) -> str:
        return ",".join(role for role, has in (("broker", self.is_broker),
                                               ("controller", self.is_controller)) if has)

    @property
    def address(self) -> tuple[str, int]:
        """Where clients reach it: its broker listener, else its controller listener."""
        port = self.broker_port if self.broker_port is not None else self.controller_port
        assert port is not None, "a node has at least one listener"
        return (self.host, port)

    @property
    def controller_address(self) -> tuple[str, int] | None:
        return None if self.controller_port is None else (self.host, self.controller_port)

    @property
    def config_path(self) -> Path:
        return self.directory / "server.properties"

    @property
    def log_path(self) -> Path:
        return self.directory / "node.log"

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def app_log_dir(self) -> Path:
        """``kafka.logs.dir``: the GC log and whatever Log4j writes to files."""
        return self.directory / "logs"


def plan_nodes(base_dir: Path, spec: KafkaClusterSpec) -> list[KafkaNode]:
    """Every node with free ports on ``spec.host`` (all found in one call: none twice)."""
    if spec.combined:
        ports = free_ports(spec.host, 2 * spec.controllers)
        return [
            KafkaNode(node_id=i, host=spec.host, directory=base_dir / f"combined-{i}",
                      broker_port=ports[2 * (i - 1)], controller_port=ports[2 * (i - 1) + 1])
            for i in range(1, spec.controllers + 1)
        ]
    count = spec.controllers + spec.brokers
    ports = free_ports(spec.host, count)
    nodes = [
        KafkaNode(node_id=i, host=spec.host, directory=base_dir / f"controller-{i}",
                  controller_port=ports[i - 1])
        for i in range(1, spec.controllers + 1)
    ]
    nodes += [
        KafkaNode(node_id=i, host=spec.host, directory=base_dir / f"broker-{i}",
                  broker_port=ports[i - 1])
        for i in range(spec.controllers + 1, count + 1)
    ]
    return nodes


def _voters(nodes: list[KafkaNode]) -> str:
    return ",".join(f"{n.node_id}@{n.host}:{n.controller_port}" for n in nodes if n.is_controller)


def _listeners(node: KafkaNode) -> str:
    listeners = []
    if node.broker_port is not None:
        listeners.append(f"{BROKER_LISTENER}://{node.host}:{node.broker_port}")
    if node.controller_port is not None:
        listeners.append(f"{CONTROLLER_LISTENER}://{node.host}:{node.controller_port}")
    return ",".join(listeners)


def node_properties(node: KafkaNode, nodes: list[KafkaNode],
                    spec: KafkaClusterSpec) -> dict[str, str]:
    properties = {
        "process.roles": node.roles,
        "node.id": str(node.node_id),
        "controller.quorum.voters": _voters(nodes),
        "controller.listener.names": CONTROLLER_LISTENER,
        "listener.security.protocol.map":
            f"{CONTROLLER_LISTENER}:PLAINTEXT,{BROKER_LISTENER}:PLAINTEXT",
        "listeners": _listeners(node),
        "log.dirs": str(node.data_dir),
        "group.initial.rebalance.delay.ms": "0",
    }
    if node.is_broker:
        # IP literals everywhere: an empty or wildcard host makes Kafka look up this
        # host's canonical name (ListenerInfo.withWildcardHostnamesResolved)
        properties["advertised.listeners"] = f"{BROKER_LISTENER}://{node.host}:{node.broker_port}"
        properties["inter.broker.listener.name"] = BROKER_LISTENER
    for key, default in _INTERNAL_TOPIC_REPLICATION:
        properties[key] = str(min(default, spec.broker_count))
    properties.update(spec.properties)
    return properties


def write_configs(nodes: list[KafkaNode], spec: KafkaClusterSpec) -> None:
    for node in nodes:
        node.directory.mkdir(parents=True, exist_ok=True)
        node.app_log_dir.mkdir(exist_ok=True)
        node.config_path.write_text(format_properties(
            node_properties(node, nodes, spec),
            comments=[f" {node.roles} {node.node_id} of a local Apache Kafka cluster "
                      "(deploy.kafka_cluster)"],
        ))
