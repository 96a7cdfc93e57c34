"""``ControllerChannel``: requests to the active controller through any controller (trio).

What Kafka's admin client does with ``--bootstrap-controller``: ask a
bootstrap controller which node is the active controller (DescribeCluster
names it and lists every controller's address), send the request there,
and when the answer says NOT_CONTROLLER (leadership moved) or the
connection breaks, find the active controller again and resend, with a
backoff, until ``api_timeout_ms``. Used by brokers (their controller channel),
the tests and the benches to send raw requests; applications and the CLI use
``broker.client.Admin`` with ``bootstrap.controllers``.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import attrs
import trio

from quorum.client import ClientError, TrioKafkaConnection
from quorum.config.values import HostPort
from quorum.wire.error_codes import Errors
from quorum.wire.messages import DescribeClusterRequest, DescribeClusterResponse

__all__ = [
    "AdminSettings",
    "ControllerChannel",
    "ControllerUnavailableError",
    "EndpointType",
    "error_codes_in",
]


class EndpointType(enum.IntEnum):
    """Which listener a DescribeCluster asks about (its ``endpoint_type``)."""

    BROKER = 1
    CONTROLLER = 2


@attrs.frozen(kw_only=True)
class AdminSettings:
    # Kafka's admin client defaults (default.api.timeout.ms, request.timeout.ms,
    # retry.backoff.ms)
    api_timeout_ms: int = 60_000
    request_timeout_ms: int = 30_000
    retry_backoff_ms: int = 100


class ControllerUnavailableError(Exception):
    """No active controller answered within the time allowed; the message says what was tried."""


def error_codes_in(message: Any) -> set[int]:
    """Every ``error_code`` in a response, at any depth (per topic, per partition)."""
    codes: set[int] = set()
    stack = [message]
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):
            stack.extend(item)
        elif attrs.has(type(item)):
            for field in attrs.fields(type(item)):
                value = getattr(item, field.name)
                if field.name == "error_code":
                    codes.add(value)
                elif isinstance(value, tuple) or attrs.has(type(value)):
                    stack.append(value)
    return codes


class ControllerChannel:
    def __init__(
        self, bootstrap: Sequence[HostPort], settings: AdminSettings | None = None
    ) -> None:
        if not bootstrap:
            raise ValueError("No bootstrap controller addresses given")
        self._bootstrap = list(bootstrap)
        self.settings = settings or AdminSettings()  # per call: the next call uses it
        self._conn: TrioKafkaConnection | None = None
        self.controller_id: int | None = None

    async def __aenter__(self) -> ControllerChannel:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._conn is not None:
            await self._conn.aclose()
            self._conn = None

    async def call(
        self,
        request: Any,
        *,
        version: int | None = None,
        moved: frozenset[int] = frozenset({Errors.NOT_CONTROLLER}),
    ) -> Any:
        """The active controller's response; raises ControllerUnavailableError.

        An answer carrying an error code in ``moved`` means leadership moved
        on: find the active controller again and resend.
        """
        settings = self.settings
        problem = "no attempt finished"
        with trio.move_on_after(settings.api_timeout_ms / 1000):
            while True:
                try:
                    with trio.fail_after(settings.request_timeout_ms / 1000):
                        conn = await self._active()
                        response = await conn.request(request, version=version)
                    if moved.isdisjoint(error_codes_in(response)):
                        return response
                    problem = f"node {self.controller_id} is no longer the active controller"
                except (ClientError, trio.TooSlowError, _NoController) as exc:
                    problem = str(exc) or type(exc).__name__
                await self.aclose()
                await trio.sleep(settings.retry_backoff_ms / 1000)
        raise ControllerUnavailableError(
            f"no active controller answered {type(request).__name__} within "
            f"{settings.api_timeout_ms} ms (last problem: {problem})"
        )

    async def _active(self) -> TrioKafkaConnection:
        if self._conn is not None and not self._conn.is_closed:
            return self._conn
        problems = []
        for address in self._bootstrap:
            try:
                self._conn = await self._connect_to_active(address)
                return self._conn
            except (ClientError, _NoController) as exc:
                problems.append(f"{address}: {exc}")
        raise _NoController("; ".join(problems))

    async def _connect_to_active(self, address: HostPort) -> TrioKafkaConnection:
        conn = await TrioKafkaConnection.connect(address.host, address.port)
        try:
            request = DescribeClusterRequest(endpoint_type=int(EndpointType.CONTROLLER))
            cluster: DescribeClusterResponse = await conn.request(request)
        except BaseException:
            await conn.aclose()
            raise
        if cluster.error_code != Errors.NONE or cluster.controller_id < 0:
            await conn.aclose()
            raise _NoController("no active controller known")
        self.controller_id = cluster.controller_id
        target = next((b for b in cluster.brokers if b.broker_id == cluster.controller_id), None)
        if target is None or (target.host, target.port) == (address.host, address.port):
            return conn
        await conn.aclose()
        return await TrioKafkaConnection.connect(target.host, target.port)


class _NoController(Exception):
    pass
