"""A classic group's members and generation (Kafka's ClassicGroup, without I/O).

The group is plain data plus the rules that only look at itself: protocol
support and selection, leader choice, member validation, the next
generation.  What the coordinator does with it (timers, answers, records)
lives in ``broker.group.rebalance`` and its siblings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable

import attrs

from broker.group import transitions
from broker.group.states import Empty, GroupState
from broker.group.subscription import subscribed_topics
from quorum.wire.error_codes import Errors

__all__ = ["ClassicGroup", "Member", "Waiter"]

CONSUMER_PROTOCOL_TYPE = "consumer"


@attrs.frozen
class Waiter:
    """A parked request: its token and the version to answer it at."""

    token: Hashable
    version: int


@attrs.define(kw_only=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]  # (name, metadata), in preference order
    assignment: bytes = b""
    join_waiter: Waiter | None = None
    sync_waiter: Waiter | None = None
    is_new: bool = False

    def metadata(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise AssertionError(f"member {self.member_id} does not support protocol {protocol}")

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among ``candidates``."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise AssertionError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def matches(self, protocols: tuple[tuple[str, bytes], ...]) -> bool:
        return self.protocols == protocols


@attrs.define(kw_only=True)
class ClassicGroup:
    group_id: str
    state: GroupState
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = attrs.field(factory=dict)  # join order
    # members answered MEMBER_ID_REQUIRED that have not joined with their id yet
    pending_members: set[str] = attrs.field(factory=set)
    static_members: dict[str, str] = attrs.field(factory=dict)  # instance id -> member id
    # members of the current generation that have not sent SyncGroup yet
    pending_sync: set[str] = attrs.field(factory=set)
    supported_protocols: Counter[str] = attrs.field(factory=Counter)
    # initial rebalance: a member joined since the delay was last armed
    new_member_added: bool = False
    # the topics the generation's members subscribe to (None: unknown), set per generation
    subscribed_topics: frozenset[str] | None = None
    initial_delay_ms: int = 0
    initial_remaining_ms: int = 0

    # -- queries -----------------------------------------------------------

    def is_in(self, *states: type) -> bool:
        return isinstance(self.state, states)

    @property
    def is_empty(self) -> bool:
        return not self.members

    def awaiting_join_count(self) -> int:
        return sum(1 for m in self.members.values() if m.join_waiter is not None)

    def has_all_members_joined(self) -> bool:
        return self.awaiting_join_count() == len(self.members) and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    def supports_protocols(self, protocol_type: str, names: Iterable[str]) -> bool:
        names = set(names)
        if self.is_in(Empty):
            return bool(protocol_type) and bool(names)
        return self.protocol_type == protocol_type and any(
            self.supported_protocols[n] == len(self.members) for n in names
        )

    def select_protocol(self) -> str:
        """The protocol every member supports with the most votes (first to reach it wins)."""
        assert self.members, "cannot select a protocol for an empty group"
        candidates = {n for n, c in self.supported_protocols.items() if c == len(self.members)}
        votes: Counter[str] = Counter(m.vote(candidates) for m in self.members.values())
        return max(votes, key=lambda name: votes[name])

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        """Kafka's computeSubscribedTopics: None when unknown (not a consumer group, or unreadable)."""
        if not self.uses_consumer_protocol():
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            parsed = subscribed_topics(member.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics |= parsed
        return frozenset(topics)

    def is_subscribed_to(self, topic: str) -> bool:
        """Kafka's isSubscribedToTopic: unknown subscriptions of a consumer group count as yes."""
        if self.subscribed_topics is None:
            return self.uses_consumer_protocol()
        return topic in self.subscribed_topics

    def validate_member(self, member_id: str, group_instance_id: str | None) -> Errors:
        """Kafka's validateMember: NONE, UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID."""
        if group_instance_id is not None:
            existing = self.static_members.get(group_instance_id)
            if existing is None:
                return Errors.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return Errors.FENCED_INSTANCE_ID
        return Errors.NONE if member_id in self.members else Errors.UNKNOWN_MEMBER_ID

    # -- changes -----------------------------------------------------------

    def add(self, member: Member) -> None:
        if member.group_instance_id is not None:
            assert member.group_instance_id not in self.static_members, member.group_instance_id
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        assert self.protocol_type == member.protocol_type, "protocol types must match"
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.supported_protocols.update(name for name, _ in member.protocols)
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self.supported_protocols.subtract(name for name, _ in member.protocols)
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync.discard(member_id)
        return member

    def update_member(
        self,
        member: Member,
        protocols: tuple[tuple[str, bytes], ...],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        waiter: Waiter | None,
    ) -> None:
        self.supported_protocols.subtract(name for name, _ in member.protocols)
        self.supported_protocols.update(name for name, _ in protocols)
        member.protocols = protocols
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.join_waiter = waiter

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        return member

    def maybe_elect_new_joined_leader(self) -> bool:
        """Kafka: keep a leader that rejoined, else take any member that did."""
        if self.leader_id is None:
            return False
        leader = self.members[self.leader_id]
        if leader.join_waiter is not None:
            return True
        for member in self.members.values():
            if member.join_waiter is not None:
                self.leader_id = member.member_id
                return True
        return False

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition(transitions.transition_to_completing_rebalance, now_ms)
        else:
            self.protocol_name = None
            self.transition(transitions.transition_to_empty, now_ms)
        self.subscribed_topics = self.compute_subscribed_topics()
        self.pending_sync.clear()

    def transition(self, move: transitions.Move, now_ms: int) -> None:
        self.state = move(self.group_id, self.state, now_ms)
