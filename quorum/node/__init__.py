"""The trio side of a controller node: listener, peer links, the task that owns
the Raft core (fsync before acknowledging), long-poll fetches, the in-process
writer and orderly shutdown."""

from quorum.node.errors import AppendError, NodeStartupError, QuorumStateError
from quorum.node.inputs import AppendOutcome
from quorum.node.node import ControllerNode, NodeAddress
from quorum.node.quorum_state import QUORUM_STATE_FILE, QuorumStateFile
from quorum.node.router import controller_listener_table
from quorum.node.settings import NodeSettings, node_settings

__all__ = [
    "QUORUM_STATE_FILE",
    "AppendError",
    "AppendOutcome",
    "ControllerNode",
    "NodeAddress",
    "NodeSettings",
    "NodeStartupError",
    "QuorumStateError",
    "QuorumStateFile",
    "controller_listener_table",
    "node_settings",
]
