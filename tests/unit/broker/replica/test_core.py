"""Two replica cores wired by hand: produce with each acks, follower fetches, sessions."""

from __future__ import annotations

import random
import uuid

import attrs
import pytest

from broker.replica import (
    OutboundFetch,
    PendingShrinkIsr,
    ReplicaConfig,
    ReplicaCore,
    ReplicaOutput,
)
from broker.replica import core as core_module
from broker.replica.manager import (
    PartitionAssignment,
    PartitionKey,
    PartitionRole,
    assignment_changes,
)
from quorum.controller.image import EMPTY_IMAGE, MetadataImage
from quorum.log import MemoryLog, ReplicatedLog
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    FetchResponse,
    ProduceRequest,
    ProduceRequestPartition,
    ProduceRequestTopic,
)
from quorum.wire.messages.metadata_records import ConfigRecord
from tests.sim.replication.disk import BrokerDisk

from ..records import fold, partition, register, topic
from .helpers import batch


class Logs:
    def __init__(self) -> None:
        self.logs: dict[PartitionKey, MemoryLog] = {}

    def open_log(self, key: PartitionKey, name: tuple[str, int]) -> ReplicatedLog:
        return self.logs.setdefault(key, MemoryLog())

    def create_log(self, key: PartitionKey, name: tuple[str, int]) -> ReplicatedLog:
        return self.open_log(key, name)

    def checkpointed_high_watermark(self, key: PartitionKey) -> int:
        return 0

    def delete_log(self, key: PartitionKey) -> None:
        self.logs.pop(key, None)


def _image(isr: tuple[int, ...] = (1, 2)) -> MetadataImage:
    return fold([
        register(1, 10), register(2, 11), topic("events"),
        ConfigRecord(resource_type=2, resource_name="events", name="min.insync.replicas",
                     value="2"),
        partition("events", 0, [1, 2], isr=isr, leader=1),
    ])


@attrs.define
class Pair:
    """Leader 1 and follower 2 of events-0; fetches travel only when ``deliver`` says."""

    leader: ReplicaCore
    follower: ReplicaCore
    now_ms: int = 0
    answers: list[tuple[object, ProduceRequest | None, object]] = attrs.field(factory=list)
    pending_fetches: list[OutboundFetch] = attrs.field(factory=list)

    def take(self, output: ReplicaOutput) -> ReplicaOutput:
        for answer in output.produce_answers:
            self.answers.append((answer.handle, None, answer.response))
        return output

    def fetch_round(self) -> None:
        """The follower's fetch to the leader and back, once."""
        out = self.follower.poll(self.now_ms)
        fetches = list(out.fetches) or self.pending_fetches
        self.pending_fetches = []
        for fetch in fetches:
            served = self.take(self.leader.fetch(("f", fetch.request_id), fetch.request, 12,
                                                 self.now_ms))
            responses = [a.response for a in served.fetch_answers]
            if not responses:  # parked until data or max wait: let the wait run out
                self.now_ms += fetch.request.max_wait_ms
                served = self.take(self.leader.poll(self.now_ms))
                responses = [a.response for a in served.fetch_answers]
            assert len(responses) == 1
            after = self.follower.handle_fetch_response(1, fetch.request_id, responses[0],
                                                        self.now_ms)
            self.pending_fetches = list(after.fetches)
        self.now_ms += 1


def _pair(isr: tuple[int, ...] = (1, 2)) -> Pair:
    image = _image(isr)
    cores, outputs = [], []
    for broker in (1, 2):
        core = ReplicaCore(ReplicaConfig(broker_id=broker, replica_fetch_wait_max_ms=50),
                           Logs(), random.Random(broker))
        changes = assignment_changes(EMPTY_IMAGE, image, broker)
        outputs.append(core.apply_changes(changes.changed, changes.removed, image, 0))
        cores.append(core)
    assert outputs[0].fetches == ()
    # the follower's first fetch comes out of the assignment itself
    (fetch,) = outputs[1].fetches
    return Pair(cores[0], cores[1], pending_fetches=[fetch])


def _produce(acks: int, *values: bytes) -> ProduceRequest:
    return ProduceRequest(acks=acks, timeout_ms=1_000, topic_data=(ProduceRequestTopic(
        name="events", partition_data=(ProduceRequestPartition(index=0, records=batch(*values)),)
    ),))


def _error(output: ReplicaOutput) -> int:
    (answer,) = output.produce_answers
    return answer.response.responses[0].partition_responses[0].error_code


def test_acks_all_is_answered_once_the_follower_has_the_batch() -> None:
    pair = _pair()
    out = pair.leader.produce("p", _produce(-1, b"a"), pair.now_ms)
    assert out.produce_answers == ()
    for _ in range(4):
        pair.fetch_round()
        if pair.answers:
            break
    [(handle, _, response)] = pair.answers
    assert handle == "p"
    assert response.responses[0].partition_responses[0].error_code == Errors.NONE  # type: ignore[attr-defined]
    assert pair.follower.partitions.by_name("events", 0).log_end_offset == 1  # type: ignore[union-attr]


def test_acks_1_is_answered_at_once_and_acks_0_never() -> None:
    pair = _pair()
    assert _error(pair.leader.produce("one", _produce(1, b"a"), 0)) == Errors.NONE
    assert pair.leader.produce("zero", _produce(0, b"b"), 0).produce_answers == ()
    assert _error(pair.leader.produce("bad", _produce(2, b"c"), 0)) == (
        Errors.INVALID_REQUIRED_ACKS
    )
    assert pair.leader.partitions.by_name("events", 0).log_end_offset == 2  # type: ignore[union-attr]


def test_acks_all_times_out_when_the_follower_never_fetches() -> None:
    pair = _pair()
    assert pair.leader.produce("p", _produce(-1, b"a"), 0).produce_answers == ()
    out = pair.leader.poll(999)
    assert out.produce_answers == () and out.next_deadline_ms is not None
    assert _error(pair.leader.poll(1_000)) == Errors.REQUEST_TIMED_OUT


def test_acks_all_under_min_isr_is_refused_before_the_append() -> None:
    pair = _pair(isr=(1,))
    assert _error(pair.leader.produce("p", _produce(-1, b"a"), 0)) == Errors.NOT_ENOUGH_REPLICAS
    assert pair.leader.partitions.by_name("events", 0).log_end_offset == 0  # type: ignore[union-attr]


def test_a_produce_to_a_follower_or_an_unknown_partition_is_refused() -> None:
    pair = _pair()
    assert _error(pair.follower.produce("p", _produce(1, b"a"), 0)) == (
        Errors.NOT_LEADER_OR_FOLLOWER
    )
    request = attrs.evolve(_produce(1, b"a"), topic_data=(ProduceRequestTopic(
        name="nope", partition_data=(ProduceRequestPartition(index=0, records=batch(b"a")),)
    ),))
    assert _error(pair.leader.produce("p", request, 0)) == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_the_fetcher_opens_a_session_and_then_sends_only_what_changed() -> None:
    pair = _pair()
    first = pair.pending_fetches
    assert len(first) == 1 and first[0].destination == 1
    request = first[0].request
    assert (request.replica_id, request.session_id, request.session_epoch) == (2, 0, 0)
    assert [len(t.partitions) for t in request.topics] == [1]
    served = pair.leader.fetch("f", request, 12, 0)
    if not served.fetch_answers:
        served = pair.leader.poll(50)
    (answer,) = served.fetch_answers
    assert answer.response.session_id != 0
    after = pair.follower.handle_fetch_response(1, first[0].request_id, answer.response, 50)
    (second,) = after.fetches
    # nothing changed for the partition (no records came): an incremental request names none
    assert second.request.session_id == answer.response.session_id
    assert second.request.session_epoch == 1 and second.request.topics == ()


def test_an_unknown_session_starts_over_with_a_full_request() -> None:
    pair = _pair()
    (first,) = pair.pending_fetches
    out = pair.follower.handle_fetch_response(
        1, first.request_id, FetchResponse(session_id=9, responses=()), 0
    )
    # a full answer that omits our partition does not fit: the session starts over, at once
    (again,) = out.fetches
    assert again.request.session_epoch == 0
    after = pair.follower.handle_fetch_response(
        1, again.request_id,
        FetchResponse(error_code=Errors.FETCH_SESSION_ID_NOT_FOUND, responses=()), 2,
    )
    (full,) = after.fetches
    assert (full.request.session_id, full.request.session_epoch) == (0, 0)
    assert [len(t.partitions) for t in full.request.topics] == [1]


def test_the_isr_check_runs_a_slice_of_led_partitions_per_poll(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Followers that never fetch leave the ISR, at most ISR_CHECK_SLICE partitions per
    poll; a check that is not done asks to be polled again at once."""

    from broker.replica import ReplicaConfig, ReplicaCore
    from quorum.controller.image import EMPTY_IMAGE

    monkeypatch.setattr(core_module, "ISR_CHECK_SLICE", 2)
    core = ReplicaCore(
        ReplicaConfig(broker_id=1, replica_lag_time_max_ms=100), BrokerDisk(), random.Random(1)
    )
    topic_id = uuid.UUID(int=9)
    core.apply_changes([
        PartitionAssignment(
            topic="t", topic_id=topic_id, partition=i, leader=1, leader_epoch=0,
            partition_epoch=0, isr=(1, 2), replicas=(1, 2), role=PartitionRole.LEADER,
        )
        for i in range(5)
    ], (), EMPTY_IMAGE, 0)
    now = 1_000

    def shrinking() -> int:
        return sum(1 for p in core.partitions if isinstance(p.isr_state, PendingShrinkIsr))

    first = core.poll(now)
    assert shrinking() == 2 and first.next_deadline_ms == now
    second = core.poll(now)
    assert shrinking() == 4 and second.next_deadline_ms == now
    third = core.poll(now)
    assert shrinking() == 5
    assert third.next_deadline_ms is not None and third.next_deadline_ms > now
