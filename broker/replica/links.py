"""One connection per source broker for follower fetches: Kafka's fetcher threads as tasks.

The replica core builds at most one FetchRequest per source broker at a
time (``ReplicaFetcher``) and the driver hands each to ``FetchLinks.send``.
A link task per source broker connects to that broker's inter-broker
listener (its address from the metadata image, looked up at every connect:
a broker that restarted elsewhere is found again), sends the request and
reports its answer, or its failure (refused connection, closed connection,
no answer within the fetch's long-poll wait plus the request timeout),
through the driver's callbacks. A failure drops the connection: a late
answer on it could otherwise be taken for the next request's.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import attrs
import trio

from broker.replica import FETCH_VERSION, OutboundFetch
from quorum.client import TrioKafkaConnection
from quorum.client.errors import ClientError

__all__ = ["FetchLinks", "PeerAddress"]

logger = logging.getLogger(__name__)


@attrs.frozen
class PeerAddress:
    host: str
    port: int


class _Link:
    def __init__(self, source: int) -> None:
        self.source = source
        self.send, self.receive = trio.open_memory_channel[OutboundFetch](math.inf)
        self.connection: TrioKafkaConnection | None = None


class FetchLinks:
    def __init__(
        self,
        nursery: trio.Nursery,
        *,
        peers: Callable[[int], PeerAddress | None],
        client_id: str,
        timeout_ms: int,
        on_response: Callable[[int, int, Any], None],
        on_failure: Callable[[int, int], None],
        connect_timeout_ms: int = 5_000,
    ) -> None:
        self._nursery = nursery
        self._peers = peers
        self._client_id = client_id
        self._timeout_ms = timeout_ms
        self._connect_timeout_ms = connect_timeout_ms
        self._on_response = on_response
        self._on_failure = on_failure
        self._links: dict[int, _Link] = {}

    def send(self, fetch: OutboundFetch) -> None:
        link = self._links.get(fetch.destination)
        if link is None:
            link = self._links[fetch.destination] = _Link(fetch.destination)
            self._nursery.start_soon(self._run, link)
        link.send.send_nowait(fetch)

    async def aclose(self) -> None:
        with trio.CancelScope(shield=True):
            for link in self._links.values():
                link.send.close()
                if link.connection is not None:
                    await link.connection.aclose()

    async def _run(self, link: _Link) -> None:
        while True:
            try:
                # the next fetch is usually queued by the answer to the last one, in this
                # task's own callback: taken at once, without a trip through the scheduler
                fetch = link.receive.receive_nowait()
            except trio.WouldBlock:
                try:
                    fetch = await link.receive.receive()
                except trio.EndOfChannel:
                    return
            except trio.EndOfChannel:
                return
            wait_ms = fetch.request.max_wait_ms + self._timeout_ms
            try:
                with trio.fail_after(wait_ms / 1000):
                    connection = await self._connection(link)
                    response = await connection.request(fetch.request, version=FETCH_VERSION)
            except (ClientError, OSError, trio.TooSlowError) as exc:
                logger.debug("fetch from broker %d failed: %s", link.source, exc)
                await self._drop(link)
                self._on_failure(link.source, fetch.request_id)
                continue
            self._on_response(link.source, fetch.request_id, response)

    async def _connection(self, link: _Link) -> TrioKafkaConnection:
        if link.connection is not None and not link.connection.is_closed:
            return link.connection
        address = self._peers(link.source)
        if address is None:
            raise ClientError(f"broker {link.source} has no registered inter-broker listener")
        with trio.fail_after(self._connect_timeout_ms / 1000):
            link.connection = await TrioKafkaConnection.connect(
                address.host, address.port, client_id=self._client_id
            )
        return link.connection

    async def _drop(self, link: _Link) -> None:
        if link.connection is not None:
            connection, link.connection = link.connection, None
            with trio.CancelScope(shield=True):
                await connection.aclose()
