"""Requests to a group's coordinator, found and found again as it moves (trio).

``find_coordinator`` asks any broker once (FindCoordinator, key type
GROUP). ``call_coordinator`` sends one request to the coordinator and
retries, after ``retry.backoff.ms`` and a new lookup, while the answer says
the coordinator moved or is not ready (NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, as Kafka's
clients retry them) or the connection broke, until ``timeout_ms``. The
consumer's commits and committed-offset lookups and every admin group call
go through it; the request's reader raises the ``KafkaError`` for an error
code, which is how a moved coordinator is seen.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Final, TypeVar

import trio

from broker.client.errors import KafkaError, KafkaTimeoutError, error_from_code
from broker.client.group_requests import (
    COORDINATOR_MOVED,
    MAX_VERSIONS,
    Coordinator,
    find_coordinator_request,
    offset_commit_request,
    offset_fetch_request,
    read_find_coordinator,
    read_offset_commit,
    read_offset_fetch,
)
from broker.client.network import KafkaClient
from broker.client.types import OffsetAndMetadata, TopicPartition
from quorum.client import TrioKafkaConnection
from quorum.wire.api_keys import ApiKey
from quorum.wire.error_codes import Errors

__all__ = [
    "RETRY_ON_COORDINATOR",
    "call_coordinator",
    "commit_offsets",
    "fetch_committed",
    "find_coordinator",
    "version_for",
]

T = TypeVar("T")
RETRY_ON_COORDINATOR: Final = COORDINATOR_MOVED | {
    Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.NETWORK_EXCEPTION, Errors.REQUEST_TIMED_OUT,
    Errors.BROKER_NOT_AVAILABLE, Errors.UNSTABLE_OFFSET_COMMIT,
}


def version_for(conn: TrioKafkaConnection, key: ApiKey) -> int:
    return conn.version_at_most(key, MAX_VERSIONS[key])


async def find_coordinator(client: KafkaClient, group_id: str) -> Coordinator:
    """One FindCoordinator to any broker; raises KafkaError (retriable ones included)."""
    conn = await client.pool.any_connection(client.view)
    version = version_for(conn, ApiKey.FIND_COORDINATOR)
    response = await client.request(conn, find_coordinator_request(group_id, version),
                                    version=version)
    error, message, found = read_find_coordinator(response, version)
    if found is None:
        raise error_from_code(error, message, context=f"FindCoordinator for group {group_id}")
    return found


async def call_coordinator(
    client: KafkaClient,
    group_id: str,
    send: Callable[[TrioKafkaConnection], Awaitable[T]],
    *,
    timeout_ms: float,
    call: str,
    coordinator: Coordinator | None = None,
    on_found: Callable[[Coordinator | None], None] | None = None,
) -> T:
    """``send(conn)`` on the coordinator's connection, retried as the module says.

    ``coordinator`` is where to start (else it is looked up); ``on_found`` hears each
    coordinator found, and None when one turned out to have moved.
    """
    problem = "no attempt finished"
    with trio.move_on_after(timeout_ms / 1000):
        while True:
            try:
                if coordinator is None:
                    coordinator = await find_coordinator(client, group_id)
                    if on_found is not None:
                        on_found(coordinator)
                conn = await client.pool.connection(coordinator.host, coordinator.port)
                return await send(conn)
            except KafkaError as exc:
                if exc.error not in RETRY_ON_COORDINATOR:
                    raise
                problem = str(exc)
                coordinator = None
                if on_found is not None:
                    on_found(None)
            await trio.sleep(client.settings.retry_backoff_ms / 1000)
    raise KafkaTimeoutError(f"{call} for group {group_id} did not finish within "
                            f"{timeout_ms:.0f} ms (last problem: {problem})")


async def commit_offsets(
    client: KafkaClient,
    group_id: str,
    offsets: Mapping[TopicPartition, OffsetAndMetadata],
    *,
    timeout_ms: float,
    generation: int = -1,
    member_id: str = "",
    instance_id: str | None = None,
    coordinator: Coordinator | None = None,
    on_found: Callable[[Coordinator | None], None] | None = None,
) -> dict[TopicPartition, Errors]:
    """OffsetCommit, retried while the coordinator moves; each partition's error code."""
    request = offset_commit_request(group_id, offsets, generation=generation,
                                    member_id=member_id, instance_id=instance_id)

    async def send(conn: TrioKafkaConnection) -> dict[TopicPartition, Errors]:
        version = version_for(conn, ApiKey.OFFSET_COMMIT)
        errors = read_offset_commit(await client.request(conn, request, version=version))
        moved = {e for e in errors.values() if e in RETRY_ON_COORDINATOR}
        if moved:
            raise KafkaError(min(moved), f"OffsetCommit for group {group_id}")
        return errors

    return await call_coordinator(client, group_id, send, timeout_ms=timeout_ms,
                                  call="commitOffsets", coordinator=coordinator,
                                  on_found=on_found)


async def fetch_committed(
    client: KafkaClient,
    group_id: str,
    partitions: Iterable[TopicPartition] | None,
    *,
    timeout_ms: float,
    require_stable: bool = False,
    coordinator: Coordinator | None = None,
    on_found: Callable[[Coordinator | None], None] | None = None,
) -> dict[TopicPartition, OffsetAndMetadata | None]:
    """The group's committed offsets (None: every partition it has one for)."""
    wanted = None if partitions is None else list(partitions)

    async def send(conn: TrioKafkaConnection) -> dict[TopicPartition, OffsetAndMetadata | None]:
        version = version_for(conn, ApiKey.OFFSET_FETCH)
        request = offset_fetch_request(group_id, wanted, version, require_stable=require_stable)
        fetched = read_offset_fetch(await client.request(conn, request, version=version),
                                    version)
        errors = [fetched.error, *fetched.errors.values()]
        for error in errors:
            if error is not Errors.NONE:
                raise error_from_code(error, None, context=f"OffsetFetch for group {group_id}")
        return dict(fetched.offsets)

    return await call_coordinator(client, group_id, send, timeout_ms=timeout_ms,
                                  call="listConsumerGroupOffsets", coordinator=coordinator,
                                  on_found=on_found)
