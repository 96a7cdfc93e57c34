"""What the replica core asks its driver to do after each input: ``ReplicaOutput``.

The driver handles one ``ReplicaOutput`` completely before the next input:

1. send each ``fetches`` request to its ``destination`` broker and, later,
   give the core its answer (``handle_fetch_response``) or report that it
   got none (``fetch_failed``: connection lost or timed out);
2. send ``alter_partition`` (if any) to the active controller and give the
   core its answer (``handle_alter_partition_response``) or its failure
   (``alter_partition_failed``);
3. write each answer in ``produce_answers``, ``fetch_answers`` and
   ``delete_records_answers`` on the
   connection its ``handle`` names (an acks=0 produce never gets one);
4. call ``poll`` at ``next_deadline_ms`` at the latest (purgatory
   deadlines, the ISR check, fetch backoffs, AlterPartition retries);
5. for each source broker in ``fetch_answers_left``, call
   ``continue_fetch_response`` once, as a step of its own (after its other
   tasks had a turn): a large answer is applied a slice at a time.

``high_watermarks_moved`` lists partitions whose high watermark moved, for
the driver's periodic checkpoint and its metrics. The log was written before
the output was returned (data logs are not fsynced per append: Kafka's
durability is replication; ``flush.messages``/``flush.ms`` are the driver's).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import TypeVar

import attrs

from broker.replica.isr import IsrChange
from broker.replica.manager import PartitionKey
from quorum.wire.messages import (
    AlterPartitionRequest,
    DeleteRecordsResponse,
    FetchRequest,
    FetchResponse,
    ProduceResponse,
)

__all__ = [
    "DeleteRecordsAnswer",
    "FetchAnswer",
    "OutboundAlterPartition",
    "OutboundFetch",
    "Outbox",
    "ProduceAnswer",
    "ReplicaOutput",
    "by_topic",
]


@attrs.frozen
class OutboundFetch:
    destination: int
    request_id: int
    request: FetchRequest  # version 12


@attrs.frozen
class OutboundAlterPartition:
    request_id: int
    request: AlterPartitionRequest  # version 3


@attrs.frozen
class ProduceAnswer:
    handle: Hashable
    response: ProduceResponse


@attrs.frozen
class FetchAnswer:
    handle: Hashable
    response: FetchResponse


@attrs.frozen
class DeleteRecordsAnswer:
    handle: Hashable
    response: DeleteRecordsResponse


@attrs.frozen(kw_only=True)
class ReplicaOutput:
    fetches: tuple[OutboundFetch, ...] = ()
    alter_partition: OutboundAlterPartition | None = None
    produce_answers: tuple[ProduceAnswer, ...] = ()
    fetch_answers: tuple[FetchAnswer, ...] = ()
    delete_records_answers: tuple[DeleteRecordsAnswer, ...] = ()
    high_watermarks_moved: tuple[PartitionKey, ...] = ()
    next_deadline_ms: int | None = None
    # source brokers whose fetch answer has partitions left to apply
    fetch_answers_left: tuple[int, ...] = ()


@attrs.define
class Outbox:
    """What one input produced, gathered until the ``ReplicaOutput`` is built."""

    produce_answers: list[ProduceAnswer] = attrs.field(factory=list)
    fetch_answers: list[FetchAnswer] = attrs.field(factory=list)
    delete_records_answers: list[DeleteRecordsAnswer] = attrs.field(factory=list)
    # partitions whose high watermark, log end or role changed: purgatory checks
    touched: set[PartitionKey] = attrs.field(factory=set)
    high_watermarks_moved: set[PartitionKey] = attrs.field(factory=set)
    # led partitions with a follower found behind: the ISR check watches them
    lagging: set[PartitionKey] = attrs.field(factory=set)
    isr_changes: list[tuple[PartitionKey, IsrChange]] = attrs.field(factory=list)

    def moved(self, key: PartitionKey) -> None:
        self.touched.add(key)
        self.high_watermarks_moved.add(key)


T = TypeVar("T")


def by_topic(answers: Iterable[tuple[str, T]]) -> dict[str, tuple[T, ...]]:
    """Per-partition answers grouped under their topic's name, in first-seen order (what every
    response of the data plane nests: topics, then their partitions)."""
    grouped: dict[str, list[T]] = {}
    for topic, answer in answers:
        grouped.setdefault(topic, []).append(answer)
    return {topic: tuple(parts) for topic, parts in grouped.items()}
