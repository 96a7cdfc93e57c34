"""``kraft server-start``: Kafka's ``kafka-server-start.sh`` for a pykraft node.

``process.roles=controller`` starts a controller, ``process.roles=broker`` a
broker (a metadata observer), ``process.roles=broker,controller`` a combined
node (one voter that also runs a broker, for development as in Kafka).
Prints ``pykraft node N ready: CONTROLLER://host:port`` (``pykraft broker N
ready: PLAINTEXT://host:port``; a combined node prints both) on stdout once
the node serves requests (launchers wait for it; a broker serves once the
controller unfenced it); logs on stderr; SIGTERM or SIGINT stops it in order.
A config, storage or quorum-state problem is one line on stderr and exit
status 1.
"""

from __future__ import annotations

import click

from broker.node import BrokerNode
from broker.process import ready_line as broker_ready_line
from broker.process import run_broker_process
from cli.console import fail
from quorum.config import TEST_PROFILE_OVERRIDES, ConfigError, ServerConfig, load_server_config
from quorum.log import LogError
from quorum.node import ControllerNode, NodeAddress, NodeStartupError
from quorum.node.process import configure_logging, ready_line, run_node_process
from quorum.storage import StorageError

__all__ = ["server_start"]


def _overrides(pairs: tuple[str, ...], test_profile: bool) -> dict[str, str]:
    result = dict(TEST_PROFILE_OVERRIDES) if test_profile else {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            fail(f"--override expects KEY=VALUE, got {pair!r}")
        result[key.strip()] = value.strip()
    return result


@click.command(name="server-start")
@click.argument("config_path", metavar="CONFIG")
@click.option(
    "--override", "overrides", multiple=True, metavar="KEY=VALUE",
    help="Set a property on top of the file (repeatable).",
)
@click.option(
    "--test-profile", is_flag=True,
    help="Apply the shared short-timeout test profile (before any --override).",
)
@click.option("--log-level", default="INFO", show_default=True,
              type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False))
def server_start(config_path: str, overrides: tuple[str, ...], test_profile: bool,
                 log_level: str) -> None:
    """Start a controller, broker or combined node from a server .properties file."""
    try:
        config = load_server_config(config_path, overrides=_overrides(overrides, test_profile))
        node: BrokerNode | ControllerNode = (
            BrokerNode.from_config(config) if config.is_broker
            else ControllerNode.from_config(config)
        )
    except (ConfigError, StorageError, NodeStartupError) as exc:
        fail(str(exc))
    configure_logging(config.node_id, log_level)
    try:
        _run(config, node)
    except (StorageError, NodeStartupError, LogError) as exc:
        fail(str(exc))


def _run(config: ServerConfig, node: BrokerNode | ControllerNode) -> None:
    node_id = config.node_id
    if isinstance(node, ControllerNode):
        run_node_process(node, lambda address: click.echo(ready_line(node_id, address)))
        return
    broker = node

    def on_ready(address: NodeAddress) -> None:
        if broker.controller_address is not None:  # a combined node serves both listeners
            click.echo(ready_line(node_id, broker.controller_address))
        click.echo(broker_ready_line(node_id, address))

    run_broker_process(broker, on_ready)
