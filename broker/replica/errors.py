"""The replica core's exceptions: misuse of the core by its caller.

Protocol rejections travel as error codes in responses and broken invariants
are asserts; these are for a caller that asks the core for a move it cannot
make, and their messages say from where to where and why.
"""

from __future__ import annotations

__all__ = ["IllegalIsrTransitionError", "ReplicaError"]


class ReplicaError(Exception):
    """Base of every exception the replica core raises on purpose."""


class IllegalIsrTransitionError(ReplicaError):
    """An ISR state change that the table in ``broker.replica.isr`` does not allow."""

    def __init__(self, source: object, target: str, why: str) -> None:
        self.source = source
        self.target = target
        self.why = why
        super().__init__(f"cannot move the ISR state from {source!r} to {target}: {why}")
