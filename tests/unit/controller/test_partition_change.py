"""The partition change builder and the broker removal / unfence changes."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from quorum.controller import delta
from quorum.controller.delta import NO_LEADER_CHANGE, merge_partition_change
from quorum.controller.image import NO_LEADER, LeaderRecoveryState, PartitionRegistration
from quorum.controller.partition_change import (
    Election,
    build_partition_change,
    changes_for_broker_removal,
    changes_for_broker_unfence,
    complete_reassignment,
)
from quorum.controller.replication_control import create_topics
from quorum.wire.messages.metadata_records import PartitionChangeRecord
from quorum.wire.messages.topics import CreateTopicsRequest
from tests.unit.controller.replication_world import World, new_topic, set_topic_config

TOPIC_ID = uuid.UUID(int=42)


def part(
    replicas: tuple[int, ...], isr: tuple[int, ...], leader: int, **kw: Any
) -> PartitionRegistration:
    return PartitionRegistration(replicas=replicas, isr=isr, leader=leader, **kw)


def build(
    p: PartitionRegistration, acceptable: set[int], **kw: Any
) -> PartitionChangeRecord | None:
    return build_partition_change(
        p, topic_id=TOPIC_ID, partition_id=0, acceptable=acceptable.__contains__, **kw
    )


def test_an_isr_shrink_keeps_the_leader_and_writes_only_the_isr() -> None:
    record = build(part((1, 2, 3), (1, 2, 3), 1), {1, 2, 3}, isr=(1, 2))
    assert record is not None
    assert record.isr == (1, 2)
    assert record.leader == NO_LEADER_CHANGE
    assert record.replicas is None and record.leader_recovery_state == -1


def test_nothing_to_change_gives_no_record() -> None:
    assert build(part((1, 2, 3), (1, 2, 3), 1), {1, 2, 3}, isr=(1, 2, 3)) is None


def test_a_leader_leaving_the_isr_hands_over_to_the_first_valid_replica_in_replica_order() -> None:
    record = build(part((3, 1, 2), (1, 2, 3), 1), {1, 2, 3}, isr=(2, 3))
    assert record is not None
    assert record.leader == 3  # replica order, not ISR order
    assert record.isr == (2, 3)


def test_an_online_election_never_leaves_the_isr() -> None:
    # the only ISR member is not acceptable; 2 and 3 are alive but out of sync
    record = build(part((1, 2, 3), (1,), 1), {2, 3})
    assert record is not None
    assert record.leader == NO_LEADER
    assert record.isr is None  # the last member stays in the ISR (no empty ISR)


def test_an_unclean_election_takes_a_replica_outside_the_isr_and_marks_it_recovering() -> None:
    record = build(part((1, 2, 3), (1,), NO_LEADER), {2, 3}, election=Election.UNCLEAN)
    assert record is not None
    assert record.leader == 2
    assert record.isr == (2,)
    assert record.leader_recovery_state == LeaderRecoveryState.RECOVERING


def test_an_unclean_election_prefers_a_clean_leader_when_one_exists() -> None:
    record = build(part((1, 2, 3), (1, 3), 1), {2, 3}, election=Election.UNCLEAN)
    assert record is not None
    assert record.leader == 3 and record.isr is None
    assert record.leader_recovery_state == -1


def test_a_preferred_election_moves_leadership_to_the_first_replica() -> None:
    record = build(part((1, 2, 3), (1, 2, 3), 2), {1, 2, 3}, election=Election.PREFERRED)
    assert record is not None and record.leader == 1


def test_a_preferred_election_keeps_a_valid_leader_when_the_preferred_replica_is_down() -> None:
    assert build(part((1, 2, 3), (1, 2, 3), 2), {2, 3}, election=Election.PREFERRED) is None


def test_dropping_a_replica_bumps_the_leader_epoch_even_without_a_new_leader() -> None:
    current = part((1, 2, 3), (1, 2), 1, leader_epoch=4)
    record = build(current, {1, 2, 3}, replicas=(1, 2))
    assert record is not None
    assert record.leader == 1  # set explicitly: replay bumps the leader epoch
    assert merge_partition_change(current, record).leader_epoch == 5


def test_a_reassignment_completes_once_the_isr_holds_every_target_replica() -> None:
    assert complete_reassignment((4, 1), (1,), (4,), (1,)) is None
    assert complete_reassignment((4, 1), (1,), (4,), (1, 4)) == ((4,), (4,))
    assert complete_reassignment((4, 5, 1), (1,), (4, 5), (1, 4)) is None
    assert complete_reassignment((1, 2), (), (), (1, 2)) is None  # nothing in progress


def test_a_completed_reassignment_that_removes_the_leader_elects_a_new_one() -> None:
    current = part((4, 1), (1,), 1, adding_replicas=(4,), removing_replicas=(1,))
    record = build(current, {1, 4}, isr=(1, 4))
    assert record is not None
    after = merge_partition_change(current, record)
    assert after.replicas == (4,) and after.isr == (4,) and after.leader == 4
    assert after.adding_replicas == () and after.removing_replicas == ()


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[PartitionRegistration, set[int], tuple[int, ...], Election]:
    replicas = tuple(draw(st.lists(st.integers(0, 6), min_size=1, max_size=5, unique=True)))
    isr = tuple(draw(st.lists(st.sampled_from(replicas), min_size=1, unique=True)))
    leader = draw(st.sampled_from((NO_LEADER, *isr)))
    acceptable = set(draw(st.lists(st.integers(0, 6), unique=True)))
    target = tuple(draw(st.lists(st.sampled_from(replicas), unique=True)))
    election = draw(st.sampled_from(list(Election)))
    return part(replicas, isr, leader), acceptable, target, election


@settings(max_examples=200)
@given(scenarios())
def test_any_change_keeps_the_leader_in_the_isr_and_only_unclean_leaves_it(
    scenario: tuple[PartitionRegistration, set[int], tuple[int, ...], Election],
) -> None:
    current, acceptable, target, election = scenario
    record = build(current, acceptable, isr=target, election=election)
    after = current if record is None else merge_partition_change(current, record)
    assert after.isr and set(after.isr) <= set(after.replicas)
    assert after.leader == NO_LEADER or after.leader in after.isr
    if after.leader != current.leader and after.leader != NO_LEADER:
        assert after.leader in acceptable
    if after.leader != NO_LEADER and after.leader not in target:
        assert election is Election.UNCLEAN
        assert after.isr == (after.leader,)
        assert after.leader_recovery_state == LeaderRecoveryState.RECOVERING
    assert after.leader_epoch >= current.leader_epoch


# -- broker removal and unfencing on folded images ----------------------------------------


def three_broker_world() -> World:
    world = World()
    world.register(1, 2, 3)
    world.create(new_topic("t", partitions=1, rf=3, configs=None, assignments=[(1, 2, 3)]))
    return world


def test_fencing_the_leader_moves_leadership_to_the_next_isr_replica() -> None:
    world = three_broker_world()
    before = world.partition("t")
    world.fence(1)
    after = world.partition("t")
    assert after.leader == 2 and after.isr == (2, 3)
    assert after.leader_epoch == before.leader_epoch + 1


def test_fencing_a_follower_only_shrinks_the_isr() -> None:
    world = three_broker_world()
    records = world.fence(3)
    assert world.partition("t").leader == 1 and world.partition("t").isr == (1, 2)
    assert isinstance(records[0], PartitionChangeRecord)
    assert records[0].leader == NO_LEADER_CHANGE


def test_the_last_isr_member_stays_in_the_isr_and_the_partition_goes_offline() -> None:
    world = three_broker_world()
    world.fence(2)
    world.fence(3)
    world.fence(1)
    after = world.partition("t")
    assert after.leader == NO_LEADER
    assert after.isr == (1,)  # Kafka without ELR: only 1 may lead again cleanly


def test_broker_removal_elects_outside_the_isr_only_where_the_topic_allows_it() -> None:
    from quorum.controller.config_control import incremental_alter_configs

    world = three_broker_world()
    world.fence(2)
    world.fence(3)
    world.unfence(2)
    world.unfence(3)  # 2 and 3 are alive again but out of the ISR
    assert world.partition("t").isr == (1,)
    (offline,) = changes_for_broker_removal(world.image, 1)  # clean: offline, not unclean
    assert offline.leader == NO_LEADER and offline.isr is None
    unclean = set_topic_config("t", "unclean.leader.election.enable", "true")
    world.run(incremental_alter_configs, unclean, 1)
    world.fence(1)
    after = world.partition("t")
    assert after.leader == 2 and after.isr == (2,)
    assert after.leader_recovery_state == LeaderRecoveryState.RECOVERING


def test_unfencing_the_last_isr_member_makes_it_leader_again() -> None:
    world = three_broker_world()
    for broker in (2, 3, 1):
        world.fence(broker)
    assert world.partition("t").leader == NO_LEADER
    assert changes_for_broker_unfence(world.image, 2) == []  # 2 is not in the ISR
    world.unfence(1)
    after = world.partition("t")
    assert after.leader == 1 and after.isr == (1,)


def test_a_broker_in_controlled_shutdown_is_removed_from_leadership_and_isrs() -> None:
    world = three_broker_world()
    world.shut_down(1)
    after = world.partition("t")
    assert after.leader == 2 and 1 not in after.isr


def test_removal_changes_cover_every_topic_the_broker_replicates() -> None:
    world = World()
    world.register(1, 2, 3)
    request = CreateTopicsRequest(topics=(
        new_topic("a", assignments=[(1, 2), (2, 1)]), new_topic("b", assignments=[(3, 1)]),
    ))
    world.run(create_topics, request, 5)
    records = changes_for_broker_removal(world.image, 1)
    assert len(records) == 3
    world.fold(records)
    for _topic, _index, p in world.image.iter_partitions():
        assert 1 not in p.isr and p.leader != 1


def test_equal_replica_lists_share_one_tuple_and_the_table_is_bounded() -> None:
    first, second = delta.shared_ids([7, 8, 9]), delta.shared_ids((7, 8, 9))
    assert first == (7, 8, 9) and first is second
    assert delta._shared_tuple.cache_info().maxsize == 100_000
