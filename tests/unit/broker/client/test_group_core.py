"""GroupCore scenarios: joining, leading, rebalancing, being fenced, losing the coordinator."""

from __future__ import annotations

import re

import pytest

import broker.client.group_core as group_core
from broker.client.assignors import RangeAssignor
from broker.client.cluster import ClusterView, cluster_view_from_metadata
from broker.client.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from broker.client.errors import KafkaError
from broker.client.group_core import (
    AssignmentChange,
    FindCoordinator,
    GroupCore,
    JoinPlan,
    MemberState,
    PrepareJoin,
    SyncPlan,
)
from broker.client.group_requests import Coordinator
from broker.client.settings import consumer_settings
from broker.client.sticky_assignor import CooperativeStickyAssignor
from broker.client.types import TopicPartition
from quorum.wire.error_codes import Errors
from quorum.wire.messages import JoinGroupResponse, JoinGroupResponseMember, SyncGroupResponse
from tests.unit.broker.client.metadata_helpers import metadata

VIEW = cluster_view_from_metadata(metadata({"t": [(1, 0)] * 4}))
COORDINATOR = Coordinator(2, "127.0.0.1", 9002)
T = [TopicPartition("t", p) for p in range(4)]


def new_core(*, cooperative: bool = False, instance: str | None = None) -> GroupCore:
    props = {"bootstrap.servers": "b:1", "group.id": "g", "retry.backoff.ms": "100"}
    if instance is not None:
        props["group.instance.id"] = instance
    settings = consumer_settings(props)
    assignor = CooperativeStickyAssignor() if cooperative else RangeAssignor()
    core = GroupCore(settings, [assignor])
    core.subscribe(frozenset({"t"}))
    return core


def step(core: GroupCore, now: float = 0.0, view: ClusterView = VIEW) -> object:
    return core.next_step(now, view)


def found(core: GroupCore) -> None:
    assert isinstance(step(core), FindCoordinator)
    core.handle_coordinator(COORDINATOR, Errors.NONE, 0.0)


def join(core: GroupCore) -> JoinPlan:
    plan = step(core)
    if isinstance(plan, PrepareJoin):
        core.join_prepared()
        plan = step(core)
    assert isinstance(plan, JoinPlan)
    return plan


def joined(member: str, generation: int, *, leader: str,
           members: dict[str, Subscription] | None = None) -> JoinGroupResponse:
    return JoinGroupResponse(
        generation_id=generation, protocol_name="range", leader=leader, member_id=member,
        members=tuple(JoinGroupResponseMember(member_id=m, metadata=encode_subscription(s))
                      for m, s in (members or {}).items()),
    )


def synced(*partitions: TopicPartition) -> SyncGroupResponse:
    return SyncGroupResponse(assignment=encode_assignment(Assignment(partitions=partitions)))


def test_the_transition_table_in_the_docstring_is_the_one_the_code_enforces() -> None:
    doc = group_core.__doc__ or ""
    rows = re.findall(r"^\s{4}([A-Z_]+)\s+([A-Z_]+)\s{2,}\S", doc, re.MULTILINE)
    table = {(MemberState[a], MemberState[b]) for a, b in rows if a != "from"}
    assert table == group_core.TRANSITIONS
    core = new_core()
    with pytest.raises(AssertionError, match="UNJOINED -> STABLE"):
        core._transition(MemberState.STABLE)


def test_a_new_member_asks_for_an_id_then_leads_and_assigns_the_group() -> None:
    core = new_core()
    found(core)
    first = join(core)
    assert (first.node, first.request.member_id, first.request.protocol_type) == (2, "", "consumer")
    assert decode_subscription(first.request.protocols[0].metadata).topics == ("t",)
    core.handle_join_response(JoinGroupResponse(error_code=Errors.MEMBER_ID_REQUIRED,
                                                member_id="m-1"), 0.0)
    assert join(core).request.member_id == "m-1"
    others = {"m-1": Subscription(topics=("t",)), "m-2": Subscription(topics=("t",))}
    assert core.heartbeat_target() is None  # no generation yet
    core.handle_join_response(joined("m-1", 1, leader="m-1", members=others), 0.0)
    # heartbeats start with the JoinGroup answer, as Kafka's heartbeat thread does
    early = core.heartbeat_target()
    assert early is not None and early.generation == 1
    plan = step(core)
    assert isinstance(plan, SyncPlan) and plan.generation == 1
    sent = {a.member_id: decode_assignment(a.assignment).partitions
            for a in plan.request.assignments}
    assert sent == {"m-1": (T[0], T[1]), "m-2": (T[2], T[3])}
    core.handle_sync_response(synced(T[0], T[1]), 0.0)
    assert core.state is MemberState.STABLE
    assert core.take_changes() == [AssignmentChange(assigned=(T[0], T[1]), added=(T[0], T[1]),
                                                    revoked=())]
    assert step(core) is None  # stable: nothing to do but heartbeats
    assert core.wait_ms(0.0) is None  # and no timer for the shell to wake for
    beat = core.heartbeat_target()
    assert beat is not None and (beat.generation, beat.member_id) == (1, "m-1")


def _stable(core: GroupCore, *owned: TopicPartition, generation: int = 1) -> None:
    found(core)
    join(core)
    core.handle_join_response(joined("m-1", generation, leader="other"), 0.0)
    plan = step(core)
    assert isinstance(plan, SyncPlan) and plan.request.assignments == ()
    core.handle_sync_response(synced(*owned), 0.0)
    core.take_changes()


def test_eager_gives_everything_up_before_rejoining_after_rebalance_in_progress() -> None:
    core = new_core()
    _stable(core, T[0], T[1])
    target = core.heartbeat_target()
    assert target is not None
    core.handle_heartbeat(target, Errors.REBALANCE_IN_PROGRESS, 10.0)
    prepare = step(core)
    assert prepare == PrepareJoin(revoked=(T[0], T[1]), lost=(), commit=True)
    core.join_prepared()
    plan = step(core)
    assert isinstance(plan, JoinPlan) and plan.request.member_id == "m-1"
    assert decode_subscription(plan.request.protocols[0].metadata).owned_partitions == ()


def test_a_fenced_member_loses_its_partitions_and_joins_as_a_new_member() -> None:
    core = new_core()
    _stable(core, T[0])
    target = core.heartbeat_target()
    assert target is not None
    core.handle_heartbeat(target, Errors.UNKNOWN_MEMBER_ID, 10.0)
    assert (core.state, core.generation, core.member_id) == (MemberState.UNJOINED, -1, "")
    assert step(core) == PrepareJoin(revoked=(), lost=(T[0],), commit=False)
    core.join_prepared()
    plan = step(core)
    assert isinstance(plan, JoinPlan) and plan.request.member_id == ""
    # a heartbeat answer about the old generation changes nothing now
    core.handle_heartbeat(target, Errors.ILLEGAL_GENERATION, 11.0)
    assert core.state is MemberState.PREPARING_REBALANCE


def test_cooperative_keeps_what_stays_and_rejoins_after_revoking_the_rest() -> None:
    core = new_core(cooperative=True)
    _stable(core, T[0], T[1], T[2])
    target = core.heartbeat_target()
    assert target is not None
    core.handle_heartbeat(target, Errors.REBALANCE_IN_PROGRESS, 0.0)
    prepare = step(core)
    assert prepare == PrepareJoin(revoked=(), lost=(), commit=True)
    core.join_prepared()
    plan = step(core)
    assert isinstance(plan, JoinPlan)
    sent = decode_subscription(plan.request.protocols[0].metadata)
    assert (sent.owned_partitions, sent.generation_id) == ((T[0], T[1], T[2]), 1)
    core.handle_join_response(joined("m-1", 2, leader="other"), 0.0)
    assert isinstance(step(core), SyncPlan)
    core.handle_sync_response(synced(T[0], T[1]), 0.0)
    assert core.take_changes() == [AssignmentChange(assigned=(T[0], T[1]), added=(),
                                                    revoked=(T[2],))]
    # the second round: no prepare step to give anything else up, straight to JoinGroup
    assert isinstance(step(core), JoinPlan)


def test_a_moved_coordinator_is_found_again_after_the_backoff() -> None:
    core = new_core()
    _stable(core, T[0])
    target = core.heartbeat_target()
    assert target is not None
    core.handle_heartbeat(target, Errors.NOT_COORDINATOR, 50.0)
    assert core.coordinator is None and core.heartbeat_target() is None
    assert step(core, 100.0) is None and core.wait_ms(100.0) == 50.0
    assert isinstance(step(core, 150.0), FindCoordinator)
    core.handle_coordinator(Coordinator(3, "127.0.0.1", 9003), Errors.NONE, 150.0)
    beat = core.heartbeat_target()
    assert beat is not None and (beat.node, beat.generation) == (3, 1)


def test_fatal_join_errors_reach_the_caller() -> None:
    core = new_core(instance="static-1")
    found(core)
    assert join(core).request.group_instance_id == "static-1"
    core.handle_join_response(JoinGroupResponse(error_code=Errors.FENCED_INSTANCE_ID), 0.0)
    with pytest.raises(KafkaError, match="FENCED_INSTANCE_ID"):
        core.raise_pending_error()


def test_the_leader_waits_for_metadata_of_every_topic_in_the_group() -> None:
    core = new_core()
    found(core)
    join(core)
    others = {"m-1": Subscription(topics=("t",)), "m-2": Subscription(topics=("u",))}
    core.handle_join_response(joined("m-1", 1, leader="m-1", members=others), 0.0)
    assert core.metadata_topics() == {"t", "u"}
    assert step(core) is None
    with_u = cluster_view_from_metadata(metadata({"t": [(1, 0)] * 4, "u": [(1, 0)]}))
    plan = step(core, view=with_u)
    assert isinstance(plan, SyncPlan)
    sent = {a.member_id: decode_assignment(a.assignment).partitions
            for a in plan.request.assignments}
    assert sent == {"m-1": tuple(T), "m-2": (TopicPartition("u", 0),)}
    core.handle_sync_response(synced(*T), 0.0)
    # the leader keeps watching the group's topics: a new partition of u means a rebalance
    assert core.metadata_topics() == {"t", "u"}
    core.on_metadata(with_u)
    assert step(core, view=with_u) is None
    grown = cluster_view_from_metadata(metadata({"t": [(1, 0)] * 4, "u": [(1, 0)] * 2}))
    core.on_metadata(grown)
    assert isinstance(step(core, view=grown), PrepareJoin)


def test_a_static_member_never_names_itself_in_leave_group() -> None:
    static = new_core(instance="i")
    _stable(static, T[0])
    assert static.leave() is None and static.generation == -1
    dynamic = new_core()
    _stable(dynamic, T[0])
    target = dynamic.leave()
    assert target is not None and (target.member_id, target.node) == ("m-1", 2)
