"""Request and response headers, and whole framed requests and responses.

Header versions follow the flexibility of the API version (the request or
response class's ``flexible`` range): request header v1 (api key, api version,
correlation id, int16-length nullable client id) or v2 (v1 plus a tag block;
the client id keeps its int16 length), response header v0 (correlation id) or
v1 (plus a tag block).  ApiVersions responses always use response header v0,
so a client that sent a version the server does not know can still read the
answer.

``decode_request`` raises ``UnsupportedRequestError`` for an unknown api key or
a version outside the registered ``ApiSpec`` range; it carries the header, so a
server can still answer (for ApiVersions: a v0 response with error 35
UNSUPPORTED_VERSION).  It reads a request the way Kafka does: bytes after a
complete body are ignored, except in the requests only pykraft's own nodes
send (``PEER_ONLY_APIS``), where they betray a bug in our encoder.  Responses
come only from pykraft's nodes and must fill their frame exactly.

A response may be handed over already encoded (``EncodedBody``: an answer
cached as bytes, or one encoded in slices); ``encode_response`` adds the
header and the frame around it.  ``encode_response_parts`` gives the same frame
as a list of buffers for a scatter-gather send: a Fetch response's record
slices stay the buffers they were read into instead of being copied into one
frame (the join was a sixth of a broker's busy time while it served consumers).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, Final

import attrs

from quorum.wire import primitives as p
from quorum.wire.api_keys import ApiKey
from quorum.wire.apis import PEER_ONLY_APIS, api_for
from quorum.wire.codec import decode_from, encode_parts
from quorum.wire.errors import WireDecodeError, WireEncodeError
from quorum.wire.file_region import FileRegion, Part, joined
from quorum.wire.primitives import Buffer
from quorum.wire.schema import message_info

__all__ = [
    "API_VERSIONS_KEY",
    "EncodedBody",
    "RequestHeader",
    "ResponseHeader",
    "UnsupportedRequestError",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "encode_response_parts",
    "peek_request_header",
    "request_header_version",
    "response_header_version",
]

API_VERSIONS_KEY: Final = ApiKey.API_VERSIONS
_REQUEST_FIXED: Final = struct.Struct(">hhi")


@attrs.frozen(kw_only=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None


@attrs.frozen
class ResponseHeader:
    correlation_id: int


@attrs.frozen
class EncodedBody:
    """The body of a ``response_cls`` message encoded beforehand at ``version``."""

    response_cls: type
    version: int
    body: bytes


class UnsupportedRequestError(WireDecodeError):
    """A request for an api key or version this node does not decode."""

    def __init__(self, message: str, header: RequestHeader) -> None:
        super().__init__(message)
        self.header = header


def request_header_version(request_cls: type, api_version: int) -> int:
    return 2 if api_version in message_info(request_cls).flexible else 1


def response_header_version(response_cls: type, api_version: int) -> int:
    info = message_info(response_cls)
    if info.api_key == API_VERSIONS_KEY:
        return 0
    return 1 if api_version in info.flexible else 0


def _view(payload: Buffer) -> memoryview:
    mv = payload if isinstance(payload, memoryview) else memoryview(payload)
    return mv if mv.format == "B" and mv.ndim == 1 else memoryview(mv.tobytes())


def _frame(parts: list[Buffer]) -> bytes:
    size = sum(map(len, parts))
    return b"".join([p.INT32_STRUCT.pack(size), *parts])


# a part at least this long is sent from its own buffer; shorter ones are joined with
# their neighbours (one iovec of a few fields costs less than many tiny ones)
_OWN_BUFFER_BYTES: Final = 16_384


def _gathered(parts: Sequence[Part]) -> list[Part]:
    """``parts`` framed (size prefix first), runs of short parts joined into one buffer."""
    out: list[Part] = []
    short: list[Buffer] = [p.INT32_STRUCT.pack(sum(map(len, parts)))]
    for part in parts:
        if not isinstance(part, FileRegion) and len(part) < _OWN_BUFFER_BYTES:
            short.append(part)
            continue
        if short:
            out.append(b"".join(short))
            short = []
        out.append(part)
    if short:
        out.append(b"".join(short))
    return out


# -- requests ----------------------------------------------------------------


def _read_request_header(mv: memoryview) -> tuple[RequestHeader, int]:
    if len(mv) < _REQUEST_FIXED.size:
        raise WireDecodeError(
            f"request of {len(mv)} bytes is too short for a request header (needs 8 or more)"
        )
    api_key, api_version, correlation_id = _REQUEST_FIXED.unpack_from(mv, 0)
    client_id, pos = p.read_nullable_string(mv, _REQUEST_FIXED.size)
    header = RequestHeader(
        api_key=api_key, api_version=api_version, correlation_id=correlation_id,
        client_id=client_id,
    )
    return header, pos


def peek_request_header(payload: Buffer) -> RequestHeader:
    """The header of a request frame's payload (its v1 part), for any api key."""
    return _read_request_header(_view(payload))[0]


def encode_request(header: RequestHeader, msg: Any) -> bytes:
    """A framed request: size, header (v1 or v2), body."""
    info = message_info(type(msg))
    spec = api_for(header.api_key)
    if info.api_key != header.api_key or (spec is not None and spec.request is not type(msg)):
        raise WireEncodeError(
            f"{type(msg).__name__} is not the request class of api key {header.api_key}"
        )
    parts: list[Buffer] = [
        _REQUEST_FIXED.pack(header.api_key, header.api_version, header.correlation_id),
        p.nullable_string_bytes(header.client_id),
    ]
    if header.api_version in info.flexible:
        parts.append(p.EMPTY_TAGGED_FIELDS)
    parts += encode_parts(msg, header.api_version)
    return _frame(parts)


def decode_request(payload: Buffer) -> tuple[RequestHeader, Any]:
    """Decode a request frame's payload (without the size prefix)."""
    mv = _view(payload)
    header, pos = _read_request_header(mv)
    spec = api_for(header.api_key)
    if spec is None:
        raise UnsupportedRequestError(f"unknown api key {header.api_key}", header)
    if not spec.low <= header.api_version <= spec.high:
        raise UnsupportedRequestError(
            f"{spec.name} v{header.api_version} is not supported "
            f"(versions {spec.low}..{spec.high})",
            header,
        )
    if header.api_version in message_info(spec.request).flexible:
        pos = p.skip_tagged_fields(mv, pos)
    msg: Any
    msg, end = decode_from(spec.request, header.api_version, mv, pos)
    if end != len(mv) and spec.key in PEER_ONLY_APIS:
        raise WireDecodeError(
            f"{spec.name} v{header.api_version} request has {len(mv) - end} unexpected "
            f"trailing bytes (only pykraft's nodes send it, and they send none)"
        )
    return header, msg


# -- responses ---------------------------------------------------------------


def encode_response(header: ResponseHeader, api_key: int, version: int, msg: Any) -> bytes:
    """A framed response: size, header (v0 or v1), body (``msg``, or an ``EncodedBody``)."""
    return joined(encode_response_parts(header, api_key, version, msg))


def encode_response_parts(
    header: ResponseHeader, api_key: int, version: int, msg: Any
) -> list[Part]:
    """``encode_response``'s frame as buffers to send in order, not joined."""
    encoded = msg if isinstance(msg, EncodedBody) else None
    cls = type(msg) if encoded is None else encoded.response_cls
    spec = api_for(api_key)
    if message_info(cls).api_key != api_key or (spec is not None and spec.response is not cls):
        raise WireEncodeError(f"{cls.__name__} is not the response class of api key {api_key}")
    if encoded is not None and encoded.version != version:
        raise WireEncodeError(
            f"{cls.__name__} encoded at v{encoded.version} cannot answer a v{version} request"
        )
    parts: list[Buffer] = [p.INT32_STRUCT.pack(header.correlation_id)]
    if response_header_version(cls, version) == 1:
        parts.append(p.EMPTY_TAGGED_FIELDS)
    if encoded is None:
        parts += encode_parts(msg, version)
    else:
        parts.append(encoded.body)
    return _gathered(parts)


def decode_response(payload: Buffer, api_key: int, version: int) -> tuple[ResponseHeader, Any]:
    """Decode a response frame's payload for a request sent as (api_key, version)."""
    spec = api_for(api_key)
    if spec is None:
        raise WireDecodeError(f"no response class is registered for api key {api_key}")
    mv = _view(payload)
    if len(mv) < 4:
        raise WireDecodeError(f"response of {len(mv)} bytes is too short for a header")
    (correlation_id,) = p.INT32_STRUCT.unpack_from(mv, 0)
    pos = 4
    if response_header_version(spec.response, version) == 1:
        pos = p.skip_tagged_fields(mv, pos)
    msg: Any
    msg, end = decode_from(spec.response, version, mv, pos)
    if end != len(mv):
        raise WireDecodeError(
            f"{spec.name} v{version} response has {len(mv) - end} unexpected trailing bytes"
        )
    return ResponseHeader(correlation_id), msg

