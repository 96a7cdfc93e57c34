"""``BlockingKafkaConnection``: the blocking-socket front-end of ``ClientConnection``.

For synchronous callers (PySpark's reader generators, benchmarks): one
thread at a time. ``send`` writes a request and returns its correlation id,
``receive`` waits for that response (keeping any others that arrive first),
so a caller can keep many requests in flight; ``request`` is both.
``send_no_response`` writes a request the server never answers (Produce
with acks=0).
"""

from __future__ import annotations

import socket
import time
from typing import Any

from quorum.client.core import DEFAULT_CLIENT_ID, ClientConnection
from quorum.client.errors import ClientError, ConnectionClosedError, RequestTimeoutError
from quorum.wire.framing import DEFAULT_MAX_FRAME_BYTES

__all__ = ["BlockingKafkaConnection"]

_RECEIVE_BYTES = 256 * 1024


class BlockingKafkaConnection:
    def __init__(self, sock: socket.socket, core: ClientConnection, *, address: str) -> None:
        self.address = address
        self._sock = sock
        self._core = core
        self._done: dict[int, Any] = {}
        self._deadlines: dict[int, float | None] = {}
        self._broken: str | None = None

    @classmethod
    def connect(
        cls,
        host: str,
        port: int,
        *,
        client_id: str | None = DEFAULT_CLIENT_ID,
        negotiate: bool = True,
        timeout: float | None = 30.0,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> BlockingKafkaConnection:
        address = f"{host}:{port}"
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise ConnectionClosedError(f"cannot connect to {address}: {exc}") from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = cls(sock, ClientConnection(client_id=client_id, max_frame_bytes=max_frame_bytes),
                   address=address)
        if negotiate:
            try:
                conn.negotiate(timeout=timeout)
            except BaseException:
                conn.close()
                raise
        return conn

    # -- public --------------------------------------------------------------------------

    @property
    def server_versions(self) -> dict[int, tuple[int, int]] | None:
        return self._core.server_versions

    @property
    def in_flight(self) -> int:
        return self._core.in_flight

    def negotiate(self, *, timeout: float | None = None) -> None:
        request, version = self._core.api_versions_request()
        for _ in range(2):
            response = self.request(request, version=version, timeout=timeout)
            retry = self._core.handle_api_versions(response, version)
            if retry is None:
                return
            request, version = self._core.api_versions_request(retry)
        raise ConnectionClosedError(f"{self.address} keeps refusing ApiVersions")

    def send(self, message: Any, *, version: int | None = None, timeout: float | None = None) -> int:
        """Write one request; returns the correlation id to ``receive`` with."""
        self._check_open()
        deadline = None if timeout is None else time.monotonic() + timeout
        correlation_id, frame = self._core.send_request(message, version=version)
        try:
            self._sock.settimeout(timeout)
            self._sock.sendall(frame)
        except OSError as exc:
            self._fail(f"send failed: {exc!r}")
            raise ConnectionClosedError(f"connection to {self.address} failed: {exc}") from exc
        self._deadlines[correlation_id] = deadline
        return correlation_id

    def send_no_response(
        self, message: Any, *, version: int | None = None, timeout: float | None = None
    ) -> None:
        """Write a request the server sends no response to (Produce with acks=0)."""
        self._check_open()
        _, frame = self._core.send_request(message, version=version, expect_response=False)
        try:
            self._sock.settimeout(timeout)
            self._sock.sendall(frame)
        except OSError as exc:
            self._fail(f"send failed: {exc!r}")
            raise ConnectionClosedError(f"connection to {self.address} failed: {exc}") from exc

    def version_at_most(self, api_key: int, cap: int) -> int:
        """The highest version both sides speak that is at most ``cap``."""
        return self._core.version_at_most(api_key, cap)

    def receive(self, correlation_id: int) -> Any:
        """The response to request ``correlation_id`` (raises RequestTimeoutError)."""
        deadline = self._deadlines.get(correlation_id)
        while correlation_id not in self._done:
            self._check_open()
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                self._give_up(correlation_id)
                raise RequestTimeoutError(f"no response from {self.address} in time")
            self._read_once(remaining)
        self._deadlines.pop(correlation_id, None)
        return self._done.pop(correlation_id)

    def request(
        self, message: Any, *, version: int | None = None, timeout: float | None = None
    ) -> Any:
        return self.receive(self.send(message, version=version, timeout=timeout))

    def close(self) -> None:
        self._fail("closed by the client")

    def __enter__(self) -> BlockingKafkaConnection:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- internals -----------------------------------------------------------------------

    def _read_once(self, timeout: float | None) -> None:
        try:
            self._sock.settimeout(timeout)
            data = self._sock.recv(_RECEIVE_BYTES)
        except TimeoutError:
            return  # the caller checks its deadline
        except OSError as exc:
            self._fail(f"receive failed: {exc!r}")
            raise ConnectionClosedError(f"connection to {self.address} failed: {exc}") from exc
        if not data:
            self._fail("closed by the server")
            raise ConnectionClosedError(f"{self.address} closed the connection")
        try:
            responses = self._core.receive_data(data)
        except ClientError as exc:
            self._fail(str(exc))
            raise ConnectionClosedError(f"connection to {self.address} broke: {exc}") from exc
        for response in responses:
            self._done[response.correlation_id] = response.message

    def _give_up(self, correlation_id: int) -> None:
        self._core.abandon(correlation_id)
        self._deadlines.pop(correlation_id, None)

    def _check_open(self) -> None:
        if self._broken is not None:
            raise ConnectionClosedError(f"connection to {self.address} is closed: {self._broken}")

    def _fail(self, reason: str) -> None:
        if self._broken is None:
            self._broken = reason
            self._core.close(reason)
            self._done.clear()
            self._sock.close()
