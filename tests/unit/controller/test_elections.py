"""ElectLeaders, preferred rebalancing, the unclean scan and offline partitions."""

from __future__ import annotations

import pytest

from quorum.controller.alter_partition import alter_partition
from quorum.controller.config_control import incremental_alter_configs
from quorum.controller.elections import (
    elect_leaders,
    offline_partitions,
    preferred_leader_changes,
    unclean_leader_changes,
)
from quorum.controller.image import (
    NO_LEADER,
    ConfigResourceType,
    LeaderRecoveryState,
    TopicPartition,
)
from quorum.wire.codec import decode, encode
from quorum.wire.error_codes import Errors
from quorum.wire.messages.configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequestAlterableConfig,
    IncrementalAlterConfigsRequestAlterConfigsResource,
)
from quorum.wire.messages.elect_leaders import (
    ElectLeadersRequest,
    ElectLeadersRequestTopicPartitions,
    ElectLeadersResponse,
)
from tests.unit.controller.replication_world import (
    World,
    alter_isr_request,
    new_topic,
    set_topic_config,
)

PREFERRED, UNCLEAN = 0, 1


def elect(
    world: World, kind: int, targets: dict[str, tuple[int, ...]] | None
) -> dict[tuple[str, int], int]:
    request = ElectLeadersRequest(
        election_type=kind,
        topic_partitions=None if targets is None else tuple(
            ElectLeadersRequestTopicPartitions(topic=t, partitions=p) for t, p in targets.items()
        ),
    )
    result = world.run(elect_leaders, request, 2)
    response: ElectLeadersResponse = result.response
    assert response.error_code == Errors.NONE
    return {
        (r.topic, p.partition_id): p.error_code
        for r in response.replica_election_results
        for p in r.partition_result
    }


def moved_world() -> World:
    """t-0 on (1, 2, 3) led by 2 after 1 was fenced and came back."""
    world = World()
    world.register(1, 2, 3)
    world.create(new_topic("t", assignments=[(1, 2, 3)]))
    world.fence(1)
    world.unfence(1)
    world.run(alter_partition, alter_isr_request(world.image, "t", 0, [2, 3, 1]), 3)
    assert world.partition("t").leader == 2 and 1 in world.partition("t").isr
    return world


def test_a_preferred_election_gives_leadership_back_to_the_first_replica() -> None:
    world = moved_world()
    before = world.partition("t")
    assert elect(world, PREFERRED, {"t": (0,)}) == {("t", 0): Errors.NONE}
    after = world.partition("t")
    assert after.leader == 1 and after.leader_epoch == before.leader_epoch + 1


def test_a_preferred_election_is_not_needed_when_the_preferred_replica_leads() -> None:
    world = moved_world()
    elect(world, PREFERRED, {"t": (0,)})
    assert elect(world, PREFERRED, {"t": (0,)}) == {("t", 0): Errors.ELECTION_NOT_NEEDED}


def test_a_preferred_election_fails_when_the_preferred_replica_is_down() -> None:
    world = moved_world()
    world.fence(1)
    assert elect(world, PREFERRED, {"t": (0,)}) == {("t", 0): Errors.PREFERRED_LEADER_NOT_AVAILABLE}
    assert world.partition("t").leader == 2


def test_unknown_topics_and_partitions_are_reported() -> None:
    world = moved_world()
    assert elect(world, PREFERRED, {"t": (7,), "nope": (0,)}) == {
        ("t", 7): Errors.UNKNOWN_TOPIC_OR_PARTITION,
        ("nope", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION,
    }


def test_a_null_topic_list_elects_everywhere_and_leaves_out_what_needs_nothing() -> None:
    world = moved_world()
    world.create(new_topic("calm", assignments=[(3, 1)]))
    assert elect(world, PREFERRED, None) == {("t", 0): Errors.NONE}
    assert elect(world, PREFERRED, None) == {}


def test_an_unknown_election_type_is_an_invalid_request() -> None:
    world = moved_world()
    result = world.run(elect_leaders, ElectLeadersRequest(election_type=7), 2)
    assert result.response.error_code == Errors.INVALID_REQUEST and result.records == ()


def offline_world() -> World:
    """t-0 on (1, 2, 3) offline: 1 was the last ISR member and is fenced; 2, 3 alive."""
    world = World()
    world.register(1, 2, 3)
    world.create(new_topic("t", assignments=[(1, 2, 3)]))
    for broker in (2, 3, 1):
        world.fence(broker)
    world.unfence(2)
    world.unfence(3)
    p = world.partition("t")
    assert p.leader == NO_LEADER and p.isr == (1,)
    return world


def test_an_unclean_election_by_request_picks_a_live_replica_outside_the_isr() -> None:
    world = offline_world()
    assert elect(world, UNCLEAN, {"t": (0,)}) == {("t", 0): Errors.NONE}
    p = world.partition("t")
    assert p.leader == 2 and p.isr == (2,)
    assert p.leader_recovery_state == LeaderRecoveryState.RECOVERING
    assert elect(world, UNCLEAN, {"t": (0,)}) == {("t", 0): Errors.ELECTION_NOT_NEEDED}


def test_an_unclean_election_without_any_live_replica_is_refused() -> None:
    world = offline_world()
    world.fence(2)
    world.fence(3)
    assert elect(world, UNCLEAN, {"t": (0,)}) == {("t", 0): Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE}


def test_preferred_changes_only_move_to_an_active_in_sync_preferred_replica() -> None:
    world = moved_world()
    (record,) = preferred_leader_changes(world.image)
    assert record.leader == 1
    world.fence(1)
    assert preferred_leader_changes(world.image) == []
    world.unfence(1)  # back, but not in the ISR until its leader says so
    assert 1 not in world.partition("t").isr
    assert preferred_leader_changes(world.image) == []


def test_the_unclean_scan_only_touches_topics_that_allow_it() -> None:
    world = offline_world()
    assert offline_partitions(world.image) == [TopicPartition("t", 0)]
    assert unclean_leader_changes(world.image) == []
    (forced,) = unclean_leader_changes(world.image, unclean_default=True)
    assert forced.leader == 2
    allow = set_topic_config("t", "unclean.leader.election.enable", "true")
    world.run(incremental_alter_configs, allow, 1)
    records = unclean_leader_changes(world.image)
    world.fold(records)
    assert world.partition("t").leader == 2
    assert offline_partitions(world.image) == []


def test_a_topic_config_of_false_overrides_an_enabled_cluster_default() -> None:
    world = offline_world()
    cluster = IncrementalAlterConfigsRequest(resources=(
        IncrementalAlterConfigsRequestAlterConfigsResource(
            resource_type=ConfigResourceType.BROKER, resource_name="",
            configs=(IncrementalAlterConfigsRequestAlterableConfig(
                name="unclean.leader.election.enable", config_operation=0, value="true"
            ),),
        ),
    ))
    world.run(incremental_alter_configs, cluster, 1)
    assert len(unclean_leader_changes(world.image)) == 1
    deny = set_topic_config("t", "unclean.leader.election.enable", "false")
    world.run(incremental_alter_configs, deny, 1)
    assert unclean_leader_changes(world.image) == []


def test_offline_partitions_are_listed_by_topic_and_index() -> None:
    world = World()
    world.register(1, 2)
    world.create(new_topic("b", assignments=[(1,), (2,)]), new_topic("a", assignments=[(1,)]))
    world.fence(1)
    assert offline_partitions(world.image) == [TopicPartition("a", 0), TopicPartition("b", 0)]


@pytest.mark.parametrize("version", range(3))
def test_answers_encode_at_every_version(version: int) -> None:
    world = moved_world()
    request = ElectLeadersRequest(
        election_type=0,
        topic_partitions=(ElectLeadersRequestTopicPartitions(topic="t", partitions=(0, 5)),),
    )
    response = world.run(elect_leaders, request, version).response
    decoded = decode(ElectLeadersResponse, version, encode(response, version))
    codes = [p.error_code for p in decoded.replica_election_results[0].partition_result]
    assert codes == [Errors.NONE, Errors.UNKNOWN_TOPIC_OR_PARTITION]
