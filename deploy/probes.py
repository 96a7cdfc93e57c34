"""One-shot blocking requests to a node, for the launcher and the tests.

Each call opens a connection (with the ApiVersions handshake), sends one
request, and closes; loopback makes that cheap, and a fresh connection
cannot be confused by a late answer to an earlier, abandoned request.
Connection problems raise ``quorum.client.ClientError``.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any, Final

from quorum.client import BlockingKafkaConnection, ClientError
from quorum.describe import describe_quorum_request
from quorum.metrics import parse_samples
from quorum.wire.messages import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeQuorumResponse,
)
from quorum.wire.messages.pykraft_append import PykraftAppendRequest, PykraftAppendResponse

__all__ = [
    "DEFAULT_PROBE_TIMEOUT_S",
    "append_at",
    "describe_cluster_at",
    "describe_quorum_at",
    "is_serving",
    "metrics_at",
    "request_at",
]

DEFAULT_PROBE_TIMEOUT_S: Final = 5.0
_CONTROLLER_ENDPOINT_TYPE: Final = 2


def request_at(
    address: tuple[str, int], message: Any, *, timeout: float = DEFAULT_PROBE_TIMEOUT_S,
    version: int | None = None,
) -> Any:
    """Send ``message`` to ``address`` on a fresh connection and return the response."""
    host, port = address
    with BlockingKafkaConnection.connect(host, port, timeout=timeout) as conn:
        return conn.request(message, version=version, timeout=timeout)


def is_serving(address: tuple[str, int], *, timeout: float = 1.0) -> bool:
    """Whether the node answers the ApiVersions handshake."""
    host, port = address
    try:
        BlockingKafkaConnection.connect(host, port, timeout=timeout).close()
    except (ClientError, OSError):
        return False
    return True


def describe_quorum_at(
    address: tuple[str, int], *, timeout: float = DEFAULT_PROBE_TIMEOUT_S
) -> DescribeQuorumResponse:
    response: DescribeQuorumResponse = request_at(address, describe_quorum_request(),
                                                  timeout=timeout)
    return response


def describe_cluster_at(
    address: tuple[str, int], *, timeout: float = DEFAULT_PROBE_TIMEOUT_S
) -> DescribeClusterResponse:
    request = DescribeClusterRequest(endpoint_type=_CONTROLLER_ENDPOINT_TYPE)
    response: DescribeClusterResponse = request_at(address, request, timeout=timeout)
    return response


def append_at(
    address: tuple[str, int], payloads: Sequence[bytes], *,
    timeout: float = DEFAULT_PROBE_TIMEOUT_S,
) -> PykraftAppendResponse:
    """Ask the node at ``address`` to commit ``payloads`` (it answers once committed)."""
    response: PykraftAppendResponse = request_at(
        address, PykraftAppendRequest(records=tuple(payloads)), timeout=timeout
    )
    return response


def metrics_at(
    address: tuple[str, int], *, timeout: float = DEFAULT_PROBE_TIMEOUT_S
) -> dict[str, float] | None:
    """A node's samples from GET /metrics; None if it does not answer."""
    host, port = address
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=timeout) as answer:
            text = answer.read().decode("utf-8")
    except (urllib.error.URLError, OSError):
        return None
    return parse_samples(text)
