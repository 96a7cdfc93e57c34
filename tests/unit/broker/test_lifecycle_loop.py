"""The lifecycle loop on trio's virtual clock: how long it waits for an answer, and that a
wait ends when the quorum's leader moves."""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from broker.controller_channel import ControllerLane
from broker.lifecycle import BrokerLifecycle, BrokerState
from broker.lifecycle_loop import LifecycleLoop
from quorum.node.driver import NodeClock
from quorum.wire.messages import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
)
from tests.unit.broker.test_lifecycle import CONFIG


class FakeChannel:
    """Controllers that answer at once, except the ones in ``silent`` (never)."""

    def __init__(self, silent: set[int]) -> None:
        self.silent = silent
        self.sent: list[tuple[float, int, str]] = []  # (time, destination, request kind)

    async def send_once(self, lane: ControllerLane, destination: int, request: Any) -> Any:
        assert lane is ControllerLane.LIFECYCLE
        self.sent.append((trio.current_time(), destination, type(request).__name__))
        if destination in self.silent:
            await trio.sleep_forever()
        if isinstance(request, BrokerRegistrationRequest):
            return BrokerRegistrationResponse(broker_epoch=7)
        assert isinstance(request, BrokerHeartbeatRequest)
        return BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False)


async def run_until(loop: LifecycleLoop, condition: Any, limit_s: float) -> bool:
    """Run the loop until ``condition()`` of its state holds (True) or ``limit_s`` passed
    (False)."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(loop.run)
        with trio.move_on_after(limit_s):
            while not condition():
                await loop.state_changed.wait()
        nursery.cancel_scope.cancel()
    return bool(condition())


def new_loop(channel: FakeChannel, leader: list[int | None]) -> LifecycleLoop:
    return LifecycleLoop(
        BrokerLifecycle(CONFIG, NodeClock().now_ms()),
        channel=channel,  # type: ignore[arg-type]
        leader_id=lambda: leader[0],
        image_offset=lambda: 100,
        clock=NodeClock(),
    )


async def test_a_registration_waits_for_a_busy_leader_longer_than_half_a_session(
    autojump_clock: trio.testing.MockClock,
) -> None:
    channel = FakeChannel(silent={2})
    loop = new_loop(channel, [2])
    assert not await run_until(loop, lambda: loop.lifecycle.registered, 20.0)
    # one registration sent to the leader, still waited for: not abandoned after 1 s
    assert [(d, kind) for _, d, kind in channel.sent] == [(2, "BrokerRegistrationRequest")]
    assert CONFIG.effective_request_timeout_ms == 1000


async def test_a_wait_ends_when_the_quorums_leader_moves_and_the_new_one_is_asked(
    autojump_clock: trio.testing.MockClock,
) -> None:
    channel = FakeChannel(silent={2})
    leader: list[int | None] = [2]
    loop = new_loop(channel, leader)

    async def move_leader() -> None:
        await trio.sleep(3.0)
        leader[0] = 3

    async with trio.open_nursery() as nursery:
        nursery.start_soon(move_leader)
        assert await run_until(loop, lambda: loop.state is BrokerState.RUNNING, 10.0)
    first, second = channel.sent[:2]
    assert (first[1], second[1]) == (2, 3)
    # the registration went to the new leader within a tenth of a heartbeat interval
    # (and the backoff after a failure) of the move, not after the registration's wait
    assert 3.0 <= second[0] < 3.0 + 0.05 + 0.2
    assert loop.lifecycle.broker_epoch == 7
    # the broker's own account: one registration unanswered, one answered at once
    assert loop.times.unanswered_count("BrokerRegistration", "leader_moved") == 1
    assert loop.times.unanswered_count("BrokerRegistration", "timeout") == 0
    assert loop.times.summaries(trio.current_time())["BrokerRegistration"].count == 1
