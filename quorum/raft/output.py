"""What goes into the core and what comes out of it.

Inputs are Kafka message objects wrapped in an envelope that says where they
came from; the output of every input is one ``Ready``. The driver handles a
``Ready`` completely before it gives the core its next input:

1. ``send`` may go at once (the leader serves fetches before its own flush);
2. if ``persist`` is set, write the quorum-state file (temp file, fsync,
   rename); if ``flush_log`` is set or ``send_after_durable`` is not empty,
   flush the log and tell the core with ``flushed``;
3. then send ``send_after_durable`` (a vote, the announcement of a new
   epoch, a fetch that reports a new log end offset);
4. if ``loaded_snapshot`` is set, replace the state machine's whole state
   with that snapshot (``log.read_snapshot(loaded_snapshot)``) first; then
   hand ``committed`` records to the state machine, and call ``poll`` at
   ``next_deadline_ms`` at the latest.

Snapshots (KIP-630). ``loaded_snapshot`` is set in two cases:

* once at start-up, in the first ``Ready`` the core returns (call ``poll``
  first), when the log holds a snapshot past offset 0 (the latest one; a log
  whose start is above 0 always has a snapshot there): a restarted node's
  state machine loads it instead of replaying records it no longer has;
* when a follower or observer has downloaded a snapshot from the leader
  (FetchSnapshot) and its log now starts, empty, at the snapshot's offset.

Either way every later ``committed`` range starts at ``loaded_snapshot.offset``
(the records below it are in the snapshot, not handed out), and the snapshot
is durable before the ``Ready`` is returned. A leader never downloads a
snapshot, so a state machine that acts as the leader's is never told to load
one (only the start-up load can come in a ``Ready`` whose ``role`` is Leader,
before the state machine has seen this node lead). A download that drops
records the log held above the committed offset sets ``truncated_to`` to that
committed offset: everything uncommitted from there on is gone.

The state machine writes its own snapshots with ``RaftCore.create_snapshot``
(an offset that ``committed`` has handed it, at a batch boundary, with the
epoch of the batch that ends there). A new snapshot may move the log start up
to one of the snapshots, at most the latest (``RaftConfig.metadata_max_retention_bytes``):
records below it are then no longer readable.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TypeAlias

import attrs

from quorum.log.protocol import OffsetAndEpoch
from quorum.raft.states import ElectionState
from quorum.wire.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    VoteRequest,
    VoteResponse,
)

__all__ = [
    "InboundRequest",
    "InboundResponse",
    "LeaderAndEpoch",
    "OffsetRange",
    "Outbound",
    "OutboundRequest",
    "OutboundResponse",
    "Outbox",
    "Ready",
    "RequestMessage",
    "ResponseMessage",
]

RequestMessage: TypeAlias = (
    VoteRequest
    | BeginQuorumEpochRequest
    | EndQuorumEpochRequest
    | FetchRequest
    | FetchSnapshotRequest
    | DescribeQuorumRequest
)
ResponseMessage: TypeAlias = (
    VoteResponse
    | BeginQuorumEpochResponse
    | EndQuorumEpochResponse
    | FetchResponse
    | FetchSnapshotResponse
    | DescribeQuorumResponse
)


@attrs.frozen
class InboundRequest:
    """A request from a peer or client; ``handle`` is the driver's, echoed in the reply."""

    handle: Hashable
    message: RequestMessage


@attrs.frozen
class InboundResponse:
    """The answer of ``source`` to the core's request ``request_id``."""

    source: int
    request_id: int
    message: ResponseMessage


@attrs.frozen
class OutboundRequest:
    destination: int
    request_id: int
    message: RequestMessage


@attrs.frozen
class OutboundResponse:
    reply_to: Hashable
    message: ResponseMessage


Outbound: TypeAlias = OutboundRequest | OutboundResponse


@attrs.frozen
class OffsetRange:
    """Offsets ``start`` (inclusive) to ``end`` (exclusive)."""

    start: int
    end: int

    def __attrs_post_init__(self) -> None:
        assert 0 <= self.start <= self.end, (self.start, self.end)

    def __len__(self) -> int:
        return self.end - self.start


@attrs.frozen
class LeaderAndEpoch:
    leader_id: int | None
    epoch: int


@attrs.frozen(kw_only=True)
class Ready:
    persist: ElectionState | None = None
    flush_log: bool = False
    send: tuple[Outbound, ...] = ()
    send_after_durable: tuple[Outbound, ...] = ()
    high_watermark: int | None = None
    committed: OffsetRange | None = None
    # the lowest offset the log was truncated to in this step (uncommitted data gone)
    truncated_to: int | None = None
    accepted: OffsetRange | None = None
    # the state machine must load this snapshot before ``committed`` (see above)
    loaded_snapshot: OffsetAndEpoch | None = None
    leader: LeaderAndEpoch
    role: str
    next_deadline_ms: int | None = None

    @property
    def needs_durability(self) -> bool:
        return self.persist is not None or self.flush_log or bool(self.send_after_durable)


@attrs.define
class Outbox:
    """What one step of the core produced, gathered until the ``Ready`` is built."""

    persist: ElectionState | None = None
    flush_log: bool = False
    send: list[Outbound] = attrs.field(factory=list)
    send_after_durable: list[Outbound] = attrs.field(factory=list)
    truncated_to: int | None = None
    accepted: OffsetRange | None = None
    loaded_snapshot: OffsetAndEpoch | None = None

    def emit(self, message: Outbound, *, durable: bool = False) -> None:
        # Anything produced after a state change in this step depends on it.
        if durable or self.persist is not None:
            self.send_after_durable.append(message)
        else:
            self.send.append(message)

    def truncated(self, offset: int) -> None:
        self.flush_log = True
        self.truncated_to = offset if self.truncated_to is None else min(offset, self.truncated_to)
