"""ListGroups, DescribeGroups and DeleteGroups."""

from __future__ import annotations

from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
)
from tests.unit.broker.group.harness import Harness, stable_group


def test_list_groups_shows_state_and_type_and_filters_by_state() -> None:
    h = Harness()
    stable_group(h, "busy", 1)
    h.commit("idle", {("t", 0): 1})
    listed = h.call(ListGroupsRequest(), 5)
    assert [(g.group_id, g.group_state, g.group_type) for g in listed.groups] == [
        ("busy", "Stable", "classic"), ("idle", "Empty", "classic"),
    ]
    only_empty = h.call(ListGroupsRequest(states_filter=("empty",)), 4)
    assert [g.group_id for g in only_empty.groups] == ["idle"]
    consumer_type = h.call(ListGroupsRequest(types_filter=("consumer",)), 5)
    assert consumer_type.groups == ()


def test_describe_shows_members_with_assignments_when_stable() -> None:
    h = Harness()
    (a, b), _ = stable_group(h, "g", 2)
    described = h.call(DescribeGroupsRequest(groups=("g",)), 5).groups[0]
    assert described.error_code == Errors.NONE
    assert (described.group_state, described.protocol_type, described.protocol_data) == (
        "Stable", "consumer", "range",
    )
    assert {(m.member_id, bytes(m.member_assignment)) for m in described.members} == {
        (a, a.encode()), (b, b.encode()),
    }
    assert all(m.client_id == "client" and m.client_host == "/127.0.0.1" for m in described.members)


def test_describe_of_an_unknown_group_is_dead_before_v6_and_not_found_from_v6() -> None:
    h = Harness()
    old = h.call(DescribeGroupsRequest(groups=("nope",)), 5).groups[0]
    new = h.call(DescribeGroupsRequest(groups=("nope",)), 6).groups[0]
    assert (old.error_code, old.group_state) == (Errors.NONE, "Dead")
    assert (new.error_code, new.group_state) == (Errors.GROUP_ID_NOT_FOUND, "Dead")
    assert new.error_message == "Group nope not found."


def test_delete_groups_removes_an_empty_group_and_its_offsets() -> None:
    h = Harness()
    h.commit("idle", {("t", 0): 1})
    response = h.call(DeleteGroupsRequest(groups_names=("idle",)), 2)
    assert [(r.group_id, r.error_code) for r in response.results] == [("idle", Errors.NONE)]
    assert h.coordinator.group_state("idle") is None
    assert h.fetch("idle", "t", 0) == {0: -1}
    assert [r.value for r in h.log[0][-2:]] == [None, None]  # offset and group tombstones


def test_delete_groups_refuses_a_group_with_members_and_an_unknown_one() -> None:
    h = Harness()
    stable_group(h, "busy", 1)
    response = h.call(DeleteGroupsRequest(groups_names=("busy", "nope")), 2)
    assert [r.error_code for r in response.results] == [
        Errors.NON_EMPTY_GROUP, Errors.GROUP_ID_NOT_FOUND,
    ]
    assert h.coordinator.group_state("busy") == "Stable"


def test_a_delete_whose_tombstones_fail_leaves_the_group_as_it_was() -> None:
    h = Harness()
    h.commit("idle", {("t", 0): 1})
    h.auto_commit = False
    token = h.send(DeleteGroupsRequest(groups_names=("idle",)), 2)
    assert h.answer(token) is None
    h.fail_held(Errors.NOT_ENOUGH_REPLICAS)
    assert h.answer(token).results[0].error_code == Errors.COORDINATOR_NOT_AVAILABLE
    assert h.coordinator.group_state("idle") == "Empty"
    assert h.fetch("idle", "t", 0) == {0: 1}


def test_describe_hides_metadata_and_assignments_while_rebalancing() -> None:
    h = Harness()
    stable_group(h, "g", 1)
    h.join("g", version=3)  # a newcomer: PreparingRebalance
    described = h.call(DescribeGroupsRequest(groups=("g",)), 5).groups[0]
    assert described.group_state == "PreparingRebalance" and described.protocol_data == ""
    assert all(bytes(m.member_assignment) == b"" and bytes(m.member_metadata) == b""
               for m in described.members)


def test_groups_of_a_loading_partition_are_listed_with_coordinator_load_in_progress() -> None:
    h = Harness(load=False)
    h.take(h.coordinator.begin_load(0, now_ms=0))
    assert h.call(ListGroupsRequest(), 4).error_code == Errors.COORDINATOR_LOAD_IN_PROGRESS
    described = h.call(DescribeGroupsRequest(groups=("g",)), 5).groups[0]
    assert described.error_code == Errors.COORDINATOR_LOAD_IN_PROGRESS
