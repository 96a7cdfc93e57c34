"""A replica fetcher: the partitions this broker follows from one leader broker.

Kafka's AbstractFetcherThread as a sans-I/O core. One FetchRequest (version
12: replica id, topic names) at a time covers every partition ready to
fetch, through an incremental fetch session (``broker.replica.fetch_session``).
For each partition it keeps the fetch offset and last fetched epoch (the
follower's log end and its last epoch, refreshed by the owner after each
answer), the leader epoch it believes in, and a backoff after an error.

``handle_response`` hands back, per partition, the answer to apply, but only
if the partition is still fetched at the offset and epoch it asked with (a
partition removed, re-added or truncated meanwhile ignores a stale answer).
The owner applies it to the log and reports back with ``update_position``,
``delay`` (a retriable error: ``replica.fetch.backoff.ms``) or ``fail`` (the
leader's epoch is newer than ours: wait for the metadata image to name the
new leader, as Kafka's markPartitionFailed).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from typing import Final

import attrs

from broker.replica.config import ReplicaConfig
from broker.replica.fetch_session import FetchSessionHandler, TopicPartitionName
from broker.replica.manager import PartitionKey
from quorum.wire.messages import (
    FetchRequest,
    FetchRequestForgottenTopic,
    FetchRequestPartition,
    FetchRequestTopic,
    FetchResponse,
    FetchResponsePartition,
)

__all__ = ["FETCH_VERSION", "FetchedPartition", "PartitionFetchState", "ReplicaFetcher"]

FETCH_VERSION = 12


# one per followed partition: no weakref slot, and a backoff or failure kept beside it (rare)
# rather than in it, so it fits an 80-B block
@attrs.frozen(kw_only=True, weakref_slot=False)
class PartitionFetchState:
    key: PartitionKey
    name: TopicPartitionName
    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int
    current_leader_epoch: int


@attrs.frozen(kw_only=True)
class FetchedPartition:
    key: PartitionKey
    # the partition's fetch state as the request asked with it
    requested: PartitionFetchState
    answer: FetchResponsePartition


# ``_in_flight`` while an answer is applied over several steps (request ids start at 1)
_APPLYING: Final = 0


class ReplicaFetcher:
    def __init__(
        self, config: ReplicaConfig, source_id: int, request_ids: Iterator[int] | None = None
    ) -> None:
        self.source_id = source_id
        self._config = config
        self._states: dict[PartitionKey, PartitionFetchState] = {}
        # the partitions ready to fetch live in the session handler's wanted set, updated
        # as each partition changes: a request costs what changed, not what is fetched.
        # It holds the fetch states themselves (one object per partition on this side);
        # the request's partition data is made for the partitions a request names
        self._session: FetchSessionHandler[PartitionFetchState] = FetchSessionHandler(
            config.max_partitions_joining_per_fetch
        )
        # backed-off partitions, by the time they are ready again (stale entries skipped)
        self._delayed: list[tuple[int, PartitionKey]] = []
        # partitions backing off, until when; partitions failed (the leader is ahead of our
        # metadata: wait for a new image)
        self._delayed_until: dict[PartitionKey, int] = {}
        self._failed: set[PartitionKey] = set()
        # the id of the request in flight (what each partition asked with is the session's)
        self._in_flight: int | None = None
        # after a request got no answer the whole link waits until then, not each of its
        # partitions (backing off 33,000 one by one, and later taking them back, cost steps
        # of 200-400 ms on a loaded machine)
        self._link_backoff_until = 0
        # ids unique across the broker's fetchers: an answer to a fetcher that was
        # dropped and made again never matches the new one's request
        self._request_ids = itertools.count(1) if request_ids is None else request_ids

    def __len__(self) -> int:
        return len(self._states)

    def __contains__(self, key: object) -> bool:
        return key in self._states

    @property
    def in_flight(self) -> bool:
        return self._in_flight is not None

    def hold(self) -> None:
        """An answer is being applied over several steps: no next request until
        ``release`` (it would ask with positions not yet moved)."""
        assert self._in_flight is None, "hold with a request in flight"
        self._in_flight = _APPLYING

    def release(self) -> None:
        assert self._in_flight == _APPLYING, "release without hold"
        self._in_flight = None

    def still_current(self, fetched: FetchedPartition, now_ms: int) -> bool:
        """Whether an answer may be applied now: its partition asks from where it asked
        then, in the same leader epoch, and is not backing off."""
        key = fetched.key
        state = self._states.get(key)
        return (
            state is not None
            and self._ready(key, now_ms)
            and state.fetch_offset == fetched.requested.fetch_offset
            and state.current_leader_epoch == fetched.requested.current_leader_epoch
        )

    def state(self, key: PartitionKey) -> PartitionFetchState | None:
        return self._states.get(key)

    # -- partitions ------------------------------------------------------------------------

    def _set(self, state: PartitionFetchState) -> None:
        key = state.key
        self._states[key] = state
        if key in self._failed or key in self._delayed_until:
            self._session.drop(state.name)
        else:
            self._session.want(state.name, state)

    def _ready(self, key: PartitionKey, now_ms: int) -> bool:
        return key not in self._failed and now_ms >= self._delayed_until.get(key, 0)

    def _request_data(self, state: PartitionFetchState) -> FetchRequestPartition:
        return FetchRequestPartition(
            partition=state.name[1],
            current_leader_epoch=state.current_leader_epoch,
            fetch_offset=state.fetch_offset,
            last_fetched_epoch=state.last_fetched_epoch,
            log_start_offset=state.log_start_offset,
            partition_max_bytes=self._config.replica_fetch_max_bytes,
        )

    def add_partition(self, state: PartitionFetchState) -> None:
        """Start (or restart, after a new leader epoch) fetching a partition."""
        old = self._states.get(state.key)
        if old is not None and old.name != state.name:
            self._session.drop(old.name)
        self._failed.discard(state.key)
        self._delayed_until.pop(state.key, None)
        self._set(state)

    def remove_partition(self, key: PartitionKey) -> None:
        old = self._states.pop(key, None)
        self._failed.discard(key)
        self._delayed_until.pop(key, None)
        if old is not None:
            self._session.drop(old.name)

    def update_position(
        self, key: PartitionKey, *, fetch_offset: int, last_fetched_epoch: int, log_start_offset: int
    ) -> None:
        state = self._states.get(key)
        if state is not None:
            self._delayed_until.pop(key, None)
            self._set(attrs.evolve(
                state,
                fetch_offset=fetch_offset,
                last_fetched_epoch=last_fetched_epoch,
                log_start_offset=log_start_offset,
            ))

    def delay(self, key: PartitionKey, now_ms: int) -> None:
        state = self._states.get(key)
        if state is not None and self._delayed_until.get(key, 0) <= now_ms:
            until = self._delayed_until[key] = now_ms + self._config.replica_fetch_backoff_ms
            if key not in self._failed:
                heapq.heappush(self._delayed, (until, key))
            self._set(state)

    def fail(self, key: PartitionKey) -> None:
        state = self._states.get(key)
        if state is not None:
            self._failed.add(key)
            self._set(state)

    def _ready_again(self, now_ms: int) -> None:
        """Backed-off partitions whose time came rejoin the wanted set."""
        delayed = self._delayed
        while delayed and delayed[0][0] <= now_ms:
            until, key = heapq.heappop(delayed)
            state = self._states.get(key)
            if (
                state is not None
                and key not in self._failed
                and self._delayed_until.get(key) == until
            ):
                del self._delayed_until[key]
                self._set(state)

    # -- requests --------------------------------------------------------------------------

    def maybe_build_request(self, now_ms: int) -> tuple[int, FetchRequest] | None:
        """The next request (with its id) when none is in flight and a partition is ready."""
        if self._in_flight is not None or now_ms < self._link_backoff_until:
            return None
        self._ready_again(now_ms)
        if not self._session.has_wanted:
            return None
        built = self._session.build()
        request_id = next(self._request_ids)
        self._in_flight = request_id
        topics: dict[str, list[FetchRequestPartition]] = {}
        for (topic, _), state in built.partitions.items():
            topics.setdefault(topic, []).append(self._request_data(state))
        forgotten: dict[str, list[int]] = {}
        for topic, index in built.forgotten:
            forgotten.setdefault(topic, []).append(index)
        config = self._config
        request = FetchRequest(
            replica_id=config.broker_id,
            max_wait_ms=config.replica_fetch_wait_max_ms,
            min_bytes=config.replica_fetch_min_bytes,
            max_bytes=config.replica_fetch_response_max_bytes,
            isolation_level=0,
            session_id=built.session_id,
            session_epoch=built.session_epoch,
            topics=tuple(
                FetchRequestTopic(topic=topic, partitions=tuple(parts))
                for topic, parts in topics.items()
            ),
            forgotten_topics_data=tuple(
                FetchRequestForgottenTopic(topic=topic, partitions=tuple(indexes))
                for topic, indexes in forgotten.items()
            ),
        )
        return request_id, request

    def handle_response(
        self, request_id: int, response: FetchResponse, now_ms: int
    ) -> list[FetchedPartition]:
        """The answers still worth applying (the owner reports back for each)."""
        if self._in_flight != request_id:
            return []
        self._in_flight = None
        if not self._session.handle_response(response):
            return []  # the session starts over: the next request is full, at once
        # what each partition asked with: the session as the request left it (nothing
        # changes it until the next request is built)
        asked = self._session.session_partitions
        fetched = []
        for topic in response.responses:
            for answer in topic.partitions:
                requested = asked.get((topic.topic, answer.partition_index))
                if requested is None:
                    continue
                found = FetchedPartition(key=requested.key, requested=requested, answer=answer)
                if self.still_current(found, now_ms):
                    fetched.append(found)  # (else changed while the request was out: stale)
        return fetched

    def request_failed(self, request_id: int, now_ms: int) -> None:
        """No answer (connection lost, timed out): the link backs off, every partition with it."""
        if self._in_flight != request_id:
            return
        self._in_flight = None
        self._session.handle_error()
        self._link_backoff_until = now_ms + self._config.replica_fetch_backoff_ms

    def next_deadline_ms(self, now_ms: int) -> int | None:
        """When a backed-off partition becomes ready (None: nothing waits on time)."""
        if self._in_flight is not None:
            return None
        if now_ms < self._link_backoff_until and self._states:
            return self._link_backoff_until
        delayed = self._delayed
        while delayed:
            until, key = delayed[0]
            state = self._states.get(key)
            if (
                state is not None
                and key not in self._failed
                and self._delayed_until.get(key) == until
            ):
                return until
            heapq.heappop(delayed)  # removed, failed or ready again since
        return None
