"""One request, one outcome: the transport of the differential corpus.

A request goes out as a whole frame (built by pykraft's codec, or raw bytes for what the
codec refuses to build: trailing bytes, unknown tags, a bad CRC, an oversized frame) on
one connection per node, and the outcome is what came back: a response decoded with
pykraft's schema for the (api key, version) sent, the connection closed by the server, or
nothing in time. A closed connection is reopened for the next request, so a case that
makes a node hang up costs the next case nothing.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Any, Final

import attrs

from quorum.wire import primitives as p
from quorum.wire.errors import WireDecodeError
from quorum.wire.protocol import RequestHeader, decode_response, encode_request

__all__ = [
    "Answered",
    "Closed",
    "NodeLink",
    "Outcome",
    "Silent",
    "Undecodable",
    "frame",
    "request_frame",
    "with_unknown_tag",
]

CLIENT_ID: Final = "pykraft-differential"
_SIZE: Final = struct.Struct(">i")


@attrs.frozen
class Answered:
    """A response that decodes with pykraft's schema of the request's (key, version)."""

    message: Any


@attrs.frozen
class Undecodable:
    """A response frame that does not decode as the request's response (why, not bytes)."""

    reason: str


@attrs.frozen
class Closed:
    """The server closed the connection without answering."""


@attrs.frozen
class Silent:
    """No answer and no close within the wait (acks=0 Produce is answered so)."""


Outcome = Answered | Undecodable | Closed | Silent


def frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload


def request_frame(msg: Any, api_key: int, version: int, correlation_id: int, *,
                  trailing: bytes = b"") -> bytes:
    """``msg`` framed at ``version`` by pykraft's codec, plus ``trailing`` bytes in the frame."""
    header = RequestHeader(api_key=api_key, api_version=version,
                           correlation_id=correlation_id, client_id=CLIENT_ID)
    framed = encode_request(header, msg)
    return frame(framed[4:] + trailing) if trailing else framed


def with_unknown_tag(framed: bytes, tag: int = 9999, data: bytes = b"\x01\x02\x03") -> bytes:
    """A flexible request's frame with an unknown tagged field in its body's top-level tag
    block (the last bytes of the body, empty when the codec wrote it: one zero byte)."""
    if not framed.endswith(b"\x00"):
        raise ValueError("the body's top-level tag block is not empty")
    block = p.unsigned_varint_bytes(1) + p.unsigned_varint_bytes(tag) + p.unsigned_varint_bytes(len(data)) + data
    return frame(framed[4:-1] + block)


class NodeLink:
    """A connection to one node, reopened after the server closes it."""

    def __init__(self, address: tuple[str, int], *, timeout: float = 10.0) -> None:
        self.address = address
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._correlation = 0

    def next_correlation_id(self) -> int:
        self._correlation += 1
        return self._correlation

    def exchange(self, data: bytes, api_key: int, version: int, *,
                 wait: float | None = None) -> Outcome:
        """Send ``data`` (whole frames) and read one response frame for (key, version)."""
        sock = self._connect()
        try:
            sock.sendall(data)
        except OSError:
            self.close()
            return Closed()
        deadline = time.monotonic() + (self.timeout if wait is None else wait)
        head = self._read(4, deadline)
        if head is None or isinstance(head, Closed):
            return Silent() if head is None else head
        (size,) = _SIZE.unpack(head)
        payload = self._read(size, deadline)
        if payload is None or isinstance(payload, Closed):
            self.close()
            return Closed() if isinstance(payload, Closed) else Silent()
        try:
            _header, message = decode_response(payload, api_key, version)
        except WireDecodeError as exc:
            return Undecodable(str(exc).split(":")[0])
        return Answered(message)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _connect(self) -> socket.socket:
        if self._sock is None:
            sock = socket.create_connection(self.address, timeout=self.timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sock = sock
        return self._sock

    def _read(self, n: int, deadline: float) -> bytes | Closed | None:
        """``n`` bytes; Closed when the server hung up; None when the wait ran out (the
        connection is then closed too: a late answer must not meet the next request)."""
        assert self._sock is not None
        chunks: list[bytes] = []
        while n > 0:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.close()
                return None
            self._sock.settimeout(remaining)
            try:
                chunk = self._sock.recv(min(n, 1 << 20))
            except TimeoutError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                self.close()
                return Closed()
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)
