"""The sans-I/O client connection core, without sockets: bytes in, bytes out."""

from __future__ import annotations

from typing import Any

import pytest

from quorum.client import ClientConnection, ProtocolError, UnsupportedVersionError
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
    DescribeClusterRequest,
    DescribeClusterResponse,
    MetadataRequest,
)
from quorum.wire.protocol import ResponseHeader, decode_request, encode_response


def answer(correlation_id: int, api_key: int, version: int, message: Any) -> bytes:
    return encode_response(ResponseHeader(correlation_id), api_key, version, message)


def table(**rows: tuple[int, int]) -> dict[int, tuple[int, int]]:
    keys = {"api_versions": 18, "describe_cluster": 60, "metadata": 3}
    return {keys[name]: versions for name, versions in rows.items()}


def test_correlation_ids_count_up_and_each_frame_carries_its_own() -> None:
    core = ClientConnection(client_id="tester")
    first_id, first = core.send_request(DescribeClusterRequest(), version=1)
    second_id, second = core.send_request(DescribeClusterRequest(), version=1)
    assert (first_id, second_id) == (0, 1)
    header, _ = decode_request(first[4:])
    assert (header.correlation_id, header.client_id, header.api_version) == (0, "tester", 1)
    assert decode_request(second[4:])[0].correlation_id == 1
    assert core.in_flight == 2


def test_pipelined_responses_are_matched_first_in_first_out() -> None:
    core = ClientConnection()
    ids = [core.send_request(DescribeClusterRequest(), version=1)[0] for _ in range(3)]
    data = b"".join(
        answer(cid, 60, 1, DescribeClusterResponse(cluster_id=f"c{cid}")) for cid in ids
    )
    # delivered in awkward pieces: a frame split across reads still completes once
    responses = core.receive_data(data[:7]) + core.receive_data(data[7:50]) + core.receive_data(
        data[50:]
    )
    assert [(r.correlation_id, r.message.cluster_id) for r in responses] == [
        (0, "c0"), (1, "c1"), (2, "c2")
    ]
    assert core.in_flight == 0


def test_a_response_that_skips_the_oldest_request_breaks_the_connection() -> None:
    core = ClientConnection()
    core.send_request(DescribeClusterRequest(), version=1)
    second, _ = core.send_request(DescribeClusterRequest(), version=1)
    with pytest.raises(ProtocolError, match="oldest request in flight is 0"):
        core.receive_data(answer(second, 60, 1, DescribeClusterResponse()))
    assert core.is_closed


def test_an_abandoned_request_swallows_its_late_response() -> None:
    core = ClientConnection()
    late, _ = core.send_request(DescribeClusterRequest(), version=1)
    kept, _ = core.send_request(DescribeClusterRequest(), version=1)
    core.abandon(late)
    data = answer(late, 60, 1, DescribeClusterResponse(cluster_id="late")) + answer(
        kept, 60, 1, DescribeClusterResponse(cluster_id="kept")
    )
    assert [r.message.cluster_id for r in core.receive_data(data)] == ["kept"]


def test_requests_past_their_deadline_expire_and_are_abandoned() -> None:
    core = ClientConnection()
    soon, _ = core.send_request(DescribeClusterRequest(), version=1, deadline=10.0)
    core.send_request(DescribeClusterRequest(), version=1, deadline=20.0)
    assert core.next_deadline() == 10.0
    assert [p.correlation_id for p in core.expired(15.0)] == [soon]
    assert core.next_deadline() == 20.0
    assert core.expired(15.0) == []


def test_an_undecodable_response_breaks_the_connection() -> None:
    core = ClientConnection()
    cid, _ = core.send_request(DescribeClusterRequest(), version=1)
    with pytest.raises(ProtocolError, match="undecodable"):
        core.receive_data(b"\x00\x00\x00\x06" + cid.to_bytes(4, "big") + b"\x00\x00")
    assert core.is_closed


def test_the_highest_version_both_sides_speak_is_chosen() -> None:
    core = ClientConnection(server_versions=table(describe_cluster=(0, 0), metadata=(0, 7)))
    assert core.choose_version(60) == 0
    assert core.choose_version(3) == 7
    assert core.choose_version(3, 5) == 5


def test_a_version_or_api_the_server_lacks_is_refused_before_sending() -> None:
    core = ClientConnection(server_versions=table(metadata=(0, 7)))
    with pytest.raises(UnsupportedVersionError, match="does not serve DescribeCluster"):
        core.send_request(DescribeClusterRequest())
    with pytest.raises(UnsupportedVersionError, match=r"outside the usable versions 0\.\.7"):
        core.send_request(MetadataRequest(), version=9)
    assert core.in_flight == 0


def test_api_versions_learns_the_server_table() -> None:
    core = ClientConnection()
    request, version = core.api_versions_request()
    cid, _ = core.send_request(request, version=version)
    rows = (ApiVersionsResponseApiVersion(api_key=60, min_version=0, max_version=1),)
    [response] = core.receive_data(answer(cid, 18, version, ApiVersionsResponse(api_keys=rows)))
    assert core.handle_api_versions(response.message, version) is None
    assert core.server_versions == {60: (0, 1)}


def test_an_unsupported_api_versions_version_is_read_as_v0_and_retried_lower() -> None:
    core = ClientConnection()
    request, version = core.api_versions_request()
    assert version == 4
    cid, _ = core.send_request(request, version=version)
    rows = (ApiVersionsResponseApiVersion(api_key=18, min_version=0, max_version=2),)
    refusal = ApiVersionsResponse(error_code=Errors.UNSUPPORTED_VERSION, api_keys=rows)
    [response] = core.receive_data(answer(cid, 18, 0, refusal))
    assert response.version == 0
    assert core.handle_api_versions(response.message, version) == 2
    assert core.server_versions is None


def test_an_api_versions_refusal_of_another_kind_is_read_at_the_version_sent() -> None:
    # a bad client software name: INVALID_REQUEST, in the request's own version and no table
    core = ClientConnection()
    request, version = core.api_versions_request()
    cid, _ = core.send_request(request, version=version)
    refusal = ApiVersionsResponse(error_code=Errors.INVALID_REQUEST)
    [response] = core.receive_data(answer(cid, 18, version, refusal))
    assert response.version == version
    assert response.message.error_code == Errors.INVALID_REQUEST


def test_a_request_without_a_response_uses_an_id_but_is_never_in_flight() -> None:
    core = ClientConnection()
    silent, frame = core.send_request(DescribeClusterRequest(), version=1, expect_response=False)
    assert decode_request(frame[4:])[0].correlation_id == silent == 0
    assert core.in_flight == 0
    answered, _ = core.send_request(DescribeClusterRequest(), version=1)
    [response] = core.receive_data(answer(answered, 60, 1, DescribeClusterResponse(cluster_id="x")))
    assert (response.correlation_id, response.message.cluster_id) == (1, "x")


def test_a_response_to_a_request_that_expects_none_breaks_the_connection() -> None:
    core = ClientConnection()
    silent, _ = core.send_request(DescribeClusterRequest(), version=1, expect_response=False)
    with pytest.raises(ProtocolError, match="correlation id 0"):
        core.receive_data(answer(silent, 60, 1, DescribeClusterResponse()))


def test_a_capped_version_stays_below_a_change_in_meaning() -> None:
    core = ClientConnection(server_versions=table(metadata=(0, 12), describe_cluster=(1, 1)))
    assert core.version_at_most(3, 9) == 9
    assert core.version_at_most(3, 20) == 12
    with pytest.raises(UnsupportedVersionError, match="lowest usable one is 1"):
        core.version_at_most(60, 0)
