"""``PartitionIndex``: what controller decisions look up instead of scanning every partition.

Kafka's ReplicationControlManager keeps indexes updated on replay (imbalanced
partitions, partitions without a leader, ``BrokersToIsrs``) so that its
periodic tasks and its broker transitions do not scan every partition.
``PartitionIndex`` is that: it is told of every partition a committed image
changed, with its registration before and after (the metadata log follower
walks them, a slice at a time), and keeps

* ``leaderless``: partitions with no leader (the offline alarm, and the
  candidates of the unclean-election task and of the elections after a
  broker is unfenced);
* ``imbalanced``: partitions led by other than their preferred replica (the
  candidates of the preferred-leader rebalance);
* per broker, how many partitions it leads (``leads``) and how many ISRs it
  shares with another replica (``shares_isr``): whether a broker that is
  fenced, new, or shutting down still has to be taken out of leaderships
  and ISRs (``holds_partitions``) is then a look-up, not a scan of a million
  partitions.

The index describes ``image``, the newest committed image whose changes it
has been told of completely; the commands examine candidates against the
working image, so a partition that an uncommitted record moved is judged as
it is now (``QuorumController.may_hold`` adds what the controller's own
uncommitted records gave each broker).
"""

from __future__ import annotations

import collections
import uuid

from quorum.controller.image import (
    EMPTY_IMAGE,
    MetadataImage,
    PartitionRegistration,
)
from quorum.controller.partition_map import EMPTY_PARTITIONS, PartitionMap

__all__ = ["PartitionIndex", "PartitionKey", "note_every_change"]

PartitionKey = tuple[uuid.UUID, int]


class PartitionIndex:
    def __init__(self) -> None:
        self.leaderless: set[PartitionKey] = set()
        self.imbalanced: set[PartitionKey] = set()
        self.leaderless_changes = 0  # additions to and removals from ``leaderless``
        self._leads: collections.Counter[int] = collections.Counter()
        self._shares_isr: collections.Counter[int] = collections.Counter()
        # the committed image the counts describe: every change up to it was noted
        self.image: MetadataImage = EMPTY_IMAGE

    def note(
        self,
        topic_id: uuid.UUID,
        index: int,
        old: PartitionRegistration | None,
        new: PartitionRegistration | None,
    ) -> None:
        """The committed registration of one partition went from ``old`` to ``new``
        (None: absent on that side)."""
        key = (topic_id, index)
        offline = new is not None and not new.has_leader
        if offline != (key in self.leaderless):
            self.leaderless_changes += 1
            if offline:
                self.leaderless.add(key)
            else:
                self.leaderless.discard(key)
        if new is not None and new.leader != new.preferred_leader:
            self.imbalanced.add(key)
        else:
            self.imbalanced.discard(key)
        if old is not None:
            self._count(old, -1)
        if new is not None:
            self._count(new, 1)

    def noted_through(self, image: MetadataImage) -> None:
        """Every change up to the committed ``image`` was noted."""
        if image.provenance.offset >= self.image.provenance.offset:
            self.image = image

    def leads(self, broker_id: int) -> int:
        return self._leads[broker_id]

    def shares_isr(self, broker_id: int) -> int:
        return self._shares_isr[broker_id]

    def holds_partitions(self, broker_id: int) -> bool:
        """Whether ``broker_id`` leads a partition or is in an ISR beside another replica:
        what a fencing, a controlled shutdown or a new incarnation takes away (a last ISR
        member stays in its ISR: Kafka never writes an empty one)."""
        return self._leads[broker_id] > 0 or self._shares_isr[broker_id] > 0

    def _count(self, partition: PartitionRegistration, sign: int) -> None:
        if partition.leader >= 0:
            self._leads[partition.leader] += sign
        isr = partition.isr
        if len(isr) > 1:
            for replica in isr:
                self._shares_isr[replica] += sign


def note_every_change(index: PartitionIndex, old: MetadataImage, new: MetadataImage) -> None:
    """Tell ``index`` of every partition ``new`` changed since ``old``, at once."""
    for topic_id in old.topics_by_id.keys() | new.topics_by_id.keys():
        before, after = old.topics_by_id.get(topic_id), new.topics_by_id.get(topic_id)
        if before is after:
            continue
        old_parts = EMPTY_PARTITIONS if before is None else before.partitions
        new_parts = EMPTY_PARTITIONS if after is None else after.partitions
        for number, old_partition, partition in PartitionMap.of(new_parts).changed_against(
            old_parts
        ):
            index.note(topic_id, number, old_partition, partition)
    index.noted_through(new)
