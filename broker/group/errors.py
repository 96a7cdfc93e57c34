"""The group coordinator's exceptions: a caller asking for what cannot be.

Protocol rejections travel as error codes in responses; these are for a
caller (the broker's shell, a test) that misuses the coordinator, and for a
state move the transition table forbids.
"""

from __future__ import annotations

__all__ = ["GroupCoordinatorError", "IllegalGroupTransitionError", "RecordDecodeError"]


class GroupCoordinatorError(Exception):
    """Base of every exception the group coordinator raises on purpose."""


class IllegalGroupTransitionError(GroupCoordinatorError):
    """A group state change that the transition table does not allow."""

    def __init__(self, group_id: str, source: str, target: str) -> None:
        self.group_id = group_id
        self.source = source
        self.target = target
        super().__init__(
            f"group {group_id!r} cannot move from {source} to {target}: "
            "the transition table (broker/group/transitions.py) has no such move"
        )


class RecordDecodeError(GroupCoordinatorError):
    """A ``__consumer_offsets`` record that is not Kafka's layout (the message says why)."""
