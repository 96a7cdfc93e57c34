"""A voter link against the tiny in-test server: responses, failures, hung peers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from quorum.node.inputs import ConnectionFailed
from quorum.node.peers import PeerLink
from quorum.raft import InboundResponse, OutboundRequest
from quorum.wire.messages import DescribeClusterRequest

from ..client.tiny_server import CLOSE, TinyServer, closed_port


class Core:
    """Stands in for the core's task: records what the link delivers."""

    def __init__(self) -> None:
        self.delivered: list[Any] = []
        self.changed = trio.Event()

    async def deliver(self, item: Any) -> None:
        self.delivered.append(item)
        self.changed.set()
        self.changed = trio.Event()

    async def wait_for(self, count: int) -> list[Any]:
        with trio.fail_after(10):
            while len(self.delivered) < count:
                await self.changed.wait()
        return self.delivered


async def until(condition: Callable[[], bool]) -> None:
    """Poll another task's state (the link offers no hook for it)."""
    with trio.fail_after(10):
        while not condition():  # noqa: ASYNC110 - nothing to wait on but the state itself
            await trio.sleep(0.005)


def link_to(port: int, core: Core, *, request_timeout_ms: int = 2000) -> PeerLink:
    return PeerLink(
        local_id=1, peer_id=2, address=("127.0.0.1", port), deliver=core.deliver,
        request_timeout_ms=request_timeout_ms, retry_backoff_ms=20, reconnect_backoff_max_ms=100,
    )


def request(request_id: int, kind: int, *, held: bool = False) -> OutboundRequest:
    message = DescribeClusterRequest(
        endpoint_type=kind, include_cluster_authorized_operations=held
    )
    return OutboundRequest(2, request_id, message)  # type: ignore[arg-type]


async def test_every_response_reaches_the_core_with_its_request_id(
    nursery: trio.Nursery,
) -> None:
    core = Core()
    link = link_to(await TinyServer().start(nursery), core)
    nursery.start_soon(link.run)
    for request_id in range(1, 31):
        link.submit(request(request_id, request_id + 50))
    delivered = await core.wait_for(30)
    assert all(isinstance(d, InboundResponse) and d.source == 2 for d in delivered)
    assert [(d.request_id, d.message.cluster_id) for d in delivered] == [
        (i, f"type-{i + 50}") for i in range(1, 31)
    ]


async def test_a_refused_connection_is_reported_for_each_request(nursery: trio.Nursery) -> None:
    core = Core()
    link = link_to(closed_port(), core)
    nursery.start_soon(link.run)
    link.submit(request(1, 1))
    link.submit(request(2, 1))
    assert await core.wait_for(2) == [ConnectionFailed(2), ConnectionFailed(2)]


async def test_a_peer_that_hangs_up_is_reported_and_the_next_request_reconnects(
    nursery: trio.Nursery,
) -> None:
    core = Core()
    link = link_to(await TinyServer().start(nursery), core)
    nursery.start_soon(link.run)
    link.submit(request(1, CLOSE))
    assert await core.wait_for(1) == [ConnectionFailed(2)]
    link.submit(request(2, 5))
    second = (await core.wait_for(2))[1]
    assert (second.request_id, second.message.cluster_id) == (2, "type-5")


async def test_a_peer_that_never_answers_is_dropped_silently_after_the_request_timeout(
    nursery: trio.Nursery,
) -> None:
    server = TinyServer()
    core = Core()
    link = link_to(await server.start(nursery), core, request_timeout_ms=100)
    nursery.start_soon(link.run)
    link.submit(request(1, 1, held=True))
    await until(lambda: link._session is not None)
    assert link._session is not None
    conn = link._session.conn
    await until(lambda: conn.is_closed)
    # no ConnectionFailed: a slow peer is not a dead one; the core times out on its own
    assert core.delivered == []
    server.release.set()
    link.submit(request(2, 9))
    [answer] = await core.wait_for(1)
    assert (answer.request_id, answer.message.cluster_id) == (2, "type-9")
