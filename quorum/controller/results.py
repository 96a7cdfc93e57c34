"""What a controller command gets and gives: context in, ``ControllerResult`` out.

A command (one request, or a timer such as session expiry) reads the
controller's working image and returns the records to append and the
response to send once they are committed (Kafka's ControllerResult). It
never changes state itself: the records do, when replayed.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator, Hashable
from typing import Any, Final, Generic, Protocol, TypeVar

import attrs

from quorum.controller.image import MetadataImage
from quorum.controller.partition_index import PartitionIndex
from quorum.wire.metadata_serde import MetadataRecord

__all__ = [
    "PRODUCER_ID_BLOCK_SIZE",
    "Background",
    "ControllerConfig",
    "ControllerContext",
    "ControllerResult",
]

R = TypeVar("R")

# Kafka's ProducerIdManager block size: ids handed to a broker per AllocateProducerIds
PRODUCER_ID_BLOCK_SIZE: Final = 1000


@attrs.frozen(kw_only=True)
class ControllerConfig:
    """The settings the controller state machine uses (from ServerConfig)."""

    node_id: int
    cluster_id: str
    broker_session_timeout_ms: int = 9000
    broker_heartbeat_interval_ms: int = 2000
    num_partitions: int = 1
    default_replication_factor: int = 1
    # None: a majority of the topic's replication factor, written as a topic config
    # (pykraft's default; Kafka's is 1). An explicit broker setting wins.
    min_insync_replicas: int | None = None
    unclean_leader_election_enable: bool = False
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_ms: int = 300_000
    # how often leaderless partitions are retried with unclean election where a
    # topic allows it (Kafka's unclean.leader.election.interval.ms)
    unclean_leader_election_check_interval_ms: int = 300_000
    # metadata.version feature level written by the first leader (3.9-IV0)
    metadata_version_level: int = 21


class Background(Protocol):
    """The controller's operations that run after the one that started them: a command
    hands over work that need not hold up its answer (a new incarnation's ISR removals,
    the elections after an unfence) as a job of its own, split into parts."""

    def spawn(self, key: Hashable, name: str, steps: Generator[Any, None, None]) -> None:
        """Run ``steps`` as an operation of its own later (not if ``key`` runs already)."""
        ...

    def running(self, key: Hashable) -> bool:
        """Whether the job ``key`` is queued or running."""
        ...


@attrs.frozen(kw_only=True)
class ControllerContext:
    """Everything a command may read besides the image."""

    config: ControllerConfig
    now_ms: int
    # the offset the first record of this command's result will get in the log
    # (broker epochs are offsets of RegisterBrokerRecords)
    next_offset: int
    rng: random.Random = attrs.field(eq=False)
    # where the next record will land now: a command in several slices (maybe with
    # other appends between them) asks when it emits; None: ``next_offset`` holds
    next_append_offset: Callable[[], int] | None = attrs.field(default=None, eq=False)
    # the working image now: an operation in parts computes each from the image at its
    # start (None: the image the command got is all there is)
    working_image: Callable[[], MetadataImage] | None = attrs.field(default=None, eq=False)
    # the committed image's partition index (candidates of the periodic tasks)
    partitions: PartitionIndex | None = attrs.field(default=None, eq=False)
    background: Background | None = attrs.field(default=None, eq=False)
    # whether a broker may lead a partition or share an ISR in the working image: False
    # only when surely not, None when not known (yet)
    may_hold: Callable[[int], bool | None] | None = attrs.field(default=None, eq=False)

    def append_offset(self) -> int:
        """The offset the next record appended now will get."""
        return self.next_offset if self.next_append_offset is None else self.next_append_offset()


@attrs.frozen
class ControllerResult(Generic[R]):
    records: tuple[MetadataRecord, ...]
    response: R

    @classmethod
    def answer(cls, response: R) -> ControllerResult[R]:
        """A result that writes nothing (a rejection, or a read)."""
        return cls((), response)
