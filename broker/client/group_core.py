"""A consumer's membership in a classic group (sans-I/O): join, sync, heartbeat answers.

Kafka's ``AbstractCoordinator`` + ``ConsumerCoordinator`` as a state
machine the consumer's shell drives: ``next_step(now_ms, view)`` says what
to do (look the coordinator up, prepare a join, send JoinGroup or
SyncGroup), the ``handle_*`` methods take the answers, ``take_changes``
gives the assignment changes for the shell to apply and report to the
rebalance listener. One membership request is in flight at a time;
heartbeats go out from the shell's pacer with a ``HeartbeatTarget`` (a
snapshot of the generation) and their answers come back here.

Member states (Kafka's ``MemberState``); ``_transition`` is the only
place the state changes and refuses any move not in this table::

    from                   to                     when
    UNJOINED               PREPARING_REBALANCE    JoinGroup sent
    STABLE                 PREPARING_REBALANCE    JoinGroup sent (a rejoin)
    PREPARING_REBALANCE    COMPLETING_REBALANCE   JoinGroup answered
    PREPARING_REBALANCE    UNJOINED               JoinGroup failed or was refused
    COMPLETING_REBALANCE   STABLE                 SyncGroup answered
    COMPLETING_REBALANCE   UNJOINED               SyncGroup failed or was refused
    STABLE                 UNJOINED               the generation is reset (fenced, left)

Rebalance protocol: COOPERATIVE when every configured assignor supports
it, else EAGER. EAGER gives every partition up before joining (revoked,
after an auto-commit); COOPERATIVE keeps them, gives up only those the
new assignment takes away, and rejoins at once so that the next round can
hand them to their new owner (KIP-429). A member whose generation was
reset (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, poll timeout) has *lost*
its partitions: no commit, ``on_partitions_lost``.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from typing import Final

import attrs

from broker.client.assignors import Assignor, RebalanceProtocol
from broker.client.cluster import ClusterView
from broker.client.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from broker.client.errors import KafkaError, error_from_code
from broker.client.group_requests import COORDINATOR_MOVED, Coordinator
from broker.client.group_steps import (
    AssignmentChange,
    FindCoordinator,
    HeartbeatTarget,
    JoinPlan,
    PrepareJoin,
    Step,
    SyncPlan,
)
from broker.client.settings import ConsumerSettings
from broker.client.types import TopicPartition
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)

__all__ = [
    "AssignmentChange",
    "FindCoordinator",
    "GroupCore",
    "HeartbeatTarget",
    "JoinPlan",
    "MemberState",
    "PrepareJoin",
    "SyncPlan",
]

NO_GENERATION: Final = -1


class MemberState(enum.Enum):
    UNJOINED = "UNJOINED"
    PREPARING_REBALANCE = "PREPARING_REBALANCE"
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"
    STABLE = "STABLE"


_S = MemberState
TRANSITIONS: Final = frozenset({
    (_S.UNJOINED, _S.PREPARING_REBALANCE),
    (_S.STABLE, _S.PREPARING_REBALANCE),
    (_S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE),
    (_S.PREPARING_REBALANCE, _S.UNJOINED),
    (_S.COMPLETING_REBALANCE, _S.STABLE),
    (_S.COMPLETING_REBALANCE, _S.UNJOINED),
    (_S.STABLE, _S.UNJOINED),
})
# refusals that no retry can fix: raised to the caller of poll
_FATAL_JOIN: Final = frozenset({
    Errors.FENCED_INSTANCE_ID, Errors.INCONSISTENT_GROUP_PROTOCOL, Errors.INVALID_SESSION_TIMEOUT,
    Errors.INVALID_GROUP_ID, Errors.GROUP_AUTHORIZATION_FAILED, Errors.GROUP_MAX_SIZE_REACHED,
})
_FENCED: Final = frozenset({Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION})


@attrs.define
class _Joined:
    """What the JoinGroup answer said, kept until SyncGroup is sent."""

    leader: bool
    protocol: str
    members: Mapping[str, Subscription]


class GroupCore:
    def __init__(self, settings: ConsumerSettings, assignors: Sequence[Assignor]) -> None:
        assert settings.group_id is not None, "a group member needs a group.id"
        assert assignors, "at least one assignor"
        self.settings = settings
        self.group_id: str = settings.group_id
        self.instance_id = settings.group_instance_id
        self.assignors = {a.name: a for a in assignors}
        common = set.intersection(*(set(a.protocols) for a in assignors))
        self.protocol = max(common) if common else RebalanceProtocol.EAGER
        self.state = MemberState.UNJOINED
        self.coordinator: Coordinator | None = None
        self.member_id = ""
        self.generation = NO_GENERATION
        self.owned: tuple[TopicPartition, ...] = ()
        self.topics: frozenset[str] = frozenset()
        self.pattern: re.Pattern[str] | None = None
        self._rejoin = True
        self._prepared = False
        self._in_flight = False
        self._retry_at_ms = 0.0
        self._joined: _Joined | None = None
        self._changes: list[AssignmentChange] = []
        self._error: KafkaError | None = None
        # the leader's view of partition counts when it assigned (a change means rejoin)
        self._assigned_counts: dict[str, int | None] = {}

    # -- subscription --------------------------------------------------------------------

    @property
    def subscribed(self) -> bool:
        return bool(self.topics) or self.pattern is not None

    def subscribe(self, topics: frozenset[str], pattern: re.Pattern[str] | None = None) -> None:
        self.pattern = pattern
        if topics != self.topics:
            self.topics = topics
            self.request_rejoin()

    def on_metadata(self, view: ClusterView) -> None:
        """A pattern matches the topics the view names; a leader notices partition changes."""
        if self.pattern is not None:
            internal = {t for t, info in view.topics.items() if info.is_internal}
            skip = internal if self.settings.exclude_internal_topics else set()
            matched = frozenset(t for t in view.topics
                                if t not in skip and self.pattern.fullmatch(t))
            self.subscribe(matched, self.pattern)
        if self.state is MemberState.STABLE and self._assigned_counts:
            now = {t: view.partition_count(t) for t in self._assigned_counts}
            if now != self._assigned_counts:
                self.request_rejoin()

    def metadata_topics(self) -> frozenset[str]:
        """The topics this member needs in its metadata: its own, and as leader the group's
        (to assign them, then to notice their partition counts change)."""
        joined = self._joined
        group = set(self._assigned_counts)
        if joined is not None and joined.leader:
            group.update(t for s in joined.members.values() for t in s.topics)
        return self.topics | group

    def request_rejoin(self) -> None:
        self._rejoin = True
        self._prepared = False

    # -- transitions ---------------------------------------------------------------------

    def _transition(self, to: MemberState) -> None:
        if (self.state, to) not in TRANSITIONS:
            raise AssertionError(f"member state {self.state.name} -> {to.name} is not allowed")
        self.state = to

    def reset_generation(self) -> None:
        """Fenced or left: a new member id next time; the owned partitions are lost."""
        self.generation, self.member_id = NO_GENERATION, ""
        self._joined = None
        if self.state is not MemberState.UNJOINED:
            self._transition(MemberState.UNJOINED)
        self.request_rejoin()

    def coordinator_found(self, found: Coordinator) -> None:
        self.coordinator = found

    def give_up(self) -> tuple[TopicPartition, ...]:
        """Every owned partition, now owned no more (close, unsubscribe)."""
        owned, self.owned = self.owned, ()
        return owned

    def coordinator_unknown(self, now_ms: float) -> None:
        self.coordinator = None
        self._retry_at_ms = now_ms + self.settings.retry_backoff_ms

    # -- what to do next -----------------------------------------------------------------

    def next_step(self, now_ms: float, view: ClusterView) -> Step | None:
        if not self.subscribed or self._in_flight or now_ms < self._retry_at_ms:
            return None
        if self.coordinator is None:
            self._in_flight = True
            return FindCoordinator()
        if self.state is MemberState.COMPLETING_REBALANCE:
            return self._sync_plan(view)
        if not self._rejoin and self.state is not MemberState.UNJOINED:
            return None
        if not self._prepared:
            return self._prepare()
        self._in_flight = True
        self._transition(MemberState.PREPARING_REBALANCE)
        return JoinPlan(self.coordinator.node_id, self._join_request())

    def _prepare(self) -> PrepareJoin:
        owned = self.owned
        if self.generation == NO_GENERATION:
            self.owned = ()
            return PrepareJoin(revoked=(), lost=owned, commit=False)
        if self.protocol is RebalanceProtocol.EAGER:
            self.owned = ()
            return PrepareJoin(revoked=owned, lost=(), commit=True)
        # cooperative: give up only what the subscription no longer covers
        self.owned = tuple(tp for tp in owned if tp.topic in self.topics)
        return PrepareJoin(revoked=tuple(tp for tp in owned if tp.topic not in self.topics),
                           lost=(), commit=True)

    def join_prepared(self) -> None:
        self._prepared = True

    def _join_request(self) -> JoinGroupRequest:
        protocols = tuple(
            JoinGroupRequestProtocol(name=name, metadata=encode_subscription(Subscription(
                topics=tuple(sorted(self.topics)),
                user_data=assignor.user_data(self.generation),
                owned_partitions=self.owned,
                generation_id=self.generation,
                rack_id=self.settings.client_rack or None,
            )))
            for name, assignor in self.assignors.items()
        )
        return JoinGroupRequest(
            group_id=self.group_id,
            session_timeout_ms=self.settings.session_timeout_ms,
            rebalance_timeout_ms=self.settings.max_poll_interval_ms,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocols=protocols,
            reason="need to (re)join the group",
        )

    def wait_ms(self, now_ms: float) -> float | None:
        """How long until a backed-off step is due (None: nothing waits for a time; the
        shell takes a due step at once, and an answer or metadata wakes it otherwise)."""
        if not self.subscribed or self._in_flight or now_ms >= self._retry_at_ms:
            return None
        return self._retry_at_ms - now_ms

    # -- answers -------------------------------------------------------------------------

    def handle_coordinator(
        self, found: Coordinator | None, error: Errors, now_ms: float
    ) -> None:
        self._in_flight = False
        if found is not None:
            self.coordinator = found
            return
        self._retry_at_ms = now_ms + self.settings.retry_backoff_ms
        if not error.retriable and error is not Errors.NONE:
            self._keep_error(error_from_code(error, None, context="FindCoordinator"))

    def handle_failure(self, error: KafkaError, now_ms: float) -> None:
        """A FindCoordinator, JoinGroup or SyncGroup got no answer."""
        self._in_flight = False
        self._joined = None
        if self.state is not MemberState.UNJOINED and self.state is not MemberState.STABLE:
            self._transition(MemberState.UNJOINED)
            self.request_rejoin()
            self._prepared = True  # nothing to give up again before retrying
        self.coordinator_unknown(now_ms)

    def handle_join_response(self, response: JoinGroupResponse, now_ms: float) -> None:
        self._in_flight = False
        error = Errors.from_code(response.error_code)
        if error is Errors.NONE:
            self.member_id, self.generation = response.member_id, response.generation_id
            protocol = response.protocol_name or ""
            leader = response.leader == response.member_id and not response.skip_assignment
            members = {
                m.member_id: decode_subscription(m.metadata, m.group_instance_id)
                for m in response.members
            } if leader else {}
            self._joined = _Joined(leader, protocol, members)
            self._transition(MemberState.COMPLETING_REBALANCE)
            return
        self._transition(MemberState.UNJOINED)
        self._prepared = True  # what was owned was already given up
        if error is Errors.MEMBER_ID_REQUIRED:
            self.member_id = response.member_id  # join again at once with it
        elif error in _FENCED:
            self.generation, self.member_id = NO_GENERATION, ""
            self._prepared = False  # lost: reported before the next join
        elif error in COORDINATOR_MOVED:
            self.coordinator_unknown(now_ms)
        elif error in _FATAL_JOIN or (not error.retriable and error is not Errors.REBALANCE_IN_PROGRESS):
            self._keep_error(error_from_code(error, None, context=f"JoinGroup {self.group_id}"))
            self._retry_at_ms = now_ms + self.settings.retry_backoff_ms
        else:
            self._retry_at_ms = now_ms + self.settings.retry_backoff_ms

    def _sync_plan(self, view: ClusterView) -> SyncPlan | None:
        joined = self._joined
        assert joined is not None and self.coordinator is not None, "joined before syncing"
        assignments: tuple[SyncGroupRequestAssignment, ...] = ()
        if joined.leader:
            topics = {t for s in joined.members.values() for t in s.topics}
            if any(t not in view.topics and t not in view.topic_errors for t in topics):
                return None  # the shell refreshes metadata for the group's topics first
            counts = {t: view.partition_count(t) for t in topics}
            self._assigned_counts = counts
            assignor = self.assignors.get(joined.protocol)
            if assignor is None:
                self._keep_error(KafkaError(Errors.INCONSISTENT_GROUP_PROTOCOL,
                                            f"the group chose unknown assignor {joined.protocol}"))
                return None
            result = assignor.assign({t: c for t, c in counts.items() if c}, joined.members)
            assignments = tuple(
                SyncGroupRequestAssignment(member_id=member, assignment=encode_assignment(
                    Assignment(partitions=tuple(tps))))
                for member, tps in result.items()
            )
        else:
            self._assigned_counts = {}
        self._in_flight = True
        request = SyncGroupRequest(
            group_id=self.group_id, generation_id=self.generation, member_id=self.member_id,
            group_instance_id=self.instance_id, protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocol_name=joined.protocol, assignments=assignments,
        )
        return SyncPlan(self.coordinator.node_id, request, self.generation)

    def handle_sync_response(self, response: SyncGroupResponse, now_ms: float) -> None:
        self._in_flight = False
        error = Errors.from_code(response.error_code)
        if error is not Errors.NONE:
            self._transition(MemberState.UNJOINED)
            self._joined = None
            self.request_rejoin()
            self._prepared = True
            if error in _FENCED:
                self.generation, self.member_id = NO_GENERATION, ""
                self._prepared = False  # lost: reported before the next join
            elif error in COORDINATOR_MOVED:
                self.coordinator_unknown(now_ms)
            elif error is not Errors.REBALANCE_IN_PROGRESS and not error.retriable:
                self._keep_error(error_from_code(error, None, context=f"SyncGroup {self.group_id}"))
            return
        self._complete(decode_assignment(response.assignment))

    def _complete(self, assignment: Assignment) -> None:
        self._transition(MemberState.STABLE)
        self._rejoin = False
        assigned = tuple(dict.fromkeys(assignment.partitions))
        revoked = tuple(tp for tp in self.owned if tp not in assigned)
        added = tuple(tp for tp in assigned if tp not in self.owned)
        self.owned = assigned
        self._changes.append(AssignmentChange(assigned=assigned, added=added, revoked=revoked))
        if revoked or any(tp.topic not in self.topics for tp in assigned):
            # cooperative: the revoked partitions go to others in the next round
            self.request_rejoin()
            self._prepared = True
        self._joined = None

    # -- heartbeats ----------------------------------------------------------------------

    def heartbeat_target(self) -> HeartbeatTarget | None:
        """Whom to beat for: from the JoinGroup answer on, as Kafka enables its heartbeat
        thread there (a SyncGroup answer not yet applied must not cost the session)."""
        beating = (MemberState.COMPLETING_REBALANCE, MemberState.STABLE)
        if self.state not in beating or self.coordinator is None:
            return None
        return HeartbeatTarget(node=self.coordinator.node_id, group_id=self.group_id,
                               generation=self.generation, member_id=self.member_id,
                               instance_id=self.instance_id)

    def handle_heartbeat(self, target: HeartbeatTarget, error: Errors, now_ms: float) -> None:
        if target.generation != self.generation or target.member_id != self.member_id:
            return  # an answer about a generation this member has left
        if error is Errors.NONE:
            return
        if error in COORDINATOR_MOVED or error is Errors.NETWORK_EXCEPTION \
                or error is Errors.REQUEST_TIMED_OUT:
            self.coordinator_unknown(now_ms)
        elif error is Errors.REBALANCE_IN_PROGRESS:
            if self.state is MemberState.STABLE and not self._rejoin:
                self.request_rejoin()  # else: already rebalancing
        elif error in _FENCED:
            self.reset_generation()
        else:
            if error is Errors.FENCED_INSTANCE_ID:
                self.reset_generation()
            self._keep_error(error_from_code(error, None, context=f"Heartbeat {self.group_id}"))

    # -- commits -------------------------------------------------------------------------

    def handle_commit_error(self, error: Errors, now_ms: float) -> None:
        """Side effects of a refused commit on the membership (the shell raises)."""
        if error in _FENCED:
            self.reset_generation()
        elif error is Errors.REBALANCE_IN_PROGRESS:
            self.request_rejoin()
        elif error in COORDINATOR_MOVED:
            self.coordinator_unknown(now_ms)

    # -- results for the shell -----------------------------------------------------------

    def take_changes(self) -> list[AssignmentChange]:
        changes, self._changes = self._changes, []
        return changes

    def _keep_error(self, error: KafkaError) -> None:
        if self._error is None:
            self._error = error

    def raise_pending_error(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise error

    def leave(self) -> HeartbeatTarget | None:
        """Leaving (close, unsubscribe, poll timeout): what LeaveGroup should name, if any.

        Static members never send LeaveGroup (KIP-345): only their session ends them.
        """
        target = None
        if self.coordinator is not None and self.member_id and self.instance_id is None:
            target = HeartbeatTarget(node=self.coordinator.node_id, group_id=self.group_id,
                                     generation=self.generation, member_id=self.member_id,
                                     instance_id=None)
        self.reset_generation()
        return target
