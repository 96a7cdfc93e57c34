"""Outbound connections to the other voters, one ``PeerLink`` each.

The Raft core decides what to send and when to retry; a link only moves its
requests. It connects on demand (negotiating versions with ApiVersions) and
writes each request as soon as the core hands it over, from the link's own
task (one hop from the core's task, which must never wait on a socket).
A reader task per connection hands each response back as an
``InboundResponse``. Several requests may be in flight: after an election
state change the core no longer waits for an older one.

A refused or reset connection is reported as ``ConnectionFailed``, the
input of the core's fast failure detection. Reconnects back off
exponentially from ``retry.backoff.ms`` up to a cap; while backing off, a
request fails at once. A connection whose oldest request has waited
``request.timeout.ms`` is closed silently (Kafka's client does the same):
the core times the request out on its own clock.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Awaitable, Callable

import trio

from quorum.client import ClientError, TrioKafkaConnection
from quorum.node.inputs import ConnectionFailed, Input
from quorum.raft import InboundResponse, OutboundRequest

__all__ = ["PeerLink"]

logger = logging.getLogger(__name__)


class _Session:
    """One open connection and the deadlines of its requests in flight, oldest first."""

    def __init__(self, conn: TrioKafkaConnection) -> None:
        self.conn = conn
        self.deadlines: deque[float] = deque()
        self.watchdog = trio.CancelScope()


class PeerLink:
    def __init__(
        self,
        *,
        local_id: int,
        peer_id: int,
        address: tuple[str, int],
        deliver: Callable[[Input], Awaitable[None]],
        request_timeout_ms: int,
        retry_backoff_ms: int,
        reconnect_backoff_max_ms: int,
    ) -> None:
        self.peer_id = peer_id
        self._local_id = local_id
        self._host, self._port = address
        self._deliver = deliver
        self._request_timeout_s = request_timeout_ms / 1000
        self._backoff_min_s = max(retry_backoff_ms, 1) / 1000
        self._backoff_max_s = reconnect_backoff_max_ms / 1000
        self._backoff_s = 0.0
        self._retry_at = -math.inf
        self._session: _Session | None = None
        self._queue_send, self._queue = trio.open_memory_channel[OutboundRequest](math.inf)

    def submit(self, request: OutboundRequest) -> None:
        """Called by the core's task; never blocks."""
        self._queue_send.send_nowait(request)

    async def run(self) -> None:
        try:
            async with trio.open_nursery() as nursery:
                async for request in self._queue:
                    session = self._session or await self._connect(nursery)
                    if session is None or not await self._send(session, request):
                        await self._deliver(ConnectionFailed(self.peer_id))
        finally:
            if self._session is not None:
                await self._session.conn.aclose()

    async def _connect(self, nursery: trio.Nursery) -> _Session | None:
        if trio.current_time() < self._retry_at:
            return None
        try:
            with trio.fail_after(self._request_timeout_s):
                conn = await TrioKafkaConnection.connect(
                    self._host, self._port, client_id=f"pykraft-raft-{self._local_id}"
                )
        except (ClientError, trio.TooSlowError) as exc:
            self._backoff_s = min(self._backoff_max_s, max(self._backoff_min_s, self._backoff_s * 2))
            self._retry_at = trio.current_time() + self._backoff_s
            logger.debug("cannot reach voter %d at %s:%d: %s", self.peer_id, self._host,
                         self._port, exc)
            return None
        self._backoff_s = 0.0
        logger.info("connected to voter %d at %s:%d", self.peer_id, self._host, self._port)
        session = self._session = _Session(conn)
        nursery.start_soon(self._read, session)
        return session

    async def _send(self, session: _Session, request: OutboundRequest) -> bool:
        # before the write: the answer may be read before ``send`` returns
        deadline = trio.current_time() + self._request_timeout_s
        session.deadlines.append(deadline)
        session.watchdog.deadline = min(session.watchdog.deadline, deadline)
        try:
            await session.conn.send(request.message, context=request.request_id)
        except ClientError as exc:
            await self._drop(session, f"send failed: {exc}")
            return False
        return True

    async def _read(self, session: _Session) -> None:
        """Hand responses to the core until the connection breaks or hangs."""
        while True:
            session.watchdog = trio.CancelScope(
                deadline=session.deadlines[0] if session.deadlines else math.inf
            )
            with session.watchdog:
                try:
                    response = await session.conn.next_response()
                except ClientError as exc:
                    await self._lost(session, str(exc))
                    return
            if session.watchdog.cancelled_caught:
                await self._drop(session, "no response within request.timeout.ms")
                return
            session.deadlines.popleft()  # answers come in request order
            await self._deliver(
                InboundResponse(self.peer_id, response.context, response.message)
            )

    async def _drop(self, session: _Session, reason: str) -> None:
        if self._session is session:
            self._session = None
            logger.info("closed the connection to voter %d: %s", self.peer_id, reason)
        await session.conn.aclose()

    async def _lost(self, session: _Session, reason: str) -> None:
        if self._session is not session:
            return  # an older connection; its loss was reported already
        await self._drop(session, reason)
        await self._deliver(ConnectionFailed(self.peer_id))
