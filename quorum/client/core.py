"""``ClientConnection``: the sans-I/O core of one Kafka-protocol client connection.

It never touches a socket (h11's shape): ``send_request`` returns the bytes
to write, ``receive_data`` takes the bytes read and returns the responses
they complete. What it owns:

* correlation ids, assigned in send order;
* request header versions (v1/v2 from the API version; responses v0/v1,
  ApiVersions always v0) through ``quorum.wire.protocol``;
* pipelining: any number of requests in flight, matched to responses in
  FIFO order, because a Kafka server answers one connection in request
  order; a response whose correlation id is not the oldest one in flight
  breaks the protocol;
* per-request deadlines, in whatever clock the front-end uses; a caller
  that gives up ``abandon``s its request and the late response is dropped;
* version negotiation: ``api_versions_request`` / ``handle_api_versions``
  learn the server's table, after which ``send_request`` picks the highest
  version both sides speak unless told otherwise (``version_at_most`` caps it);
* requests that get no response (Produce with acks=0: Kafka's broker sends
  none): ``send_request(..., expect_response=False)`` uses a correlation id
  but registers nothing in flight, so the FIFO match of later responses is
  unaffected.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Mapping
from typing import Any, Final

import attrs

from quorum.client.errors import ConnectionClosedError, ProtocolError, UnsupportedVersionError
from quorum.wire.apis import api_for
from quorum.wire.error_codes import Errors
from quorum.wire.errors import WireError
from quorum.wire.framing import DEFAULT_MAX_FRAME_BYTES, FrameDecoder
from quorum.wire.messages import ApiVersionsRequest, ApiVersionsResponse
from quorum.wire.protocol import API_VERSIONS_KEY, RequestHeader, decode_response, encode_request
from quorum.wire.schema import message_info

__all__ = ["DEFAULT_CLIENT_ID", "ClientConnection", "Pending", "Response"]

# ApiVersions' first body field, when the server did not know the version asked for
_UNSUPPORTED_VERSION_CODE: Final = struct.pack(">h", Errors.UNSUPPORTED_VERSION)

DEFAULT_CLIENT_ID: Final = "pykraft"
_MAX_CORRELATION_ID: Final = 2**31 - 1
_CORRELATION: Final = struct.Struct(">i")


@attrs.define(kw_only=True)
class Pending:
    """One request in flight; ``abandoned`` once its caller gave up on it."""

    correlation_id: int
    api_key: int
    version: int
    deadline: float | None
    # the caller's own tag for this request, handed back with the response
    context: Any = None
    abandoned: bool = False


@attrs.frozen
class Response:
    correlation_id: int
    version: int
    message: Any
    context: Any = None


class ClientConnection:
    def __init__(
        self,
        *,
        client_id: str | None = DEFAULT_CLIENT_ID,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        server_versions: Mapping[int, tuple[int, int]] | None = None,
    ) -> None:
        self.client_id = client_id
        self._decoder = FrameDecoder(max_frame_bytes)
        self._pending: deque[Pending] = deque()
        self._by_id: dict[int, Pending] = {}
        self._next_correlation_id = 0
        self._server_versions = None if server_versions is None else dict(server_versions)
        self._closed_reason: str | None = None

    # -- state ---------------------------------------------------------------------------

    @property
    def server_versions(self) -> dict[int, tuple[int, int]] | None:
        """The server's ApiVersions table (api key -> (min, max)), once known."""
        return self._server_versions

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    @property
    def is_closed(self) -> bool:
        return self._closed_reason is not None

    def close(self, reason: str) -> list[Pending]:
        """The connection is gone: every request still in flight fails."""
        if self._closed_reason is None:
            self._closed_reason = reason
        failed = [p for p in self._pending if not p.abandoned]
        self._pending.clear()
        self._by_id.clear()
        return failed

    # -- versions ------------------------------------------------------------------------

    def choose_version(self, api_key: int, requested: int | None = None) -> int:
        """``requested`` if both sides speak it, else the highest common version."""
        spec = api_for(api_key)
        if spec is None:
            raise UnsupportedVersionError(f"api key {api_key} is not known to this client")
        low, high = spec.low, spec.high
        if self._server_versions is not None:
            theirs = self._server_versions.get(api_key)
            if theirs is None:
                raise UnsupportedVersionError(f"the server does not serve {spec.name}")
            low, high = max(low, theirs[0]), min(high, theirs[1])
            if low > high:
                raise UnsupportedVersionError(
                    f"no {spec.name} version is spoken by both sides (client "
                    f"{spec.low}..{spec.high}, server {theirs[0]}..{theirs[1]})"
                )
        if requested is None:
            return high
        if not low <= requested <= high:
            raise UnsupportedVersionError(
                f"{spec.name} v{requested} is outside the usable versions {low}..{high}"
            )
        return requested

    def version_at_most(self, api_key: int, cap: int) -> int:
        """The highest version both sides speak that is at most ``cap``.

        For callers that must stay below a change in meaning (Fetch v13+
        names topics by id, Produce v10+ adds leader hints).
        """
        high = self.choose_version(api_key)
        if high <= cap:
            return high
        spec = api_for(api_key)
        assert spec is not None, "choose_version checked the api key"
        low = spec.low
        if self._server_versions is not None:
            low = max(low, self._server_versions[api_key][0])
        if cap < low:
            raise UnsupportedVersionError(
                f"{spec.name} needs a version at most {cap}, but the lowest usable one is {low}"
            )
        return cap

    def api_versions_request(self, version: int | None = None) -> tuple[ApiVersionsRequest, int]:
        """The handshake request and the version to send it at (default: our newest)."""
        spec = api_for(API_VERSIONS_KEY)
        assert spec is not None, "ApiVersions is always registered"
        request = ApiVersionsRequest(
            client_software_name="pykraft", client_software_version="0.1.0"
        )
        return request, spec.high if version is None else version

    def handle_api_versions(self, response: ApiVersionsResponse, sent_version: int) -> int | None:
        """Learn the server's table; or the version to retry with after error 35."""
        table = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        if response.error_code == Errors.UNSUPPORTED_VERSION:
            row = table.get(API_VERSIONS_KEY)
            retry = 0 if row is None else min(sent_version - 1, row[1])
            if retry < 0 or retry >= sent_version:
                raise UnsupportedVersionError("the server supports no usable ApiVersions version")
            return retry
        if response.error_code != Errors.NONE:
            raise UnsupportedVersionError(
                f"ApiVersions failed with {Errors(response.error_code).name}"
            )
        self._server_versions = table
        return None

    # -- requests ------------------------------------------------------------------------

    def send_request(
        self,
        message: Any,
        *,
        version: int | None = None,
        deadline: float | None = None,
        context: Any = None,
        expect_response: bool = True,
    ) -> tuple[int, bytes]:
        """Register a request; returns its correlation id and the frame to write.

        With ``expect_response=False`` the request is not put in flight: the
        server sends nothing back for it (Produce with acks=0), and a
        response with its id would break the protocol like any stray one.
        """
        if self._closed_reason is not None:
            raise ConnectionClosedError(f"the connection is closed: {self._closed_reason}")
        api_key = message_info(type(message)).api_key
        assert api_key is not None, f"{type(message).__name__} is not a request"
        if api_key == API_VERSIONS_KEY and version is not None:
            chosen = version  # the handshake may probe below or above the table
        else:
            chosen = self.choose_version(api_key, version)
        correlation_id = self._next_correlation_id
        self._next_correlation_id = (correlation_id + 1) % (_MAX_CORRELATION_ID + 1)
        header = RequestHeader(
            api_key=api_key,
            api_version=chosen,
            correlation_id=correlation_id,
            client_id=self.client_id,
        )
        frame = encode_request(header, message)
        if not expect_response:
            return correlation_id, frame
        pending = Pending(
            correlation_id=correlation_id,
            api_key=api_key,
            version=chosen,
            deadline=deadline,
            context=context,
        )
        self._pending.append(pending)
        self._by_id[correlation_id] = pending
        return correlation_id, frame

    def abandon(self, correlation_id: int) -> None:
        """The caller gave up: the response, if it comes, is dropped."""
        pending = self._by_id.get(correlation_id)
        if pending is not None:
            pending.abandoned = True

    def expired(self, now: float) -> list[Pending]:
        """Requests whose deadline passed; they are abandoned."""
        late = [
            p for p in self._pending
            if not p.abandoned and p.deadline is not None and p.deadline <= now
        ]
        for pending in late:
            pending.abandoned = True
        return late

    def next_deadline(self) -> float | None:
        deadlines = [p.deadline for p in self._pending if not p.abandoned and p.deadline]
        return min(deadlines) if deadlines else None

    # -- responses -----------------------------------------------------------------------

    def receive_data(self, data: bytes | bytearray | memoryview) -> list[Response]:
        """Feed received bytes; the responses they complete, abandoned ones left out.

        Raises ProtocolError (the connection is unusable) for an oversized or
        undecodable frame or a response to a request that is not the oldest.
        """
        if self._closed_reason is not None:
            raise ConnectionClosedError(f"the connection is closed: {self._closed_reason}")
        self._decoder.feed(data)
        done: list[Response] = []
        try:
            while (frame := self._decoder.next_frame()) is not None:
                response = self._match(frame)
                if response is not None:
                    done.append(response)
        except WireError as exc:
            self.close(f"undecodable response: {exc}")
            raise ProtocolError(f"undecodable response from the server: {exc}") from exc
        return done

    def _match(self, frame: bytes | memoryview) -> Response | None:
        if len(frame) < 4:
            self.close("short response")
            raise ProtocolError(f"a response of {len(frame)} bytes has no correlation id")
        (correlation_id,) = _CORRELATION.unpack_from(frame, 0)
        if not self._pending or self._pending[0].correlation_id != correlation_id:
            expected = self._pending[0].correlation_id if self._pending else None
            self.close("out-of-order response")
            raise ProtocolError(
                f"response with correlation id {correlation_id} while the oldest request "
                f"in flight is {expected}: the server broke request order"
            )
        pending = self._pending.popleft()
        del self._by_id[correlation_id]
        version = pending.version
        if pending.api_key == API_VERSIONS_KEY and frame[4:6] == _UNSUPPORTED_VERSION_CODE:
            # a server answers an ApiVersions version it does not know with a v0 body; any
            # other error (INVALID_REQUEST for a bad software name) comes at the version sent
            version = 0
        _, message = decode_response(frame, pending.api_key, version)
        if pending.abandoned:
            return None
        return Response(correlation_id, version, message, pending.context)
