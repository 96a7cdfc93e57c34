"""Replica lists for new partitions: manual ones checked, automatic ones placed.

Shared by CreateTopics, CreatePartitions and reassignments. A new partition's
ISR is its active replicas (registered, unfenced, not shutting down) and its
leader the first of them; leader and partition epochs start at 0.
Automatic placement only uses active brokers, so a replication factor larger
than the number of active brokers is refused (INVALID_REPLICATION_FACTOR).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

from quorum.controller.image import LeaderRecoveryState, MetadataImage
from quorum.controller.placement import (
    PlacementError,
    UsableBroker,
    new_partitions_placement,
    placement_of,
)
from quorum.controller.rejections import Rejected
from quorum.controller.results import ControllerContext
from quorum.wire.error_codes import Errors
from quorum.wire.messages.metadata_records import PartitionRecord

__all__ = [
    "active_replicas",
    "assignment_problem",
    "partition_record",
    "partition_records",
    "place_on_active_brokers",
    "placement_on_active_brokers",
]


def assignment_problem(
    image: MetadataImage, replicas: Sequence[int], replication_factor: int | None
) -> str | None:
    """Kafka's validateManualPartitionAssignment: why a manual replica list is bad."""
    if not replicas:
        return "The manual partition assignment includes an empty replica list."
    for broker_id in sorted(replicas):
        if image.broker(broker_id) is None:
            return (
                f"The manual partition assignment includes broker {broker_id}, "
                "but no such broker is registered."
            )
    if len(set(replicas)) != len(replicas):
        twice = next(b for b in replicas if replicas.count(b) > 1)
        return f"The manual partition assignment includes the broker {twice} more than once."
    if replication_factor is not None and len(replicas) != replication_factor:
        return (
            f"The manual partition assignment includes a partition with {len(replicas)} "
            f"replica(s), but this is not consistent with previous partitions, which have "
            f"{replication_factor} replica(s)."
        )
    return None


def active_replicas(image: MetadataImage, replicas: Sequence[int]) -> tuple[int, ...]:
    return tuple(r for r in replicas if (b := image.broker(r)) is not None and b.is_active)


def place_on_active_brokers(
    image: MetadataImage,
    count: int,
    replication_factor: int,
    ctx: ControllerContext,
    existing: Sequence[tuple[int, ...]] = (),
) -> list[tuple[int, ...]]:
    """Placement on the active brokers: a new replica is never put on a fenced one.

    With ``existing`` (CreatePartitions) the new partitions continue the
    existing ones' leader round-robin; a new topic starts at a random broker
    and shift (ctx.rng), as Kafka's placer does, so topics spread their leaders.
    """
    first = len(existing)
    place = placement_on_active_brokers(image, count, replication_factor, ctx, existing)
    return [place(p) for p in range(first, first + count)]


def placement_on_active_brokers(
    image: MetadataImage,
    count: int,
    replication_factor: int,
    ctx: ControllerContext,
    existing: Sequence[tuple[int, ...]] = (),
) -> Callable[[int], tuple[int, ...]]:
    """``place_on_active_brokers`` one partition at a time (every check up front)."""
    brokers = [
        UsableBroker(id=b.broker_id, rack=b.rack, fenced=False)
        for b in sorted(image.brokers.values(), key=lambda b: b.broker_id)
        if b.is_active
    ]
    if replication_factor > len(brokers):
        raise Rejected(
            Errors.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {replication_factor} time(s): only "
            f"{len(brokers)} broker(s) are active (registered, unfenced, not shutting down).",
        )
    width = max(len(brokers), 1)
    start_index, start_shift = ctx.rng.randrange(width), ctx.rng.randrange(width)
    try:
        if existing:
            return new_partitions_placement(
                brokers, existing[0], count=count, replication_factor=replication_factor,
                start_shift=start_shift,
            )
        return placement_of(
            brokers, partition_count=count, replication_factor=replication_factor,
            start_index=start_index, start_shift=start_shift,
        )
    except PlacementError as exc:
        raise Rejected(
            exc.error, f"Unable to replicate the partition {replication_factor} time(s): {exc}"
        ) from None


def partition_record(
    image: MetadataImage, topic_id: uuid.UUID, index: int, replicas: tuple[int, ...]
) -> PartitionRecord:
    """A new partition: its active replicas are the ISR, the first of them leads."""
    isr = active_replicas(image, replicas)
    assert isr, "callers reject assignments without an active replica"
    return PartitionRecord(
        partition_id=index, topic_id=topic_id, replicas=replicas, isr=isr,
        leader=isr[0], leader_recovery_state=LeaderRecoveryState.RECOVERED,
        leader_epoch=0, partition_epoch=0,
    )


def partition_records(
    image: MetadataImage, topic_id: uuid.UUID, first: int, assignments: list[tuple[int, ...]]
) -> list[PartitionRecord]:
    return [
        partition_record(image, topic_id, first + offset, replicas)
        for offset, replicas in enumerate(assignments)
    ]
