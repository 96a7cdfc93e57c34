"""The /metrics endpoint over real loopback sockets: answers, refusals, slow clients."""

from __future__ import annotations

import trio
import trio.testing

from quorum.metrics import CONTENT_TYPE, gauge, render
from quorum.metrics.http_server import MAX_HEAD_BYTES, serve_metrics

TEXT = render([gauge("up", "Always 1.", 1)])


async def exchange(address: tuple[str, int], request: bytes, *, eof: bool = False) -> bytes:
    """Send ``request`` (then end the sending side if ``eof``) and read until the server
    closes the connection."""
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        if request:
            await stream.send_all(request)
        if eof:
            await stream.send_eof()
        data = bytearray()
        while chunk := await stream.receive_some(65536):
            data += chunk
    return bytes(data)


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


async def start(nursery: trio.Nursery, collect: object = None, deadline_s: float = 5.0
                ) -> tuple[str, int]:
    async def text() -> str:
        return TEXT

    return await serve_metrics(
        nursery, "127.0.0.1", 0, collect or text,  # type: ignore[arg-type]
        deadline_s=deadline_s,
    )


async def test_a_scrape_gets_the_text_format() -> None:
    async with trio.open_nursery() as nursery:
        address = await start(nursery)
        answer = await exchange(address, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        head, body = answer.split(b"\r\n\r\n", 1)
        assert status_of(answer) == 200
        assert f"Content-Type: {CONTENT_TYPE}".encode() in head
        assert f"Content-Length: {len(TEXT)}".encode() in head
        assert body.decode() == TEXT
        head_only = await exchange(address, b"HEAD /metrics?x=1 HTTP/1.0\r\n\r\n")
        assert status_of(head_only) == 200 and head_only.endswith(b"\r\n\r\n")
        nursery.cancel_scope.cancel()


async def test_wrong_paths_methods_and_garbage_are_refused_and_the_server_goes_on() -> None:
    async with trio.open_nursery() as nursery:
        address = await start(nursery)
        assert status_of(await exchange(address, b"GET / HTTP/1.1\r\n\r\n")) == 404
        assert status_of(await exchange(address, b"POST /metrics HTTP/1.1\r\n\r\n")) == 405
        assert status_of(await exchange(address, b"\x00\xff garbage\r\n\r\n")) == 400
        # the client stops sending before the head ended
        assert status_of(await exchange(address, b"GET /metr", eof=True)) == 400
        oversized = b"GET /metrics HTTP/1.1\r\nX: " + b"a" * (MAX_HEAD_BYTES + 10) + b"\r\n\r\n"
        assert status_of(await exchange(address, oversized)) == 431
        assert status_of(await exchange(address, b"GET /metrics HTTP/1.1\r\n\r\n")) == 200
        nursery.cancel_scope.cancel()


async def test_a_silent_client_is_dropped_after_the_deadline() -> None:
    async with trio.open_nursery() as nursery:
        address = await start(nursery, deadline_s=0.2)
        with trio.fail_after(5):
            # the server closes the connection without an answer
            assert await exchange(address, b"") == b""
        assert status_of(await exchange(address, b"GET /metrics HTTP/1.1\r\n\r\n")) == 200
        nursery.cancel_scope.cancel()


async def test_a_failing_collector_answers_500_and_does_not_stop_the_server() -> None:
    calls = []

    async def collect() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("a bug in a gauge")
        return TEXT

    async with trio.open_nursery() as nursery:
        address = await start(nursery, collect)
        assert status_of(await exchange(address, b"GET /metrics HTTP/1.1\r\n\r\n")) == 500
        assert status_of(await exchange(address, b"GET /metrics HTTP/1.1\r\n\r\n")) == 200
        nursery.cancel_scope.cancel()
