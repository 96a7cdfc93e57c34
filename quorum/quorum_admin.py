"""Describing the metadata quorum through bootstrap addresses (trio).

``describe_metadata_quorum`` does what Kafka's admin client does for
``kafka-metadata-quorum describe``: ask the nodes it was given, find the
one that answers DescribeQuorum (only the Raft leader does; the others
answer NOT_LEADER_OR_FOLLOWER and name the leader, whose address the same
response carries), and, when asked, learn the cluster id with
DescribeCluster. Connection failures and retriable errors are retried
until ``api_timeout_ms`` (Kafka's ``default.api.timeout.ms``); any other
error ends the call at once.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Final

import attrs
import trio

from quorum.client import ClientError, TrioKafkaConnection, UnsupportedVersionError
from quorum.config.values import HostPort
from quorum.describe import (
    DescribeQuorumError,
    QuorumInfo,
    describe_quorum_request,
    leader_endpoints,
    quorum_info_from_response,
)
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeQuorumResponse,
)

__all__ = [
    "AdminSettings",
    "EndpointType",
    "QuorumAdminError",
    "QuorumDescription",
    "describe_metadata_quorum",
]

_CALL: Final = "describeMetadataQuorum"


class EndpointType(enum.IntEnum):
    """Which listener the bootstrap addresses are (DescribeCluster's EndpointType)."""

    BROKER = 1
    CONTROLLER = 2


class QuorumAdminError(Exception):
    """The quorum could not be described; the message says why."""


@attrs.frozen(kw_only=True)
class AdminSettings:
    # Kafka's admin client defaults (default.api.timeout.ms, request.timeout.ms,
    # retry.backoff.ms)
    api_timeout_ms: int = 60_000
    request_timeout_ms: int = 30_000
    retry_backoff_ms: int = 100


@attrs.frozen
class QuorumDescription:
    info: QuorumInfo
    # None unless asked for
    cluster_id: str | None


class _Retry(Exception):
    """This address did not give the answer; try another or later."""

    def __init__(self, problem: str, redirect: HostPort | None = None) -> None:
        super().__init__(problem)
        self.redirect = redirect


async def describe_metadata_quorum(
    bootstrap: Sequence[HostPort],
    *,
    endpoint_type: EndpointType = EndpointType.CONTROLLER,
    with_cluster_id: bool = False,
    settings: AdminSettings | None = None,
) -> QuorumDescription:
    """The leader's view of the quorum; raises QuorumAdminError."""
    if not bootstrap:
        raise QuorumAdminError("No bootstrap addresses given")
    settings = settings or AdminSettings()
    problems: dict[HostPort, str] = {}
    with trio.move_on_after(settings.api_timeout_ms / 1000):
        while True:
            candidates = list(bootstrap)
            for address in candidates:
                try:
                    return await _ask(address, endpoint_type, with_cluster_id, settings)
                except _Retry as retry:
                    problems[address] = str(retry)
                    if retry.redirect is not None and retry.redirect not in candidates:
                        candidates.append(retry.redirect)
            await trio.sleep(settings.retry_backoff_ms / 1000)
    tried = "; ".join(f"{address}: {problem}" for address, problem in problems.items())
    raise QuorumAdminError(
        f"TimeoutException: Timed out waiting for a node assignment. Call: {_CALL}"
        + (f" (last answers: {tried})" if tried else "")
    )


async def _ask(
    address: HostPort, endpoint_type: EndpointType, with_cluster_id: bool, settings: AdminSettings
) -> QuorumDescription:
    """One attempt at one address; raises _Retry or QuorumAdminError."""
    try:
        with trio.fail_after(settings.request_timeout_ms / 1000):
            async with await TrioKafkaConnection.connect(address.host, address.port) as conn:
                cluster_id = None
                if with_cluster_id or endpoint_type is EndpointType.BROKER:
                    cluster_id = await _cluster_id(conn, endpoint_type)
                response = await conn.request(describe_quorum_request())
    except UnsupportedVersionError as exc:
        raise QuorumAdminError(f"UnsupportedVersionException: {address}: {exc}") from None
    except trio.TooSlowError:
        raise _Retry(f"no answer within {settings.request_timeout_ms} ms") from None
    except ClientError as exc:
        raise _Retry(str(exc)) from None
    try:
        info = quorum_info_from_response(response)
    except DescribeQuorumError as exc:
        if exc.error.retriable:
            raise _Retry(str(exc), _redirect(response, exc.leader_id)) from None
        raise QuorumAdminError(str(exc)) from None
    return QuorumDescription(info, cluster_id if with_cluster_id else None)


async def _cluster_id(conn: TrioKafkaConnection, endpoint_type: EndpointType) -> str:
    request = DescribeClusterRequest(endpoint_type=int(endpoint_type))
    response: DescribeClusterResponse = await conn.request(request)
    if response.error_code != Errors.NONE:
        error = Errors.from_code(response.error_code)
        text = response.error_message or error.name.lower().replace("_", " ")
        if error.retriable:
            raise _Retry(f"{error.name}: {text}")
        raise QuorumAdminError(f"{error.name}: {text}")
    return response.cluster_id


def _redirect(response: DescribeQuorumResponse, leader_id: int) -> HostPort | None:
    if leader_id < 0:
        return None
    endpoints = leader_endpoints(response, leader_id)
    return HostPort(endpoints[0].host, endpoints[0].port) if endpoints else None
