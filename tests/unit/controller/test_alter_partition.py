"""AlterPartition: ISR changes from partition leaders, Kafka's checks in order."""

from __future__ import annotations

import uuid

import attrs
import pytest

from quorum.controller.alter_partition import alter_partition
from quorum.controller.delta import NO_LEADER_CHANGE
from quorum.controller.elections import elect_leaders
from quorum.controller.image import LeaderRecoveryState
from quorum.controller.partition_change import changes_for_broker_removal
from quorum.wire.codec import decode, encode
from quorum.wire.error_codes import Errors
from quorum.wire.messages.alter_partition import AlterPartitionRequest, AlterPartitionResponse
from quorum.wire.messages.elect_leaders import (
    ElectLeadersRequest,
    ElectLeadersRequestTopicPartitions,
)
from quorum.wire.messages.metadata_records import PartitionChangeRecord, UnregisterBrokerRecord
from tests.unit.controller.replication_world import World, alter_isr_request, new_topic


def world_with_topic(brokers: tuple[int, ...] = (1, 2, 3)) -> World:
    world = World()
    world.register(*brokers)
    world.create(new_topic("t", assignments=[(1, 2, 3)]))
    return world


def send(world: World, request: AlterPartitionRequest, version: int = 3) -> tuple[int, ...]:
    """Run the request; the per-partition error codes (and the request's own)."""
    result = world.run(alter_partition, request, version)
    response: AlterPartitionResponse = result.response
    codes = tuple(p.error_code for t in response.topics for p in t.partitions)
    if response.error_code != Errors.NONE or (codes and codes[0] != Errors.NONE):
        assert result.records == (), "a rejected change must write nothing"
    return (response.error_code, *codes)


def test_the_leader_shrinks_the_isr_with_one_isr_only_record() -> None:
    world = world_with_topic()
    before = world.partition("t")
    result = world.run(alter_partition, alter_isr_request(world.image, "t", 0, [1, 2]), 3)
    (record,) = result.records
    assert isinstance(record, PartitionChangeRecord)
    assert record.isr == (1, 2) and record.leader == NO_LEADER_CHANGE
    after = world.partition("t")
    assert after.isr == (1, 2) and after.leader == 1
    assert after.leader_epoch == before.leader_epoch
    assert after.partition_epoch == before.partition_epoch + 1
    (answer,) = result.response.topics[0].partitions
    assert (answer.error_code, answer.leader_id, answer.isr) == (Errors.NONE, 1, (1, 2))
    assert answer.partition_epoch == after.partition_epoch
    assert answer.leader_epoch == after.leader_epoch


def test_the_leader_expands_the_isr_again() -> None:
    world = world_with_topic()
    send(world, alter_isr_request(world.image, "t", 0, [1]))
    assert send(world, alter_isr_request(world.image, "t", 0, [1, 3])) == (0, 0)
    assert world.partition("t").isr == (1, 3)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_old_versions_send_bare_broker_ids(version: int) -> None:
    world = world_with_topic()
    request = alter_isr_request(world.image, "t", 0, [1, 3], version=version)
    assert send(world, request, version) == (0, 0)
    assert world.partition("t").isr == (1, 3)


def test_a_stale_broker_epoch_refuses_the_whole_request() -> None:
    world = world_with_topic()
    request = attrs.evolve(alter_isr_request(world.image, "t", 0, [1, 2]), broker_epoch=10**6)
    assert send(world, request) == (Errors.STALE_BROKER_EPOCH,)


def test_an_unknown_topic_id_or_name_depends_on_the_version() -> None:
    world = world_with_topic()
    request = alter_isr_request(world.image, "t", 0, [1, 2])
    unknown = attrs.evolve(request, topics=(attrs.evolve(
        request.topics[0], topic_id=uuid.UUID(int=99),
        topic_name="nope",
    ),))
    assert send(world, unknown, 3) == (0, Errors.UNKNOWN_TOPIC_ID)
    assert send(world, unknown, 1) == (0, Errors.UNKNOWN_TOPIC_OR_PARTITION)


def test_an_unknown_partition_is_refused() -> None:
    world = world_with_topic()
    request = alter_isr_request(world.image, "t", 0, [1, 2])
    topic = request.topics[0]
    missing = attrs.evolve(topic, partitions=(attrs.evolve(topic.partitions[0], partition_index=5),))
    assert send(world, attrs.evolve(request, topics=(missing,))) == (
        0, Errors.UNKNOWN_TOPIC_OR_PARTITION
    )


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"leader_epoch": 1}, Errors.NOT_CONTROLLER),
        ({"partition_epoch": 1}, Errors.NOT_CONTROLLER),
        ({"sender": 2}, Errors.INVALID_REQUEST),
    ],
)
def test_epochs_ahead_of_the_controller_or_a_non_leader_sender_are_refused(
    change: dict[str, int], error: Errors
) -> None:
    world = world_with_topic()
    assert send(world, alter_isr_request(world.image, "t", 0, [1, 2], **change)) == (0, error)


def test_a_stale_leader_epoch_is_fenced_and_a_stale_partition_epoch_is_refused() -> None:
    world = world_with_topic()
    send(world, alter_isr_request(world.image, "t", 0, [1, 2]))  # partition epoch 1
    world.fence(1)  # leader moves to 2: leader epoch 1, partition epoch 2
    stale_leader = alter_isr_request(world.image, "t", 0, [2], leader_epoch=0)
    assert send(world, stale_leader) == (0, Errors.FENCED_LEADER_EPOCH)
    stale_partition = alter_isr_request(world.image, "t", 0, [2], partition_epoch=1)
    assert send(world, stale_partition) == (0, Errors.INVALID_UPDATE_VERSION)
    assert send(world, alter_isr_request(world.image, "t", 0, [2])) == (0, Errors.NONE)


@pytest.mark.parametrize("isr", [[1, 4], [2, 3], [1, 1, 2], []])
def test_an_isr_outside_the_replicas_or_without_the_leader_is_refused(isr: list[int]) -> None:
    world = world_with_topic((1, 2, 3, 4))
    assert send(world, alter_isr_request(world.image, "t", 0, isr)) == (0, Errors.INVALID_REQUEST)


def test_a_recovered_partition_cannot_go_back_to_recovering() -> None:
    world = world_with_topic()
    request = alter_isr_request(world.image, "t", 0, [1], recovery_state=1)
    assert send(world, request) == (0, Errors.INVALID_REQUEST)


@pytest.mark.parametrize(("version", "error"), [(3, Errors.INELIGIBLE_REPLICA), (2, Errors.INELIGIBLE_REPLICA), (1, Errors.OPERATION_NOT_ATTEMPTED)])
def test_a_fenced_replica_cannot_join_the_isr(version: int, error: Errors) -> None:
    world = world_with_topic()
    send(world, alter_isr_request(world.image, "t", 0, [1]))
    world.fence(3)
    request = alter_isr_request(world.image, "t", 0, [1, 3], version=version)
    assert send(world, request, version) == (0, error)


def test_shutting_down_unregistered_or_reregistered_replicas_are_ineligible() -> None:
    world = world_with_topic((1, 2, 3, 4))
    world.run(alter_partition, alter_isr_request(world.image, "t", 0, [1]), 3)
    world.shut_down(2)
    assert send(world, alter_isr_request(world.image, "t", 0, [1, 2])) == (0, Errors.INELIGIBLE_REPLICA)
    request = alter_isr_request(world.image, "t", 0, [1, 3])
    state = request.topics[0].partitions[0].new_isr_with_epochs[1]
    old_epoch = attrs.evolve(state, broker_epoch=state.broker_epoch - 1)
    part = attrs.evolve(request.topics[0].partitions[0], new_isr_with_epochs=(
        request.topics[0].partitions[0].new_isr_with_epochs[0], old_epoch,
    ))
    stale = attrs.evolve(request, topics=(attrs.evolve(request.topics[0], partitions=(part,)),))
    assert send(world, stale) == (0, Errors.INELIGIBLE_REPLICA)
    any_epoch = attrs.evolve(stale, topics=(attrs.evolve(request.topics[0], partitions=(
        attrs.evolve(part, new_isr_with_epochs=(part.new_isr_with_epochs[0], attrs.evolve(state, broker_epoch=-1))),
    )),))
    assert send(world, any_epoch) == (0, Errors.NONE)  # -1: epoch not checked
    gone = UnregisterBrokerRecord(broker_id=3, broker_epoch=world.epoch(3))
    world.fold([*changes_for_broker_removal(world.image, 3), gone])
    assert world.partition("t").isr == (1,)
    assert send(world, alter_isr_request(world.image, "t", 0, [1, 3])) == (
        0, Errors.INELIGIBLE_REPLICA
    )


def test_checks_run_in_kafkas_order() -> None:
    world = world_with_topic()
    send(world, alter_isr_request(world.image, "t", 0, [1, 2, 3]))
    world.fence(1)  # leader 2, leader epoch 1
    # stale leader epoch, wrong sender, stale partition epoch and a bad ISR at once
    everything_wrong = alter_isr_request(
        world.image, "t", 0, [3, 9], sender=3, leader_epoch=0, partition_epoch=0
    )
    assert send(world, everything_wrong) == (0, Errors.FENCED_LEADER_EPOCH)
    wrong_sender = alter_isr_request(world.image, "t", 0, [3, 9], sender=3, partition_epoch=0)
    assert send(world, wrong_sender) == (0, Errors.INVALID_REQUEST)
    stale_partition = alter_isr_request(world.image, "t", 0, [3, 9], partition_epoch=0)
    assert send(world, stale_partition) == (0, Errors.INVALID_UPDATE_VERSION)


def test_a_repeated_change_in_one_request_sees_the_first_one() -> None:
    world = world_with_topic()
    request = alter_isr_request(world.image, "t", 0, [1, 2])
    topic = request.topics[0]
    twice = attrs.evolve(request, topics=(attrs.evolve(
        topic, partitions=(topic.partitions[0], topic.partitions[0])
    ),))
    assert send(world, twice) == (0, Errors.NONE, Errors.INVALID_UPDATE_VERSION)
    assert world.partition("t").partition_epoch == 1


def test_an_unclean_leader_confirms_recovery_and_may_then_grow_the_isr() -> None:
    world = world_with_topic()
    for broker in (2, 3, 1):
        world.fence(broker)
    world.unfence(3)
    unclean = ElectLeadersRequest(
        election_type=1,
        topic_partitions=(ElectLeadersRequestTopicPartitions(topic="t", partitions=(0,)),),
    )
    world.run(elect_leaders, unclean, 2)
    assert world.partition("t").leader == 3
    assert world.partition("t").leader_recovery_state == LeaderRecoveryState.RECOVERING
    world.unfence(1)
    growing = alter_isr_request(world.image, "t", 0, [3, 1], recovery_state=1)
    assert send(world, growing) == (0, Errors.INVALID_REQUEST)  # no growth while RECOVERING
    done = alter_isr_request(world.image, "t", 0, [3], recovery_state=0)
    assert send(world, done) == (0, Errors.NONE)
    assert world.partition("t").leader_recovery_state == LeaderRecoveryState.RECOVERED
    assert send(world, alter_isr_request(world.image, "t", 0, [3, 1])) == (0, Errors.NONE)


@pytest.mark.parametrize("version", range(4))
def test_answers_encode_at_every_version(version: int) -> None:
    world = world_with_topic()
    request = alter_isr_request(world.image, "t", 0, [1, 2], version=version)
    response = world.run(alter_partition, request, version).response
    decoded = decode(AlterPartitionResponse, version, encode(response, version))
    (answer,) = decoded.topics[0].partitions
    assert (answer.error_code, answer.isr, answer.partition_epoch) == (Errors.NONE, (1, 2), 1)
