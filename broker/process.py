"""Running a broker (or a combined node) as an OS process: ``quorum.node.process``'s runner.

SIGTERM or SIGINT asks the broker for a controlled shutdown (the controller
moves its leaderships away first); a second signal stops it at once.
``on_ready`` is called with the broker listener's address once the broker
is unfenced and serves clients; launchers wait for ``ready_line`` on stdout.
"""

from __future__ import annotations

from collections.abc import Callable

from broker.node import BrokerNode
from quorum.node import NodeAddress
from quorum.node import process as node_process
from quorum.node.process import configure_logging

__all__ = ["configure_logging", "ready_line", "run_broker_process"]


def ready_line(node_id: int, address: NodeAddress) -> str:
    """What a launcher waits for on stdout."""
    return node_process.ready_line(node_id, address, kind="broker")


def run_broker_process(node: BrokerNode, on_ready: Callable[[NodeAddress], None]) -> None:
    """``trio.run`` the broker until a signal; a start-up failure raises as itself."""
    node_process.run_node_process(node, on_ready, stop_text="controlled shutdown")
