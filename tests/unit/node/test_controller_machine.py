"""The controller machine on a single-voter core: operations run one slice at a time, a
broker's waiting heartbeats fold into one, and every request gets an answer."""

from __future__ import annotations

import random
import uuid
from typing import Any

import attrs

from quorum.controller.controller import QuorumController
from quorum.node.controller_machine import ControllerMachine
from quorum.node.driver import propose_machine_records
from quorum.node.inputs import ControllerCall
from quorum.raft import RaftCore, Ready
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    BrokerHeartbeatRequest,
    CreateTopicsRequest,
    CreateTopicsRequestTopic,
)
from tests.unit.controller.cluster_world import CONFIG, registration_request
from tests.unit.raft.builders import new_core

NOW = 10_000


@attrs.define
class Node:
    """A single-voter core and its controller machine, driven as the node's driver does."""

    core: RaftCore = attrs.Factory(lambda: new_core(1, voters=(1,)))
    machine: ControllerMachine = attrs.Factory(
        lambda: ControllerMachine(QuorumController(CONFIG, rng=random.Random(1)))
    )
    operations: int = 0  # operations that ended

    def apply(self, ready: Ready) -> None:
        """The Ready and the flush it asks for (a lone voter commits what it flushed)."""
        while True:
            self.machine.observe(ready, self.core, NOW)
            if not ready.flush_log:
                return
            ready = self.core.flushed(self.core.log.flush(), NOW)

    def settle(self, slices: int = 10_000) -> None:
        """Inputs first, then slices until the machine has nothing left (or ``slices`` ran)."""
        self.apply(self.core.poll(NOW))
        for _ in range(slices):
            if not self.machine.has_work(NOW):
                return
            work = self.machine.work(self.core, NOW)
            self.operations += len(work.finished_operations)
            if work.payloads:
                self.apply(propose_machine_records(self.core, self.machine, work.payloads, NOW))

    def call(self, request: Any, version: int) -> list[Any]:
        answers: list[Any] = []
        self.machine.call(ControllerCall(request, version, answers.append), self.core, NOW)
        return answers


def start_broker(node: Node) -> int:
    """Broker 1 registered and unfenced; its epoch."""
    answers = node.call(registration_request(1, uuid.UUID(int=1)), 4)
    node.settle()
    [registered] = answers
    assert registered.error_code == Errors.NONE
    epoch: int = registered.broker_epoch
    offset = node.machine.follower.image.provenance.offset - 1
    beats = node.call(BrokerHeartbeatRequest(
        broker_id=1, broker_epoch=epoch, current_metadata_offset=offset
    ), 1)
    node.settle()
    assert [b.is_fenced for b in beats] == [False]
    assert not node.machine.follower.image.brokers[1].fenced
    return epoch


def test_waiting_heartbeats_of_a_broker_fold_into_one_and_every_one_is_answered() -> None:
    node = Node()
    node.settle()  # leads, activates
    epoch = start_broker(node)
    big = CreateTopicsRequest(topics=(
        CreateTopicsRequestTopic(name="big", num_partitions=3_000, replication_factor=1),
    ))
    created = node.call(big, 5)
    node.settle(slices=1)  # the creation is under way
    # heartbeats that would change the broker (here: asking to be fenced) queue behind it
    heartbeats = [
        node.call(BrokerHeartbeatRequest(
            broker_id=1, broker_epoch=epoch, current_metadata_offset=offset, want_fence=True
        ), 1)
        for offset in (10, 20, 30)
    ]
    assert heartbeats == [[], [], []]
    controller = node.machine.controller
    started: list[str] = []
    start = controller.start

    def counted(request: Any, *args: Any, **kwargs: Any) -> Any:
        started.append(type(request).__name__)
        return start(request, *args, **kwargs)

    controller.start = counted  # type: ignore[method-assign]
    node.settle()
    assert [a.topics[0].error_code for a in created] == [Errors.NONE]
    # one heartbeat operation answered all three, with the same answer: not fenced yet (a
    # fencing job follows it, between other operations)
    assert started == ["BrokerHeartbeatRequest"]
    assert all(len(a) == 1 for a in heartbeats)
    assert heartbeats[0][0] is heartbeats[1][0] is heartbeats[2][0]
    assert not heartbeats[0][0].is_fenced
    assert node.machine.follower.image.brokers[1].fenced  # the job did fence it


def test_a_heartbeat_that_changes_nothing_is_answered_at_once_during_a_long_operation() -> None:
    node = Node()
    node.settle()
    epoch = start_broker(node)
    big = CreateTopicsRequest(topics=(
        CreateTopicsRequestTopic(name="big", num_partitions=3_000, replication_factor=1),
    ))
    created = node.call(big, 5)
    node.settle(slices=1)
    answer = node.call(BrokerHeartbeatRequest(
        broker_id=1, broker_epoch=epoch, current_metadata_offset=5
    ), 1)
    # answered before the creation is: it writes nothing and the broker's state is committed
    assert created == [] and len(answer) == 1
    assert not answer[0].is_fenced and not answer[0].should_shut_down


def test_a_stopping_controller_answers_what_waits_and_what_runs() -> None:
    node = Node()
    node.settle()
    start_broker(node)
    big = CreateTopicsRequest(topics=(
        CreateTopicsRequestTopic(name="big", num_partitions=3_000, replication_factor=1),
    ))
    running = node.call(big, 5)
    node.settle(slices=1)
    waiting = node.call(big, 5)
    node.machine.close()
    for answers in (running, waiting):
        assert [a.topics[0].error_code for a in answers] == [Errors.NOT_CONTROLLER]


def test_a_broker_whose_heartbeat_ran_long_is_alive_until_its_answer() -> None:
    node = Node()
    node.settle()
    epoch = start_broker(node)
    big = CreateTopicsRequest(topics=(
        CreateTopicsRequestTopic(name="big", num_partitions=3_000, replication_factor=1),
    ))
    node.call(big, 5)
    node.settle(slices=1)  # the creation (one transaction, no boundary) is under way
    # a heartbeat that changes the broker (a controlled shutdown) waits for its turn
    answers: list[Any] = []
    offset = node.machine.follower.image.provenance.offset - 1
    node.machine.call(ControllerCall(BrokerHeartbeatRequest(
        broker_id=1, broker_epoch=epoch, current_metadata_offset=offset, want_shut_down=True,
    ), 1, answers.append), node.core, NOW)
    now = NOW
    slices = 0
    while not answers and slices < 1_000:
        now += 100  # each slice a tenth of a second later
        work = node.machine.work(node.core, now)
        slices += 1
        if work.payloads:
            node.apply(propose_machine_records(node.core, node.machine, work.payloads, now))
    assert answers and slices > 1
    timeout = CONFIG.broker_session_timeout_ms
    # the session runs from the answer, not from when the operation began
    assert node.machine.controller.sessions.expiry_ms(1, timeout) >= now + timeout + 1 - 100


def test_a_registration_retried_by_its_incarnation_joins_the_first_then_is_answered_at_once(
) -> None:
    node = Node()
    node.settle()
    start_broker(node)
    big = CreateTopicsRequest(topics=(
        CreateTopicsRequestTopic(name="big", num_partitions=3_000, replication_factor=1),
    ))
    created = node.call(big, 5)
    node.settle(slices=1)  # the creation is under way: the registration waits behind it
    request = registration_request(2, uuid.UUID(int=2))
    first = node.call(request, 4)
    retried = node.call(request, 4)  # a broker that gave up waiting sends the same again
    assert first == [] and retried == []
    records_before = node.machine.follower.image.provenance.offset
    controller = node.machine.controller
    started: list[str] = []
    start = controller.start

    def counted(request: Any, *args: Any, **kwargs: Any) -> Any:
        started.append(type(request).__name__)
        return start(request, *args, **kwargs)

    controller.start = counted  # type: ignore[method-assign]
    node.settle()
    # the retry joined the first: one registration operation ran, not two
    assert started.count("BrokerRegistrationRequest") == 1, started
    assert [a.topics[0].error_code for a in created] == [Errors.NONE]
    # one operation, one record: both got the epoch it wrote
    assert len(first) == len(retried) == 1 and first[0].error_code == Errors.NONE
    epoch = first[0].broker_epoch
    assert retried[0].broker_epoch == epoch
    image = node.machine.follower.image
    assert image.brokers[2].epoch == epoch
    # a retry once the registration is committed: the same epoch at once, nothing written
    offset = image.provenance.offset
    late = node.call(request, 4)
    assert len(late) == 1 and late[0].error_code == Errors.NONE
    assert late[0].broker_epoch == epoch
    node.settle()
    assert node.machine.follower.image.provenance.offset == offset
    assert records_before < offset  # (the creation and the registration were written)
