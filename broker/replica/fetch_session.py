"""The fetching side of an incremental fetch session (KIP-227, Kafka's FetchSessionHandler).

The first request is full (every partition, session id 0, epoch 0: "create
a session"). Once the leader answers with a session id, each request is
incremental: it lists only partitions that were added or whose fetch data
changed (fetch offset, log start, epochs, byte limit) and forgets those no
longer wanted; the leader answers only partitions with news (records, a
moved high watermark or log start, an error, a diverging epoch). The epoch
goes up by one per answered request (wrapping to 1).

FETCH_SESSION_ID_NOT_FOUND starts over with a new session; any other
top-level error, a lost request or an answer that does not fit the request
(a full answer that omits or adds partitions, an incremental one naming a
partition outside the session) closes the session and asks for a new one
with a full request.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Final, Generic, TypeVar

import attrs

from quorum.wire.error_codes import Errors
from quorum.wire.messages import FetchResponse

__all__ = [
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "FetchSessionHandler",
    "SessionRequest",
    "TopicPartitionName",
    "next_epoch",
]

INITIAL_EPOCH: Final = 0
FINAL_EPOCH: Final = -1
INVALID_SESSION_ID: Final = 0
_INT32_MAX: Final = 2**31 - 1

# (topic name, partition index): Fetch v12 names topics, it has no topic ids
TopicPartitionName = tuple[str, int]
_ABSENT: Final = object()
# what a partition is fetched with (compared with != to find changes): the replica
# fetcher's own per-partition state, so a partition costs one object on this side
D = TypeVar("D")


def next_epoch(epoch: int) -> int:
    """The session epoch after ``epoch`` (Kafka's FetchMetadata.nextEpoch)."""
    if epoch < 0:
        return FINAL_EPOCH  # a final epoch stays final
    return 1 if epoch == _INT32_MAX else epoch + 1


@attrs.frozen(kw_only=True)
class SessionRequest(Generic[D]):
    session_id: int
    session_epoch: int
    # the partitions to put in the request (all of them when full)
    partitions: Mapping[TopicPartitionName, D]
    forgotten: tuple[TopicPartitionName, ...]
    full: bool


class FetchSessionHandler(Generic[D]):
    """The session as the leader holds it, and what the next request should ask.

    The owner says what changed (``want``, ``drop``) as it happens; ``build``
    looks only at those changes, so an idle session of 100,000 partitions
    costs nothing per request.
    """

    def __init__(self, max_new_partitions: int | None = None) -> None:
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        # what the leader holds: the partitions of the last built request and their data
        self._session: dict[TopicPartitionName, D] = {}
        # what the next request should ask for (the partitions ready to fetch) is the
        # session with these changes, not a table of its own (a follower of 100,000 idle
        # partitions would pay an entry per partition twice): names in the session whose
        # wanted data may differ (the new data, or None: not wanted), and names wanted
        # but not in the session yet (joining), each in the order they came. A request
        # looks at the first and at most its room of the second, so a session filling 500
        # at a time does not walk 60,000 waiting names per request
        self._pending: dict[TopicPartitionName, D | None] = {}
        self._joining: dict[TopicPartitionName, D] = {}
        # how many names of the session are pending as not wanted
        self._unwanted = 0
        # at most this many partitions join the session per request (None: all at once), so
        # the leader reads and the follower applies a bounded number per step; the others
        # join in the next requests
        self._max_new = max_new_partitions
        # the leader had no session slot: every request is full and names every partition
        self._sessionless = False

    @property
    def is_full_next(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)

    @property
    def session_partitions(self) -> Mapping[TopicPartitionName, D]:
        """What the leader holds, each partition with the data it was last asked with."""
        return self._session

    @property
    def has_wanted(self) -> bool:
        """Whether any partition is ready to fetch."""
        return bool(self._joining) or len(self._session) > self._unwanted

    def wanted(self) -> dict[TopicPartitionName, D]:
        """Every partition ready to fetch, with its data (built on demand)."""
        out = {}
        pending = self._pending
        for name, data in self._session.items():
            wanted = pending.get(name, data)
            if wanted is not None:
                out[name] = wanted
        out.update(self._joining)
        return out

    def _set_pending(self, name: TopicPartitionName, data: D | None) -> None:
        before = self._pending.get(name, _ABSENT)
        self._unwanted += (data is None) - (before is None)
        self._pending[name] = data

    def want(self, name: TopicPartitionName, data: D) -> None:
        """Fetch ``name`` with ``data`` from the next request on (added or changed)."""
        if name in self._session:
            self._set_pending(name, data)
        else:
            self._joining[name] = data

    def drop(self, name: TopicPartitionName) -> None:
        """Stop fetching ``name`` (removed, or backing off): forgotten by the next request."""
        self._joining.pop(name, None)
        if name in self._session:
            self._set_pending(name, None)

    def build(self) -> SessionRequest[D]:
        """The next request, updating the session to it."""
        if self.is_full_next:
            return self._build_full()
        session = self._session
        changed: dict[TopicPartitionName, D] = {}
        forgotten = []
        for name, data in self._pending.items():
            before = session.get(name)
            if data is None:
                if before is not None:
                    del session[name]
                    forgotten.append(name)
            elif before != data:
                session[name] = data
                changed[name] = data
        self._pending = {}
        self._unwanted = 0
        joining = self._joining
        room = len(joining) if self._max_new is None else self._max_new
        newcomers = list(itertools.islice(joining, room))
        for name in newcomers:
            data = joining.pop(name)
            session[name] = data
            changed[name] = data
        return SessionRequest(
            session_id=self.session_id,
            session_epoch=self.epoch,
            partitions=changed,
            forgotten=tuple(forgotten),
            full=False,
        )

    def _build_full(self) -> SessionRequest[D]:
        wanted = self.wanted()
        room = len(wanted)
        if self._max_new is not None and not self._sessionless:
            room = min(room, self._max_new)
        self._session = dict(itertools.islice(wanted.items(), room))
        # the rest join the session in the next requests
        self._pending = {}
        self._unwanted = 0
        self._joining = {n: d for n, d in wanted.items() if n not in self._session}
        return SessionRequest(
            session_id=self.session_id,
            session_epoch=self.epoch,
            partitions=dict(self._session),
            forgotten=(),
            full=True,
        )

    def _close_and_start_over(self) -> None:
        # a full request that names the old session closes it on the leader
        self.epoch = INITIAL_EPOCH

    def handle_response(self, response: FetchResponse) -> bool:
        """Take the answer to the last built request; False if its partitions must be ignored."""
        if response.error_code != Errors.NONE:
            if response.error_code == Errors.FETCH_SESSION_ID_NOT_FOUND:
                self.session_id = INVALID_SESSION_ID
            self._close_and_start_over()
            return False
        names = [(t.topic, p.partition_index) for t in response.responses for p in t.partitions]
        session = self._session
        if self.is_full_next:
            if len(names) != len(session) or not all(name in session for name in names):
                self._close_and_start_over()
                return False
            self.session_id = response.session_id
            self._sessionless = response.session_id == INVALID_SESSION_ID
            self.epoch = INITIAL_EPOCH if self._sessionless else 1
            return True
        if not all(name in session for name in names):
            self._close_and_start_over()
            return False
        if response.session_id == INVALID_SESSION_ID:
            self.session_id = INVALID_SESSION_ID  # the leader closed the session
            self.epoch = INITIAL_EPOCH
        else:
            self.epoch = next_epoch(self.epoch)
        return True

    def handle_error(self) -> None:
        """The request got no answer: the leader may or may not have moved the epoch."""
        self._close_and_start_over()
