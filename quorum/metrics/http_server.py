"""A small HTTP/1.1 server for ``GET /metrics`` (trio), at the edge of a node.

One request per connection (``Connection: close``): scrapers open a
connection per scrape, and it keeps the parser small. The request head is
capped (``MAX_HEAD_BYTES``: 431 beyond it) and the whole exchange has a
deadline, so a slow or silent client holds a connection for at most that
long. A malformed request line gets 400, another path 404, another method
405. Whatever goes wrong on one connection closes that connection only; the
text is produced by ``collect`` on the node's own trio loop when asked.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Final

import trio

from quorum.metrics.exposition import CONTENT_TYPE

__all__ = ["MAX_HEAD_BYTES", "REQUEST_DEADLINE_S", "handle_metrics_connection", "serve_metrics"]

logger = logging.getLogger(__name__)

MAX_HEAD_BYTES: Final = 8192
REQUEST_DEADLINE_S: Final = 5.0
_REASONS: Final = {
    200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
    408: "Request Timeout", 431: "Request Header Fields Too Large",
    500: "Internal Server Error",
}


class _BadRequest(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def _response(status: int, body: bytes, content_type: str, *, head_only: bool) -> bytes:
    head = (
        f"HTTP/1.1 {status} {_REASONS[status]}\r\n"
        f"Content-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode("ascii")
    return head if head_only else head + body


async def _read_head(stream: trio.abc.Stream) -> bytes:
    data = bytearray()
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD_BYTES:
            raise _BadRequest(431)
        chunk = await stream.receive_some(4096)
        if not chunk:
            raise _BadRequest(400)  # closed before the head ended
        data += chunk
    head = bytes(data).split(b"\r\n\r\n", 1)[0]
    if len(head) > MAX_HEAD_BYTES:
        raise _BadRequest(431)
    return head


async def _route(
    head: bytes, collect: Callable[[], Awaitable[str]]
) -> tuple[int, bytes, str, bool]:
    request_line = head.split(b"\r\n", 1)[0]
    parts = request_line.split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        raise _BadRequest(400)
    method, target = parts[0], parts[1].split(b"?", 1)[0]
    head_only = method == b"HEAD"
    if method not in (b"GET", b"HEAD"):
        return 405, b"only GET and HEAD\n", "text/plain; charset=utf-8", False
    if target != b"/metrics":
        return 404, b"metrics are at /metrics\n", "text/plain; charset=utf-8", head_only
    return 200, (await collect()).encode("utf-8"), CONTENT_TYPE, head_only


async def handle_metrics_connection(
    stream: trio.abc.Stream, collect: Callable[[], Awaitable[str]], *, deadline_s: float = REQUEST_DEADLINE_S
) -> None:
    """Answer one request on ``stream`` and close it."""
    try:
        with trio.move_on_after(deadline_s) as scope:
            try:
                status, body, content_type, head_only = await _route(
                    await _read_head(stream), collect
                )
            except _BadRequest as bad:
                status, body, content_type, head_only = (
                    bad.status, f"{_REASONS[bad.status]}\n".encode(), "text/plain", False
                )
            except Exception:  # a bug in collect must not take the node down
                logger.exception("collecting metrics failed")
                status, body, content_type, head_only = 500, b"", "text/plain", False
            await stream.send_all(_response(status, body, content_type, head_only=head_only))
        if scope.cancelled_caught:
            logger.debug("a metrics client took longer than %.1f s", deadline_s)
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass  # the client went away: nothing to answer
    finally:
        await trio.aclose_forcefully(stream)


async def serve_metrics(
    nursery: trio.Nursery, host: str, port: int, collect: Callable[[], Awaitable[str]],
    *, deadline_s: float = REQUEST_DEADLINE_S,
) -> tuple[str, int]:
    """Listen on ``host:port`` (port 0: any free one); returns the bound address."""
    listeners = await trio.open_tcp_listeners(port, host=host)

    async def handler(stream: trio.SocketStream) -> None:
        await handle_metrics_connection(stream, collect, deadline_s=deadline_s)

    nursery.start_soon(trio.serve_listeners, handler, listeners)
    bound = listeners[0].socket.getsockname()
    logger.info("metrics on http://%s:%d/metrics", bound[0], bound[1])
    return bound[0], bound[1]
