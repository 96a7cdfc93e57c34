"""SyncGroup, Heartbeat, LeaveGroup and sessions."""

from __future__ import annotations

from quorum.wire.error_codes import Errors
from quorum.wire.messages import LeaveGroupRequest
from tests.unit.broker.group.harness import INITIAL_DELAY_MS, Harness, stable_group


def _completing(h: Harness, count: int) -> tuple[list[str], int, str]:
    ids = [h.join_new_member("g") for _ in range(count)]
    tokens = [h.join("g", m) for m in ids]
    h.advance(10 * INITIAL_DELAY_MS)
    first = h.answer(tokens[0])
    return ids, first.generation_id, first.leader


def test_followers_wait_for_the_leader_and_everyone_gets_their_own_assignment() -> None:
    h = Harness()
    (a, b), generation, leader = _completing(h, 2)
    follower = b if leader == a else a
    tf = h.sync("g", follower, generation)
    assert h.answer(tf) is None
    tl = h.sync("g", leader, generation, {a: b"A", b: b"B"})
    assert h.answer(tf).assignment == (b"A" if follower == a else b"B")
    assert h.answer(tl).assignment == (b"A" if leader == a else b"B")
    assert h.coordinator.group_state("g") == "Stable"


def test_the_assignment_is_answered_only_when_its_record_is_committed() -> None:
    h = Harness(auto_commit=False)
    (a,), generation, _ = _completing(h, 1)
    token = h.sync("g", a, generation, {a: b"A"})
    assert h.answer(token) is None and len(h.held) == 1
    assert h.coordinator.group_state("g") == "CompletingRebalance"
    h.commit_held()
    assert h.answer(token).assignment == b"A"
    assert h.coordinator.group_state("g") == "Stable"


def test_a_failed_assignment_write_sends_members_back_to_rejoin() -> None:
    h = Harness(auto_commit=False)
    (a,), generation, _ = _completing(h, 1)
    token = h.sync("g", a, generation, {a: b"A"})
    h.fail_held(Errors.NOT_ENOUGH_REPLICAS)
    assert h.answer(token).error_code == Errors.COORDINATOR_NOT_AVAILABLE
    assert h.coordinator.group_state("g") == "PreparingRebalance"


def test_an_assignment_too_large_for_the_log_is_an_unknown_server_error_as_in_kafka() -> None:
    h = Harness(auto_commit=False)
    (a,), generation, _ = _completing(h, 1)
    token = h.sync("g", a, generation, {a: b"A" * 100})
    h.fail_held(Errors.RECORD_LIST_TOO_LARGE)
    assert h.answer(token).error_code == Errors.UNKNOWN_SERVER_ERROR


def test_a_member_missing_from_the_leaders_assignment_gets_an_empty_one() -> None:
    h = Harness()
    (a, b), generation, leader = _completing(h, 2)
    follower = b if leader == a else a
    h.sync("g", leader, generation, {leader: b"L"})
    assert h.answer(h.sync("g", follower, generation)).assignment == b""


def test_sync_with_a_stale_generation_is_an_illegal_generation() -> None:
    h = Harness()
    (a,), generation = stable_group(h, "g", 1)
    assert h.answer(h.sync("g", a, generation - 1)).error_code == Errors.ILLEGAL_GENERATION


def test_sync_from_an_unknown_member_or_group_is_unknown_member() -> None:
    h = Harness()
    _, generation = stable_group(h, "g", 1)
    assert h.answer(h.sync("g", "ghost", generation)).error_code == Errors.UNKNOWN_MEMBER_ID
    assert h.answer(h.sync("nope", "ghost", 1)).error_code == Errors.UNKNOWN_MEMBER_ID


def test_sync_during_a_rebalance_is_told_to_rejoin() -> None:
    h = Harness()
    (a,), generation = stable_group(h, "g", 1)
    h.join("g", version=3)
    assert h.answer(h.sync("g", a, generation)).error_code == Errors.REBALANCE_IN_PROGRESS


def test_parked_syncs_are_told_to_rejoin_when_a_new_member_arrives() -> None:
    h = Harness()
    (a, b), generation, leader = _completing(h, 2)
    follower = b if leader == a else a
    tf = h.sync("g", follower, generation)
    h.join("g", version=3)
    assert h.answer(tf).error_code == Errors.REBALANCE_IN_PROGRESS


def test_a_member_that_never_syncs_is_removed_after_the_rebalance_timeout() -> None:
    h = Harness()
    ids = [h.join_new_member("g", rebalance_ms=2_000) for _ in range(2)]
    tokens = [h.join("g", m, rebalance_ms=2_000) for m in ids]
    h.advance(10 * INITIAL_DELAY_MS)
    generation, leader = h.answer(tokens[0]).generation_id, h.answer(tokens[0]).leader
    follower = next(m for m in ids if m != leader)
    h.sync("g", leader, generation, {m: b"x" for m in ids})
    assert h.coordinator.group_state("g") == "Stable"
    assert h.heartbeat("g", follower, generation).error_code == Errors.NONE  # but no SyncGroup
    h.advance(1_500)  # the sync deadline (rebalance timeout after the join) passed
    assert h.heartbeat("g", follower, generation).error_code == Errors.UNKNOWN_MEMBER_ID
    assert h.coordinator.group_state("g") == "PreparingRebalance"


def test_heartbeats_keep_a_member_and_silence_expires_it() -> None:
    h = Harness()
    (a, b), generation = stable_group(h, "g", 2)
    for _ in range(5):
        h.advance(8_000)
        assert h.heartbeat("g", a, generation).error_code == Errors.NONE
        assert h.heartbeat("g", b, generation).error_code == Errors.NONE
    h.advance(10_000)  # nobody heartbeats for a whole session
    assert h.coordinator.group_state("g") == "Empty"


def test_heartbeat_errors_follow_kafka() -> None:
    h = Harness()
    (a,), generation = stable_group(h, "g", 1)
    assert h.heartbeat("g", a, generation + 1).error_code == Errors.ILLEGAL_GENERATION
    assert h.heartbeat("g", "ghost", generation).error_code == Errors.UNKNOWN_MEMBER_ID
    assert h.heartbeat("nope", a, generation).error_code == Errors.UNKNOWN_MEMBER_ID
    assert h.heartbeat("", a, generation).error_code == Errors.INVALID_GROUP_ID


def test_leave_removes_members_and_rebalances_the_rest() -> None:
    h = Harness()
    (a, b), generation = stable_group(h, "g", 2)
    answer = h.leave("g", (a, None), ("ghost", None))
    assert [m.error_code for m in answer.members] == [Errors.NONE, Errors.UNKNOWN_MEMBER_ID]
    assert h.coordinator.group_state("g") == "PreparingRebalance"
    rejoin = h.answer(h.join("g", b))
    assert rejoin.generation_id == generation + 1 and rejoin.leader == b


def test_leave_v0_to_2_names_one_member_and_answers_with_a_top_level_error() -> None:
    h = Harness()
    (a,), _ = stable_group(h, "g", 1)
    response = h.call(LeaveGroupRequest(group_id="g", member_id="ghost"), 1)
    assert response.error_code == Errors.UNKNOWN_MEMBER_ID
    assert h.call(LeaveGroupRequest(group_id="g", member_id=a), 2).error_code == Errors.NONE
    assert h.coordinator.group_state("g") == "Empty"


def test_leave_of_an_unknown_group_is_unknown_member() -> None:
    # found by the differential tests (tests/kafka/differential): from v3 Kafka answers each
    # member UNKNOWN_MEMBER_ID and the request no error (GroupCoordinatorService.leaveGroup)
    h = Harness()
    answer = h.leave("nope", ("m", None), ("s", "static-1"))
    assert answer.error_code == Errors.NONE
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in answer.members] == [
        ("m", None, Errors.UNKNOWN_MEMBER_ID), ("s", "static-1", Errors.UNKNOWN_MEMBER_ID),
    ]
    old = h.call(LeaveGroupRequest(group_id="nope", member_id="m"), 2)
    assert old.error_code == Errors.UNKNOWN_MEMBER_ID
