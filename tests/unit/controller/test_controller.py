"""QuorumController: activation, dispatch, working vs committed images, timers."""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from typing import Any

import attrs
import pytest

from quorum.controller.controller import QuorumController
from quorum.controller.error_responses import CONTROLLER_REQUESTS
from quorum.controller.image import NO_LEADER, LeaderRecoveryState
from quorum.controller.operations import Steps, from_result
from quorum.controller.results import ControllerConfig, ControllerResult
from quorum.wire.error_codes import Errors
from quorum.wire.messages.allocate_producer_ids import AllocateProducerIdsRequest
from quorum.wire.messages.broker_lifecycle import BrokerHeartbeatRequest
from quorum.wire.messages.metadata_records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FeatureLevelRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from quorum.wire.messages.topics import (
    CreateTopicsRequest,
    CreateTopicsRequestAssignment,
    CreateTopicsRequestTopic,
)
from quorum.wire.metadata_serde import MetadataRecord
from tests.unit.controller.cluster_world import CONFIG, SESSION_MS, registration_request

EPOCH = 3
START_MS = 1_000_000


@attrs.define
class Quorum:
    """One metadata log, the controller that leads it and one standby replaying it.

    ``None`` in the log stands for a control record (LeaderChange): it takes an
    offset but is no metadata record, as in the real log.
    """

    config: ControllerConfig = CONFIG
    log: list[MetadataRecord | None] = attrs.field(factory=list)
    committed_end: int = 0
    now_ms: int = START_MS
    active: QuorumController = attrs.field(init=False)
    standby: QuorumController = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.active = QuorumController(self.config, rng=random.Random(1))
        self.standby = QuorumController(self.config, rng=random.Random(2))

    def lead(self, epoch: int = EPOCH) -> ControllerResult[None]:
        self.log.append(None)  # the new leader's LeaderChange record
        self.commit()
        result = self.active.activate(self.now_ms, next_offset=len(self.log), epoch=epoch)
        self.log.extend(result.records)
        return result

    def send(self, request: Any, version: int = 0) -> ControllerResult[Any]:
        result = self.active.handle(
            request, version, now_ms=self.now_ms, next_offset=len(self.log)
        )
        self.log.extend(result.records)
        return result

    def tick(self) -> ControllerResult[None]:
        result = self.active.tick(self.now_ms, next_offset=len(self.log))
        self.log.extend(result.records)
        return result

    def commit(self, end: int | None = None) -> None:
        end = len(self.log) if end is None else end
        records = [r for r in self.log[self.committed_end : end] if r is not None]
        for controller in (self.active, self.standby):
            controller.replay_committed(records, end, EPOCH)
        self.committed_end = end

    def seed(self, records: Sequence[MetadataRecord]) -> None:
        """Records some earlier leader wrote (committed before this one leads)."""
        self.log.extend(records)
        self.commit()

    def register(self, broker_id: int) -> int:
        request = registration_request(broker_id, uuid.UUID(int=broker_id))
        response = self.send(request, 4).response
        assert response.error_code == 0, response
        return int(response.broker_epoch)

    def heartbeat(self, broker_id: int, **kwargs: Any) -> Any:
        broker = self.active.working.brokers[broker_id]
        request = BrokerHeartbeatRequest(
            broker_id=broker_id,
            broker_epoch=broker.epoch,
            current_metadata_offset=len(self.log) - 1,
            **kwargs,
        )
        return self.send(request, 1).response

    def start(self, *broker_ids: int) -> None:
        for broker_id in broker_ids:
            self.register(broker_id)
            # a broker asks to be unfenced once it applied its own (committed) registration
            self.commit()
            assert not self.heartbeat(broker_id).is_fenced


def _active_brokers_and_topic(
    replicas: Sequence[int], isr: Sequence[int], leader: int
) -> list[MetadataRecord]:
    """Committed history: metadata.version, brokers 1-3 active, topic t with one partition."""
    records: list[MetadataRecord] = [FeatureLevelRecord(name="metadata.version", feature_level=21)]
    for broker_id in (1, 2, 3):
        epoch = len(records)  # seeded from offset 0
        records.append(RegisterBrokerRecord(
            broker_id=broker_id, incarnation_id=uuid.UUID(int=broker_id), broker_epoch=epoch
        ))
        records.append(
            BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=epoch, fenced=-1)
        )
    topic_id = uuid.UUID(int=99)
    records.append(TopicRecord(name="t", topic_id=topic_id))
    records.append(PartitionRecord(
        partition_id=0, topic_id=topic_id, replicas=tuple(replicas), isr=tuple(isr), leader=leader
    ))
    return records


def _topic(name: str, *assignment: Sequence[int]) -> CreateTopicsRequestTopic:
    return CreateTopicsRequestTopic(
        name=name,
        num_partitions=-1,
        replication_factor=-1,
        assignments=tuple(
            CreateTopicsRequestAssignment(partition_index=i, broker_ids=tuple(a))
            for i, a in enumerate(assignment)
        ),
    )


# -- standby --


def test_standby_answers_not_controller_and_writes_nothing() -> None:
    quorum = Quorum()
    controller = quorum.standby
    before = controller.working
    for request in (
        registration_request(1, uuid.uuid4()),
        CreateTopicsRequest(topics=(_topic("t", [1]),)),
    ):
        result = controller.handle(request, 0, now_ms=START_MS, next_offset=0)
        assert result.records == ()
        codes = [t.error_code for t in getattr(result.response, "topics", [result.response])]
        assert codes == [Errors.NOT_CONTROLLER]
    assert controller.working is before and controller.committed is before
    assert controller.next_deadline_ms() is None


def test_dispatch_table_handles_every_controller_request() -> None:
    assert QuorumController(CONFIG, rng=random.Random(0)).request_types == CONTROLLER_REQUESTS


# -- activation --


def test_first_leader_writes_the_metadata_version_and_later_leaders_do_not() -> None:
    quorum = Quorum()
    first = quorum.lead()
    assert first.records == (FeatureLevelRecord(name="metadata.version", feature_level=21),)
    assert quorum.active.working.features == {"metadata.version": 21}
    assert quorum.active.committed.features == {}  # not committed yet
    quorum.commit()
    quorum.active.deactivate()
    assert quorum.lead(EPOCH + 1).records == ()


def test_registration_epoch_is_the_offset_the_caller_appends_its_record_at() -> None:
    quorum = Quorum()
    quorum.lead()
    offset = len(quorum.log)
    assert quorum.register(1) == offset
    assert isinstance(quorum.log[offset], RegisterBrokerRecord)
    assert quorum.active.working.brokers[1].epoch == offset
    assert 1 not in quorum.active.committed.brokers


def test_rejected_request_changes_neither_image() -> None:
    quorum = Quorum()
    quorum.lead()
    quorum.start(1)
    working, committed = quorum.active.working, quorum.active.committed
    stale = BrokerHeartbeatRequest(broker_id=1, broker_epoch=0, current_metadata_offset=9)
    result = quorum.send(stale, 1)
    assert result.response.error_code == Errors.STALE_BROKER_EPOCH
    assert result.records == ()
    assert quorum.active.working is working and quorum.active.committed is committed


# -- working and committed images --


def test_replay_on_a_standby_gives_the_active_working_image_once_committed() -> None:
    quorum = Quorum()
    quorum.lead()
    quorum.start(1, 2, 3)
    quorum.commit(len(quorum.log) - 2)  # part of it: the standby lags the working image
    assert quorum.standby.committed != quorum.active.working
    created = quorum.send(CreateTopicsRequest(topics=(_topic("t", [1, 2], [2, 3]),)), 5)
    assert [t.error_code for t in created.response.topics] == [0]
    assert quorum.heartbeat(2, want_shut_down=True).should_shut_down is False
    epoch = quorum.active.working.brokers[1].epoch
    quorum.send(AllocateProducerIdsRequest(broker_id=1, broker_epoch=epoch))
    working = quorum.active.working
    quorum.commit()
    assert quorum.standby.committed == working
    assert quorum.active.committed == working
    # nothing pending: the active controller's working image is its committed image
    assert quorum.active.working is quorum.active.committed


def test_working_image_keeps_records_that_are_not_yet_committed() -> None:
    quorum = Quorum()
    quorum.lead()
    quorum.commit()
    quorum.register(1)
    middle = len(quorum.log)
    quorum.register(2)
    quorum.commit(middle)
    assert set(quorum.active.committed.brokers) == {1}
    assert set(quorum.active.working.brokers) == {1, 2}


def test_deactivate_drops_uncommitted_state() -> None:
    quorum = Quorum()
    quorum.lead()
    quorum.commit()
    quorum.register(1)
    assert 1 in quorum.active.working.brokers and 1 in quorum.active.sessions
    quorum.active.deactivate()
    assert not quorum.active.is_active
    assert quorum.active.working is quorum.active.committed
    assert 1 not in quorum.active.working.brokers
    assert len(quorum.active.sessions) == 0
    again = quorum.active.handle(
        registration_request(1, uuid.uuid4()), 4, now_ms=START_MS, next_offset=len(quorum.log)
    )
    assert again.response.error_code == Errors.NOT_CONTROLLER


def test_records_that_would_not_replay_stop_the_controller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    quorum = Quorum()
    quorum.lead()
    quorum.start(1)
    quorum.send(AllocateProducerIdsRequest(
        broker_id=1, broker_epoch=quorum.active.working.brokers[1].epoch
    ))
    before = quorum.active.working

    def backwards(*args: Any) -> Steps[Any]:
        return from_result(
            lambda: ControllerResult((ProducerIdsRecord(broker_id=1, next_producer_id=1),), None)
        )

    monkeypatch.setitem(quorum.active._commands, AllocateProducerIdsRequest, backwards)
    with pytest.raises(AssertionError, match="do not replay"):
        quorum.send(AllocateProducerIdsRequest(broker_id=1))
    assert quorum.active.working is before


# -- timers --


def test_session_expiry_fences_one_broker_per_tick_and_moves_leadership_away() -> None:
    quorum = Quorum()
    quorum.lead()
    quorum.start(1, 2, 3)
    created = quorum.send(CreateTopicsRequest(topics=(_topic("t", [1, 3], [2, 3]),)), 5)
    assert [t.error_code for t in created.response.topics] == [0]
    quorum.now_ms += 10
    quorum.heartbeat(2)
    quorum.now_ms += SESSION_MS - 10
    quorum.heartbeat(3)
    assert quorum.tick().records == ()  # broker 1's session ends in 1 ms
    quorum.now_ms += 1
    assert quorum.active.next_deadline_ms() == quorum.now_ms
    first = quorum.tick()
    working = quorum.active.working
    assert working.brokers[1].fenced and not working.brokers[2].fenced
    assert any(isinstance(r, BrokerRegistrationChangeRecord) for r in first.records)
    topic = working.topic("t")
    assert topic is not None and topic.partitions[0].leader == 3
    quorum.now_ms += 10
    assert (deadline := quorum.active.next_deadline_ms()) is not None and deadline <= quorum.now_ms
    quorum.tick()
    assert quorum.active.working.brokers[2].fenced
    assert quorum.tick().records == ()
    assert not quorum.active.working.brokers[3].fenced


def test_new_active_controller_gives_every_broker_a_full_session() -> None:
    quorum = Quorum()
    quorum.lead()
    quorum.start(1)
    quorum.commit()
    quorum.active.deactivate()
    quorum.now_ms += 5 * SESSION_MS  # the old controller never heard from broker 1 again
    quorum.lead(EPOCH + 1)
    assert quorum.active.next_deadline_ms() == quorum.now_ms + SESSION_MS + 1
    quorum.now_ms += SESSION_MS
    assert quorum.tick().records == ()
    quorum.now_ms += 1
    assert quorum.tick().records
    assert quorum.active.working.brokers[1].fenced


def test_preferred_leader_returns_on_the_rebalance_interval() -> None:
    config = attrs.evolve(CONFIG, leader_imbalance_check_interval_ms=1000)
    quorum = Quorum(config=config)
    quorum.seed(_active_brokers_and_topic(replicas=[1, 2], isr=[1, 2], leader=2))
    quorum.lead()
    assert quorum.active.next_deadline_ms() == quorum.now_ms + 1000
    quorum.now_ms += 999
    assert quorum.tick().records == ()
    quorum.now_ms += 1
    (change,) = quorum.tick().records
    assert isinstance(change, PartitionChangeRecord) and change.leader == 1
    topic = quorum.active.working.topic("t")
    assert topic is not None and topic.partitions[0].leader == 1
    assert quorum.active.next_deadline_ms() == quorum.now_ms + 1000


def test_rebalance_is_off_when_auto_leader_rebalance_is_disabled() -> None:
    config = attrs.evolve(
        CONFIG, leader_imbalance_check_interval_ms=1000, auto_leader_rebalance_enable=False
    )
    quorum = Quorum(config=config)
    quorum.seed(_active_brokers_and_topic(replicas=[1, 2], isr=[1, 2], leader=2))
    quorum.lead()
    quorum.now_ms += 1000
    assert quorum.tick().records == ()


def test_unclean_scan_elects_a_leader_outside_the_isr_where_the_topic_allows_it() -> None:
    config = attrs.evolve(CONFIG, unclean_leader_election_check_interval_ms=2000)
    quorum = Quorum(config=config)
    history = _active_brokers_and_topic(replicas=[1, 2], isr=[1], leader=NO_LEADER)
    # broker 1 (the only ISR member) is fenced; broker 2 is alive but out of the ISR
    history.append(BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=1, fenced=1))
    history.append(ConfigRecord(
        resource_type=2, resource_name="t", name="unclean.leader.election.enable", value="true"
    ))
    quorum.seed(history)
    quorum.lead()
    quorum.now_ms += 1999
    assert quorum.tick().records == ()
    quorum.now_ms += 1
    (change,) = quorum.tick().records
    assert isinstance(change, PartitionChangeRecord) and change.leader == 2
    topic = quorum.active.working.topic("t")
    assert topic is not None
    partition = topic.partitions[0]
    assert partition.isr == (2,)
    assert partition.leader_recovery_state == LeaderRecoveryState.RECOVERING
