"""A follower's incremental session on the leader: idle partitions cost nothing per fetch, and
caught-up times, ISR shrinks and parked fetches stay Kafka's.

Leader 1 and follower 2 of PARTITIONS partitions, wired by hand: every fetch goes to the
leader and its answer back, at times the test chooses.
"""

from __future__ import annotations

import random

import attrs
import pytest

from broker.replica import PendingShrinkIsr, ReplicaConfig, ReplicaCore, ReplicaOutput, serving
from broker.replica.manager import assignment_changes
from broker.replica.partition import Partition
from quorum.controller.image import EMPTY_IMAGE
from quorum.wire.messages import (
    DeleteRecordsResponse,
    FetchRequest,
    ProduceRequest,
    ProduceRequestPartition,
    ProduceRequestTopic,
)

from ..records import fold, partition, register, topic
from .helpers import batch
from .test_core import Logs

PARTITIONS = 40
LAG_MS = 1_000
WAIT_MS = 200
MAX_JOIN = 15


@attrs.define
class Link:
    leader: ReplicaCore
    follower: ReplicaCore
    now_ms: int = 0
    # the follower's fetch parked on the leader, and the request it was
    parked: tuple[int, FetchRequest] | None = None
    outgoing: list[tuple[int, FetchRequest]] = attrs.field(factory=list)
    answered: list[int] = attrs.field(factory=list)  # partitions per answer
    deleted: list[DeleteRecordsResponse] = attrs.field(factory=list)  # the leader's DeleteRecords answers

    def _sent(self, output: ReplicaOutput) -> None:
        self.outgoing += [(f.request_id, f.request) for f in output.fetches]

    def _back(self, request_id: int, output: ReplicaOutput) -> None:
        self.deleted += [a.response for a in output.delete_records_answers]
        for answer in output.fetch_answers:
            assert answer.handle == request_id
            self.answered.append(sum(len(t.partitions) for t in answer.response.responses))
            self._sent(self.follower.handle_fetch_response(
                1, request_id, answer.response, self.now_ms
            ))
            self.parked = None

    def step(self) -> None:
        """The follower's next request reaches the leader (answered or parked there)."""
        self._sent(self.follower.poll(self.now_ms))
        if not self.outgoing:
            return
        request_id, request = self.outgoing.pop(0)
        self.parked = (request_id, request)
        self._back(request_id, self.leader.fetch(request_id, request, 12, self.now_ms))

    def advance(self, ms: int) -> None:
        """Time passes; a parked fetch whose wait ran out is answered."""
        self.now_ms += ms
        parked = self.parked
        output = self.leader.poll(self.now_ms)
        if parked is not None:
            self._back(parked[0], output)
        else:
            self.deleted += [a.response for a in output.delete_records_answers]

    def settle(self) -> None:
        """Round trips until the follower's fetch parks with nothing to read."""
        for _ in range(50):
            self.step()
            if self.parked is not None:
                return
        raise AssertionError("the follower's fetches never parked")

    def produce(self, index: int) -> None:
        request = _produce_request(index)
        parked = self.parked
        output = self.leader.produce(("p", index), request, self.now_ms)
        if parked is not None:
            self._back(parked[0], output)

    def led(self, index: int) -> Partition:
        found = self.leader.partitions.by_name("events", index)
        assert found is not None
        return found


def _produce_request(index: int) -> ProduceRequest:
    return ProduceRequest(acks=1, timeout_ms=1_000, topic_data=(ProduceRequestTopic(
        name="events",
        partition_data=(ProduceRequestPartition(index=index, records=batch(b"x")),),
    ),))


def _link() -> Link:
    image = fold([
        register(1, 10), register(2, 11), topic("events"),
        *(partition("events", i, [1, 2], isr=(1, 2), leader=1) for i in range(PARTITIONS)),
    ])
    cores = []
    for broker in (1, 2):
        config = ReplicaConfig(
            broker_id=broker, replica_fetch_wait_max_ms=WAIT_MS,
            replica_lag_time_max_ms=LAG_MS, max_partitions_joining_per_fetch=MAX_JOIN,
        )
        core = ReplicaCore(config, Logs(), random.Random(broker))
        changes = assignment_changes(EMPTY_IMAGE, image, broker)
        output = core.apply_changes(changes.changed, changes.removed, image, 0)
        cores.append((core, output))
    link = Link(cores[0][0], cores[1][0])
    link._sent(cores[1][1])
    link.settle()
    return link


def test_idle_partitions_are_not_read_and_stay_in_the_isr() -> None:
    link = _link()
    # the session filled (15 partitions joined per request), every partition is idle
    [session] = list(link.leader.serving.sessions.follower_sessions())
    assert len(session.partitions) == PARTITIONS and not session.dirty
    # a parked fetch waits under its session, not under each of its 40 partitions
    assert len(link.leader.serving.purgatory) == 1
    before = len(link.answered)
    for _ in range(3 * LAG_MS // WAIT_MS):
        link.advance(WAIT_MS)
        link.step()
    # each wait ran out with an empty answer, and nobody left the ISR
    assert link.answered[before:] and set(link.answered[before:]) == {0}
    assert not any(isinstance(p.isr_state, PendingShrinkIsr) for p in link.leader.partitions)
    # the follower's states were never touched: their caught-up time is where it was
    assert all(p.followers[2].last_fetch_ms < LAG_MS for p in link.leader.partitions)
    # and the ISR check looks at none of them: every ISR follower is at the log end
    assert link.leader.isr_watched == 0
    link.produce(5)
    assert link.leader.isr_watched == 1


def test_an_append_wakes_the_parked_fetch_with_its_partition_only() -> None:
    link = _link()
    link.advance(5 * LAG_MS)
    link.step()
    last_fetch = link.now_ms
    link.advance(10)
    link.produce(7)
    assert link.answered[-1] == 1  # the parked fetch woke with events-7 alone
    # the follower was caught up at its last fetch, as a read of events-7 then would have said
    state = link.led(7).followers[2]
    assert state.last_caught_up_ms == last_fetch
    link.settle()
    assert link.led(7).high_watermark == 1
    assert link.led(7).followers[2].log_end_offset == 1
    [session] = list(link.leader.serving.sessions.follower_sessions())
    # the follower's fetch moved the high watermark: its next answer carries it (Kafka's
    # follower learns it one fetch later), then the partition is idle again
    assert set(session.dirty) == {("events", 7)}
    link.advance(WAIT_MS)
    assert link.answered[-1] == 1 and not session.dirty
    assert link.follower.partitions.by_name("events", 7).high_watermark == 1  # type: ignore[union-attr]


def test_a_follower_that_stops_fetching_leaves_the_isr_of_a_partition_that_moves() -> None:
    link = _link()
    link.advance(WAIT_MS)  # its last fetch is answered; no further request reaches the leader
    link.parked = None
    link.advance(2 * LAG_MS)
    link.produce(3)
    link.advance(LAG_MS // 2 + 1)  # the next ISR check
    shrinking = [p.index for p in link.leader.partitions if isinstance(p.isr_state, PendingShrinkIsr)]
    # only the partition that moved: an idle follower at the leader's end is caught up (Kafka's
    # isCaughtUp); the controller fences a broker that stopped altogether
    assert shrinking == [3]


def test_a_follower_behind_is_read_at_every_fetch_until_it_catches_up() -> None:
    link = _link()
    for index in (1, 2):
        link.produce(index)
    [session] = list(link.leader.serving.sessions.follower_sessions())
    assert set(session.dirty) == {("events", 1), ("events", 2)}
    link.settle()
    link.advance(WAIT_MS)  # the answer with the high watermark the follower's fetch moved
    assert not session.dirty
    assert all(link.led(i).high_watermark == 1 for i in (1, 2))


def test_a_fetch_reads_a_bounded_slice_of_dirty_partitions_and_answers_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(serving, "SESSION_READ_SLICE", 10)
    link = _link()
    link.advance(WAIT_MS)  # the parked fetch answered empty: the next one reaches the leader
    for index in range(25):
        link.leader.produce(("p", index), _produce_request(index), link.now_ms)
    before = len(link.answered)
    for _ in range(3):
        link.step()
    # 25 partitions with records: 10, 10 and 5, each answered without waiting
    assert link.answered[before:] == [10, 10, 5]
    link.settle()
    assert all(link.led(i).high_watermark == 1 for i in range(25))
