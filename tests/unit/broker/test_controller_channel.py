"""``BrokerControllerChannel`` against tiny servers on loopback: requests follow the quorum
leader, NOT_CONTROLLER answers are resent to the next leader, no leader means a timely
ControllerUnavailableError, and a slow forward never delays a heartbeat (separate lanes)."""

from __future__ import annotations

import pytest
import trio

from broker.controller_channel import (
    BrokerControllerChannel,
    ControllerLane,
    ControllerUnavailableError,
)
from quorum.client import ClientError
from quorum.wire.error_codes import Errors
from quorum.wire.messages import DescribeClusterRequest

from ..client.tiny_server import TinyServer, closed_port

DEADLINE_S = 10
ASK = DescribeClusterRequest(endpoint_type=2)
# the tiny server holds a request that asks for authorized operations until released
SLOW = DescribeClusterRequest(endpoint_type=2, include_cluster_authorized_operations=True)


class Leader:
    """What the broker's observer core knows about the quorum leader (changed by the test)."""

    def __init__(self, node: int | None) -> None:
        self.node = node

    def __call__(self) -> int | None:
        return self.node


async def test_requests_follow_the_quorum_leader() -> None:
    one, two = TinyServer("one-"), TinyServer("two-")
    leader = Leader(1)
    with trio.fail_after(DEADLINE_S):
        async with trio.open_nursery() as nursery:
            voters = {1: ("127.0.0.1", await one.start(nursery)),
                      2: ("127.0.0.1", await two.start(nursery))}
            channel = BrokerControllerChannel(voters, leader_id=leader, client_id="test")
            answer = await channel.call(ASK, lane=ControllerLane.FORWARDING, timeout_ms=5_000)
            assert answer.cluster_id == "one-type-2"
            leader.node = 2
            answer = await channel.call(ASK, lane=ControllerLane.FORWARDING, timeout_ms=5_000)
            assert answer.cluster_id == "two-type-2"
            assert channel.active_controller == 2
            await channel.aclose()
            nursery.cancel_scope.cancel()


async def test_not_controller_is_resent_to_the_next_leader() -> None:
    old, new = TinyServer("old-"), TinyServer("new-")
    old.error_code = Errors.NOT_CONTROLLER
    leader = Leader(1)
    with trio.fail_after(DEADLINE_S):
        async with trio.open_nursery() as nursery:
            voters = {1: ("127.0.0.1", await old.start(nursery)),
                      2: ("127.0.0.1", await new.start(nursery))}
            channel = BrokerControllerChannel(
                voters, leader_id=leader, client_id="test", retry_backoff_ms=10
            )

            async def elect_later() -> None:
                # the old leader must have refused at least once before the election
                await old.until_seen(3)  # ApiVersions, then two refusals
                leader.node = 2

            nursery.start_soon(elect_later)
            answer = await channel.call(ASK, lane=ControllerLane.FORWARDING, timeout_ms=5_000)
            assert answer.cluster_id == "new-type-2"
            assert answer.error_code == Errors.NONE
            await channel.aclose()
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("leader", [None, 7])  # unknown, or not a voter
async def test_no_known_leader_is_a_timely_error(leader: int | None) -> None:
    channel = BrokerControllerChannel(
        {1: ("127.0.0.1", closed_port())}, leader_id=Leader(leader), client_id="test"
    )
    with trio.fail_after(DEADLINE_S):
        start = trio.current_time()
        with pytest.raises(ControllerUnavailableError, match="no known leader"):
            await channel.call(ASK, lane=ControllerLane.ALTER_PARTITION, timeout_ms=300)
        assert trio.current_time() - start >= 0.3


async def test_an_unreachable_leader_is_named_in_the_error() -> None:
    channel = BrokerControllerChannel(
        {1: ("127.0.0.1", closed_port())}, leader_id=Leader(1), client_id="test"
    )
    with trio.fail_after(DEADLINE_S):
        with pytest.raises(ControllerUnavailableError, match="node 1: cannot connect"):
            await channel.call(ASK, lane=ControllerLane.FORWARDING, timeout_ms=300)
        with pytest.raises(ClientError):
            await channel.send_once(ControllerLane.LIFECYCLE, 1, ASK)


async def test_a_slow_forward_does_not_delay_a_heartbeat() -> None:
    server = TinyServer()
    with trio.fail_after(DEADLINE_S):
        async with trio.open_nursery() as nursery:
            voters = {1: ("127.0.0.1", await server.start(nursery))}
            channel = BrokerControllerChannel(voters, leader_id=Leader(1), client_id="test")
            slow_done = trio.Event()

            async def slow_forward() -> None:
                await channel.call(SLOW, lane=ControllerLane.FORWARDING, timeout_ms=9_000)
                slow_done.set()

            nursery.start_soon(slow_forward)
            await server.until_seen(2)  # the slow request reached the server
            # the lifecycle lane has its own connection: answered while the forward waits
            answer = await channel.send_once(ControllerLane.LIFECYCLE, 1, ASK)
            assert answer.cluster_id == "type-2"
            assert not slow_done.is_set()
            server.release.set()
            await slow_done.wait()
            await channel.aclose()
            nursery.cancel_scope.cancel()
