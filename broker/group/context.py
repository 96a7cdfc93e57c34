"""The coordinator's state and its outputs in the making, shared by the handlers.

One ``Context`` per coordinator: the groups and committed offsets of the
partitions this broker leads, the timers, and the answers and appends the
current call has produced.  Handlers (``rebalance``, ``membership``,
``offsets``, ``admin``, ``loading``) change it; ``GroupCoordinator`` drains
the outputs after each call.

Committed offsets are a fold of the committed log: a commit's or a
tombstone's effect is applied when its append commits, never before, so
``offsets`` always equals a replay of what the high watermark covers.
Group membership lives in memory and is written for failover; answers that
depend on it (SyncGroup) wait for their record to commit.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from collections.abc import Hashable

import attrs

from broker.group.config import GroupCoordinatorConfig
from broker.group.group import ClassicGroup, Waiter
from broker.group.output import Answer, Append
from broker.group.partitioning import offsets_partition_for
from broker.group.records import CommittedOffset, OffsetsRecord
from broker.group.states import Empty
from broker.group.timers import Timers
from quorum.wire.error_codes import Errors

__all__ = ["Context", "OffsetKey", "map_append_error"]

# (group id, topic, partition)
OffsetKey = tuple[str, str, int]


def map_append_error(error: Errors, *, commit: bool = False) -> Errors:
    """Kafka's mapping of a failed ``__consumer_offsets`` append to a client error."""
    if error in (Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NOT_ENOUGH_REPLICAS,
                 Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND, Errors.REQUEST_TIMED_OUT):
        return Errors.COORDINATOR_NOT_AVAILABLE
    if error in (Errors.NOT_LEADER_OR_FOLLOWER, Errors.KAFKA_STORAGE_ERROR):
        return Errors.NOT_COORDINATOR
    if error in (Errors.MESSAGE_TOO_LARGE, Errors.RECORD_LIST_TOO_LARGE, Errors.INVALID_FETCH_SIZE):
        return Errors.INVALID_COMMIT_OFFSET_SIZE if commit else Errors.UNKNOWN_SERVER_ERROR
    return error


@attrs.define
class Context:
    config: GroupCoordinatorConfig
    rng: random.Random
    timers: Timers = attrs.field(factory=Timers)
    groups: dict[str, ClassicGroup] = attrs.field(factory=dict)
    offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = attrs.field(factory=dict)
    # offset keys with a commit appended but not yet committed (expiry skips them)
    pending_offset_writes: Counter[OffsetKey] = attrs.field(factory=Counter)
    owned: set[int] = attrs.field(factory=set)  # offsets partitions led and loaded
    loading: set[int] = attrs.field(factory=set)
    answers: list[Answer] = attrs.field(factory=list)
    appends: list[Append] = attrs.field(factory=list)
    writes: dict[int, object] = attrs.field(factory=dict)  # append id -> what its commit means
    write_partitions: dict[int, int] = attrs.field(factory=dict)
    next_append_id: int = 1

    def partition_for(self, group_id: str) -> int:
        return offsets_partition_for(group_id, self.config.offsets_topic_num_partitions)

    def coordinator_error(self, group_id: str) -> Errors:
        """NONE if this coordinator serves ``group_id`` now; else why not."""
        partition = self.partition_for(group_id)
        if partition in self.loading:
            return Errors.COORDINATOR_LOAD_IN_PROGRESS
        if partition not in self.owned:
            return Errors.NOT_COORDINATOR
        return Errors.NONE

    def answer(self, token: Hashable | Waiter, response: object) -> None:
        if isinstance(token, Waiter):
            token = token.token
        self.answers.append(Answer(token, response))

    def append(self, partition: int, records: list[OffsetsRecord], write: object) -> int:
        append_id = self.next_append_id
        self.next_append_id += 1
        self.appends.append(Append(append_id, partition, tuple(records)))
        self.writes[append_id] = write
        self.write_partitions[append_id] = partition
        return append_id

    def new_member_id(self, prefix: str) -> str:
        """Kafka's ``<client id or instance id>-<random UUID>``, from the injected random."""
        return f"{prefix}-{uuid.UUID(int=self.rng.getrandbits(128), version=4)}"

    def get_or_create_group(self, group_id: str, now_ms: int) -> ClassicGroup:
        group = self.groups.get(group_id)
        if group is None:
            group = ClassicGroup(group_id=group_id, state=Empty(now_ms))
            self.groups[group_id] = group
        return group

    def apply_offset(self, key: OffsetKey, committed: CommittedOffset | None) -> None:
        group_id, topic, partition = key
        if committed is None:
            by_group = self.offsets.get(group_id)
            if by_group is not None:
                by_group.pop((topic, partition), None)
                if not by_group:
                    del self.offsets[group_id]
            return
        self.offsets.setdefault(group_id, {})[(topic, partition)] = committed
