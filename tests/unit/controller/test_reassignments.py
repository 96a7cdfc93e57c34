"""Partition reassignments: start, completion through AlterPartition, cancel, list."""

from __future__ import annotations

import random

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quorum.controller.alter_partition import alter_partition
from quorum.controller.config_control import incremental_alter_configs
from quorum.controller.controller import QuorumController
from quorum.controller.image import LeaderRecoveryState, MetadataImage
from quorum.controller.operations import Operation
from quorum.controller.reassignments import (
    alter_partition_reassignments,
    list_partition_reassignments,
    list_partition_reassignments_steps,
)
from quorum.controller.results import ControllerContext
from quorum.controller.slicing import MAX_UNITS_PER_SLICE
from quorum.wire.codec import decode, encode
from quorum.wire.error_codes import Errors
from quorum.wire.messages.partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsRequestReassignablePartition,
    AlterPartitionReassignmentsRequestReassignableTopic,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequestTopics,
    ListPartitionReassignmentsResponse,
)
from quorum.wire.messages.partition_reassignments import (
    ListPartitionReassignmentsResponseOngoingPartitionReassignment as Ongoing,
)
from quorum.wire.messages.partition_reassignments import (
    ListPartitionReassignmentsResponseOngoingTopicReassignment as OngoingTopic,
)
from tests.unit.controller.image_strategies import TOPIC_NAMES, images
from tests.unit.controller.large_images import large_image
from tests.unit.controller.replication_world import (
    CONFIG,
    World,
    alter_isr_request,
    new_topic,
    set_topic_config,
)

Target = tuple[int, ...] | None


def six_brokers() -> World:
    world = World()
    world.register(1, 2, 3, 4, 5, 6)
    world.create(new_topic("t", assignments=[(1, 2, 3), (2, 3, 1)]))
    return world


def reassign(world: World, targets: dict[tuple[str, int], Target]) -> dict[tuple[str, int], int]:
    by_topic: dict[str, list[AlterPartitionReassignmentsRequestReassignablePartition]] = {}
    for (topic, index), replicas in targets.items():
        by_topic.setdefault(topic, []).append(
            AlterPartitionReassignmentsRequestReassignablePartition(
                partition_index=index, replicas=replicas
            )
        )
    request = AlterPartitionReassignmentsRequest(topics=tuple(
        AlterPartitionReassignmentsRequestReassignableTopic(name=n, partitions=tuple(p))
        for n, p in by_topic.items()
    ))
    result = world.run(alter_partition_reassignments, request, 0)
    answers = {
        (t.name, p.partition_index): p.error_code
        for t in result.response.responses
        for p in t.partitions
    }
    if any(code != Errors.NONE for code in answers.values()) and len(answers) == 1:
        assert result.records == ()
    return answers


def alter_isr(world: World, isr: list[int], index: int = 0) -> int:
    result = world.run(alter_partition, alter_isr_request(world.image, "t", index, isr), 3)
    return result.response.topics[0].partitions[0].error_code


def test_a_move_first_adds_the_target_replicas_beside_the_old_ones() -> None:
    world = six_brokers()
    assert reassign(world, {("t", 0): (4, 5, 6)}) == {("t", 0): Errors.NONE}
    p = world.partition("t")
    assert p.replicas == (4, 5, 6, 1, 2, 3)
    assert p.adding_replicas == (4, 5, 6) and p.removing_replicas == (1, 2, 3)
    assert p.isr == (1, 2, 3) and p.leader == 1  # nothing moves before the new replicas sync


def test_the_move_completes_when_the_leader_reports_every_target_replica_in_sync() -> None:
    world = six_brokers()
    reassign(world, {("t", 0): (4, 5, 6)})
    assert alter_isr(world, [1, 2, 3, 4, 5]) == Errors.NONE  # 6 still behind: not done
    assert world.partition("t").is_reassigning
    before = world.partition("t")
    # completing the move removes the leader: the record is written, the sender must refetch
    assert alter_isr(world, [1, 2, 3, 4, 5, 6]) == Errors.NEW_LEADER_ELECTED
    after = world.partition("t")
    assert after.replicas == (4, 5, 6) and after.isr == (4, 5, 6)
    assert after.adding_replicas == () and after.removing_replicas == ()
    assert after.leader == 4 and after.leader_epoch == before.leader_epoch + 1


def test_a_move_that_keeps_the_leader_completes_without_an_error() -> None:
    world = six_brokers()
    reassign(world, {("t", 0): (1, 4)})
    p = world.partition("t")
    assert p.replicas == (1, 4, 2, 3) and p.removing_replicas == (2, 3)
    before = p.leader_epoch
    assert alter_isr(world, [1, 2, 3, 4]) == Errors.NONE
    after = world.partition("t")
    assert after.replicas == (1, 4) and after.isr == (1, 4) and after.leader == 1
    assert after.leader_epoch == before + 1  # removed replicas are fenced by a new epoch


def test_reordering_the_same_replicas_completes_at_once() -> None:
    world = six_brokers()
    assert reassign(world, {("t", 0): (3, 2, 1)}) == {("t", 0): Errors.NONE}
    p = world.partition("t")
    assert p.replicas == (3, 2, 1) and not p.is_reassigning and p.leader == 1


def test_reassigning_to_the_current_replicas_changes_nothing() -> None:
    world = six_brokers()
    before = world.partition("t")
    assert reassign(world, {("t", 0): (1, 2, 3)}) == {("t", 0): Errors.NONE}
    assert world.partition("t") == before


@pytest.mark.parametrize("target", [(1, 9), (4, 4), ()])
def test_a_bad_target_is_refused(target: tuple[int, ...]) -> None:
    world = six_brokers()
    assert reassign(world, {("t", 0): target}) == {("t", 0): Errors.INVALID_REPLICA_ASSIGNMENT}
    assert not world.partition("t").is_reassigning


def test_unknown_topics_and_partitions_are_refused() -> None:
    world = six_brokers()
    assert reassign(world, {("t", 9): (4,), ("nope", 0): (4,)}) == {
        ("t", 9): Errors.UNKNOWN_TOPIC_OR_PARTITION,
        ("nope", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION,
    }


def test_cancelling_puts_the_original_replicas_back() -> None:
    world = six_brokers()
    reassign(world, {("t", 0): (4, 5, 6)})
    alter_isr(world, [1, 2, 3, 4])  # 4 caught up, 5 and 6 not yet
    assert reassign(world, {("t", 0): None}) == {("t", 0): Errors.NONE}
    p = world.partition("t")
    assert p.replicas == (1, 2, 3) and p.isr == (1, 2, 3) and p.leader == 1
    assert not p.is_reassigning


def test_cancelling_without_a_reassignment_is_refused() -> None:
    world = six_brokers()
    assert reassign(world, {("t", 0): None}) == {("t", 0): Errors.NO_REASSIGNMENT_IN_PROGRESS}


def test_a_cancel_that_needs_an_unclean_election_needs_the_topic_to_allow_it() -> None:
    world = six_brokers()
    reassign(world, {("t", 0): (4, 5, 6)})
    alter_isr(world, [1, 4])  # 2 and 3 fell out, 4 caught up: the move is not done
    world.fence(1)  # leader 4 now, ISR [4]: only an adding replica is in sync
    assert world.partition("t").isr == (4,)
    assert reassign(world, {("t", 0): None}) == {("t", 0): Errors.INVALID_REPLICA_ASSIGNMENT}
    allow = set_topic_config("t", "unclean.leader.election.enable", "true")
    world.run(incremental_alter_configs, allow, 1)
    assert reassign(world, {("t", 0): None}) == {("t", 0): Errors.NONE}
    p = world.partition("t")
    assert p.replicas == (1, 2, 3) and not p.is_reassigning
    # the revert's ISR is [1], which is fenced: the allowed unclean election takes 2
    assert p.leader == 2 and p.isr == (2,)
    assert p.leader_recovery_state == LeaderRecoveryState.RECOVERING


def test_listing_shows_ongoing_reassignments_only() -> None:
    world = six_brokers()
    reassign(world, {("t", 1): (2, 3, 4)})

    def listed(topics: tuple[ListPartitionReassignmentsRequestTopics, ...] | None) -> object:
        request = ListPartitionReassignmentsRequest(topics=topics)
        result = world.run(list_partition_reassignments, request, 0)
        assert result.records == ()
        return [
            (t.name, p.partition_index, p.replicas, p.adding_replicas, p.removing_replicas)
            for t in result.response.topics
            for p in t.partitions
        ]

    ongoing = [("t", 1, (2, 3, 4, 1), (4,), (1,))]
    assert listed(None) == ongoing
    assert listed((ListPartitionReassignmentsRequestTopics(name="t", partition_indexes=(0, 1)),)) == ongoing
    assert listed((ListPartitionReassignmentsRequestTopics(name="t", partition_indexes=(0,)),)) == []
    assert listed((ListPartitionReassignmentsRequestTopics(name="nope", partition_indexes=(0,)),)) == []


def test_the_controllers_static_unclean_setting_also_allows_an_unclean_cancel() -> None:
    world = six_brokers()
    world.config = attrs.evolve(world.config, unclean_leader_election_enable=True)
    reassign(world, {("t", 0): (4, 5, 6)})
    alter_isr(world, [1, 4])
    world.fence(1)
    assert reassign(world, {("t", 0): None}) == {("t", 0): Errors.NONE}
    assert world.partition("t").replicas == (1, 2, 3)


def test_answers_encode_at_version_zero() -> None:
    world = six_brokers()
    reassign(world, {("t", 0): (4, 5, 6), ("t", 7): (1,)})
    request = AlterPartitionReassignmentsRequest(topics=(
        AlterPartitionReassignmentsRequestReassignableTopic(name="t", partitions=(
            AlterPartitionReassignmentsRequestReassignablePartition(partition_index=1, replicas=None),
        )),
    ))
    response = world.run(alter_partition_reassignments, request, 0).response
    decoded = decode(AlterPartitionReassignmentsResponse, 0, encode(response, 0))
    assert decoded.responses[0].partitions[0].error_code == Errors.NO_REASSIGNMENT_IN_PROGRESS
    listed = world.run(list_partition_reassignments, ListPartitionReassignmentsRequest(), 0)
    again = decode(ListPartitionReassignmentsResponse, 0, encode(listed.response, 0))
    assert again.topics[0].partitions[0].adding_replicas == (4, 5, 6)


# -- listing in slices ------------------------------------------------------------------------


def oracle_listing(
    image: MetadataImage, request: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse:
    """Every wanted partition looked at in one pass (the plain way)."""
    if request.topics is None:
        names = sorted(image.topic_ids_by_name)
        wanted = [(n, sorted(image.topic(n).partitions)) for n in names]  # type: ignore[union-attr]
    else:
        wanted = [(e.name, list(e.partition_indexes)) for e in request.topics]
    topics = []
    for name, indexes in wanted:
        topic = image.topic(name)
        if topic is None:
            continue
        partitions = tuple(
            Ongoing(partition_index=i, replicas=p.replicas, adding_replicas=p.adding_replicas,
                    removing_replicas=p.removing_replicas)
            for i in indexes
            if (p := topic.partition(i)) is not None and p.is_reassigning
        )
        if partitions:
            topics.append(OngoingTopic(name=name, partitions=partitions))
    return ListPartitionReassignmentsResponse(error_message=None, topics=tuple(topics))


CTX = ControllerContext(config=CONFIG, now_ms=0, next_offset=0, rng=random.Random(0))


def listed_in_slices(
    image: MetadataImage, request: ListPartitionReassignmentsRequest
) -> tuple[ListPartitionReassignmentsResponse, list[int]]:
    operation = Operation("List", list_partition_reassignments_steps(image, request, 0, CTX))
    units = []
    while not operation.done:
        assert operation.step() == []  # a read writes nothing
        units.append(operation.last_units)
    assert operation.response is not None
    return operation.response, units


@settings(max_examples=60, deadline=None)
@given(images(), st.data())
def test_a_listing_in_slices_is_the_plain_listing(image: MetadataImage, data: st.DataObject) -> None:
    named = st.builds(
        ListPartitionReassignmentsRequestTopics,
        name=st.sampled_from((*TOPIC_NAMES, "nope")),
        partition_indexes=st.lists(st.integers(0, 3), max_size=4).map(tuple),
    )
    topics = data.draw(st.none() | st.lists(named, max_size=4).map(tuple))
    request = ListPartitionReassignmentsRequest(topics=topics)
    answer, _ = listed_in_slices(image, request)
    assert answer == oracle_listing(image, request)
    assert list_partition_reassignments(image, request, 0, CTX).response == answer


def test_listing_every_reassignment_of_20000_partitions_takes_bounded_slices() -> None:
    image = large_image({"big": 20_000, "other": 1_500, "zero": 0}, reassigning_every=7)
    request = ListPartitionReassignmentsRequest(topics=None)
    answer, units = listed_in_slices(image, request)
    assert answer == oracle_listing(image, request)
    assert sum(len(t.partitions) for t in answer.topics) == 2858 + 215
    assert len(units) > 20 and max(units) <= MAX_UNITS_PER_SLICE
    assert sum(units) == 21_500


def test_the_controller_runs_a_listing_of_every_partition_as_a_sliced_command() -> None:
    image = large_image({"big": 5_000}, reassigning_every=3)
    controller = QuorumController(CONFIG, rng=random.Random(1))
    controller.load_snapshot(image)
    controller.activate(0, next_offset=image.provenance.offset, epoch=2)
    request = ListPartitionReassignmentsRequest(topics=None)
    operation = controller.start(request, 0, now_ms=0, next_offset=image.provenance.offset + 1)
    steps = 0
    while not operation.done:
        assert operation.step() == []
        steps += 1
        assert operation.last_units <= MAX_UNITS_PER_SLICE
    assert steps > 5  # five slices of partitions, then the answer
    assert operation.response == oracle_listing(image, request)
