"""The trio side of a node: listener, peer links, the task that owns the Raft
core (fsync before acknowledging), long-poll fetches, the in-process writer,
orderly shutdown and the launcher's lifeline. The pieces every node shares
(``MetadataNode``, ``raft_parts``, ``listener.Router``, ``local_answers``,
``process``) serve the controller here and the broker and combined nodes in
``broker``."""

from quorum.node.driver import FsyncPlacement
from quorum.node.errors import AppendError, NodeStartupError, QuorumStateError
from quorum.node.inputs import AppendOutcome
from quorum.node.lifeline import Lifeline, lifeline_environ, take_lifeline
from quorum.node.listener import Router
from quorum.node.metadata_node import MetadataNode
from quorum.node.node import ControllerNode, NodeAddress
from quorum.node.quorum_state import QUORUM_STATE_FILE, QuorumStateFile
from quorum.node.router import controller_listener_table
from quorum.node.settings import NodeSettings, RaftNodeSettings, node_settings

__all__ = [
    "QUORUM_STATE_FILE",
    "AppendError",
    "AppendOutcome",
    "ControllerNode",
    "FsyncPlacement",
    "Lifeline",
    "MetadataNode",
    "NodeAddress",
    "NodeSettings",
    "NodeStartupError",
    "QuorumStateError",
    "QuorumStateFile",
    "RaftNodeSettings",
    "Router",
    "controller_listener_table",
    "lifeline_environ",
    "node_settings",
    "take_lifeline",
]
