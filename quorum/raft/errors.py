"""The Raft core's exception hierarchy: misuse of the core by its caller.

Protocol rejections travel as error codes in responses and broken invariants
are asserts; these exceptions are for a caller (the driver, a test) that asks
the core for something it cannot do, and their messages say what to do.
"""

from __future__ import annotations

__all__ = ["IllegalTransitionError", "InvalidSnapshotIdError", "NotLeaderError", "RaftError"]


class RaftError(Exception):
    """Base of every exception the Raft core raises on purpose."""


class IllegalTransitionError(RaftError):
    """A state change that the transition table does not allow."""

    def __init__(self, source: object, target: str, why: str) -> None:
        self.source = source
        self.target = target
        self.why = why
        super().__init__(f"cannot move from {source!r} to {target}: {why}")


class NotLeaderError(RaftError):
    """A proposal reached a node that is not the leader of the asked epoch."""


class InvalidSnapshotIdError(RaftError):
    """A snapshot id the log cannot vouch for: above the high watermark, mid-batch, wrong epoch."""
