"""The controller listener reads an admin client's request as Kafka does, and a peer's strictly.

Admin clients reach the controller listener too (brokers forward their
requests; Kafka's Admin can bootstrap to controllers). Bytes after a
complete body are ignored there as on the broker listener; in the Raft
RPCs and broker calls, which only pykraft's nodes send, they are refused.
"""

from __future__ import annotations

import pytest

from quorum.node.connection import ServerConnection
from quorum.node.local_answers import ListenerApis
from quorum.node.router import RequestRejected, controller_listener_table
from quorum.wire import ApiKey
from quorum.wire.errors import WireDecodeError
from quorum.wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestTopic,
    DescribeQuorumRequest,
    VoteRequest,
)
from quorum.wire.protocol import RequestHeader, encode_request

APIS = ListenerApis(
    controller_listener_table(), where="the controller listener", rejected=RequestRejected
)


def frame(api_key: ApiKey, version: int, message: object) -> bytes:
    header = RequestHeader(api_key=api_key, api_version=version, correlation_id=4, client_id="x")
    return encode_request(header, message)[4:]


@pytest.mark.parametrize(
    ("api_key", "version", "message"),
    [
        (ApiKey.CREATE_TOPICS, 5, CreateTopicsRequest(topics=(CreateTopicsRequestTopic(name="t"),))),
        (ApiKey.CREATE_TOPICS, 3, CreateTopicsRequest(topics=(CreateTopicsRequestTopic(name="t"),))),
        (ApiKey.DESCRIBE_QUORUM, 2, DescribeQuorumRequest()),
    ],
    ids=["CreateTopics-v5", "CreateTopics-v3", "DescribeQuorum-v2"],
)
def test_an_admin_request_with_bytes_after_its_body_is_served(
    api_key: ApiKey, version: int, message: object
) -> None:
    decoded = APIS.decode(ServerConnection("admin"), frame(api_key, version, message) + b"\0" * 3)
    assert decoded is not None
    header, request = decoded
    assert (header.api_key, header.api_version, request) == (api_key, version, message)


def test_a_vote_with_bytes_after_its_body_closes_the_connection() -> None:
    request = VoteRequest(cluster_id="c")
    assert APIS.decode(ServerConnection("peer"), frame(ApiKey.VOTE, 2, request)) is not None
    with pytest.raises(WireDecodeError, match=r"Vote v2 request has 1 unexpected trailing bytes"):
        APIS.decode(ServerConnection("peer"), frame(ApiKey.VOTE, 2, request) + b"\0")
