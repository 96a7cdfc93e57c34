"""JoinGroup: member ids, generations, leaders, protocols and Kafka's refusals."""

from __future__ import annotations

from broker.group import GroupCoordinatorConfig
from quorum.wire.error_codes import Errors
from tests.unit.broker.group.harness import (
    INITIAL_DELAY_MS,
    TEST_CONFIG,
    Harness,
    stable_group,
    subscription,
)


def test_a_v4_join_without_a_member_id_is_asked_to_come_back_with_a_generated_one() -> None:
    h = Harness()
    answer = h.answer(h.join("g", version=4))
    assert answer.error_code == Errors.MEMBER_ID_REQUIRED
    assert answer.member_id.startswith("client-")
    assert h.coordinator.group_state("g") == "Empty"


def test_a_v3_join_without_a_member_id_joins_at_once_with_a_generated_one() -> None:
    h = Harness()
    token = h.join("g", version=3)
    h.advance(10 * INITIAL_DELAY_MS)
    answer = h.answer(token)
    assert answer.error_code == Errors.NONE
    assert answer.member_id.startswith("client-") and answer.leader == answer.member_id
    assert answer.generation_id == 1


def test_the_first_generation_waits_for_the_initial_delay_and_takes_every_member() -> None:
    h = Harness()
    a, b = h.join_new_member("g"), h.join_new_member("g")
    ta, tb = h.join("g", a), h.join("g", b)
    assert h.answer(ta) is None and h.answer(tb) is None  # parked for the initial delay
    h.advance(10 * INITIAL_DELAY_MS)
    ra, rb = h.answer(ta), h.answer(tb)
    assert ra.generation_id == rb.generation_id == 1
    assert ra.leader == rb.leader == a
    assert {m.member_id for m in ra.members} == {a, b}  # only the leader sees the members
    assert rb.members == ()
    assert ra.protocol_name == "range"
    assert h.coordinator.group_state("g") == "CompletingRebalance"


def test_the_protocol_is_the_common_one_with_most_votes() -> None:
    h = Harness()
    both = (("range", subscription("t")), ("roundrobin", subscription("t")))
    rr_first = (("roundrobin", subscription("t")), ("range", subscription("t")))
    ids = [h.join_new_member("g", protocols=p) for p in (both, rr_first, rr_first)]
    tokens = [h.join("g", m, protocols=p) for m, p in zip(ids, (both, rr_first, rr_first), strict=True)]
    h.advance(10 * INITIAL_DELAY_MS)
    assert {h.answer(t).protocol_name for t in tokens} == {"roundrobin"}


def test_a_member_without_a_common_protocol_is_refused() -> None:
    h = Harness()
    stable_group(h, "g", 1)
    answer = h.answer(h.join("g", version=3, protocols=(("sticky", b"x"),)))
    assert answer.error_code == Errors.INCONSISTENT_GROUP_PROTOCOL


def test_a_member_of_another_protocol_type_is_refused() -> None:
    h = Harness()
    stable_group(h, "g", 1)
    answer = h.answer(h.join("g", version=3, protocol_type="connect"))
    assert answer.error_code == Errors.INCONSISTENT_GROUP_PROTOCOL


def test_an_empty_protocol_type_cannot_start_a_group() -> None:
    h = Harness()
    answer = h.answer(h.join("g", version=3, protocol_type=""))
    assert answer.error_code == Errors.INCONSISTENT_GROUP_PROTOCOL


def test_a_session_timeout_outside_the_bounds_is_refused() -> None:
    h = Harness()
    low = h.answer(h.join("g", session_ms=TEST_CONFIG.min_session_timeout_ms - 1))
    high = h.answer(h.join("g", session_ms=TEST_CONFIG.max_session_timeout_ms + 1))
    assert low.error_code == high.error_code == Errors.INVALID_SESSION_TIMEOUT
    assert h.coordinator.group_state("g") is None


def test_an_empty_group_id_is_invalid() -> None:
    h = Harness()
    assert h.answer(h.join("")).error_code == Errors.INVALID_GROUP_ID


def test_a_member_id_for_an_unknown_group_is_unknown() -> None:
    h = Harness()
    assert h.answer(h.join("g", "ghost")).error_code == Errors.UNKNOWN_MEMBER_ID


def test_an_unknown_member_id_of_a_known_group_is_unknown() -> None:
    h = Harness()
    stable_group(h, "g", 1)
    assert h.answer(h.join("g", "ghost")).error_code == Errors.UNKNOWN_MEMBER_ID


def test_a_group_at_its_maximum_size_refuses_another_member() -> None:
    h = Harness(GroupCoordinatorConfig(
        min_session_timeout_ms=100, initial_rebalance_delay_ms=INITIAL_DELAY_MS,
        offsets_topic_num_partitions=1, max_size=2,
    ))
    stable_group(h, "g", 2)
    answer = h.answer(h.join("g", version=3))
    assert answer.error_code == Errors.GROUP_MAX_SIZE_REACHED
    assert answer.member_id == ""


def test_a_new_member_rebalances_a_stable_group_into_the_next_generation() -> None:
    h = Harness()
    (a,), generation = stable_group(h, "g", 1)
    b = h.join_new_member("g")
    tb = h.join("g", b)
    assert h.coordinator.group_state("g") == "PreparingRebalance"
    assert h.heartbeat("g", a, generation).error_code == Errors.REBALANCE_IN_PROGRESS
    ta = h.join("g", a)
    ra, rb = h.answer(ta), h.answer(tb)
    assert ra.generation_id == rb.generation_id == generation + 1
    assert ra.leader == a and len(ra.members) == 2


def test_a_member_that_does_not_rejoin_in_time_is_dropped_from_the_next_generation() -> None:
    h = Harness()
    (a, b), generation = stable_group(h, "g", 2)
    h.heartbeat("g", b, generation)
    c = h.join_new_member("g")
    tc, ta = h.join("g", c), h.join("g", a)
    h.advance(30_000)  # the rebalance timeout; b never rejoins
    ra = h.answer(ta)
    assert ra.error_code == Errors.NONE and ra.generation_id == generation + 1
    assert {m.member_id for m in ra.members} == {a, c}
    assert h.heartbeat("g", b, generation).error_code == Errors.UNKNOWN_MEMBER_ID
    assert h.answer(tc).generation_id == generation + 1


def test_a_leader_that_does_not_rejoin_hands_leadership_to_one_that_did() -> None:
    h = Harness()
    (a, b), generation = stable_group(h, "g", 2)
    assert h.answer(h.join("g", version=3)) is None  # a third member starts a rebalance
    tb = h.join("g", b)
    h.advance(30_000)
    rb = h.answer(tb)
    assert rb.generation_id == generation + 1 and rb.leader != a


def test_a_pending_member_id_expires_after_its_session_timeout() -> None:
    h = Harness()
    pending = h.join_new_member("g", session_ms=1_000)
    h.advance(1_000)
    assert h.answer(h.join("g", pending)).error_code == Errors.UNKNOWN_MEMBER_ID


def test_a_follower_rejoining_unchanged_gets_the_current_generation_back() -> None:
    h = Harness()
    (_a, b), generation = stable_group(h, "g", 2)
    answer = h.answer(h.join("g", b))
    assert answer.error_code == Errors.NONE and answer.generation_id == generation
    assert answer.members == ()
    assert h.coordinator.group_state("g") == "Stable"


def test_a_follower_with_new_metadata_starts_a_rebalance() -> None:
    h = Harness()
    (_a, b), _ = stable_group(h, "g", 2)
    assert h.answer(h.join("g", b, protocols=(("range", subscription("t", "u")),))) is None
    assert h.coordinator.group_state("g") == "PreparingRebalance"


def test_a_rejoining_leader_starts_a_rebalance() -> None:
    h = Harness()
    (a, _b), _ = stable_group(h, "g", 2)
    assert h.answer(h.join("g", a)) is None
    assert h.coordinator.group_state("g") == "PreparingRebalance"


def test_joining_a_group_left_empty_tells_the_member_its_id_is_gone() -> None:
    h = Harness()
    (a,), _generation = stable_group(h, "g", 1)
    h.leave("g", (a, None))
    assert h.coordinator.group_state("g") == "Empty"
    assert h.answer(h.join("g", a)).error_code == Errors.UNKNOWN_MEMBER_ID


def test_an_error_answer_encodes_at_a_version_whose_protocol_name_is_not_nullable() -> None:
    h = Harness()  # the harness encodes every answer at its request's version
    assert h.answer(h.join("", version=6)).protocol_name == ""
