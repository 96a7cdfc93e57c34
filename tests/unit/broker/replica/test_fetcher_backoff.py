"""A follower's fetcher after a request that got no answer: the link waits, every partition
with it, without touching each partition."""

from __future__ import annotations

import uuid

from broker.replica.config import ReplicaConfig
from broker.replica.fetcher import PartitionFetchState, ReplicaFetcher
from broker.replica.manager import PartitionKey

TOPIC = uuid.UUID(int=5)


def fetcher_with(count: int) -> ReplicaFetcher:
    fetcher = ReplicaFetcher(ReplicaConfig(broker_id=2, replica_fetch_backoff_ms=1000), 1)
    for index in range(count):
        fetcher.add_partition(PartitionFetchState(
            key=PartitionKey(TOPIC, index), name=("t", index), fetch_offset=0,
            last_fetched_epoch=-1, log_start_offset=0, current_leader_epoch=0,
        ))
    return fetcher


def test_a_request_without_an_answer_backs_the_whole_link_off() -> None:
    fetcher = fetcher_with(3_000)
    built = fetcher.maybe_build_request(now_ms=100)
    assert built is not None
    request_id, _ = built
    fetcher.request_failed(request_id, now_ms=200)
    assert not fetcher.in_flight
    assert fetcher.maybe_build_request(now_ms=1_199) is None
    assert fetcher.next_deadline_ms(now_ms=1_199) == 1_200
    again = fetcher.maybe_build_request(now_ms=1_200)
    assert again is not None and again[0] != request_id
    # the session started over: the new request is a full one again
    assert again[1].session_epoch == 0 or again[1].session_id == 0


def test_an_answer_to_another_request_changes_nothing() -> None:
    fetcher = fetcher_with(10)
    built = fetcher.maybe_build_request(now_ms=0)
    assert built is not None
    fetcher.request_failed(built[0] + 1000, now_ms=10)
    assert fetcher.in_flight
