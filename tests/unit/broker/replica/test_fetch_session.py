"""The follower's side of an incremental fetch session (KIP-227), with partitions joining a
bounded number per request."""

from __future__ import annotations

from broker.replica.fetch_session import FetchSessionHandler, TopicPartitionName
from quorum.wire.messages import (
    FetchRequestPartition,
    FetchResponse,
    FetchResponsePartition,
    FetchResponseTopic,
)


def wanted(count: int, offset: int = 0) -> dict[TopicPartitionName, FetchRequestPartition]:
    return {
        ("t", i): FetchRequestPartition(partition=i, fetch_offset=offset) for i in range(count)
    }


def answer(names: list[TopicPartitionName], session_id: int) -> FetchResponse:
    return FetchResponse(session_id=session_id, responses=(FetchResponseTopic(
        topic="t", partitions=tuple(FetchResponsePartition(partition_index=i) for _, i in names),
    ),))


def test_partitions_join_a_session_a_bounded_number_per_request() -> None:
    handler = FetchSessionHandler(max_new_partitions=2)
    first = handler.build(wanted(5))
    assert first.full and list(first.partitions) == [("t", 0), ("t", 1)]
    assert handler.handle_response(answer(list(first.partitions), session_id=7))
    second = handler.build(wanted(5))
    assert not second.full and list(second.partitions) == [("t", 2), ("t", 3)]
    assert handler.handle_response(answer([], session_id=7))
    # a joined partition whose fetch state changed is listed again, beside the last newcomer
    changed = wanted(5)
    changed[("t", 0)] = FetchRequestPartition(partition=0, fetch_offset=9)
    third = handler.build(changed)
    assert list(third.partitions) == [("t", 0), ("t", 4)]
    assert handler.handle_response(answer([], session_id=7))
    assert handler.build(changed).partitions == {}
    assert set(handler.session_partitions) == set(changed)


def test_without_a_bound_the_first_request_names_every_partition() -> None:
    handler = FetchSessionHandler()
    first = handler.build(wanted(5))
    assert first.full and len(first.partitions) == 5
