"""``ActiveController``: where an admin client with ``bootstrap.controllers`` sends requests.

What Kafka's admin client does with ``bootstrap.controllers`` (KIP-919):
ask a controller which node is the active controller (DescribeCluster with
the CONTROLLER endpoint type names it and lists every controller's
address), then send there. The connections come from the client's pool, so
the reconnect backoff and connection setup timeout apply; the addresses a
controller named are tried after the bootstrap ones, so a caller outlives
the controllers it was started with. ``forget`` is called when an answer
says NOT_CONTROLLER or the connection broke: the next call looks again.
"""

from __future__ import annotations

from collections.abc import Sequence

from broker.client.errors import KafkaError, error_from_code
from broker.client.network import KafkaClient
from quorum.client import TrioKafkaConnection
from quorum.config.values import HostPort
from quorum.controller_client import EndpointType
from quorum.wire.error_codes import Errors
from quorum.wire.messages import DescribeClusterRequest, DescribeClusterResponse

__all__ = ["ActiveController", "EndpointType"]


class ActiveController:
    def __init__(self, client: KafkaClient, bootstrap: Sequence[HostPort]) -> None:
        if not bootstrap:
            raise ValueError("no bootstrap controller addresses given")
        self._client = client
        # bootstrap addresses first, then those the controllers named
        self._candidates: dict[HostPort, None] = dict.fromkeys(bootstrap)
        self._active: HostPort | None = None

    def forget(self) -> None:
        self._active = None

    async def connection(self) -> TrioKafkaConnection:
        """A connection to the active controller; raises KafkaError (retriable when it may pass)."""
        pool = self._client.pool
        if self._active is not None:
            conn = pool.open_connection(f"{self._active.host}:{self._active.port}")
            if conn is not None:
                return conn
            try:
                return await pool.connection(self._active.host, self._active.port)
            except KafkaError:
                self._active = None
        problems = []
        for address in list(self._candidates):
            try:
                return await self._ask(address)
            except KafkaError as exc:
                if not exc.retriable:
                    raise
                problems.append(str(exc))
        raise KafkaError(Errors.NOT_CONTROLLER, "no active controller found: " + "; ".join(problems))

    async def describe(self, address: HostPort) -> DescribeClusterResponse:
        """DescribeCluster (controller endpoints) from ``address``; an error answer raises."""
        conn = await self._client.pool.connection(address.host, address.port)
        request = DescribeClusterRequest(endpoint_type=int(EndpointType.CONTROLLER))
        response: DescribeClusterResponse = await self._client.request(conn, request)
        if response.error_code != Errors.NONE:
            raise error_from_code(response.error_code, response.error_message)
        for node in response.brokers:
            self._candidates.setdefault(HostPort(node.host, node.port))
        return response

    async def _ask(self, address: HostPort) -> TrioKafkaConnection:
        response = await self.describe(address)
        if response.controller_id < 0:
            raise KafkaError(Errors.NOT_CONTROLLER, f"{address}: no active controller known")
        target = next(
            (HostPort(b.host, b.port) for b in response.brokers
             if b.broker_id == response.controller_id),
            address,  # a controller that lists no addresses is asked itself
        )
        self._active = target
        return await self._client.pool.connection(target.host, target.port)
