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


def want_all(handler: FetchSessionHandler, partitions: dict[TopicPartitionName, FetchRequestPartition]) -> None:
    for name, data in partitions.items():
        handler.want(name, data)


def answer(names: list[TopicPartitionName], session_id: int) -> FetchResponse:
    return FetchResponse(session_id=session_id, responses=(FetchResponseTopic(
        topic="t", partitions=tuple(FetchResponsePartition(partition_index=i) for _, i in names),
    ),))


def test_partitions_join_a_session_a_bounded_number_per_request() -> None:
    handler = FetchSessionHandler(max_new_partitions=2)
    want_all(handler, wanted(5))
    first = handler.build()
    assert first.full and list(first.partitions) == [("t", 0), ("t", 1)]
    assert handler.handle_response(answer(list(first.partitions), session_id=7))
    second = handler.build()
    assert not second.full and list(second.partitions) == [("t", 2), ("t", 3)]
    assert handler.handle_response(answer([], session_id=7))
    # a joined partition whose fetch state changed is listed again, beside the last newcomer
    handler.want(("t", 0), FetchRequestPartition(partition=0, fetch_offset=9))
    third = handler.build()
    assert sorted(third.partitions) == [("t", 0), ("t", 4)]
    assert handler.handle_response(answer([], session_id=7))
    # nothing changed: an empty incremental request; the same data again is no change
    handler.want(("t", 1), FetchRequestPartition(partition=1, fetch_offset=0))
    assert handler.build().partitions == {}
    assert set(handler.session_partitions) == {("t", i) for i in range(5)}
    assert handler.session_partitions[("t", 0)].fetch_offset == 9


def test_a_dropped_partition_is_forgotten_once_and_can_come_back() -> None:
    handler = FetchSessionHandler()
    want_all(handler, wanted(3))
    assert handler.handle_response(answer(list(handler.build().partitions), session_id=7))
    handler.drop(("t", 1))
    request = handler.build()
    assert request.forgotten == (("t", 1),) and request.partitions == {}
    assert handler.handle_response(answer([], session_id=7))
    assert handler.build().forgotten == ()
    assert handler.handle_response(answer([], session_id=7))
    handler.want(("t", 1), FetchRequestPartition(partition=1, fetch_offset=4))
    assert list(handler.build().partitions) == [("t", 1)]


def test_an_answer_naming_a_partition_outside_the_session_starts_over() -> None:
    handler = FetchSessionHandler()
    want_all(handler, wanted(2))
    assert handler.handle_response(answer(list(handler.build().partitions), session_id=7))
    handler.build()
    assert not handler.handle_response(answer([("t", 5)], session_id=7))
    assert handler.is_full_next and set(handler.build().partitions) == {("t", 0), ("t", 1)}


def test_without_a_session_slot_every_full_request_names_every_partition() -> None:
    handler = FetchSessionHandler(max_new_partitions=2)
    want_all(handler, wanted(5))
    first = handler.build()
    assert len(first.partitions) == 2
    # the leader had no slot: session id 0, so no partition could ever join later
    assert handler.handle_response(answer(list(first.partitions), session_id=0))
    second = handler.build()
    assert second.full and len(second.partitions) == 5


def test_without_a_bound_the_first_request_names_every_partition() -> None:
    handler = FetchSessionHandler()
    want_all(handler, wanted(5))
    first = handler.build()
    assert first.full and len(first.partitions) == 5


def test_a_partition_dropped_or_changed_while_waiting_to_join_joins_as_it_is_then() -> None:
    handler = FetchSessionHandler(max_new_partitions=2)
    want_all(handler, wanted(5))
    assert handler.handle_response(answer(list(handler.build().partitions), session_id=7))
    handler.drop(("t", 3))  # never joined: nothing to forget
    handler.want(("t", 4), FetchRequestPartition(partition=4, fetch_offset=8))
    second = handler.build()
    assert second.forgotten == ()
    assert second.partitions == {
        ("t", 2): FetchRequestPartition(partition=2, fetch_offset=0),
        ("t", 4): FetchRequestPartition(partition=4, fetch_offset=8),
    }
    assert handler.handle_response(answer([], session_id=7))
    assert handler.build().partitions == {}
    assert sorted(handler.session_partitions) == [("t", 0), ("t", 1), ("t", 2), ("t", 4)]
