"""ListOffsets to each partition's leader, retried until an answer or the timeout (trio).

What ``end_offsets``, ``beginning_offsets`` and ``offsets_for_times`` of the
consumer and ``list_offsets`` of the admin client share: group the
partitions by leader, send one ListOffsets per broker at once, keep the
answers, refresh metadata and retry (after ``retry.backoff.ms``) the
partitions whose answer was retriable (NOT_LEADER_OR_FOLLOWER,
OFFSET_NOT_AVAILABLE while a new leader catches up, a broken
connection...), until ``timeout_ms``. ``read_list_offsets`` is the pure part.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import attrs
import trio

from broker.client.errors import KafkaError, KafkaTimeoutError, error_from_code
from broker.client.fetch_core import list_offsets_request
from broker.client.network import KafkaClient
from broker.client.types import OffsetAndTimestamp, TopicPartition
from quorum.wire.error_codes import Errors
from quorum.wire.messages import ListOffsetsResponse

__all__ = ["ListedOffset", "list_offsets", "read_list_offsets"]

_LIST_OFFSETS_KEY: Final = 2
_LIST_OFFSETS_MAX_VERSION: Final = 7


@attrs.frozen
class ListedOffset:
    error: Errors
    # None when no record has a timestamp at or after the one asked for
    offset: OffsetAndTimestamp | None = None


def read_list_offsets(response: ListOffsetsResponse) -> dict[TopicPartition, ListedOffset]:
    out = {}
    for topic in response.topics:
        for part in topic.partitions:
            error = Errors.from_code(part.error_code)
            found = None
            if error is Errors.NONE and part.offset >= 0:
                found = OffsetAndTimestamp(part.offset, part.timestamp, part.leader_epoch)
            out[TopicPartition(topic.name, part.partition_index)] = ListedOffset(error, found)
    return out


async def _ask(
    client: KafkaClient, node: int, timestamps: Mapping[TopicPartition, int], isolation: int
) -> dict[TopicPartition, ListedOffset]:
    try:
        conn = await client.node_connection(node)
        version = conn.version_at_most(_LIST_OFFSETS_KEY, _LIST_OFFSETS_MAX_VERSION)
        request = list_offsets_request(client.view, timestamps, isolation)
        answer = read_list_offsets(await client.request(conn, request, version=version))
    except KafkaError as exc:
        if not exc.retriable:
            raise
        answer = {}
        client.tracker.observe_error(exc.error or Errors.NETWORK_EXCEPTION, f"broker {node}")
    missing = ListedOffset(Errors.NETWORK_EXCEPTION)
    return {tp: answer.get(tp, missing) for tp in timestamps}


async def _ask_all(
    client: KafkaClient, grouped: Mapping[int, Mapping[TopicPartition, int]], isolation: int
) -> dict[TopicPartition, ListedOffset]:
    """Every broker asked at once; the answers merged."""
    answers: dict[TopicPartition, ListedOffset] = {}

    async def ask(node: int, wanted: Mapping[TopicPartition, int]) -> None:
        answers.update(await _ask(client, node, wanted, isolation))

    async with trio.open_nursery() as nursery:
        for node, wanted in grouped.items():
            nursery.start_soon(ask, node, wanted)
    return answers


async def list_offsets(
    client: KafkaClient,
    timestamps: Mapping[TopicPartition, int],
    *,
    timeout_ms: float,
    isolation_level: int = 0,
) -> dict[TopicPartition, OffsetAndTimestamp | None]:
    """The offset for each partition's timestamp (-1 latest, -2 earliest, -3 max timestamp)."""
    client.tracker.add_topics({tp.topic for tp in timestamps})
    remaining = dict(timestamps)
    found: dict[TopicPartition, OffsetAndTimestamp | None] = {}
    problem = "no answer yet"
    with trio.move_on_after(timeout_ms / 1000):
        while True:
            await client.maybe_refresh_metadata()
            view = client.view
            grouped: dict[int, dict[TopicPartition, int]] = {}
            for tp, stamp in remaining.items():
                leader = view.leader_of(tp)
                if leader is None:
                    client.tracker.request_update(f"no leader known for {tp}")
                    error = view.topic_errors.get(tp.topic)
                    if error is not None and not error.retriable:
                        raise KafkaError(error, f"topic {tp.topic}")
                    problem = f"no leader known for {tp}"
                else:
                    grouped.setdefault(leader.node_id, {})[tp] = stamp
            answers = await _ask_all(client, grouped, isolation_level)
            for tp, listed in answers.items():
                if listed.error is Errors.NONE:
                    found[tp] = listed.offset
                    del remaining[tp]
                elif listed.error.retriable:
                    client.tracker.observe_error(listed.error, f"ListOffsets for {tp}")
                    problem = f"{listed.error.name} for {tp}"
                else:
                    raise error_from_code(listed.error, None, context=f"ListOffsets for {tp}")
            if not remaining:
                return found
            await trio.sleep(client.settings.retry_backoff_ms / 1000)
    raise KafkaTimeoutError(
        f"Failed to get offsets by times in {timeout_ms:.0f} ms (last problem: {problem})"
    )
