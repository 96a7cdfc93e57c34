"""ApiVersions v3+ with an empty or ill-formed client software name or version.

Found by the differential tests (tests/kafka/differential): Kafka 4.4 answers such a request
with INVALID_REQUEST (42) and no table (``ApiVersionsRequest.isValid`` against
``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?``); pykraft answered with its table.
"""

from __future__ import annotations

import pytest
import trio

from quorum.node.connection import ServerConnection
from quorum.node.local_answers import ListenerApis
from quorum.node.router import RequestRejected, controller_listener_table
from quorum.wire import ApiKey
from quorum.wire.error_codes import Errors
from quorum.wire.messages import ApiVersionsRequest, ApiVersionsResponse
from quorum.wire.protocol import RequestHeader, decode_response, encode_request

APIS = ListenerApis(
    controller_listener_table(), where="the controller listener", rejected=RequestRejected
)


def _ask(version: int, name: str, software_version: str) -> ApiVersionsResponse | None:
    """The answer decode() sent itself, or None when it handed the request on."""
    conn = ServerConnection("client")
    header = RequestHeader(
        api_key=ApiKey.API_VERSIONS, api_version=version, correlation_id=9, client_id="x"
    )
    request = ApiVersionsRequest(
        client_software_name=name, client_software_version=software_version
    )
    decoded = APIS.decode(conn, encode_request(header, request)[4:])
    if decoded is not None:
        assert decoded[1] == request
        return None
    frame = b"".join(conn._out_receive.receive_nowait())
    with pytest.raises(trio.WouldBlock):
        conn._out_receive.receive_nowait()
    answered = decode_response(frame[4:], ApiKey.API_VERSIONS, version)[1]
    assert isinstance(answered, ApiVersionsResponse)
    return answered


@pytest.mark.parametrize(
    ("name", "software_version"),
    [("", "1.0"), ("kafka-python", ""), ("-lead", "1"), ("trail-", "1"), ("a b", "1"),
     ("pykraft", "1.0_rc"), ("ünï", "1")],
)
@pytest.mark.parametrize("version", [3, 4])
def test_an_ill_formed_software_name_or_version_is_an_invalid_request(
    version: int, name: str, software_version: str
) -> None:
    answer = _ask(version, name, software_version)
    assert answer is not None
    assert answer.error_code == Errors.INVALID_REQUEST
    assert answer.api_keys == ()


@pytest.mark.parametrize(
    ("name", "software_version"),
    [("apache-kafka-java", "4.4.0"), ("librdkafka", "2.3.0"), ("a", "1"), ("k.p-y", "0.0.0")],
)
def test_a_well_formed_software_name_is_served(name: str, software_version: str) -> None:
    assert _ask(3, name, software_version) is None


def test_before_v3_there_is_no_name_to_check() -> None:
    assert _ask(2, "", "") is None
    assert _ask(0, "", "") is None
