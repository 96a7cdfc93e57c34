"""Static membership (KIP-345): group.instance.id survives restarts, fences old ids."""

from __future__ import annotations

from quorum.wire.error_codes import Errors
from tests.unit.broker.group.harness import INITIAL_DELAY_MS, Harness


def _static_stable(h: Harness, session_ms: int = 10_000) -> tuple[str, str, int]:
    ta = h.join("g", instance_id="i-a", session_ms=session_ms)
    tb = h.join("g", instance_id="i-b", session_ms=session_ms)
    h.advance(10 * INITIAL_DELAY_MS)
    ra, rb = h.answer(ta), h.answer(tb)
    generation = ra.generation_id
    assignments = {ra.member_id: b"A", rb.member_id: b"B"}
    leader = ra.leader
    for m, i in ((ra.member_id, "i-a"), (rb.member_id, "i-b")):
        h.sync("g", m, generation, assignments if m == leader else None, instance_id=i)
    assert h.coordinator.group_state("g") == "Stable"
    return ra.member_id, rb.member_id, generation


def test_static_members_join_without_the_member_id_handshake() -> None:
    h = Harness()
    a, b, generation = _static_stable(h)
    assert a.startswith("i-a-") and b.startswith("i-b-") and generation == 1


def test_a_restarted_static_member_takes_its_place_without_a_rebalance() -> None:
    h = Harness()
    a, b, generation = _static_stable(h)
    answer = h.answer(h.join("g", instance_id="i-b"))
    assert answer.error_code == Errors.NONE and answer.generation_id == generation
    assert answer.member_id not in (a, b)
    assert h.coordinator.group_state("g") == "Stable"
    synced = h.answer(h.sync("g", answer.member_id, generation, instance_id="i-b"))
    assert synced.assignment == b"B"


def test_the_replaced_member_id_is_fenced() -> None:
    h = Harness()
    _a, b, generation = _static_stable(h)
    h.join("g", instance_id="i-b")
    assert h.heartbeat("g", b, generation, instance_id="i-b").error_code == Errors.FENCED_INSTANCE_ID
    assert h.answer(h.join("g", b, instance_id="i-b")).error_code == Errors.FENCED_INSTANCE_ID


def test_a_static_member_that_misses_a_rebalance_is_kept_in_the_next_generation() -> None:
    h = Harness()
    a, b, generation = _static_stable(h, session_ms=60_000)
    token = h.join("g", a, instance_id="i-a", session_ms=60_000)  # the leader rejoins; b is silent
    h.advance(30_000)  # the rebalance timeout passes within b's session
    answer = h.answer(token)
    assert answer.generation_id == generation + 1
    assert {m.member_id for m in answer.members} == {a, b}


def test_a_static_member_whose_session_expires_is_removed() -> None:
    h = Harness()
    a, b, generation = _static_stable(h, session_ms=10_000)
    h.advance(9_000)
    assert h.heartbeat("g", a, generation, instance_id="i-a").error_code == Errors.NONE
    h.advance(2_000)
    assert h.heartbeat("g", b, generation, instance_id="i-b").error_code == Errors.UNKNOWN_MEMBER_ID


def test_an_admin_removes_a_static_member_by_instance_id() -> None:
    h = Harness()
    _a, b, _ = _static_stable(h)
    answer = h.leave("g", ("", "i-b"))
    assert [m.error_code for m in answer.members] == [Errors.NONE]
    assert h.answer(h.join("g", b, instance_id="i-b")).error_code == Errors.UNKNOWN_MEMBER_ID


def test_a_failed_write_of_the_new_static_member_id_restores_the_old_one() -> None:
    h = Harness()
    _a, b, generation = _static_stable(h)
    h.auto_commit = False
    token = h.join("g", instance_id="i-b")
    h.fail_held(Errors.NOT_LEADER_OR_FOLLOWER)
    assert h.answer(token).error_code == Errors.NOT_COORDINATOR
    assert h.heartbeat("g", b, generation, instance_id="i-b").error_code == Errors.NONE
