"""Partitions on in-memory logs, assignments and batches for the replica core's tests."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from broker.replica.config import TopicConfig
from broker.replica.manager import PartitionAssignment, PartitionKey, PartitionRole
from broker.replica.partition import Partition, PartitionContext
from quorum.log import MemoryLog
from quorum.wire.records import build_batch_from_values

TOPIC = "events"
TOPIC_ID = uuid.UUID(int=7)
KEY = PartitionKey(TOPIC_ID, 0)
LAG_MS = 1_000


def batch(*values: bytes, timestamp: int = 0) -> bytes:
    return build_batch_from_values(list(values) or [b"v"], timestamp=timestamp)


def assignment(
    *,
    broker_id: int = 1,
    leader: int = 1,
    leader_epoch: int = 1,
    partition_epoch: int = 1,
    isr: Sequence[int] = (1, 2, 3),
    replicas: Sequence[int] = (1, 2, 3),
) -> PartitionAssignment:
    return PartitionAssignment(
        topic=TOPIC,
        topic_id=TOPIC_ID,
        partition=0,
        leader=leader,
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
        isr=tuple(isr),
        replicas=tuple(replicas),
        role=PartitionRole.LEADER if leader == broker_id else PartitionRole.FOLLOWER,
    )


def new_partition(
    *,
    broker_id: int = 1,
    min_isr: int = 2,
    eligible: Sequence[int] = (1, 2, 3, 4),
    log: MemoryLog | None = None,
    config: TopicConfig | None = None,
) -> Partition:
    allowed = frozenset(eligible)
    return Partition(
        key=KEY,
        name=(TOPIC, 0),
        log=log or MemoryLog(),
        config=config or TopicConfig(min_insync_replicas=min_isr),
        context=PartitionContext(
            broker_id, LAG_MS, lambda replica: replica in allowed, lambda _key, _name: MemoryLog()
        ),
    )


def leader(
    *, isr: Sequence[int] = (1, 2, 3), min_isr: int = 2, now_ms: int = 0, leader_epoch: int = 1
) -> Partition:
    partition = new_partition(min_isr=min_isr)
    partition.apply_assignment(assignment(isr=isr, leader_epoch=leader_epoch), now_ms)
    return partition


def append(partition: Partition, count: int = 1) -> None:
    for _ in range(count):
        partition.log.append(batch(b"x"), epoch=partition.leader_epoch)


def fetch(partition: Partition, replica: int, offset: int, now_ms: int) -> tuple[bool, object]:
    """A follower's fetch at ``offset`` as the leader records it."""
    return partition.update_follower_fetch_state(
        replica,
        fetch_offset=offset,
        log_start_offset=0,
        now_ms=now_ms,
        leader_end_offset=partition.log_end_offset,
    )
