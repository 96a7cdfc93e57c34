"""Failover: a new coordinator replays __consumer_offsets; unloading hands groups back."""

from __future__ import annotations

import pytest

from broker.group import GroupCoordinator, RecordDecodeError
from quorum.wire.error_codes import Errors
from quorum.wire.messages import DeleteGroupsRequest
from tests.unit.broker.group.harness import TEST_CONFIG, Harness, error_codes, stable_group


def _successor(h: Harness) -> Harness:
    """A new coordinator that loads everything the old one committed to partition 0."""
    successor = Harness(load=False)
    successor.now = h.now
    c = successor.coordinator
    successor.take(c.begin_load(0, now_ms=h.now))
    records = [(r.key, r.value) for r in h.log.get(0, [])]
    successor.take(c.load_records(0, records, now_ms=h.now))
    successor.take(c.finish_load(0, now_ms=h.now))
    return successor


def test_a_new_coordinator_has_every_committed_offset() -> None:
    h = Harness()
    h.commit("solo", {("t", 0): 1, ("t", 1): 2})
    h.commit("solo", {("t", 0): 10})
    successor = _successor(h)
    assert successor.fetch("solo", "t", 0, 1) == {0: 10, 1: 2}


def test_a_stable_group_survives_failover_with_its_generation_and_assignments() -> None:
    h = Harness()
    (a, b), generation = stable_group(h, "g", 2)
    successor = _successor(h)
    assert successor.coordinator.group_state("g") == "Stable"
    assert successor.heartbeat("g", a, generation).error_code == Errors.NONE
    assert successor.answer(successor.sync("g", b, generation)).assignment == b.encode()
    answer = successor.answer(successor.commit("g", {("t", 0): 5}, member_id=a, generation=generation))
    assert error_codes(answer) == [Errors.NONE]


def test_loaded_members_that_stay_silent_expire_after_their_session() -> None:
    h = Harness()
    stable_group(h, "g", 1)
    successor = _successor(h)
    successor.advance(10_000)
    assert successor.coordinator.group_state("g") == "Empty"


def test_tombstones_delete_on_replay() -> None:
    h = Harness()
    h.commit("idle", {("t", 0): 1})
    h.call(DeleteGroupsRequest(groups_names=("idle",)), 2)
    successor = _successor(h)
    assert successor.coordinator.group_state("idle") is None
    assert successor.fetch("idle", "t", 0) == {0: -1}


def test_requests_during_a_load_are_told_to_retry() -> None:
    h = Harness(load=False)
    h.take(h.coordinator.begin_load(0, now_ms=0))
    assert error_codes(h.answer(h.commit("solo", {("t", 0): 1}))) == [
        Errors.COORDINATOR_LOAD_IN_PROGRESS
    ]
    assert h.answer(h.join("g")).error_code == Errors.COORDINATOR_LOAD_IN_PROGRESS


def test_unloading_answers_parked_requests_and_fails_pending_commits() -> None:
    h = Harness(auto_commit=False)
    parked_join = h.join("g", version=3)
    commit = h.commit("solo", {("t", 0): 1})
    h.take(h.coordinator.unload(0, now_ms=h.now))
    assert h.answer(parked_join).error_code == Errors.NOT_COORDINATOR
    assert error_codes(h.answer(commit)) == [Errors.NOT_COORDINATOR]
    assert h.coordinator.group_ids() == []
    # the shell's late report of the failed append is ignored
    h.fail_held(Errors.NOT_LEADER_OR_FOLLOWER)
    assert h.answer(h.join("g")).error_code == Errors.NOT_COORDINATOR


def test_a_record_that_is_not_kafkas_layout_stops_the_load_with_a_reason() -> None:
    coordinator = GroupCoordinator(TEST_CONFIG)
    coordinator.begin_load(0, now_ms=0)
    with pytest.raises(RecordDecodeError, match="key version 7"):
        coordinator.load_records(0, [(b"\x00\x07abc", None)], now_ms=0)
