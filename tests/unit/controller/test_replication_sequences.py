"""Random sequences of replication commands keep every partition invariant.

Hypothesis drives topic creation and deletion, partition growth, ISR shrinks
and expansions from partition leaders (and stale ones), broker fencing,
unfencing, restarts and controlled shutdowns, elections, the unclean scan
with the topic config switched on and off, and reassignments. After every
step (``World.fold``) the invariants hold and no leader or partition epoch
went back; an election outside the ISR happens only through an explicit
UNCLEAN ElectLeaders or where the topic allows it; every leader is active.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from quorum.controller.alter_partition import alter_partition
from quorum.controller.config_control import incremental_alter_configs
from quorum.controller.elections import (
    elect_leaders,
    preferred_leader_changes,
    unclean_leader_changes,
)
from quorum.controller.image import NO_LEADER, LeaderRecoveryState, PartitionRegistration
from quorum.controller.partition_change import changes_for_broker_removal
from quorum.controller.reassignments import alter_partition_reassignments
from quorum.controller.replication_control import (
    create_partitions,
    create_topics,
    delete_topics,
)
from quorum.controller.topic_configs import unclean_election_enabled
from quorum.wire.error_codes import Errors
from quorum.wire.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsRequestTopic,
)
from quorum.wire.messages.elect_leaders import ElectLeadersRequest
from quorum.wire.messages.metadata_records import PartitionChangeRecord, RegisterBrokerRecord
from quorum.wire.messages.partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsRequestReassignablePartition,
    AlterPartitionReassignmentsRequestReassignableTopic,
)
from quorum.wire.messages.topics import CreateTopicsRequest, DeleteTopicsRequest
from quorum.wire.metadata_serde import MetadataRecord
from tests.unit.controller.replication_world import (
    World,
    alter_isr_request,
    new_topic,
    set_topic_config,
)

BROKERS = (1, 2, 3, 4, 5)
NAMES = ("a", "b", "c")
brokers = st.sampled_from(BROKERS)
names = st.sampled_from(NAMES)


class ReplicationMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.world = World()
        self.world.register(*BROKERS)

    @initialize()
    def some_topics(self) -> None:
        self.world.create(new_topic("a", 3, 3), new_topic("b", 2, 2))

    # -- helpers ---------------------------------------------------------------------------

    def partitions(self) -> list[tuple[str, int, PartitionRegistration]]:
        return [(t.name, i, p) for t, i, p in self.world.image.iter_partitions()]

    def active(self, broker_id: int) -> bool:
        broker = self.world.image.broker(broker_id)
        return broker is not None and broker.is_active

    def check_unclean_allowed(self, records: Sequence[MetadataRecord]) -> None:
        """Records of an automatic path elect outside the ISR only where allowed."""
        for record in records:
            if (
                isinstance(record, PartitionChangeRecord)
                and record.leader_recovery_state == LeaderRecoveryState.RECOVERING
            ):
                topic = self.world.image.topics_by_id[record.topic_id].name
                assert unclean_election_enabled(self.world.image, topic), (
                    f"unclean election on {topic} without the config"
                )

    def fold_automatic(self, records: Sequence[MetadataRecord]) -> None:
        self.check_unclean_allowed(records)
        self.world.fold(records)

    # -- topics ----------------------------------------------------------------------------

    @rule(name=names, count=st.integers(1, 4), rf=st.integers(1, 4), dry=st.booleans())
    def create_topic(self, name: str, count: int, rf: int, dry: bool) -> None:
        existed = self.world.image.topic(name) is not None
        active = len(self.world.image.active_broker_ids())
        request = CreateTopicsRequest(topics=(new_topic(name, count, rf),), validate_only=dry)
        result = self.world.run(create_topics, request, 5)
        (answer,) = result.response.topics
        if existed:
            assert answer.error_code == Errors.TOPIC_ALREADY_EXISTS
        elif rf > active:
            assert answer.error_code == Errors.INVALID_REPLICATION_FACTOR
        else:
            assert answer.error_code == Errors.NONE
            topic = self.world.image.topic(name)
            assert (topic is None) == dry
            assert topic is None or len(topic.partitions) == count
        if answer.error_code != Errors.NONE:
            assert result.records == ()

    @rule(name=names)
    def delete_topic(self, name: str) -> None:
        self.world.run(delete_topics, DeleteTopicsRequest(topic_names=(name,)), 4)
        assert self.world.image.topic(name) is None

    @rule(name=names, extra=st.integers(1, 2))
    def add_partitions(self, name: str, extra: int) -> None:
        topic = self.world.image.topic(name)
        count = extra + (0 if topic is None else len(topic.partitions))
        request = CreatePartitionsRequest(
            topics=(CreatePartitionsRequestTopic(name=name, count=count, assignments=None),)
        )
        self.world.run(create_partitions, request, 3)

    @rule(name=names, on=st.booleans())
    def switch_unclean(self, name: str, on: bool) -> None:
        value = "true" if on else None
        request = set_topic_config(name, "unclean.leader.election.enable", value)
        self.world.run(incremental_alter_configs, request, 1)

    # -- ISR changes from partition leaders ------------------------------------------------

    @rule(data=st.data())
    def shrink_isr(self, data: st.DataObject) -> None:
        led = [(n, i, p) for n, i, p in self.partitions() if p.has_leader and len(p.isr) > 1]
        if not led:
            return
        name, index, p = data.draw(st.sampled_from(led))
        dropped = data.draw(st.sampled_from([r for r in p.isr if r != p.leader]))
        isr = [r for r in p.isr if r != dropped]
        request = alter_isr_request(self.world.image, name, index, isr, recovery_state=p.leader_recovery_state)
        result = alter_partition(self.world.image, request, 3, self.world.ctx())
        assert result.response.topics[0].partitions[0].error_code == Errors.NONE
        self.fold_automatic(result.records)

    @rule(data=st.data())
    def expand_isr(self, data: st.DataObject) -> None:
        candidates = [
            (n, i, p, r)
            for n, i, p in self.partitions()
            if p.has_leader and p.leader_recovery_state == LeaderRecoveryState.RECOVERED
            for r in p.replicas
            if r not in p.isr and self.active(r)
        ]
        if not candidates:
            return
        name, index, p, joining = data.draw(st.sampled_from(candidates))
        request = alter_isr_request(self.world.image, name, index, [*p.isr, joining])
        result = alter_partition(self.world.image, request, 3, self.world.ctx())
        code = result.response.topics[0].partitions[0].error_code
        assert code in (Errors.NONE, Errors.NEW_LEADER_ELECTED)  # the latter: a move completed
        self.fold_automatic(result.records)

    @rule(data=st.data())
    def recover(self, data: st.DataObject) -> None:
        recovering = [
            (n, i, p) for n, i, p in self.partitions()
            if p.has_leader and p.leader_recovery_state == LeaderRecoveryState.RECOVERING
        ]
        if recovering:
            name, index, p = data.draw(st.sampled_from(recovering))
            request = alter_isr_request(self.world.image, name, index, list(p.isr))
            self.fold_automatic(self.world.run(alter_partition, request, 3).records)

    @rule(data=st.data(), which=st.sampled_from(["leader", "partition", "sender"]))
    def stale_alter_partition_writes_nothing(self, data: st.DataObject, which: str) -> None:
        led = [(n, i, p) for n, i, p in self.partitions() if p.has_leader]
        if not led:
            return
        name, index, p = data.draw(st.sampled_from(led))
        image = self.world.image
        if which == "leader" and p.leader_epoch > 0:
            request = alter_isr_request(image, name, index, p.isr, leader_epoch=p.leader_epoch - 1)
            expected = Errors.FENCED_LEADER_EPOCH
        elif which == "partition" and p.partition_epoch > 0:
            request = alter_isr_request(
                image, name, index, p.isr, partition_epoch=p.partition_epoch - 1
            )
            expected = Errors.INVALID_UPDATE_VERSION
        else:
            others = [b for b in BROKERS if b != p.leader and image.broker(b) is not None]
            if not others:
                return
            request = alter_isr_request(image, name, index, p.isr, sender=others[0])
            expected = Errors.INVALID_REQUEST
        result = self.world.run(alter_partition, request, 3)
        assert result.response.topics[0].partitions[0].error_code == expected
        assert result.records == ()

    # -- brokers ---------------------------------------------------------------------------

    @rule(broker=brokers)
    def fence(self, broker: int) -> None:
        registration = self.world.image.broker(broker)
        if registration is not None and not registration.fenced:
            self.check_unclean_allowed(self.world.fence(broker))

    @rule(broker=brokers)
    def unfence(self, broker: int) -> None:
        registration = self.world.image.broker(broker)
        if registration is not None and registration.fenced:
            self.check_unclean_allowed(self.world.unfence(broker))

    @rule(broker=brokers)
    def controlled_shutdown_and_restart(self, broker: int) -> None:
        registration = self.world.image.broker(broker)
        if registration is None or not registration.is_active:
            return
        self.world.shut_down(broker)
        records: list[MetadataRecord] = list(changes_for_broker_removal(self.world.image, broker))
        records.append(RegisterBrokerRecord(
            broker_id=broker,
            incarnation_id=uuid.UUID(int=self.world.offset + 1),
            broker_epoch=self.world.offset + len(records),
            rack=None,
            fenced=True,
        ))
        self.fold_automatic(records)

    # -- elections and reassignments -------------------------------------------------------

    @rule(kind=st.sampled_from([0, 1]))
    def elect_everywhere(self, kind: int) -> None:
        request = ElectLeadersRequest(election_type=kind, topic_partitions=None)
        result = self.world.run(elect_leaders, request, 2)
        assert result.response.error_code == Errors.NONE

    @rule()
    def rebalance_preferred_leaders(self) -> None:
        self.fold_automatic(preferred_leader_changes(self.world.image))

    @rule()
    def unclean_scan(self) -> None:
        self.fold_automatic(unclean_leader_changes(self.world.image))

    @rule(data=st.data(), cancel=st.booleans())
    def reassign(self, data: st.DataObject, cancel: bool) -> None:
        parts = self.partitions()
        if not parts:
            return
        name, index, _p = data.draw(st.sampled_from(parts))
        target = None if cancel else tuple(
            data.draw(st.lists(brokers, min_size=1, max_size=3, unique=True))
        )
        request = AlterPartitionReassignmentsRequest(topics=(
            AlterPartitionReassignmentsRequestReassignableTopic(name=name, partitions=(
                AlterPartitionReassignmentsRequestReassignablePartition(
                    partition_index=index, replicas=target
                ),
            )),
        ))
        result = alter_partition_reassignments(self.world.image, request, 0, self.world.ctx())
        self.fold_automatic(result.records)

    @invariant()
    def leaders_are_active_brokers(self) -> None:
        for _name, _index, p in self.partitions():
            assert p.leader == NO_LEADER or self.active(p.leader), p


ReplicationMachine.TestCase.settings = settings(
    max_examples=100, stateful_step_count=40, deadline=None
)
TestReplicationSequences = ReplicationMachine.TestCase
