"""The trio and blocking front-ends against a tiny trio server on 127.0.0.1."""

from __future__ import annotations

import pytest
import trio

from quorum.client import (
    BlockingKafkaConnection,
    ConnectionClosedError,
    RequestTimeoutError,
    TrioKafkaConnection,
)
from quorum.wire.messages import DescribeClusterRequest

from .tiny_server import CLOSE, SILENT, TABLE, TinyServer, closed_port


def ask(kind: int, *, held: bool = False) -> DescribeClusterRequest:
    return DescribeClusterRequest(endpoint_type=kind, include_cluster_authorized_operations=held)


# -- trio --------------------------------------------------------------------------------


async def test_a_trio_connection_negotiates_versions_and_answers_a_request(
    nursery: trio.Nursery,
) -> None:
    port = await TinyServer().start(nursery)
    async with await TrioKafkaConnection.connect("127.0.0.1", port) as conn:
        assert conn.server_versions == TABLE
        response = await conn.request(ask(1))
    assert response.cluster_id == "type-1"


async def test_concurrent_callers_each_get_their_own_response(nursery: trio.Nursery) -> None:
    port = await TinyServer().start(nursery)
    answers: dict[int, str] = {}
    async with await TrioKafkaConnection.connect("127.0.0.1", port) as conn:

        async def one(kind: int) -> None:
            answers[kind] = (await conn.request(ask(kind))).cluster_id

        async with trio.open_nursery() as callers:
            for kind in range(20):
                callers.start_soon(one, kind)
    assert answers == {kind: f"type-{kind}" for kind in range(20)}


async def test_a_cancelled_request_is_abandoned_and_the_connection_stays_usable(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    server = TinyServer()
    port = await server.start(nursery)
    async with await TrioKafkaConnection.connect("127.0.0.1", port) as conn:
        with trio.move_on_after(5) as scope:
            await conn.request(ask(7, held=True))
        assert scope.cancelled_caught
        server.release.set()
        assert (await conn.request(ask(8))).cluster_id == "type-8"
        assert not conn.is_closed


async def test_a_request_without_a_response_leaves_the_response_order_intact(
    nursery: trio.Nursery,
) -> None:
    server = TinyServer()
    port = await server.start(nursery)
    async with await TrioKafkaConnection.connect("127.0.0.1", port) as conn:
        await conn.send_no_response(ask(SILENT))
        assert conn.in_flight == 0
        assert (await conn.request(ask(3))).cluster_id == "type-3"
    # the handshake, the silent request and the answered one
    assert server.requests_seen == 3


async def test_a_server_that_hangs_up_fails_the_waiting_request_and_later_ones(
    nursery: trio.Nursery,
) -> None:
    port = await TinyServer().start(nursery)
    conn = await TrioKafkaConnection.connect("127.0.0.1", port)
    with pytest.raises(ConnectionClosedError, match="closed the connection"):
        await conn.request(ask(CLOSE))
    with pytest.raises(ConnectionClosedError):
        await conn.request(ask(1))
    await conn.aclose()


async def test_connecting_to_a_closed_port_fails_cleanly() -> None:
    with pytest.raises(ConnectionClosedError, match="cannot connect"):
        await TrioKafkaConnection.connect("127.0.0.1", closed_port())


# -- blocking ----------------------------------------------------------------------------


async def test_a_blocking_connection_pipelines_and_matches_out_of_turn_waits(
    nursery: trio.Nursery,
) -> None:
    port = await TinyServer().start(nursery)

    def client() -> list[str]:
        with BlockingKafkaConnection.connect("127.0.0.1", port) as conn:
            assert conn.server_versions == TABLE
            ids = [conn.send(ask(kind)) for kind in (1, 2, 3)]
            assert conn.in_flight == 3
            # wait for the last first: the earlier answers are kept for their callers
            return [conn.receive(ids[2]).cluster_id, conn.receive(ids[0]).cluster_id,
                    conn.receive(ids[1]).cluster_id]

    assert await trio.to_thread.run_sync(client) == ["type-3", "type-1", "type-2"]


async def test_a_blocking_request_without_a_response_leaves_the_order_intact(
    nursery: trio.Nursery,
) -> None:
    port = await TinyServer().start(nursery)

    def client() -> str:
        with BlockingKafkaConnection.connect("127.0.0.1", port) as conn:
            conn.send_no_response(ask(SILENT), timeout=10)
            assert conn.in_flight == 0
            return str(conn.request(ask(4), timeout=10).cluster_id)

    assert await trio.to_thread.run_sync(client) == "type-4"


async def test_a_blocking_request_times_out_and_the_connection_stays_usable(
    nursery: trio.Nursery,
) -> None:
    server = TinyServer()
    port = await server.start(nursery)
    token = trio.lowlevel.current_trio_token()

    def client() -> str:
        with BlockingKafkaConnection.connect("127.0.0.1", port) as conn:
            with pytest.raises(RequestTimeoutError):
                conn.request(ask(7, held=True), timeout=0.05)
            trio.from_thread.run_sync(server.release.set, trio_token=token)
            return str(conn.request(ask(8), timeout=10).cluster_id)

    assert await trio.to_thread.run_sync(client) == "type-8"


async def test_a_blocking_connection_to_a_closed_port_fails_cleanly() -> None:
    port = closed_port()
    with pytest.raises(ConnectionClosedError, match="cannot connect"):
        await trio.to_thread.run_sync(lambda: BlockingKafkaConnection.connect("127.0.0.1", port))
