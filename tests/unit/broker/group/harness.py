"""A coordinator driven as its trio shell would drive it, with a log that commits at once.

``Harness.send`` passes a request with a fresh token and keeps every answer
(a token answered twice fails the test); appends go to an in-memory log and
are reported committed (or held, with ``auto_commit=False``); due timers are
polled, as the shell does at ``next_deadline_ms``.
"""

from __future__ import annotations

import itertools
import random
import struct
from collections.abc import Hashable
from typing import Any

from broker.group import (
    Append,
    CoordinatorOutput,
    GroupCoordinator,
    GroupCoordinatorConfig,
    OffsetsRecord,
)
from quorum.wire.codec import encode
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    LeaveGroupRequest,
    LeaveGroupRequestMemberIdentity,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)

# a short initial delay lets several members join a new group's first generation
INITIAL_DELAY_MS = 100
TEST_CONFIG = GroupCoordinatorConfig(
    min_session_timeout_ms=100,
    initial_rebalance_delay_ms=INITIAL_DELAY_MS,
    offsets_topic_num_partitions=1,
)


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0: version, topics, null user data."""
    out = struct.pack(">hi", 0, len(topics))
    for topic in topics:
        data = topic.encode()
        out += struct.pack(">h", len(data)) + data
    return out + struct.pack(">i", -1)


class Harness:
    def __init__(
        self,
        config: GroupCoordinatorConfig = TEST_CONFIG,
        *,
        auto_commit: bool = True,
        seed: int = 7,
        load: bool = True,
    ) -> None:
        self.coordinator = GroupCoordinator(config, rng=random.Random(seed))
        self.now = 0
        self.auto_commit = auto_commit
        self.answers: dict[Hashable, Any] = {}
        self.versions: dict[Hashable, int] = {}
        self.held: list[Append] = []
        self.log: dict[int, list[OffsetsRecord]] = {}
        self._tokens = itertools.count(1)
        if load:
            for partition in range(config.offsets_topic_num_partitions):
                self.take(self.coordinator.begin_load(partition, now_ms=self.now))
                self.take(self.coordinator.finish_load(partition, now_ms=self.now))

    # -- driving -----------------------------------------------------------

    def take(self, out: CoordinatorOutput) -> None:
        for answer in out.answers:
            assert answer.token not in self.answers, f"token {answer.token} answered twice"
            self.answers[answer.token] = answer.response
            # every answer must be encodable at the version it answers
            encode(answer.response, self.versions[answer.token])
        self.held.extend(out.appends)
        if self.auto_commit:
            self.commit_held()
        deadline = self.coordinator.next_deadline_ms()
        if deadline is not None and deadline <= self.now:
            self.take(self.coordinator.poll(self.now))

    def commit_held(self) -> None:
        while self.held:
            append = self.held.pop(0)
            self.log.setdefault(append.partition, []).extend(append.records)
            self.take(self.coordinator.append_committed(append.append_id, now_ms=self.now))

    def fail_held(self, error: Errors = Errors.NOT_ENOUGH_REPLICAS) -> None:
        while self.held:
            append = self.held.pop(0)
            self.take(self.coordinator.append_failed(append.append_id, error, now_ms=self.now))

    def advance(self, ms: int) -> None:
        """Move the clock, firing every timer on the way in deadline order."""
        target = self.now + ms
        while True:
            deadline = self.coordinator.next_deadline_ms()
            if deadline is None or deadline > target:
                break
            self.now = max(self.now, deadline)
            self.take(self.coordinator.poll(self.now))
        self.now = target
        self.take(self.coordinator.poll(self.now))

    def send(self, request: object, version: int, *, client_id: str = "client") -> int:
        token = next(self._tokens)
        self.versions[token] = version
        out = self.coordinator.handle(
            request, version=version, token=token, now_ms=self.now,
            client_id=client_id, client_host="/127.0.0.1",
        )
        self.take(out)
        return token

    def answer(self, token: int) -> Any:
        return self.answers.get(token)

    def call(self, request: object, version: int) -> Any:
        """Send and return the answer, which must come at once."""
        token = self.send(request, version)
        assert token in self.answers, f"{type(request).__name__} was not answered at once"
        return self.answers[token]

    # -- requests ----------------------------------------------------------

    def join(
        self,
        group: str,
        member_id: str = "",
        *,
        instance_id: str | None = None,
        protocols: tuple[tuple[str, bytes], ...] = (("range", subscription("t")),),
        version: int = 5,
        session_ms: int = 10_000,
        rebalance_ms: int = 30_000,
        protocol_type: str = "consumer",
    ) -> int:
        request = JoinGroupRequest(
            group_id=group,
            session_timeout_ms=session_ms,
            rebalance_timeout_ms=rebalance_ms,
            member_id=member_id,
            group_instance_id=instance_id,
            protocol_type=protocol_type,
            protocols=tuple(JoinGroupRequestProtocol(name=n, metadata=m) for n, m in protocols),
        )
        return self.send(request, version)

    def join_new_member(self, group: str, **kw: Any) -> str:
        """The KIP-394 handshake: join without an id, get one, return it (not yet joined)."""
        first = self.answer(self.join(group, **kw))
        assert first.error_code == Errors.MEMBER_ID_REQUIRED, first
        member_id: str = first.member_id
        return member_id

    def sync(
        self,
        group: str,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        *,
        instance_id: str | None = None,
        version: int = 3,
    ) -> int:
        request = SyncGroupRequest(
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance_id,
            assignments=tuple(
                SyncGroupRequestAssignment(member_id=m, assignment=a)
                for m, a in (assignments or {}).items()
            ),
        )
        return self.send(request, version)

    def heartbeat(self, group: str, member_id: str, generation: int, *,
                  instance_id: str | None = None, version: int = 3) -> Any:
        request = HeartbeatRequest(
            group_id=group, generation_id=generation, member_id=member_id,
            group_instance_id=instance_id,
        )
        return self.call(request, version)

    def leave(self, group: str, *members: tuple[str, str | None], version: int = 3) -> Any:
        request = LeaveGroupRequest(
            group_id=group,
            member_id=members[0][0] if version < 3 else "",
            members=tuple(
                LeaveGroupRequestMemberIdentity(member_id=m, group_instance_id=i) for m, i in members
            ),
        )
        return self.call(request, version)

    def commit(
        self,
        group: str,
        offsets: dict[tuple[str, int], int],
        *,
        member_id: str = "",
        generation: int = -1,
        metadata: str | None = "",
        version: int = 8,
        instance_id: str | None = None,
    ) -> int:
        by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
        for (topic, partition), offset in offsets.items():
            by_topic.setdefault(topic, []).append(OffsetCommitRequestPartition(
                partition_index=partition, committed_offset=offset, committed_metadata=metadata,
            ))
        request = OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=instance_id,
            topics=tuple(OffsetCommitRequestTopic(name=t, partitions=tuple(ps))
                         for t, ps in by_topic.items()),
        )
        return self.send(request, version)

    def fetch(self, group: str, topic: str, *partitions: int, version: int = 7) -> dict[int, int]:
        request = OffsetFetchRequest(
            group_id=group,
            topics=(OffsetFetchRequestTopic(name=topic, partition_indexes=partitions),),
        )
        response = self.call(request, version)
        assert response.error_code == Errors.NONE, response
        return {p.partition_index: p.committed_offset for t in response.topics for p in t.partitions}


def error_codes(response: Any) -> list[int]:
    """Every partition error of an OffsetCommit answer."""
    return [p.error_code for t in response.topics for p in t.partitions]


def stable_group(h: Harness, group: str, count: int) -> tuple[list[str], int]:
    """``count`` members join (KIP-394), sync, and the group is Stable; (member ids, generation)."""
    ids = [h.join_new_member(group) for _ in range(count)]
    tokens = [h.join(group, member_id) for member_id in ids]
    h.advance(10 * INITIAL_DELAY_MS)
    answers = [h.answer(t) for t in tokens]
    assert all(a is not None and a.error_code == 0 for a in answers), answers
    generation = answers[0].generation_id
    leader = answers[0].leader
    sync_tokens = [
        h.sync(group, m, generation, {x: x.encode() for x in ids} if m == leader else None)
        for m in ids
    ]
    assert all(h.answer(t).error_code == 0 for t in sync_tokens)
    assert h.coordinator.group_state(group) == "Stable"
    return ids, generation
