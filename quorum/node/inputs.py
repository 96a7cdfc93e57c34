"""What other tasks send to the task that owns the Raft core, besides Raft envelopes.

Listener tasks send ``InboundRequest``s, peer links ``InboundResponse``s and
``ConnectionFailed``; writers send ``Append`` with a reply to complete once
the records are committed (or cannot be); shutdown sends ``Resign``;
metadata requests for the controller go as ``ControllerCall``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, Protocol, TypeAlias

import attrs
import trio

from quorum.node.errors import AppendError
from quorum.raft import InboundRequest, InboundResponse
from quorum.wire.error_codes import Errors

__all__ = [
    "MAX_APPEND_RECORD_BYTES",
    "Append",
    "AppendOutcome",
    "AppendReply",
    "AppendWaiter",
    "BrokerConnectionLost",
    "ConnectionFailed",
    "ControllerCall",
    "Input",
    "Resign",
    "append_problem",
]

# the largest record an append takes (the leader's batches are capped at 8 MiB)
MAX_APPEND_RECORD_BYTES: Final = 1024 * 1024


def append_problem(payloads: Sequence[bytes]) -> tuple[Errors, str] | None:
    """Why these records cannot be appended at all, if they cannot."""
    if not payloads:
        return Errors.INVALID_REQUEST, "an append needs at least one record"
    if max(map(len, payloads)) > MAX_APPEND_RECORD_BYTES:
        return Errors.MESSAGE_TOO_LARGE, f"a record is over {MAX_APPEND_RECORD_BYTES} bytes"
    return None


@attrs.frozen(kw_only=True)
class AppendOutcome:
    """Committed offsets ``base_offset..last_offset``, or why not (``error``)."""

    error: Errors = Errors.NONE
    message: str | None = None
    base_offset: int = -1
    last_offset: int = -1
    leader_id: int = -1
    leader_epoch: int = -1


class AppendReply(Protocol):
    def finish(self, outcome: AppendOutcome) -> None: ...


@attrs.frozen
class Append:
    payloads: Sequence[bytes]
    reply: AppendReply


@attrs.frozen
class ConnectionFailed:
    node_id: int


@attrs.frozen
class Resign:
    pass


@attrs.frozen
class BrokerConnectionLost:
    """Every connection on which ``broker_id`` sent heartbeats to this node has closed."""

    broker_id: int


@attrs.frozen
class ControllerCall:
    """A request for the controller state machine; ``reply`` gets its response."""

    request: object
    version: int
    reply: Callable[[object], None]


Input: TypeAlias = (
    InboundRequest | InboundResponse | ConnectionFailed | Append | Resign | ControllerCall
    | BrokerConnectionLost
)


class AppendWaiter:
    """The in-process reply: a writer task awaits ``wait()``."""

    def __init__(self) -> None:
        self._done = trio.Event()
        self._outcome: AppendOutcome | None = None

    def finish(self, outcome: AppendOutcome) -> None:
        if self._outcome is None:
            self._outcome = outcome
            self._done.set()

    async def wait(self) -> AppendOutcome:
        await self._done.wait()
        assert self._outcome is not None
        if self._outcome.error != Errors.NONE:
            raise AppendError(
                self._outcome.message or self._outcome.error.name,
                error=self._outcome.error,
                leader_id=self._outcome.leader_id,
                leader_epoch=self._outcome.leader_epoch,
            )
        return self._outcome
