"""OffsetCommit, OffsetFetch, OffsetDelete and offset expiry."""

from __future__ import annotations

from broker.group import GroupCoordinatorConfig
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from tests.unit.broker.group.harness import INITIAL_DELAY_MS, Harness, error_codes, stable_group


def test_a_simple_consumer_commits_with_generation_minus_one_to_a_new_group() -> None:
    h = Harness()
    answer = h.answer(h.commit("solo", {("t", 0): 42, ("t", 1): 7}))
    assert error_codes(answer) == [Errors.NONE, Errors.NONE]
    assert h.fetch("solo", "t", 0, 1, 2) == {0: 42, 1: 7, 2: -1}
    assert h.coordinator.group_state("solo") == "Empty"


def test_a_commit_is_answered_and_visible_only_once_committed() -> None:
    h = Harness(auto_commit=False)
    token = h.commit("solo", {("t", 0): 5})
    assert h.answer(token) is None
    assert h.fetch("solo", "t", 0) == {0: -1}
    h.commit_held()
    assert error_codes(h.answer(token)) == [Errors.NONE]
    assert h.fetch("solo", "t", 0) == {0: 5}


def test_a_failed_commit_append_is_answered_with_kafkas_mapped_error() -> None:
    h = Harness(auto_commit=False)
    token = h.commit("solo", {("t", 0): 5})
    h.fail_held(Errors.NOT_LEADER_OR_FOLLOWER)
    assert error_codes(h.answer(token)) == [Errors.NOT_COORDINATOR]
    assert h.fetch("solo", "t", 0) == {0: -1}
    token = h.commit("solo", {("t", 0): 5})
    h.fail_held(Errors.RECORD_LIST_TOO_LARGE)
    assert error_codes(h.answer(token)) == [Errors.INVALID_COMMIT_OFFSET_SIZE]


def test_a_member_commits_in_its_generation() -> None:
    h = Harness()
    (a,), generation = stable_group(h, "g", 1)
    answer = h.answer(h.commit("g", {("t", 0): 9}, member_id=a, generation=generation))
    assert error_codes(answer) == [Errors.NONE]
    assert h.fetch("g", "t", 0) == {0: 9}


def test_a_stale_generation_commit_is_refused_and_nothing_is_written() -> None:
    h = Harness()
    (a,), generation = stable_group(h, "g", 1)
    before = len(h.log.get(0, []))
    answer = h.answer(h.commit("g", {("t", 0): 9}, member_id=a, generation=generation - 1))
    assert error_codes(answer) == [Errors.ILLEGAL_GENERATION]
    assert len(h.log.get(0, [])) == before
    assert h.fetch("g", "t", 0) == {0: -1}


def test_commit_refusals_follow_kafka() -> None:
    h = Harness()
    (_a,), generation = stable_group(h, "g", 1)
    unknown = h.answer(h.commit("g", {("t", 0): 1}, member_id="ghost", generation=generation))
    simple = h.answer(h.commit("g", {("t", 0): 1}))  # generation -1 while the group has members
    no_group_v8 = h.answer(h.commit("nope", {("t", 0): 1}, member_id="m", generation=3, version=8))
    no_group_v9 = h.answer(h.commit("nope", {("t", 0): 1}, member_id="m", generation=3, version=9))
    invalid = h.answer(h.commit("", {("t", 0): 1}))
    assert error_codes(unknown) == [Errors.UNKNOWN_MEMBER_ID]
    assert error_codes(simple) == [Errors.UNKNOWN_MEMBER_ID]
    assert error_codes(no_group_v8) == [Errors.ILLEGAL_GENERATION]
    assert error_codes(no_group_v9) == [Errors.GROUP_ID_NOT_FOUND]
    assert error_codes(invalid) == [Errors.INVALID_GROUP_ID]


def test_a_commit_while_completing_a_rebalance_is_told_a_rebalance_is_in_progress() -> None:
    h = Harness()
    a = h.join_new_member("g")
    token = h.join("g", a)
    h.advance(10 * INITIAL_DELAY_MS)
    generation = h.answer(token).generation_id
    answer = h.answer(h.commit("g", {("t", 0): 1}, member_id=a, generation=generation))
    assert error_codes(answer) == [Errors.REBALANCE_IN_PROGRESS]


def test_oversized_metadata_fails_only_its_partition() -> None:
    h = Harness(GroupCoordinatorConfig(offsets_topic_num_partitions=1, offset_metadata_max_bytes=4))
    request = h.commit("solo", {("t", 0): 1}, metadata="12345")
    assert error_codes(h.answer(request)) == [Errors.OFFSET_METADATA_TOO_LARGE]
    assert h.fetch("solo", "t", 0) == {0: -1}


def test_offset_fetch_v8_answers_several_groups_and_all_offsets_when_topics_are_null() -> None:
    h = Harness()
    h.commit("a", {("t", 0): 1, ("u", 3): 4})
    h.commit("b", {("t", 0): 2})
    request = OffsetFetchRequest(groups=(
        OffsetFetchRequestGroup(group_id="a", topics=None),
        OffsetFetchRequestGroup(
            group_id="b", topics=(OffsetFetchRequestTopics(name="t", partition_indexes=(0, 1)),)
        ),
    ))
    response = h.call(request, 8)
    a, b = response.groups
    assert {(t.name, p.partition_index, p.committed_offset) for t in a.topics for p in t.partitions} == {
        ("t", 0, 1), ("u", 3, 4)
    }
    assert [(p.partition_index, p.committed_offset) for p in b.topics[0].partitions] == [(0, 2), (1, -1)]


def test_a_request_for_a_partition_this_broker_does_not_lead_is_not_coordinator() -> None:
    h = Harness(GroupCoordinatorConfig(offsets_topic_num_partitions=2), load=False)
    h.take(h.coordinator.begin_load(0, now_ms=0))
    h.take(h.coordinator.finish_load(0, now_ms=0))
    group_on_1 = next(g for g in (f"g{i}" for i in range(50)) if h.coordinator.partition_for(g) == 1)
    assert error_codes(h.answer(h.commit(group_on_1, {("t", 0): 1}))) == [Errors.NOT_COORDINATOR]
    h.take(h.coordinator.begin_load(1, now_ms=0))
    assert error_codes(h.answer(h.commit(group_on_1, {("t", 0): 1}))) == [
        Errors.COORDINATOR_LOAD_IN_PROGRESS
    ]


def _delete(h: Harness, group: str, topic: str, *partitions: int) -> object:
    request = OffsetDeleteRequest(group_id=group, topics=(OffsetDeleteRequestTopic(
        name=topic,
        partitions=tuple(OffsetDeleteRequestPartition(partition_index=p) for p in partitions),
    ),))
    return h.call(request, 0)


def test_offsets_of_an_empty_group_are_deleted() -> None:
    h = Harness()
    h.commit("solo", {("t", 0): 1, ("t", 1): 2})
    response = _delete(h, "solo", "t", 0)
    assert response.error_code == Errors.NONE  # type: ignore[attr-defined]
    assert h.fetch("solo", "t", 0, 1) == {0: -1, 1: 2}


def test_offsets_of_a_subscribed_topic_cannot_be_deleted() -> None:
    h = Harness()
    (a,), generation = stable_group(h, "g", 1)  # subscribes to "t"
    h.commit("g", {("t", 0): 1, ("other", 0): 2}, member_id=a, generation=generation)
    subscribed = _delete(h, "g", "t", 0)
    other = _delete(h, "g", "other", 0)
    assert subscribed.topics[0].partitions[0].error_code == Errors.GROUP_SUBSCRIBED_TO_TOPIC  # type: ignore[attr-defined]
    assert other.topics[0].partitions[0].error_code == Errors.NONE  # type: ignore[attr-defined]
    assert h.fetch("g", "t", 0) == {0: 1} and h.fetch("g", "other", 0) == {0: -1}


def test_offset_delete_of_an_unknown_or_non_consumer_group_is_refused() -> None:
    h = Harness()
    assert _delete(h, "nope", "t", 0).error_code == Errors.GROUP_ID_NOT_FOUND  # type: ignore[attr-defined]
    a = h.join_new_member("c", protocol_type="connect", protocols=(("p", b""),))
    h.join("c", a, protocol_type="connect", protocols=(("p", b""),))
    assert _delete(h, "c", "t", 0).error_code == Errors.NON_EMPTY_GROUP  # type: ignore[attr-defined]


def test_offsets_of_an_empty_group_expire_after_retention_and_the_group_goes() -> None:
    config = GroupCoordinatorConfig(
        offsets_topic_num_partitions=1,
        offsets_retention_ms=60_000,
        offsets_retention_check_interval_ms=10_000,
    )
    h = Harness(config)
    h.commit("solo", {("t", 0): 1})
    h.advance(50_000)
    assert h.fetch("solo", "t", 0) == {0: 1}
    h.advance(20_000)
    assert h.fetch("solo", "t", 0) == {0: -1}
    assert h.coordinator.group_state("solo") is None
    assert h.log[0][-1].value is None  # the group's tombstone


def test_offsets_of_a_group_with_members_do_not_expire() -> None:
    config = GroupCoordinatorConfig(
        offsets_topic_num_partitions=1, min_session_timeout_ms=100,
        initial_rebalance_delay_ms=INITIAL_DELAY_MS,
        offsets_retention_ms=20_000, offsets_retention_check_interval_ms=5_000,
    )
    h = Harness(config)
    (a,), generation = stable_group(h, "g", 1)
    h.commit("g", {("t", 0): 3}, member_id=a, generation=generation)
    for _ in range(10):
        h.advance(5_000)
        h.heartbeat("g", a, generation)
    assert h.fetch("g", "t", 0) == {0: 3}


def test_retention_counts_from_when_the_group_became_empty() -> None:
    config = GroupCoordinatorConfig(
        offsets_topic_num_partitions=1, min_session_timeout_ms=100,
        initial_rebalance_delay_ms=INITIAL_DELAY_MS,
        offsets_retention_ms=20_000, offsets_retention_check_interval_ms=5_000,
    )
    h = Harness(config)
    (a,), generation = stable_group(h, "g", 1)
    h.commit("g", {("t", 0): 3}, member_id=a, generation=generation)
    h.advance(30_000)  # the member's session expires at ~11 s: Empty from then
    assert h.coordinator.group_state("g") == "Empty" and h.fetch("g", "t", 0) == {0: 3}
    h.advance(10_000)
    assert h.fetch("g", "t", 0) == {0: -1}
