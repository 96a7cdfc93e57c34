"""The mutable heart of the core that every handler module works on.

One object, owned by ``RaftCore``: who we are, the log, the current state,
the requests in flight and the output of the step being computed. Handler
modules (election, leader, follower, moves) are functions over it, so each
stays small and the core is the only public surface.
"""

from __future__ import annotations

import random
from collections.abc import Hashable

from quorum.log.protocol import ReplicatedLog
from quorum.raft.config import RaftConfig
from quorum.raft.output import (
    LeaderAndEpoch,
    OutboundRequest,
    OutboundResponse,
    Outbox,
    RequestMessage,
    ResponseMessage,
)
from quorum.raft.requests import RequestTracker
from quorum.raft.states import ElectionState, Leader, Resigned, State
from quorum.raft.transitions import Membership

__all__ = ["CoreContext"]


class CoreContext:
    def __init__(
        self,
        *,
        members: Membership,
        config: RaftConfig,
        log: ReplicatedLog,
        rng: random.Random,
        cluster_id: str,
        state: State,
    ) -> None:
        self.members = members
        self.config = config
        self.log = log
        self.rng = rng
        self.cluster_id = cluster_id
        self.state = state
        self.outbox = Outbox()
        self.requests = RequestTracker(
            request_timeout_ms=config.request_timeout_ms,
            retry_backoff_ms=config.retry_backoff_ms,
        )
        # the highest high watermark handed to the driver: never truncated below
        self.committed_offset = 0
        # when the log's retention rule is next applied (set by the core at start)
        self.next_cleaning_ms = 0
        self.last_persisted: ElectionState | None = None

    @property
    def local_id(self) -> int:
        return self.members.local_id

    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def leader_id(self) -> int | None:
        """The leader of the current epoch if known (a Resigned node names none)."""
        if isinstance(self.state, Resigned):
            return None
        if isinstance(self.state, Leader):
            return self.local_id
        return getattr(self.state, "leader_id", None)

    def leader_and_epoch(self) -> LeaderAndEpoch:
        return LeaderAndEpoch(self.leader_id, self.epoch)

    def election_deadline(self, now_ms: int) -> int:
        """A random election timeout in [T, 2T) from now."""
        timeout = self.config.election_timeout_ms
        return now_ms + timeout + self.rng.randrange(timeout)

    def fetch_deadline(self, now_ms: int) -> int:
        """The fetch timeout plus a jitter of up to a quarter election timeout.

        Departure from Kafka (docs/design.md): without jitter, followers that
        lose a silent leader time out within milliseconds of each other, grant
        each other's pre-votes and split the real vote, costing a whole
        election timeout. The jitter lets one of them finish first.
        """
        jitter = self.rng.randrange(max(1, self.config.election_timeout_ms // 4))
        return now_ms + self.config.fetch_timeout_ms + jitter

    def cluster_id_ok(self, cluster_id: str | None) -> bool:
        """A request may omit the cluster id (null); otherwise it must match ours."""
        return cluster_id is None or cluster_id == self.cluster_id

    def persist(self, election: ElectionState) -> None:
        if election != self.last_persisted:
            self.outbox.persist = election
            self.last_persisted = election

    def send_request(
        self, destination: int, message: RequestMessage, now_ms: int, *, durable: bool = False
    ) -> int:
        request_id = self.requests.sent(destination, type(message), now_ms)
        self.outbox.emit(OutboundRequest(destination, request_id, message), durable=durable)
        return request_id

    def reply(self, handle: Hashable, message: ResponseMessage, *, durable: bool = False) -> None:
        self.outbox.emit(OutboundResponse(handle, message), durable=durable)
