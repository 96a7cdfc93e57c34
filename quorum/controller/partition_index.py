"""``PartitionIndex``: the partitions a periodic controller task has to look at.

Kafka's ReplicationControlManager keeps sets updated on replay (imbalanced
partitions, partitions without a leader) so that its periodic tasks do not
scan every partition. ``PartitionIndex`` is that: it is told of every
partition a committed image changed (the metadata log follower walks them, a
slice at a time) and keeps

* ``leaderless``: partitions with no leader (the offline alarm, and the
  candidates of the unclean-election task);
* ``imbalanced``: partitions led by other than their preferred replica (the
  candidates of the preferred-leader rebalance).

The sets describe the committed image; the tasks examine each candidate
against the working image, so a partition that an uncommitted record moved
is judged as it is now, and one that became a candidate only through an
uncommitted record waits for the next run.
"""

from __future__ import annotations

import uuid

from quorum.controller.image import PartitionRegistration

__all__ = ["PartitionIndex", "PartitionKey"]

PartitionKey = tuple[uuid.UUID, int]


class PartitionIndex:
    def __init__(self) -> None:
        self.leaderless: set[PartitionKey] = set()
        self.imbalanced: set[PartitionKey] = set()
        self.leaderless_changes = 0  # additions to and removals from ``leaderless``

    def note(self, topic_id: uuid.UUID, index: int, partition: PartitionRegistration | None) -> None:
        """The committed registration of one partition (None: it is gone)."""
        key = (topic_id, index)
        offline = partition is not None and not partition.has_leader
        if offline != (key in self.leaderless):
            self.leaderless_changes += 1
            if offline:
                self.leaderless.add(key)
            else:
                self.leaderless.discard(key)
        if partition is not None and partition.leader != partition.preferred_leader:
            self.imbalanced.add(key)
        else:
            self.imbalanced.discard(key)
