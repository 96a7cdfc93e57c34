"""The node's exceptions: why it refuses to start, and why an append failed."""

from __future__ import annotations

from quorum.wire.error_codes import Errors

__all__ = ["AppendError", "NodeStartupError", "QuorumStateError"]


class NodeStartupError(Exception):
    """The node cannot start with this configuration or storage."""


class QuorumStateError(NodeStartupError):
    """The quorum-state file cannot be read; the message names the file."""


class AppendError(Exception):
    """Records were not (known to be) committed; ``leader_id`` says where to retry.

    NOT_LEADER_OR_FOLLOWER after the records were accepted means the outcome
    is unknown: leadership moved before they were committed.
    """

    def __init__(self, message: str, *, error: Errors, leader_id: int, leader_epoch: int) -> None:
        super().__init__(message)
        self.error = error
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
