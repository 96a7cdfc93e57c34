"""Frames (size prefix, sans-I/O decoder) and request/response headers."""

from __future__ import annotations

import attrs
import pytest

from quorum.wire import codec, protocol
from quorum.wire.apis import API_BY_KEY, ApiSpec
from quorum.wire.errors import FrameTooLargeError, WireDecodeError, WireEncodeError
from quorum.wire.framing import FrameDecoder, encode_frame
from quorum.wire.protocol import (
    RequestHeader,
    ResponseHeader,
    UnsupportedRequestError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    peek_request_header,
    request_header_version,
    response_header_version,
)
from quorum.wire.schema import INT16, INT32, STRING, array, field, message

TEST_KEY = 32000  # an api key no real API uses


@message(api_key=TEST_KEY, versions=(0, 1), flexible="1+")
@attrs.frozen
class EchoRequest:
    text: str = field(STRING, default="")


@message(api_key=TEST_KEY, versions=(0, 1), flexible="1+")
@attrs.frozen
class EchoResponse:
    error_code: int = field(INT16, default=0)


@message(api_key=18, versions=(0, 3), flexible="3+")
@attrs.frozen
class FakeApiVersionsRequest:
    pass


@message(api_key=18, versions=(0, 3), flexible="3+")
@attrs.frozen
class FakeApiVersionsResponse:
    error_code: int = field(INT16, default=0)
    keys: tuple[int, ...] = field(array(INT32), default=())


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(API_BY_KEY, TEST_KEY, ApiSpec(
        key=TEST_KEY, name="Echo", request=EchoRequest, response=EchoResponse, low=0, high=1))
    monkeypatch.setitem(API_BY_KEY, 18, ApiSpec(
        key=18, name="ApiVersions", request=FakeApiVersionsRequest,
        response=FakeApiVersionsResponse, low=0, high=3))


def frames_of(decoder: FrameDecoder) -> list[bytes]:
    out = []
    while (frame := decoder.next_frame()) is not None:
        out.append(bytes(frame))
    return out


# -- framing ------------------------------------------------------------------


def test_encode_frame_prefixes_the_big_endian_size() -> None:
    assert encode_frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert encode_frame(memoryview(b"xy")) == b"\x00\x00\x00\x02xy"


def test_frames_survive_a_split_at_every_byte_boundary() -> None:
    payloads = [b"first", b"", b"x" * 300]
    stream = b"".join(encode_frame(p) for p in payloads)
    for cut in range(len(stream) + 1):
        decoder = FrameDecoder()
        decoder.feed(stream[:cut])
        got = frames_of(decoder)
        decoder.feed(stream[cut:])
        assert got + frames_of(decoder) == payloads
        assert decoder.buffered_bytes == 0


def test_one_byte_feeds_still_yield_every_frame() -> None:
    decoder = FrameDecoder()
    got = []
    for byte in encode_frame(b"hello") + encode_frame(b"world"):
        decoder.feed(bytes([byte]))
        got += frames_of(decoder)
    assert got == [b"hello", b"world"]


def test_many_frames_in_one_feed_are_zero_copy_views_of_that_chunk() -> None:
    chunk = b"".join(encode_frame(bytes([i]) * 10) for i in range(50))
    decoder = FrameDecoder()
    decoder.feed(chunk)
    frames = []
    while (frame := decoder.next_frame()) is not None:
        frames.append(frame)
    assert len(frames) == 50
    assert all(isinstance(f, memoryview) and f.obj is chunk for f in frames)
    assert bytes(frames[7]) == b"\x07" * 10


def test_a_frame_spread_over_many_chunks_is_joined_only_when_complete() -> None:
    payload = bytes(range(256)) * 4096  # 1 MiB
    stream = encode_frame(payload)
    decoder = FrameDecoder()
    for start in range(0, len(stream), 4096):
        decoder.feed(stream[start : start + 4096])
        if start + 4096 < len(stream):
            assert decoder.next_frame() is None
    assert decoder._chunks and len(decoder._chunks) == len(stream) // 4096 + 1
    assert decoder.next_frame() == payload
    assert decoder.next_frame() is None


def test_fed_bytearrays_are_copied_so_the_caller_may_reuse_them() -> None:
    buffer = bytearray(encode_frame(b"keep"))
    decoder = FrameDecoder()
    decoder.feed(buffer)
    buffer[4:8] = b"XXXX"
    assert decoder.next_frame() == b"keep"


def test_a_frame_larger_than_the_limit_is_refused_naming_size_and_limit() -> None:
    decoder = FrameDecoder(max_frame_bytes=100)
    decoder.feed(b"\x00\x00\x00\x65")
    with pytest.raises(FrameTooLargeError, match=r"101 .*0\.\.100.*socket\.request\.max\.bytes"):
        decoder.next_frame()
    with pytest.raises(FrameTooLargeError):
        decoder.next_frame()  # the stream stays unusable


def test_a_negative_frame_size_is_refused() -> None:
    decoder = FrameDecoder()
    decoder.feed(b"\xff\xff\xff\xfe")
    with pytest.raises(FrameTooLargeError, match=r"-2"):
        decoder.next_frame()


def test_the_default_limit_is_kafkas_socket_request_max_bytes() -> None:
    decoder = FrameDecoder()
    decoder.feed((104857600).to_bytes(4, "big"))
    assert decoder.next_frame() is None
    decoder = FrameDecoder()
    decoder.feed((104857601).to_bytes(4, "big"))
    with pytest.raises(FrameTooLargeError):
        decoder.next_frame()


# -- headers ------------------------------------------------------------------


def test_request_header_v1_has_an_int16_client_id_and_no_tag_block() -> None:
    header = RequestHeader(api_key=TEST_KEY, api_version=0, correlation_id=7, client_id="c")
    framed = encode_request(header, EchoRequest(text="hi"))
    assert framed.hex() == "0000000f" "7d00" "0000" "00000007" "0001" "63" "0002" "6869"
    assert decode_request(framed[4:]) == (header, EchoRequest(text="hi"))


def test_request_header_v2_keeps_the_int16_client_id_and_adds_a_tag_block() -> None:
    header = RequestHeader(api_key=TEST_KEY, api_version=1, correlation_id=7, client_id=None)
    framed = encode_request(header, EchoRequest(text="hi"))
    assert framed.hex() == "0000000f" "7d00" "0001" "00000007" "ffff" "00" "03" "6869" "00"
    assert decode_request(framed[4:]) == (header, EchoRequest(text="hi"))
    assert request_header_version(EchoRequest, 1) == 2
    assert request_header_version(EchoRequest, 0) == 1


def test_unknown_tags_in_a_request_header_are_skipped() -> None:
    payload = bytes.fromhex("7d00" "0001" "00000007" "ffff" "01" "0502" "aabb" "03" "6869" "00")
    header, msg = decode_request(payload)
    assert (header.correlation_id, msg) == (7, EchoRequest(text="hi"))


def test_response_header_v0_and_v1_follow_flexibility() -> None:
    assert encode_response(ResponseHeader(9), TEST_KEY, 0, EchoResponse()).hex() == (
        "00000006" "00000009" "0000")
    framed = encode_response(ResponseHeader(9), TEST_KEY, 1, EchoResponse(error_code=3))
    assert framed.hex() == "00000008" "00000009" "00" "0003" "00"
    assert decode_response(framed[4:], TEST_KEY, 1) == (ResponseHeader(9), EchoResponse(3))


def test_api_versions_responses_always_use_response_header_v0() -> None:
    framed = encode_response(ResponseHeader(5), 18, 3, FakeApiVersionsResponse(keys=(1,)))
    assert framed.hex() == "0000000c" "00000005" "0000" "02" "00000001" "00"
    assert response_header_version(FakeApiVersionsResponse, 3) == 0
    assert decode_response(framed[4:], 18, 3) == (
        ResponseHeader(5), FakeApiVersionsResponse(keys=(1,)))


def test_unknown_api_key_is_unsupported_and_carries_the_header() -> None:
    payload = bytes.fromhex("7fff" "0000" "0000002a" "0002" "6964")
    with pytest.raises(UnsupportedRequestError, match=r"unknown api key 32767") as info:
        decode_request(payload)
    assert info.value.header == RequestHeader(
        api_key=32767, api_version=0, correlation_id=42, client_id="id")
    assert isinstance(info.value, WireDecodeError)


def test_api_versions_at_a_newer_version_is_unsupported_but_answerable_with_v0() -> None:
    # ApiVersions v9 from a newer client: header v2 with a tag block we cannot know about
    payload = bytes.fromhex("0012" "0009" "00000003" "0001" "6b" "00" "01" "02")
    with pytest.raises(UnsupportedRequestError, match=r"ApiVersions v9 .*0\.\.3") as info:
        decode_request(payload)
    header = info.value.header
    answer = encode_response(ResponseHeader(header.correlation_id), 18, 0,
                             FakeApiVersionsResponse(error_code=35, keys=(18,)))
    assert answer.hex() == "0000000e" "00000003" "0023" "00000001" "00000012"


def test_peek_reads_the_header_of_any_request() -> None:
    payload = bytes.fromhex("7fff" "0004" "00000001" "ffff" "deadbeef")
    assert peek_request_header(payload) == RequestHeader(
        api_key=32767, api_version=4, correlation_id=1, client_id=None)
    with pytest.raises(WireDecodeError, match=r"too short"):
        peek_request_header(b"\x00\x01")


def test_trailing_bytes_after_a_client_request_body_are_ignored_as_kafka_ignores_them() -> None:
    header = RequestHeader(api_key=TEST_KEY, api_version=0, correlation_id=1)
    framed = encode_request(header, EchoRequest(text="x"))
    assert decode_request(framed[4:] + b"\x00\x01\x02") == (header, EchoRequest(text="x"))


def test_trailing_bytes_after_a_peer_only_request_body_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(protocol, "PEER_ONLY_APIS", frozenset({TEST_KEY}))
    framed = encode_request(RequestHeader(api_key=TEST_KEY, api_version=0, correlation_id=1),
                            EchoRequest(text="x"))
    assert decode_request(framed[4:])[1] == EchoRequest(text="x")
    with pytest.raises(WireDecodeError, match=r"Echo v0 request has 1 unexpected trailing bytes"):
        decode_request(framed[4:] + b"\x00")


def test_a_header_for_another_api_cannot_be_encoded() -> None:
    with pytest.raises(WireEncodeError, match=r"EchoResponse is not the request class"):
        encode_request(RequestHeader(api_key=TEST_KEY, api_version=0, correlation_id=1),
                       EchoResponse())
    with pytest.raises(WireEncodeError, match=r"EchoRequest is not the request class of api key 18"):
        encode_request(RequestHeader(api_key=18, api_version=0, correlation_id=1),
                       EchoRequest())
    with pytest.raises(WireEncodeError, match=r"EchoResponse is not the response class of api key 18"):
        encode_response(ResponseHeader(1), 18, 0, EchoResponse())


def test_a_framed_request_decodes_through_the_frame_decoder() -> None:
    header = RequestHeader(api_key=TEST_KEY, api_version=1, correlation_id=3, client_id="x")
    decoder = FrameDecoder()
    decoder.feed(encode_request(header, EchoRequest(text="a")) * 2)
    frames = [decoder.next_frame(), decoder.next_frame()]
    assert [decode_request(f) for f in frames if f is not None] == [
        (header, EchoRequest(text="a"))] * 2
    assert codec.encode(EchoRequest(text="a"), 1) == b"\x02a\x00"
