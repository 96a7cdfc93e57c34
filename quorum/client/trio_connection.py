"""``TrioKafkaConnection``: the trio front-end of ``ClientConnection``.

No background task: a caller of ``request`` writes its frame under a FIFO
lock (correlation ids are assigned under that lock, so frames reach the wire
in id order), then waits for its response. Whichever waiter finds nobody
reading becomes the reader and hands every response it decodes to its
owner; the others sleep until the reader is done. ``receive_some`` is safe
to cancel, so a timed-out reader loses nothing; a send cut short by a
cancellation leaves half a frame on the wire, so it breaks the connection.

``send_no_response`` writes a request the server never answers (Produce
with acks=0); it takes no part in the response order.

Timeouts are cancel scopes around ``request`` (CONVENTIONS.md). A request
cancelled after it was written is abandoned (its late response is dropped)
and the connection stays usable: Kafka's own client closes instead, but the
Raft core already tolerates late responses, and reconnecting costs a
handshake.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from quorum.client.core import DEFAULT_CLIENT_ID, ClientConnection, Response
from quorum.client.errors import ClientError, ConnectionClosedError
from quorum.wire.framing import DEFAULT_MAX_FRAME_BYTES

__all__ = ["TrioKafkaConnection"]

_RECEIVE_BYTES = 256 * 1024
_STREAM_ERRORS = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


class TrioKafkaConnection:
    def __init__(self, stream: trio.abc.Stream, core: ClientConnection, *, address: str) -> None:
        self.address = address
        self._stream = stream
        self._core = core
        self._send_lock = trio.StrictFIFOLock()
        # responses read but not yet taken, in arrival (= request) order
        self._done: dict[int, Response] = {}
        self._reading = False
        self._progress = trio.Event()
        self._broken: str | None = None

    @classmethod
    async def connect(
        cls,
        host: str,
        port: int,
        *,
        client_id: str | None = DEFAULT_CLIENT_ID,
        negotiate: bool = True,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> TrioKafkaConnection:
        """Open a connection (and learn the server's versions if ``negotiate``).

        Raises ConnectionClosedError if the server cannot be reached; bound the
        time it may take with a cancel scope (``trio.fail_after``).
        """
        address = f"{host}:{port}"
        try:
            stream = await trio.open_tcp_stream(host, port)
        except OSError as exc:
            raise ConnectionClosedError(f"cannot connect to {address}: {exc}") from exc
        core = ClientConnection(client_id=client_id, max_frame_bytes=max_frame_bytes)
        conn = cls(stream, core, address=address)
        if negotiate:
            try:
                await conn.negotiate()
            except BaseException:
                await conn.aclose()
                raise
        return conn

    # -- public --------------------------------------------------------------------------

    @property
    def server_versions(self) -> dict[int, tuple[int, int]] | None:
        return self._core.server_versions

    @property
    def is_closed(self) -> bool:
        return self._broken is not None

    @property
    def in_flight(self) -> int:
        """Requests written and not yet answered (abandoned ones included)."""
        return self._core.in_flight

    def version_at_most(self, api_key: int, cap: int) -> int:
        """The highest version both sides speak that is at most ``cap``."""
        return self._core.version_at_most(api_key, cap)

    async def negotiate(self) -> None:
        """The ApiVersions handshake (retried at the server's version after error 35)."""
        request, version = self._core.api_versions_request()
        for _ in range(2):
            response = await self.request(request, version=version)
            retry = self._core.handle_api_versions(response, version)
            if retry is None:
                return
            request, version = self._core.api_versions_request(retry)
        raise ConnectionClosedError(f"{self.address} keeps refusing ApiVersions")

    async def request(
        self,
        message: Any,
        *,
        version: int | None = None,
        on_sent: Callable[[], None] | None = None,
    ) -> Any:
        """Send ``message`` and wait for its response (pipelined with other callers).

        Timeouts are the caller's cancel scope: a request cancelled after it
        was sent is abandoned, its late response dropped, and the connection
        stays usable (unless the cancellation cut a frame short).
        """
        correlation_id: int | None = None
        try:
            correlation_id = await self._send(message, version)
            if on_sent is not None:
                on_sent()  # the request is on the wire: a caller keeping order lets the next go
            return await self._wait(correlation_id)
        except trio.Cancelled:
            if correlation_id is not None:
                self._core.abandon(correlation_id)
                self._done.pop(correlation_id, None)
            raise

    async def send(
        self, message: Any, *, version: int | None = None, context: Any = None
    ) -> int:
        """Write one request without waiting; returns its correlation id.

        For a caller that runs its own reader task with ``next_response``
        (the two styles do not mix on one connection). The response may be
        read before this returns; ``context`` comes back with it.
        """
        return await self._send(message, version, context)

    async def send_no_response(self, message: Any, *, version: int | None = None) -> None:
        """Write a request the server sends no response to (Produce with acks=0)."""
        await self._send(message, version, expect_response=False)

    async def next_response(self) -> Response:
        """The next response in request order (abandoned ones left out)."""
        while not self._done:
            self._check_open()
            if self._reading:
                await self._progress.wait()
                continue
            await self._read_once()
        return self._done.pop(next(iter(self._done)))

    async def aclose(self) -> None:
        self._fail("closed by the client")
        await trio.aclose_forcefully(self._stream)

    async def __aenter__(self) -> TrioKafkaConnection:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    # -- internals -----------------------------------------------------------------------

    async def _send(
        self,
        message: Any,
        version: int | None,
        context: Any = None,
        *,
        expect_response: bool = True,
    ) -> int:
        async with self._send_lock:
            self._check_open()
            correlation_id, frame = self._core.send_request(
                message, version=version, context=context, expect_response=expect_response
            )
            try:
                await self._stream.send_all(frame)
            except _STREAM_ERRORS as exc:
                self._fail(f"send failed: {exc!r}")
                raise ConnectionClosedError(f"connection to {self.address} failed: {exc}") from exc
            except trio.Cancelled:
                # part of the frame may be on the wire: nothing after it can be trusted
                self._fail("a send was cancelled mid-frame")
                raise
            return correlation_id

    async def _wait(self, correlation_id: int) -> Any:
        while True:
            if correlation_id in self._done:
                return self._done.pop(correlation_id).message
            self._check_open()
            if self._reading:
                await self._progress.wait()
                continue
            await self._read_once()

    async def _read_once(self) -> None:
        self._reading = True
        try:
            data = await self._stream.receive_some(_RECEIVE_BYTES)
        except _STREAM_ERRORS as exc:
            self._fail(f"receive failed: {exc!r}")
            raise ConnectionClosedError(f"connection to {self.address} failed: {exc}") from exc
        finally:
            self._reading = False
            self._wake()
        if not data:
            self._fail("closed by the server")
            raise ConnectionClosedError(f"{self.address} closed the connection")
        try:
            responses = self._core.receive_data(data)
        except ClientError as exc:
            self._fail(str(exc))
            raise ConnectionClosedError(f"connection to {self.address} broke: {exc}") from exc
        for response in responses:
            self._done[response.correlation_id] = response
        self._wake()

    def _wake(self) -> None:
        self._progress.set()
        self._progress = trio.Event()

    def _check_open(self) -> None:
        if self._broken is not None:
            raise ConnectionClosedError(f"connection to {self.address} is closed: {self._broken}")

    def _fail(self, reason: str) -> None:
        if self._broken is None:
            self._broken = reason
            self._core.close(reason)
            self._done.clear()
            if isinstance(self._stream, trio.SocketStream):
                # wakes a task blocked in receive_some with ClosedResourceError
                self._stream.socket.close()
            self._wake()
