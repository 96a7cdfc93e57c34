"""The serving side of incremental fetch sessions (KIP-227, Kafka's FetchSession.scala).

``FetchSessionCache.new_context`` turns a FetchRequest into a ``FetchContext``:

* epoch -1 (final): no session (a named one is closed); every requested
  partition is read and answered, session id 0;
* epoch 0 (initial): a named session is closed; every requested partition is
  read and answered, and the answer creates a new session if the cache has a
  slot (else it carries session id 0 and the fetcher stays on full requests);
* epoch > 0: the session must exist (else FETCH_SESSION_ID_NOT_FOUND) at
  that epoch (else INVALID_FETCH_SESSION_EPOCH); its partitions are updated
  with the request's (added or changed) and forgotten ones dropped, the
  epoch moves on, and every partition of the session is read; the answer
  lists only partitions with news: records, an error, a diverging epoch, or
  a high watermark or log start other than the one last sent. Partitions that
  returned records move to the end of the session's order, so a byte limit
  does not starve the ones behind them.

The cache holds at most ``max_slots`` sessions. When full, a session unused
for two minutes makes room; otherwise a follower's new session may take a
consumer's (least recently used first). Session ids come from the injected
random source, never 0 and never one in use (an id reused after a restart
could otherwise match a stale fetcher's session).
"""

from __future__ import annotations

import enum
import functools
import random
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

import attrs

from broker.replica.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    TopicPartitionName,
    next_epoch,
)
from broker.replica.output import by_topic
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    FetchRequest,
    FetchRequestPartition,
    FetchResponse,
    FetchResponsePartition,
    FetchResponseTopic,
)

__all__ = [
    "EVICTION_MS",
    "ContextKind",
    "FetchContext",
    "FetchSessionCache",
    "PartitionFetchData",
]

EVICTION_MS = 120_000


class ContextKind(enum.Enum):
    SESSIONLESS = "sessionless"
    FULL = "full"
    INCREMENTAL = "incremental"
    ERROR = "error"


class PartitionFetchData(Protocol):
    """What a fetch asks of one partition: the request's own partition data, or a
    session's cached copy of it."""

    @property
    def current_leader_epoch(self) -> int: ...
    @property
    def fetch_offset(self) -> int: ...
    @property
    def last_fetched_epoch(self) -> int: ...
    @property
    def log_start_offset(self) -> int: ...
    @property
    def partition_max_bytes(self) -> int: ...


@functools.lru_cache(maxsize=64)
def _shared_limit(value: int) -> int:
    """Byte limits repeat (every follower asks with replica.fetch.max.bytes): one int object
    per distinct value instead of one per cached partition."""
    return value


class _CachedPartition:
    """A session's partition: what it was last asked with, flat (no request object kept:
    a follower's session may hold 100,000 of these), and what it was last sent."""

    __slots__ = (
        "current_leader_epoch",
        "fetch_offset",
        "last_fetched_epoch",
        "log_start_offset",
        "partition_max_bytes",
        "sent_high_watermark",
        "sent_log_start_offset",
    )

    def __init__(self, data: PartitionFetchData) -> None:
        self.sent_high_watermark = -1
        self.sent_log_start_offset = -1
        self.update(data)

    def update(self, data: PartitionFetchData) -> None:
        self.current_leader_epoch = data.current_leader_epoch
        self.fetch_offset = data.fetch_offset
        self.last_fetched_epoch = data.last_fetched_epoch
        self.log_start_offset = data.log_start_offset
        self.partition_max_bytes = _shared_limit(data.partition_max_bytes)

    def must_respond(self, answer: FetchResponsePartition) -> bool:
        """Kafka's maybeUpdateResponseData: whether the answer has news (and remember it)."""
        news = bool(answer.records) or answer.diverging_epoch.epoch != -1
        if answer.high_watermark != self.sent_high_watermark:
            news = True
            self.sent_high_watermark = answer.high_watermark
        if answer.log_start_offset != self.sent_log_start_offset:
            news = True
            self.sent_log_start_offset = answer.log_start_offset
        if answer.error_code != Errors.NONE:
            # resent once the error goes away
            self.sent_high_watermark = -1
            news = True
        return news


@attrs.define
class FetchSession:
    session_id: int
    partitions: dict[TopicPartitionName, _CachedPartition]
    epoch: int
    last_used_ms: int
    # the fetching replica (-1: a consumer). A follower's session (``Serving``) also keeps
    # the partitions to read at its next fetch (they changed here since last read, or the
    # follower is not caught up or not in the ISR), in the order they became so; every
    # other partition of the session is idle and caught up as of ``last_fetch_ms``
    replica_id: int = -1
    dirty: dict[TopicPartitionName, None] = attrs.field(factory=dict)
    last_fetch_ms: int = -1

    @property
    def privileged(self) -> bool:
        """A follower's session (it may take a consumer's slot)."""
        return self.replica_id >= 0


def _requested(request: FetchRequest) -> dict[TopicPartitionName, FetchRequestPartition]:
    return {(t.topic, p.partition): p for t in request.topics for p in t.partitions}


def _same(name: TopicPartitionName) -> TopicPartitionName:
    return name


def _forgotten(request: FetchRequest) -> list[TopicPartitionName]:
    return [(t.topic, index) for t in request.forgotten_topics_data for index in t.partitions]


@attrs.define
class FetchContext:
    kind: ContextKind
    # a full or sessionless request: its partitions; an incremental one: the session's
    requested: list[tuple[TopicPartitionName, PartitionFetchData]]
    # an incremental request: the partitions it named (new or changed fetch state)
    listed: frozenset[TopicPartitionName] = frozenset()
    # ... and how many of them joined the session with it (they are answered at once)
    joined: int = 0
    error: Errors = Errors.NONE
    session: FetchSession | None = None
    replica_id: int = -1
    arrived_ms: int = -1
    _cache: FetchSessionCache | None = None

    @property
    def partitions(self) -> list[tuple[TopicPartitionName, PartitionFetchData]]:
        """Every partition the request covers (a whole session for an incremental one:
        built on demand, a follower's session may hold 100,000)."""
        if self.kind is ContextKind.INCREMENTAL and self.session is not None:
            return list(self.session.partitions.items())
        return self.requested

    def build_response(
        self, answers: Mapping[TopicPartitionName, FetchResponsePartition], now_ms: int
    ) -> FetchResponse:
        """The answer: every partition read, or only those with news for a session."""
        if self.kind is ContextKind.ERROR:
            return FetchResponse(error_code=self.error, session_id=INVALID_SESSION_ID)
        if self.kind is ContextKind.INCREMENTAL:
            assert self.session is not None
            return self._incremental(answers)
        session_id = INVALID_SESSION_ID
        if self.kind is ContextKind.FULL and self._cache is not None:
            cached = {}
            for name, data in self.partitions:
                entry = cached[self._cache.shared_name(name)] = _CachedPartition(data)
                entry.sent_high_watermark = answers[name].high_watermark
                entry.sent_log_start_offset = answers[name].log_start_offset
            session_id = self._cache.maybe_create(
                cached, now_ms, replica_id=self.replica_id, fetched_ms=self.arrived_ms
            )
            self.session = self._cache.session(session_id)
        return FetchResponse(
            session_id=session_id,
            responses=_topics([(name, answers[name]) for name, _ in self.partitions]),
        )

    def _incremental(
        self, answers: Mapping[TopicPartitionName, FetchResponsePartition]
    ) -> FetchResponse:
        session = self.session
        assert session is not None
        chosen = []
        moved = []
        # the answers read, not every partition of the session: a follower's session may
        # hold 100,000 partitions of which a fetch reads a few
        for name, answer in answers.items():
            cached = session.partitions.get(name)
            if cached is None or not cached.must_respond(answer):
                continue
            chosen.append((name, answer))
            if answer.records:
                moved.append(name)
        for name in moved:  # round robin: those that got data go last
            session.partitions[name] = session.partitions.pop(name)
        return FetchResponse(session_id=session.session_id, responses=_topics(chosen))


def _topics(
    answers: list[tuple[TopicPartitionName, FetchResponsePartition]],
) -> tuple[FetchResponseTopic, ...]:
    grouped = by_topic((topic, answer) for (topic, _), answer in answers)
    return tuple(
        FetchResponseTopic(topic=topic, partitions=parts) for topic, parts in grouped.items()
    )


class FetchSessionCache:
    def __init__(
        self, max_slots: int, rng: random.Random,
        shared_name: Callable[[TopicPartitionName], TopicPartitionName] = _same,
    ) -> None:
        self._max_slots = max_slots
        self._rng = rng
        # the hosted partition's own name tuple for a requested one, taken where a session
        # keeps a name: a session of 100,000 partitions then keeps no tuple of its own per
        # partition (56 B each), and sessionless fetches pay no look-up
        self.shared_name = shared_name
        self._sessions: dict[int, FetchSession] = {}
        # the followers' sessions (every change here is looked up in each of them)
        self._followers: dict[int, FetchSession] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def session(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def new_context(
        self, request: FetchRequest, *, replica_id: int, now_ms: int
    ) -> FetchContext:
        epoch = request.session_epoch
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            self._remove(request.session_id)
            kind = ContextKind.FULL if epoch == INITIAL_EPOCH else ContextKind.SESSIONLESS
            requested = _requested(request)
            return FetchContext(
                kind=kind,
                requested=list(requested.items()),
                # a follower's new session is answered at once, as joins are
                joined=len(requested) if kind is ContextKind.FULL and replica_id >= 0 else 0,
                replica_id=replica_id,
                arrived_ms=now_ms,
                cache=self,
            )
        session = self._sessions.get(request.session_id)
        if session is None:
            return FetchContext(kind=ContextKind.ERROR, requested=[],
                                error=Errors.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return FetchContext(kind=ContextKind.ERROR, requested=[],
                                error=Errors.INVALID_FETCH_SESSION_EPOCH)
        requested = _requested(request)
        joined = 0
        for name, data in requested.items():
            cached = session.partitions.get(name)
            if cached is None:
                joined += 1
                name = self.shared_name(name)
                session.partitions[name] = _CachedPartition(data)
            else:
                cached.update(data)
            if session.privileged:
                session.dirty[name] = None  # its fetch state changed: read it
        for name in _forgotten(request):
            session.partitions.pop(name, None)
            session.dirty.pop(name, None)
        if not session.partitions:
            self._remove(session.session_id)
            return FetchContext(kind=ContextKind.SESSIONLESS, requested=[],
                                replica_id=replica_id,
                                arrived_ms=now_ms)
        session.epoch = next_epoch(session.epoch)
        session.last_used_ms = now_ms
        return FetchContext(
            kind=ContextKind.INCREMENTAL,
            requested=[],
            listed=frozenset(requested),
            joined=joined,
            session=session,
            replica_id=replica_id,
            arrived_ms=now_ms,
        )

    def _remove(self, session_id: int) -> None:
        if self._sessions.pop(session_id, None) is not None:
            self._followers.pop(session_id, None)

    def follower_sessions(self) -> Iterable[FetchSession]:
        return self._followers.values()

    def maybe_create(
        self,
        partitions: dict[TopicPartitionName, _CachedPartition],
        now_ms: int,
        *,
        replica_id: int = -1,
        fetched_ms: int = -1,
    ) -> int:
        """A new session's id, or 0 when there is no room (the fetcher stays on full requests)."""
        if self._max_slots <= 0 or not partitions:
            return INVALID_SESSION_ID
        privileged = replica_id >= 0
        if len(self._sessions) >= self._max_slots and not self._evict_one(privileged, now_ms):
            return INVALID_SESSION_ID
        session_id = INVALID_SESSION_ID
        while session_id == INVALID_SESSION_ID or session_id in self._sessions:
            session_id = self._rng.randint(1, 2**31 - 1)
        session = self._sessions[session_id] = FetchSession(
            session_id=session_id,
            partitions=partitions,
            epoch=1,
            last_used_ms=now_ms,
            replica_id=replica_id,
            # every partition is read by the request that made the session; those found
            # idle and caught up leave this set when its answer goes out
            dirty=dict.fromkeys(partitions) if privileged else {},
            last_fetch_ms=fetched_ms,
        )
        if privileged:
            self._followers[session_id] = session
        return session_id

    def _evict_one(self, privileged: bool, now_ms: int) -> bool:
        by_age = sorted(self._sessions.values(), key=lambda s: s.last_used_ms)
        victim = next((s for s in by_age if now_ms - s.last_used_ms > EVICTION_MS), None)
        if victim is None and privileged:
            victim = next((s for s in by_age if not s.privileged), None)
        if victim is None:
            return False
        self._remove(victim.session_id)
        return True
