"""Golden framed requests and responses: size prefix, header and body, by hand.

Request header v1 is api_key int16, api_version int16, correlation_id int32,
client_id as an int16-length nullable string; v2 (flexible API versions) adds
a tag block but keeps the int16 client id length.  Response header v0 is the
correlation id; v1 adds a tag block, except that ApiVersions responses always
use v0 so that any client can read them.
"""

from __future__ import annotations

from typing import Any

import pytest

from quorum.wire.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
    MetadataResponse,
    VoteRequest,
)
from quorum.wire.protocol import (
    RequestHeader,
    ResponseHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)

# fmt: off
# Hex layouts: one wire field per line, which the formatter would re-flow.
REQUESTS: list[Any] = [
    pytest.param(
        RequestHeader(api_key=18, api_version=0, correlation_id=1, client_id="cli"),
        ApiVersionsRequest(),
        bytes.fromhex(
            "0000000d"  # size 13
            "0012"  # api_key 18 ApiVersions
            "0000"  # api_version 0
            "00000001"  # correlation_id 1
            "0003" "636c69"  # client_id "cli" (int16 length)
            # v0 body: empty
        ),
        id="ApiVersionsRequest-v0-header-v1",
    ),
    pytest.param(
        RequestHeader(api_key=18, api_version=3, correlation_id=7, client_id="cli"),
        ApiVersionsRequest(client_software_name="pykraft", client_software_version="0.1.0"),
        bytes.fromhex(
            "0000001d"  # size 29
            "0012"  # api_key 18
            "0003"  # api_version 3
            "00000007"  # correlation_id 7
            "0003" "636c69"  # client_id "cli": still int16 length in header v2
            "00"  # header tag block
            "08" "70796b72616674"  # client_software_name "pykraft"
            "06" "302e312e30"  # client_software_version "0.1.0"
            "00"  # body tag block
        ),
        id="ApiVersionsRequest-v3-header-v2",
    ),
    pytest.param(
        RequestHeader(api_key=52, api_version=2, correlation_id=42, client_id=None),
        VoteRequest(cluster_id=None, voter_id=2, topics=()),
        bytes.fromhex(
            "00000012"  # size 18
            "0034"  # api_key 52 Vote
            "0002"  # api_version 2
            "0000002a"  # correlation_id 42
            "ffff"  # client_id: null
            "00"  # header tag block
            "00"  # cluster_id: null
            "00000002"  # voter_id 2
            "01"  # topics: empty
            "00"  # body tag block
        ),
        id="VoteRequest-v2-header-v2",
    ),
]

RESPONSES: list[Any] = [
    pytest.param(
        18,
        0,
        ApiVersionsResponse(
            error_code=35,
            api_keys=(ApiVersionsResponseApiVersion(api_key=18, min_version=0, max_version=4),),
        ),
        bytes.fromhex(
            "00000010"  # size 16
            "00000001"  # correlation_id 1 (header v0)
            "0023"  # error_code 35 UNSUPPORTED_VERSION
            "00000001" "0012" "0000" "0004"  # api_keys: [ApiVersions 0..4]
        ),
        id="ApiVersionsResponse-v0-header-v0",
    ),
    pytest.param(
        18,
        3,
        ApiVersionsResponse(
            error_code=0,
            api_keys=(ApiVersionsResponseApiVersion(api_key=18, min_version=0, max_version=4),),
            throttle_time_ms=0,
        ),
        bytes.fromhex(
            "00000013"  # size 19
            "00000001"  # correlation_id 1: header v0 even for the flexible v3
            "0000"  # error_code 0
            "02" "0012" "0000" "0004" "00"  # api_keys: compact [ApiVersions 0..4]
            "00000000"  # throttle_time_ms 0
            "00"  # body tag block
        ),
        id="ApiVersionsResponse-v3-header-v0",
    ),
    pytest.param(
        3,
        12,
        MetadataResponse(
            throttle_time_ms=0, brokers=(), cluster_id=None, controller_id=-1, topics=()
        ),
        bytes.fromhex(
            "00000011"  # size 17
            "00000001"  # correlation_id 1
            "00"  # header tag block (response header v1)
            "00000000"  # throttle_time_ms 0
            "01"  # brokers: empty
            "00"  # cluster_id: null
            "ffffffff"  # controller_id -1
            "01"  # topics: empty
            "00"  # body tag block
        ),
        id="MetadataResponse-v12-header-v1",
    ),
]

# fmt: on


@pytest.mark.parametrize(("header", "message", "framed"), REQUESTS)
def test_request_framing_gives_the_hand_written_bytes(
    header: RequestHeader, message: Any, framed: bytes
) -> None:
    assert encode_request(header, message).hex() == framed.hex()


@pytest.mark.parametrize(("header", "message", "framed"), REQUESTS)
def test_decoding_a_hand_written_request_gives_header_and_message(
    header: RequestHeader, message: Any, framed: bytes
) -> None:
    assert decode_request(framed[4:]) == (header, message)


@pytest.mark.parametrize(("api_key", "version", "message", "framed"), RESPONSES)
def test_response_framing_gives_the_hand_written_bytes(
    api_key: int, version: int, message: Any, framed: bytes
) -> None:
    encoded = encode_response(ResponseHeader(1), api_key, version, message)
    assert encoded.hex() == framed.hex()


@pytest.mark.parametrize(("api_key", "version", "message", "framed"), RESPONSES)
def test_decoding_a_hand_written_response_gives_header_and_message(
    api_key: int, version: int, message: Any, framed: bytes
) -> None:
    assert decode_response(framed[4:], api_key, version) == (ResponseHeader(1), message)
