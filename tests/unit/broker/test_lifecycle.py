"""The broker lifecycle, sans-I/O: registration, unfencing, re-registration, controlled
shutdown and the registration timeout, driven by hand with times in milliseconds."""

from __future__ import annotations

import random
import uuid

import pytest

from broker.lifecycle import (
    BrokerLifecycle,
    BrokerState,
    ControllerPicker,
    IllegalLifecycleMove,
    LifecycleConfig,
    Outgoing,
    features_supported,
    registration_listeners,
)
from broker.settings import BrokerListener
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
)

INCARNATION = uuid.UUID(int=42)
CONFIG = LifecycleConfig(
    broker_id=4,
    cluster_id="cluster",
    incarnation_id=INCARNATION,
    listeners=registration_listeners([BrokerListener("PLAINTEXT", "b4", 9092, 0)]),
    features=features_supported(21),
    rack="rack-a",
    voter_ids=(1, 2, 3),
    heartbeat_interval_ms=500,
    session_timeout_ms=2000,
    initial_registration_timeout_ms=10_000,
    request_timeout_ms=5000,
    registration_timeout_ms=30_000,
    controlled_shutdown_timeout_ms=20_000,
)
LEADER = 2


def send(lifecycle: BrokerLifecycle, now_ms: int, image_offset: int = 0) -> Outgoing:
    out = lifecycle.next_request(now_ms, image_offset, LEADER)
    assert out is not None, f"nothing to send at {now_ms} in {lifecycle.state.name}"
    return out


def registered(epoch: int = 10, now_ms: int = 0) -> BrokerLifecycle:
    """A lifecycle that sent its registration at ``now_ms`` and got ``epoch`` back."""
    lifecycle = BrokerLifecycle(CONFIG, now_ms)
    send(lifecycle, now_ms)
    lifecycle.on_response(BrokerRegistrationResponse(broker_epoch=epoch), now_ms, LEADER)
    return lifecycle


def running(epoch: int = 10) -> BrokerLifecycle:
    lifecycle = registered(epoch)
    heartbeat = send(lifecycle, 0, image_offset=epoch + 1).request
    assert isinstance(heartbeat, BrokerHeartbeatRequest) and not heartbeat.want_fence
    lifecycle.on_response(BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False), 0, LEADER)
    assert lifecycle.state is BrokerState.RUNNING
    return lifecycle


def test_a_starting_broker_registers_with_the_raft_leader_as_a_new_incarnation() -> None:
    lifecycle = BrokerLifecycle(CONFIG, 0)
    assert lifecycle.state is BrokerState.STARTING
    out = send(lifecycle, 0)
    assert out.destination == LEADER
    request = out.request
    assert isinstance(request, BrokerRegistrationRequest)
    assert (request.broker_id, request.cluster_id, request.incarnation_id, request.rack) == (
        4, "cluster", INCARNATION, "rack-a"
    )
    assert [(li.name, li.host, li.port) for li in request.listeners] == [("PLAINTEXT", "b4", 9092)]
    assert [(f.name, f.min_supported_version, f.max_supported_version)
            for f in request.features] == [("metadata.version", 1, 21)]
    # one request at a time
    assert lifecycle.next_request(0, 0, LEADER) is None


def test_a_registered_broker_stays_fenced_until_its_image_holds_its_registration() -> None:
    lifecycle = registered(epoch=10)
    assert (lifecycle.state, lifecycle.broker_epoch) == (BrokerState.RECOVERY, 10)
    first = send(lifecycle, 0, image_offset=5).request
    assert isinstance(first, BrokerHeartbeatRequest)
    assert (first.broker_epoch, first.current_metadata_offset, first.want_fence) == (10, 4, True)
    lifecycle.on_response(BrokerHeartbeatResponse(is_fenced=True), 3, LEADER)
    assert lifecycle.state is BrokerState.RECOVERY
    assert lifecycle.next_request(100, 5, LEADER) is None
    # the image replays offset 10 (the registration): ask to be unfenced at once
    lifecycle.metadata_advanced(11, 120)
    second = send(lifecycle, 120, image_offset=11).request
    assert isinstance(second, BrokerHeartbeatRequest)
    assert (second.current_metadata_offset, second.want_fence) == (10, False)
    lifecycle.on_response(BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False), 125, LEADER)
    assert lifecycle.state is BrokerState.RUNNING
    # then a heartbeat per interval
    assert lifecycle.next_request(624, 11, LEADER) is None
    assert lifecycle.next_deadline_ms() == 625
    assert isinstance(send(lifecycle, 625, 11).request, BrokerHeartbeatRequest)


@pytest.mark.parametrize("error", [Errors.STALE_BROKER_EPOCH, Errors.BROKER_ID_NOT_REGISTERED])
def test_a_heartbeat_the_controller_no_longer_recognises_makes_the_broker_register_again(
    error: Errors,
) -> None:
    lifecycle = running(epoch=10)
    send(lifecycle, 500, image_offset=11)
    lifecycle.on_response(BrokerHeartbeatResponse(error_code=error), 501, LEADER)
    assert (lifecycle.state, lifecycle.registered) == (BrokerState.RECOVERY, False)
    again = send(lifecycle, 501, image_offset=11).request
    assert isinstance(again, BrokerRegistrationRequest)
    assert again.incarnation_id == INCARNATION  # same process, same incarnation
    lifecycle.on_response(BrokerRegistrationResponse(broker_epoch=30), 502, LEADER)
    heartbeat = send(lifecycle, 502, image_offset=11).request
    # the new registration record (offset 30) is not in the image yet
    assert isinstance(heartbeat, BrokerHeartbeatRequest)
    assert (heartbeat.broker_epoch, heartbeat.want_fence) == (30, True)


def test_a_running_broker_that_is_told_it_is_fenced_registers_again() -> None:
    lifecycle = running(epoch=10)
    send(lifecycle, 500, image_offset=11)
    # a long pause: the session expired and the controller fenced the broker
    lifecycle.on_response(BrokerHeartbeatResponse(is_fenced=True), 9000, LEADER)
    assert lifecycle.state is BrokerState.RECOVERY
    assert isinstance(send(lifecycle, 9000, 11).request, BrokerRegistrationRequest)
    lifecycle.on_response(BrokerRegistrationResponse(broker_epoch=10), 9001, LEADER)
    heartbeat = send(lifecycle, 9001, image_offset=11).request
    assert isinstance(heartbeat, BrokerHeartbeatRequest) and not heartbeat.want_fence
    lifecycle.on_response(BrokerHeartbeatResponse(is_fenced=False), 9002, LEADER)
    assert lifecycle.state is BrokerState.RUNNING


def test_controlled_shutdown_heartbeats_until_the_controller_says_shut_down() -> None:
    lifecycle = running(epoch=10)
    lifecycle.begin_shutdown(1000)
    assert lifecycle.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN
    first = send(lifecycle, 1000, image_offset=11).request
    assert isinstance(first, BrokerHeartbeatRequest) and first.want_shut_down
    assert not first.want_fence
    lifecycle.on_response(BrokerHeartbeatResponse(is_fenced=False), 1005, LEADER)
    # the first "not yet" is asked again soon, later ones at the interval
    assert lifecycle.next_deadline_ms() == 1055
    send(lifecycle, 1055, image_offset=12)
    lifecycle.on_response(BrokerHeartbeatResponse(is_fenced=False), 1060, LEADER)
    assert lifecycle.next_deadline_ms() == 1560
    last = send(lifecycle, 1560, image_offset=14).request
    assert isinstance(last, BrokerHeartbeatRequest) and last.want_shut_down
    lifecycle.on_response(
        BrokerHeartbeatResponse(is_fenced=True, should_shut_down=True), 1565, LEADER
    )
    assert lifecycle.state is BrokerState.SHUTTING_DOWN and lifecycle.done
    assert not lifecycle.shutdown_timed_out and lifecycle.failure is None
    assert lifecycle.next_request(2000, 14, LEADER) is None


def test_controlled_shutdown_gives_up_once_no_controller_answered_for_a_session() -> None:
    lifecycle = running(epoch=10)
    lifecycle.begin_shutdown(1000)
    send(lifecycle, 1000, image_offset=11)
    lifecycle.on_failure(1100, "connection refused", LEADER)
    # the quorum would fence it by now: waiting longer hands nothing over
    lifecycle.poll(3000)
    assert lifecycle.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN
    lifecycle.poll(3001)
    assert lifecycle.done and lifecycle.shutdown_timed_out


def test_controlled_shutdown_waits_while_the_controller_answers_up_to_its_timeout() -> None:
    lifecycle = running(epoch=10)
    lifecycle.begin_shutdown(1000)
    now = 1000
    # a controller busy moving 100,000 leaderships answers "not yet" for a long while
    while now < 20_500:
        out = lifecycle.next_request(now, 11, LEADER)
        if out is not None:
            lifecycle.on_response(BrokerHeartbeatResponse(is_caught_up=True), now, LEADER)
        lifecycle.poll(now)
        if now < 21_000:
            assert not lifecycle.done, now
        now += 100
    lifecycle.poll(21_000)
    assert lifecycle.done and lifecycle.shutdown_timed_out


def test_a_broker_that_never_registered_stops_at_once_when_asked() -> None:
    lifecycle = BrokerLifecycle(CONFIG, 0)
    send(lifecycle, 0)
    lifecycle.begin_shutdown(10)
    assert lifecycle.done
    # the registration's late answer changes nothing
    lifecycle.on_response(BrokerRegistrationResponse(broker_epoch=3), 20, LEADER)
    assert lifecycle.done and not lifecycle.registered


def test_no_registration_within_the_timeout_is_a_failure_that_names_the_setting() -> None:
    lifecycle = BrokerLifecycle(CONFIG, 0)
    now = 0
    while not lifecycle.done:
        lifecycle.poll(now)
        out = lifecycle.next_request(now, 0, None)
        if out is not None:
            lifecycle.on_response(
                BrokerRegistrationResponse(error_code=Errors.NOT_CONTROLLER), now + 1, None
            )
        deadline = lifecycle.next_deadline_ms()
        if deadline is None:
            break
        assert deadline > now
        now = deadline
    assert lifecycle.done and now == 10_000
    assert lifecycle.failure is not None
    assert "initial.broker.registration.timeout.ms=10000" in lifecycle.failure
    assert "NOT_CONTROLLER" in lifecycle.failure


def test_another_cluster_id_is_a_failure_at_once() -> None:
    lifecycle = BrokerLifecycle(CONFIG, 0)
    send(lifecycle, 0)
    lifecycle.on_response(
        BrokerRegistrationResponse(error_code=Errors.INCONSISTENT_CLUSTER_ID), 1, LEADER
    )
    assert lifecycle.done
    assert lifecycle.failure is not None and "another cluster" in lifecycle.failure


def _refusal_delays(seed: int) -> list[int]:
    lifecycle = BrokerLifecycle(CONFIG, 0, rng=random.Random(seed))
    now, delays = 0, []
    for _ in range(6):
        send(lifecycle, now)
        lifecycle.on_response(
            BrokerRegistrationResponse(error_code=Errors.DUPLICATE_BROKER_REGISTRATION), now, LEADER
        )
        deadline = lifecycle.next_deadline_ms()
        assert deadline is not None
        delays.append(deadline - now)
        now = deadline
    return delays


def test_refusals_back_off_exponentially_up_to_the_heartbeat_interval_with_jitter() -> None:
    nominal = [100, 200, 400, 500, 500, 500]
    runs = [_refusal_delays(seed) for seed in range(20)]
    for delays in runs:
        assert all(0.8 * n <= d <= 1.2 * n for d, n in zip(delays, nominal, strict=True)), delays
    # brokers that failed together do not retry in step
    assert len({tuple(delays) for delays in runs}) > 10


def test_a_heartbeat_waits_at_most_half_a_session_and_a_registration_longer() -> None:
    assert CONFIG.effective_request_timeout_ms == 1000
    heartbeat = BrokerHeartbeatRequest(broker_id=4, broker_epoch=10, current_metadata_offset=3)
    assert CONFIG.timeout_ms_for(heartbeat) == 1000
    lifecycle = BrokerLifecycle(CONFIG, 0)
    registration = send(lifecycle, 0).request
    # a registration keeps no session alive: it waits controller.socket.timeout.ms
    assert CONFIG.timeout_ms_for(registration) == 30_000


def test_without_a_known_leader_the_voters_are_tried_in_turn() -> None:
    picker = ControllerPicker((3, 1, 2))
    tried = []
    for _ in range(4):
        tried.append(picker.pick(None))
        picker.unreachable(tried[-1], None)
    assert tried == [1, 2, 3, 1]


def test_a_leader_whose_connection_fails_twice_in_a_row_is_skipped_until_one_answers() -> None:
    picker = ControllerPicker((1, 2, 3))
    assert picker.pick(2) == 2
    picker.unreachable(2, 2)
    assert picker.pick(2) == 2
    picker.unreachable(2, 2)
    assert picker.pick(2) == 3  # the next voter after the one that failed
    picker.succeeded()
    assert picker.pick(2) == 2


def test_a_new_leader_is_asked_at_once_whatever_failed_before() -> None:
    picker = ControllerPicker((1, 2, 3))
    for _ in range(2):
        assert picker.pick(2) == 2
        picker.unreachable(2, 2)
    assert picker.pick(2) == 3
    assert picker.pick(1) == 1


def test_a_busy_leader_that_times_out_or_has_not_claimed_yet_keeps_being_asked() -> None:
    """The issue's run: the leader answered nothing within the wait, the broker turned to
    a follower (NOT_CONTROLLER) and back, every few seconds, while the leader had taken
    its registration. Now it asks the leader until the quorum's leader changes."""
    lifecycle = BrokerLifecycle(CONFIG, 0)
    destinations = []
    now = 0
    for attempt in range(6):
        out = send(lifecycle, now)
        destinations.append(out.destination)
        if attempt % 2:
            lifecycle.on_failure(now + 1000, "no answer within 1000 ms", LEADER,
                                 timed_out=True)
        else:
            lifecycle.on_response(
                BrokerRegistrationResponse(error_code=Errors.NOT_CONTROLLER), now, LEADER
            )
        deadline = lifecycle.next_deadline_ms()
        assert deadline is not None
        now = deadline
    assert destinations == [LEADER] * 6


def test_not_controller_from_a_follower_sends_the_next_request_to_the_known_leader() -> None:
    picker = ControllerPicker((1, 2, 3))
    for _ in range(2):
        assert picker.pick(2) == 2
        picker.unreachable(2, 2)
    assert picker.pick(2) == 3
    picker.not_controller(3, 2)  # voter 3 says someone else leads: the one the broker knows
    assert picker.pick(2) == 2


def test_an_illegal_move_is_refused_with_both_states_named() -> None:
    lifecycle = BrokerLifecycle(CONFIG, 0)
    with pytest.raises(IllegalLifecycleMove, match="from STARTING to RUNNING"):
        lifecycle._move(BrokerState.RUNNING)
