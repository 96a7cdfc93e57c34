"""The client's trio shell around the network: connections per broker and metadata.

``ConnectionPool`` keeps one ``TrioKafkaConnection`` per broker address.
Connecting is shared (concurrent callers wait for one attempt), bounded by
``socket.connection.setup.timeout.ms``, and a failed address is not tried
again before its reconnect backoff (``reconnect.backoff.ms`` doubling up to
``reconnect.backoff.max.ms``). ``any_connection`` is Kafka's
"least loaded node": an open connection if there is one, else the brokers
the metadata names, else the bootstrap servers, in turn.

``KafkaClient`` puts the pool and a ``MetadataTracker`` together: it
refreshes metadata when the tracker says so (one refresh at a time, shared
by every task that waits for it) and sends requests to a broker with
``request.timeout.ms``. Every failure comes out as a ``KafkaError``: a
broken or refused connection is NETWORK_EXCEPTION (retriable), a request
without an answer in time is REQUEST_TIMED_OUT (the connection is dropped,
as Kafka's client does, because its answer may still come).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import Any

import trio

from broker.client.backoff import ExponentialBackoff, NodeBackoff
from broker.client.cluster import BrokerInfo, ClusterView, MetadataTracker
from broker.client.errors import ClientClosedError, KafkaError, KafkaTimeoutError
from broker.client.settings import ClientSettings
from quorum.client import ClientError, TrioKafkaConnection, UnsupportedVersionError
from quorum.wire.error_codes import Errors

__all__ = ["ConnectionPool", "KafkaClient", "now_ms"]

logger = logging.getLogger(__name__)

# the newest Metadata without a change in meaning the library relies on
_METADATA_KEY = 3
_METADATA_MAX_VERSION = 12


def now_ms() -> float:
    return trio.current_time() * 1000


class ConnectionPool:
    def __init__(self, settings: ClientSettings, *, client_id: str, rng: random.Random) -> None:
        self._settings = settings
        self._client_id = client_id
        self._conns: dict[str, TrioKafkaConnection] = {}
        self._locks: dict[str, trio.Lock] = {}
        self._backoff = NodeBackoff(
            ExponentialBackoff(settings.reconnect_backoff_ms, settings.reconnect_backoff_max_ms),
            rng,
        )
        self._closed = False

    def open_connection(self, address: str) -> TrioKafkaConnection | None:
        conn = self._conns.get(address)
        return None if conn is None or conn.is_closed else conn

    async def connection(self, host: str, port: int) -> TrioKafkaConnection:
        """The connection to ``host:port``, opened if needed; raises KafkaError."""
        if self._closed:
            raise ClientClosedError("the client is closed")
        address = f"{host}:{port}"
        conn = self.open_connection(address)
        if conn is not None:
            return conn
        async with self._locks.setdefault(address, trio.Lock()):
            conn = self.open_connection(address)
            if conn is not None:
                return conn
            stale = self._conns.pop(address, None)
            if stale is not None:
                await stale.aclose()  # broken already; closing frees its socket now
            await trio.sleep(self._backoff.wait_ms(address, now_ms()) / 1000)
            conn = await self._connect(host, port, address)
            if self._closed:
                # the pool closed while this connection was being opened
                await conn.aclose()
                raise ClientClosedError("the client is closed")
            self._conns[address] = conn
            return conn

    async def _connect(self, host: str, port: int, address: str) -> TrioKafkaConnection:
        try:
            with trio.fail_after(self._settings.socket_connection_setup_timeout_ms / 1000):
                conn = await TrioKafkaConnection.connect(host, port, client_id=self._client_id)
        except UnsupportedVersionError as exc:
            self._backoff.failed(address, now_ms())
            raise KafkaError(Errors.UNSUPPORTED_VERSION, f"{address}: {exc}") from None
        except (ClientError, trio.TooSlowError) as exc:
            self._backoff.failed(address, now_ms())
            reason = str(exc) or "no connection within socket.connection.setup.timeout.ms"
            raise KafkaError(Errors.NETWORK_EXCEPTION, f"{address}: {reason}") from None
        self._backoff.succeeded(address)
        return conn

    async def any_connection(self, view: ClusterView) -> TrioKafkaConnection:
        """An open connection, else a new one to a known broker or a bootstrap server."""
        candidates = [(b.host, b.port) for b in view.brokers.values()] + [
            (s.host, s.port) for s in self._settings.bootstrap_servers
        ]
        for host, port in candidates:
            conn = self.open_connection(f"{host}:{port}")
            if conn is not None:
                return conn
        # the address whose backoff ends first goes first
        order = sorted(
            dict.fromkeys(candidates), key=lambda hp: self._backoff.wait_ms(f"{hp[0]}:{hp[1]}", 0)
        )
        problems = []
        for host, port in order:
            try:
                return await self.connection(host, port)
            except KafkaError as exc:
                if exc.error is not Errors.NETWORK_EXCEPTION:
                    raise
                problems.append(exc.detail or str(exc))
        raise KafkaError(Errors.NETWORK_EXCEPTION, "no broker reachable: " + "; ".join(problems))

    async def drop(self, conn: TrioKafkaConnection) -> None:
        """Close ``conn`` and forget it (if the pool still holds it, not a newer one)."""
        if self._conns.get(conn.address) is conn:
            del self._conns[conn.address]
        await conn.aclose()

    async def aclose(self) -> None:
        self._closed = True
        conns, self._conns = list(self._conns.values()), {}
        for conn in conns:
            await conn.aclose()


class KafkaClient:
    """A pool, the metadata tracker and request sending with timeouts (trio)."""

    def __init__(
        self,
        settings: ClientSettings,
        tracker: MetadataTracker,
        *,
        client_id: str,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = settings
        self.tracker = tracker
        self.rng = rng or random.Random()
        self.pool = ConnectionPool(settings, client_id=client_id, rng=self.rng)
        self._refreshing: trio.Event | None = None
        self._last_refresh_error: KafkaError | None = None

    @property
    def view(self) -> ClusterView:
        return self.tracker.view

    async def request(self, conn: TrioKafkaConnection, message: Any, *, version: int | None = None,
                      timeout_ms: int | None = None,
                      on_sent: Callable[[], None] | None = None) -> Any:
        """One request on ``conn`` within ``request.timeout.ms`` (plus ``timeout_ms`` if given)."""
        limit = self.settings.request_timeout_ms + (timeout_ms or 0)
        try:
            with trio.fail_after(limit / 1000):
                return await conn.request(message, version=version, on_sent=on_sent)
        except trio.TooSlowError:
            await self.pool.drop(conn)
            raise KafkaError(
                Errors.REQUEST_TIMED_OUT,
                f"no answer to {type(message).__name__} from {conn.address} within {limit} ms",
            ) from None
        except UnsupportedVersionError as exc:
            raise KafkaError(Errors.UNSUPPORTED_VERSION, f"{conn.address}: {exc}") from None
        except ClientError as exc:
            await self.pool.drop(conn)
            raise KafkaError(Errors.NETWORK_EXCEPTION, f"{conn.address}: {exc}") from None

    async def broker_connection(self, broker: BrokerInfo) -> TrioKafkaConnection:
        return await self.pool.connection(broker.host, broker.port)

    async def node_connection(self, node_id: int) -> TrioKafkaConnection:
        broker = self.view.brokers.get(node_id)
        if broker is None:
            raise KafkaError(Errors.BROKER_NOT_AVAILABLE, f"broker {node_id} is not in the metadata")
        return await self.broker_connection(broker)

    async def refresh_metadata(self) -> ClusterView:
        """Ask any broker for metadata now; concurrent callers share one refresh."""
        if self._refreshing is not None:
            await self._refreshing.wait()
            if self._last_refresh_error is not None:
                raise self._last_refresh_error
            return self.view
        done = self._refreshing = trio.Event()
        self._last_refresh_error = None
        try:
            self.tracker.attempted(now_ms())
            conn = await self.pool.any_connection(self.view)
            version = conn.version_at_most(_METADATA_KEY, _METADATA_MAX_VERSION)
            response = await self.request(conn, self.tracker.metadata_request(), version=version)
            return self.tracker.update(response, now_ms())
        except KafkaError as exc:
            self._last_refresh_error = exc
            raise
        finally:
            self._refreshing = None
            done.set()

    async def maybe_refresh_metadata(self) -> None:
        """Refresh if the tracker says one is due; a failure is logged and retried later."""
        if self.tracker.needs_update(now_ms()):
            try:
                await self.refresh_metadata()
            except KafkaError as exc:
                if not exc.retriable:
                    raise
                logger.debug("metadata refresh failed: %s", exc)

    async def wait_for_topic(self, topic: str, timeout_ms: float) -> ClusterView:
        """Metadata that describes ``topic``, refreshed as needed within ``timeout_ms``."""
        self.tracker.add_topics([topic])
        with trio.move_on_after(timeout_ms / 1000):
            while True:
                view = self.view
                if topic in view.topics:
                    return view
                error = view.topic_errors.get(topic)
                if error is not None and not error.retriable:
                    raise KafkaError(error, f"topic {topic}")
                await trio.sleep(self.tracker.time_to_update_ms(now_ms()) / 1000)
                await self.maybe_refresh_metadata()
        raise KafkaTimeoutError(f"Topic {topic} not present in metadata after {timeout_ms:.0f} ms.")

    async def aclose(self) -> None:
        await self.pool.aclose()
