"""``RaftCore``: the sans-I/O Raft node (KIP-595 with pre-vote and check quorum).

Inputs, each returning one ``Ready`` (see ``quorum.raft.output`` for how the
driver must handle it):

* ``handle(envelope, now_ms)``: an inbound request or a response to one of
  the core's requests (matched by ``request_id``; unexpected ones dropped);
* ``propose(payloads, now_ms)``: the leader appends records (adaptively
  batched, see ``quorum.raft.accumulator``);
* ``poll(now_ms)``: timers; call it first, and at ``next_deadline_ms``;
* ``flushed(offset, now_ms)``: the driver flushed the log;
* ``connection_failed(node_id, now_ms)``: the driver lost a connection;
* ``resign(now_ms)``: graceful leadership handover (EndQuorumEpoch).

Outside the inputs, the state machine writes snapshots with
``create_snapshot``. Every ``log_cleaner_interval_ms`` a timer applies the
log's retention rule (``quorum.raft.snapshots.maybe_clean``), which moves the
log start up to a snapshot; ``maybe_clean_log`` applies it at once.

Time and randomness are arguments: the same inputs give the same outputs.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from quorum.log.protocol import OffsetAndEpoch, ReplicatedLog, SnapshotData
from quorum.raft import adapters, election, follower, leader, snapshot_fetch
from quorum.raft.common import handle_common_response
from quorum.raft.config import RaftConfig
from quorum.raft.context import CoreContext
from quorum.raft.errors import RaftError
from quorum.raft.moves import (
    become_prospective,
    become_resigned,
    become_unattached,
)
from quorum.raft.output import InboundRequest, InboundResponse, OffsetRange, Outbox, Ready
from quorum.raft.rpc import DescribeQuorumAnswer, EpochAnswer, ErrorCode, FetchAnswer, VoteAnswer
from quorum.raft.snapshots import (
    SnapshotTimestamps,
    accepts_snapshot,
    create_snapshot,
    maybe_clean,
    recover_at_start,
)
from quorum.raft.states import (
    Candidate,
    ElectionState,
    Follower,
    Leader,
    Prospective,
    Resigned,
    State,
    Unattached,
)
from quorum.raft.transitions import Membership, initial_state
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

__all__ = ["RaftCore"]


class RaftCore:
    def __init__(
        self,
        *,
        node_id: int,
        voters: Iterable[int],
        log: ReplicatedLog,
        cluster_id: str,
        rng: random.Random,
        now_ms: int,
        config: RaftConfig | None = None,
        election_state: ElectionState | None = None,
    ) -> None:
        members = Membership(node_id, frozenset(voters))
        if not members.voters:
            raise RaftError("the voter set is empty: give at least one voter id")
        config = config or RaftConfig()
        # before the election state: the log's last epoch may change
        startup_snapshot = recover_at_start(log)
        ctx = CoreContext(
            members=members,
            config=config,
            log=log,
            rng=rng,
            cluster_id=cluster_id,
            state=Unattached(epoch=0),
        )
        single = members.voters == {node_id}
        ctx.state = initial_state(
            election_state,
            members=members,
            log_last_epoch=log.last_fetched_epoch,
            # the only voter elects itself at once
            election_deadline_ms=now_ms if single else ctx.election_deadline(now_ms),
            fetch_deadline_ms=ctx.fetch_deadline(now_ms),
        )
        ctx.last_persisted = election_state or ElectionState(0)
        ctx.persist(ctx.state.election_state)
        ctx.next_cleaning_ms = now_ms + config.log_cleaner_interval_ms
        if startup_snapshot is not None:
            # told once, in the first Ready: records below it are not handed out
            ctx.committed_offset = startup_snapshot.offset
            ctx.outbox.loaded_snapshot = startup_snapshot
        self._ctx = ctx
        # the cleaner's: each snapshot's header time, read once (a snapshot never changes)
        self._snapshot_timestamps = SnapshotTimestamps()

    # -- views -------------------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self._ctx.local_id

    @property
    def state(self) -> State:
        return self._ctx.state

    @property
    def role(self) -> str:
        return type(self._ctx.state).__name__

    @property
    def epoch(self) -> int:
        return self._ctx.epoch

    @property
    def leader_id(self) -> int | None:
        return self._ctx.leader_id

    @property
    def is_leader(self) -> bool:
        return isinstance(self._ctx.state, Leader)

    @property
    def handed_over(self) -> bool:
        """A node shutting down may stop now: another voter leads, or none exists.

        Kafka's graceful shutdown rule. A resigned leader that stopped as soon
        as every voter had its EndQuorumEpoch could leave its successor's
        pre-vote unanswered; if that pre-vote had reached the other voters
        before their EndQuorumEpoch, they refused it as defenders of the old
        leader, and the successor waited out a whole election timeout.
        """
        ctx = self._ctx
        if not ctx.members.is_voter or not ctx.members.voters - {ctx.local_id}:
            return True
        leader = ctx.leader_id
        return leader is not None and leader != ctx.local_id

    @property
    def high_watermark(self) -> int | None:
        return self._ctx.state.high_watermark

    @property
    def log(self) -> ReplicatedLog:
        return self._ctx.log

    @property
    def is_voter(self) -> bool:
        return self._ctx.members.is_voter

    @property
    def next_append_offset(self) -> int | None:
        """Where the leader's next proposal will land (None unless leading)."""
        state = self._ctx.state
        if not isinstance(state, Leader):
            return None
        return self._ctx.log.log_end_offset + state.leadership.accumulator.pending_count

    # -- snapshots ---------------------------------------------------------------------

    def create_snapshot(self, snapshot_id: OffsetAndEpoch, data: SnapshotData) -> bool:
        """Store the state machine's snapshot of the log below ``snapshot_id.offset``.

        False (nothing stored) if the id is at or below the log start or
        already held. Raises InvalidSnapshotIdError if the id is above the
        high watermark, not at a batch boundary, or its epoch is not that of
        the batch ending there. The log start may later advance to it (the
        retention rule, applied on a timer or by ``maybe_clean_log``).
        """
        return create_snapshot(self._ctx, snapshot_id, data)

    def accepts_snapshot(self, snapshot_id: OffsetAndEpoch) -> bool:
        """``create_snapshot``'s checks alone: True if the id would be a new snapshot.

        A node may then write it with ``log.create_snapshot`` outside this
        task (a large snapshot in a worker thread): what the checks read is
        committed and does not change.
        """
        return accepts_snapshot(self._ctx, snapshot_id)

    def maybe_clean_log(self, now_ms: int) -> bool:
        """Move the log start up to a snapshot per the retention bytes and ms."""
        ctx = self._ctx
        config = ctx.config
        return maybe_clean(
            ctx.log, config.metadata_max_retention_bytes, config.metadata_max_retention_ms, now_ms,
            timestamps=self._snapshot_timestamps,
        )

    # -- inputs ------------------------------------------------------------------------

    def poll(self, now_ms: int) -> Ready:
        self._on_time(now_ms)
        return self._ready(now_ms)

    def handle(self, envelope: InboundRequest | InboundResponse, now_ms: int) -> Ready:
        self._on_time(now_ms)
        if isinstance(envelope, InboundRequest):
            self._handle_request(envelope, now_ms)
        else:
            self._handle_response(envelope, now_ms)
        return self._ready(now_ms)

    def propose(self, payloads: Sequence[bytes], now_ms: int, *, epoch: int | None = None) -> Ready:
        """Append ``payloads`` as records; ``Ready.accepted`` holds their offsets.

        Raises NotLeaderError unless this node leads (``epoch``, if given).
        """
        if not payloads:
            raise RaftError("propose needs at least one record payload")
        self._on_time(now_ms)
        self._ctx.outbox.accepted = leader.propose(self._ctx, payloads, now_ms, epoch)
        return self._ready(now_ms)

    def flushed(self, flushed_offset: int, now_ms: int) -> Ready:
        self._on_time(now_ms)
        leader.leader_flushed(self._ctx, flushed_offset, now_ms)
        return self._ready(now_ms)

    def connection_failed(self, node_id: int, now_ms: int) -> Ready:
        self._on_time(now_ms)
        follower.connection_failed(self._ctx, node_id, now_ms)
        return self._ready(now_ms)

    def resign(self, now_ms: int) -> Ready:
        """A leader steps down and tells the voters (graceful shutdown); else a no-op."""
        self._on_time(now_ms)
        if isinstance(self._ctx.state, Leader):
            become_resigned(self._ctx, now_ms)
        return self._ready(now_ms)

    # -- timers ------------------------------------------------------------------------

    def _on_time(self, now_ms: int) -> None:
        ctx = self._ctx
        ctx.requests.expire(now_ms)
        if now_ms >= ctx.next_cleaning_ms:
            ctx.next_cleaning_ms = now_ms + ctx.config.log_cleaner_interval_ms
            self.maybe_clean_log(now_ms)
        state = ctx.state
        if isinstance(state, Unattached):
            deadline = state.election_deadline_ms
            if deadline is not None and now_ms >= deadline and ctx.members.is_voter:
                become_prospective(ctx, now_ms)
        elif isinstance(state, Prospective):
            if now_ms >= state.election_deadline_ms:
                election.lose_pre_vote(ctx, now_ms)
        elif isinstance(state, Candidate):
            if now_ms >= state.election_deadline_ms:
                become_prospective(ctx, now_ms)
        elif isinstance(state, Follower):
            if now_ms >= state.fetch_deadline_ms:
                self._fetch_timed_out(now_ms)
        elif isinstance(state, Resigned):
            if now_ms >= state.election_deadline_ms:
                # epoch + 1: a resigned leader must never follow itself
                become_unattached(ctx, now_ms, epoch=state.epoch + 1)
        else:
            leader.maybe_check_quorum(ctx, now_ms)
            leader.expire_parked_fetches(ctx, now_ms)
            leader.maybe_drain(ctx, now_ms)

    def _fetch_timed_out(self, now_ms: int) -> None:
        ctx = self._ctx
        if ctx.members.is_voter:
            become_prospective(ctx, now_ms)
        else:
            # an observer keeps the leader's id and asks the voters again
            become_unattached(ctx, now_ms, epoch=ctx.epoch)

    def _next_deadline_ms(self) -> int | None:
        state = self._ctx.state
        deadlines = [self._ctx.requests.next_deadline_ms(), self._ctx.next_cleaning_ms]
        if isinstance(state, Unattached | Prospective | Candidate | Resigned):
            deadlines.append(state.election_deadline_ms)
        elif isinstance(state, Follower):
            deadlines.append(state.fetch_deadline_ms)
        else:
            deadlines.append(state.leadership.next_deadline_ms())
        known = [d for d in deadlines if d is not None]
        return min(known) if known else None

    # -- output ------------------------------------------------------------------------

    def _ready(self, now_ms: int) -> Ready:
        ctx = self._ctx
        election.send_vote_requests(ctx, now_ms)
        follower.send_fetch(ctx, now_ms)
        leader.send_begin_quorum_epoch(ctx, now_ms)
        leader.send_end_quorum_epoch(ctx, now_ms)
        state = ctx.state
        high_watermark = state.high_watermark
        committed = None
        if high_watermark is not None and high_watermark > ctx.committed_offset:
            committed = (ctx.committed_offset, high_watermark)
            ctx.committed_offset = high_watermark
        out, ctx.outbox = ctx.outbox, Outbox()
        return Ready(
            persist=out.persist,
            flush_log=out.flush_log,
            send=tuple(out.send),
            send_after_durable=tuple(out.send_after_durable),
            high_watermark=high_watermark,
            committed=None if committed is None else OffsetRange(*committed),
            truncated_to=out.truncated_to,
            accepted=out.accepted,
            loaded_snapshot=out.loaded_snapshot,
            leader=ctx.leader_and_epoch(),
            role=type(state).__name__,
            next_deadline_ms=self._next_deadline_ms(),
        )

    # -- dispatch ----------------------------------------------------------------------

    def _handle_request(self, envelope: InboundRequest, now_ms: int) -> None:
        handler = _REQUEST_HANDLERS.get(type(envelope.message))
        assert handler is not None, f"the Raft core does not serve {type(envelope.message).__name__}"
        response = handler(self._ctx, envelope, now_ms)
        if response is not None:
            self._ctx.reply(envelope.handle, response)

    def _handle_response(self, envelope: InboundResponse, now_ms: int) -> None:
        entry = _RESPONSE_HANDLERS.get(type(envelope.message))
        assert entry is not None, f"the Raft core never asked for {type(envelope.message).__name__}"
        request_kind, handler = entry
        if self._ctx.requests.take_response(envelope.source, envelope.request_id, request_kind):
            handler(self._ctx, envelope.source, envelope.message, now_ms)


# -- request handlers: parse, handle, build the response (None: parked) ----------------
# The cluster id is checked before the request is parsed, as Kafka's KafkaRaftClient does
# (INCONSISTENT_CLUSTER_ID, then INVALID_REQUEST for a topic partition other than ours).

Handler = Callable[[CoreContext, InboundRequest, int], Any]


def _on_vote_request(ctx: CoreContext, envelope: InboundRequest, now_ms: int) -> VoteResponse:
    assert isinstance(envelope.message, VoteRequest)
    if not ctx.cluster_id_ok(envelope.message.cluster_id):
        return adapters.vote_response(VoteAnswer(error=ErrorCode.INCONSISTENT_CLUSTER_ID))
    ask = adapters.parse_vote_request(envelope.message)
    if ask is None:
        return adapters.vote_response(VoteAnswer(error=ErrorCode.INVALID_REQUEST))
    return adapters.vote_response(election.handle_vote_request(ctx, ask, now_ms))


def _on_begin_epoch_request(
    ctx: CoreContext, envelope: InboundRequest, now_ms: int
) -> BeginQuorumEpochResponse:
    assert isinstance(envelope.message, BeginQuorumEpochRequest)
    if not ctx.cluster_id_ok(envelope.message.cluster_id):
        return adapters.begin_epoch_response(EpochAnswer(error=ErrorCode.INCONSISTENT_CLUSTER_ID))
    ask = adapters.parse_begin_epoch_request(envelope.message)
    if ask is None:
        return adapters.begin_epoch_response(EpochAnswer(error=ErrorCode.INVALID_REQUEST))
    return adapters.begin_epoch_response(follower.handle_begin_epoch_request(ctx, ask, now_ms))


def _on_end_epoch_request(
    ctx: CoreContext, envelope: InboundRequest, now_ms: int
) -> EndQuorumEpochResponse:
    assert isinstance(envelope.message, EndQuorumEpochRequest)
    if not ctx.cluster_id_ok(envelope.message.cluster_id):
        return adapters.end_epoch_response(EpochAnswer(error=ErrorCode.INCONSISTENT_CLUSTER_ID))
    ask = adapters.parse_end_epoch_request(envelope.message)
    if ask is None:
        return adapters.end_epoch_response(EpochAnswer(error=ErrorCode.INVALID_REQUEST))
    return adapters.end_epoch_response(follower.handle_end_epoch_request(ctx, ask, now_ms))


def _on_fetch_request(
    ctx: CoreContext, envelope: InboundRequest, now_ms: int
) -> FetchResponse | None:
    assert isinstance(envelope.message, FetchRequest)
    if not ctx.cluster_id_ok(envelope.message.cluster_id):
        return adapters.fetch_response(FetchAnswer(error=ErrorCode.INCONSISTENT_CLUSTER_ID))
    ask = adapters.parse_fetch_request(envelope.message)
    if ask is None:
        return adapters.fetch_response(FetchAnswer(error=ErrorCode.INVALID_REQUEST))
    answer = leader.handle_fetch_request(ctx, envelope.handle, ask, now_ms)
    return None if answer is None else adapters.fetch_response(answer)


def _on_describe_quorum_request(
    ctx: CoreContext, envelope: InboundRequest, now_ms: int
) -> DescribeQuorumResponse:
    assert isinstance(envelope.message, DescribeQuorumRequest)
    if not adapters.describe_quorum_addresses_metadata(envelope.message):
        answer = DescribeQuorumAnswer(partition_error=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    else:
        answer = leader.describe_quorum(ctx, now_ms)
    return adapters.describe_quorum_response(answer)


_REQUEST_HANDLERS: dict[type, Handler] = {
    VoteRequest: _on_vote_request,
    BeginQuorumEpochRequest: _on_begin_epoch_request,
    EndQuorumEpochRequest: _on_end_epoch_request,
    FetchRequest: _on_fetch_request,
    FetchSnapshotRequest: snapshot_fetch.on_fetch_snapshot_request,
    DescribeQuorumRequest: _on_describe_quorum_request,
}


# -- response handlers ---------------------------------------------------------------------

ResponseHandler = Callable[[CoreContext, int, Any, int], None]


def _on_vote_response(ctx: CoreContext, source: int, msg: VoteResponse, now_ms: int) -> None:
    election.handle_vote_response(ctx, source, adapters.parse_vote_response(msg), now_ms)


def _on_begin_epoch_response(
    ctx: CoreContext, source: int, msg: BeginQuorumEpochResponse, now_ms: int
) -> None:
    answer = adapters.parse_epoch_response(msg)
    handle_common_response(
        ctx,
        source,
        now_ms,
        error=answer.error or answer.partition_error,
        leader_id=answer.leader_id,
        epoch=answer.leader_epoch,
    )


def _on_end_epoch_response(
    ctx: CoreContext, source: int, msg: EndQuorumEpochResponse, now_ms: int
) -> None:
    leader.handle_end_epoch_response(ctx, source, adapters.parse_epoch_response(msg), now_ms)


def _on_fetch_response(ctx: CoreContext, source: int, msg: FetchResponse, now_ms: int) -> None:
    follower.handle_fetch_response(ctx, source, adapters.parse_fetch_response(msg), now_ms)


_RESPONSE_HANDLERS: dict[type, tuple[type, ResponseHandler]] = {
    VoteResponse: (VoteRequest, _on_vote_response),
    BeginQuorumEpochResponse: (BeginQuorumEpochRequest, _on_begin_epoch_response),
    EndQuorumEpochResponse: (EndQuorumEpochRequest, _on_end_epoch_response),
    FetchResponse: (FetchRequest, _on_fetch_response),
    FetchSnapshotResponse: (FetchSnapshotRequest, snapshot_fetch.on_fetch_snapshot_response),
}
