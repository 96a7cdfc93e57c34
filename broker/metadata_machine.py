"""``BrokerMetadataMachine``: a broker's metadata image, in the task that owns its Raft core.

The broker's core is an observer: it fetches ``__cluster_metadata`` and
reports committed ranges and downloaded snapshots in each ``Ready``. The
shared ``MetadataLogFollower`` folds them into a ``MetadataImage`` with the
controllers' own code, in bounded slices, so a broker and a controller at
the same offset hold equal images. The partitions each new image (published
at batch and transaction boundaries only) changed are walked a slice at a
time: this broker's partition assignments are recomputed and their changes
handed to the ``ReplicaManager``. Once a walk ends, that image becomes the
broker's ``image`` (so image and assignments agree), subscribers are called
with (old, new) and ``changed`` is set (and replaced) for tasks that wait on
the image.

The follower writes the broker's own snapshots when ``SnapshotPolicy`` says
so (Kafka: every node snapshots its own committed state). A broker never
proposes: ``call`` and ``proposed`` are broken invariants.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

import trio

from broker.replica.manager import (
    PartitionAssignment,
    PartitionKey,
    ReplicaManager,
    assignment_of,
    assignments_of,
)
from quorum.controller.image import MetadataImage
from quorum.node.inputs import ControllerCall
from quorum.node.metadata_follower import ChangedPartition, MetadataLogFollower, Publication
from quorum.node.snapshot_policy import MIN_RECORDS_BETWEEN_SNAPSHOTS
from quorum.node.state_machine import Work
from quorum.raft import OffsetRange, RaftCore, Ready

__all__ = ["BrokerMetadataMachine", "ImageListener"]

logger = logging.getLogger(__name__)

# called with (old image, new image) in the core's task; must not block
ImageListener = Callable[[MetadataImage, MetadataImage], None]


class BrokerMetadataMachine:
    def __init__(
        self,
        *,
        broker_id: int,
        replica_manager: ReplicaManager | None = None,
        snapshot_max_bytes: int = 20 * 1024 * 1024,
        snapshot_max_interval_ms: int = 3_600_000,
        snapshot_min_records: int | None = MIN_RECORDS_BETWEEN_SNAPSHOTS,
    ) -> None:
        self.broker_id = broker_id
        self._replica_manager = replica_manager
        self.follower = MetadataLogFollower(
            snapshot_max_bytes=snapshot_max_bytes,
            snapshot_max_interval_ms=snapshot_max_interval_ms,
            snapshot_min_records=snapshot_min_records,
            on_changes=self._partitions_changed,
        )
        self._image = self.follower.image  # the last image whose changes were walked
        self._listeners: list[ImageListener] = []
        self.changed = trio.Event()  # set (and replaced) on every published image
        self.closed = False

    # -- views ------------------------------------------------------------------------------

    @property
    def image(self) -> MetadataImage:
        return self._image

    @property
    def image_offset(self) -> int:
        """End offset (exclusive) of the records in the image."""
        return self.image.provenance.offset

    @property
    def assignments(self) -> Mapping[PartitionKey, PartitionAssignment]:
        """The partitions this broker hosts in its published image (computed on demand)."""
        return assignments_of(self._image, self.broker_id)

    def subscribe(self, listener: ImageListener) -> None:
        self._listeners.append(listener)

    async def wait_for(self, predicate: Callable[[MetadataImage], bool]) -> MetadataImage:
        """Until the image satisfies ``predicate``; returns that image.

        Raises trio.ClosedResourceError if the node stops first.
        """
        while not predicate(self.image):
            if self.closed:
                raise trio.ClosedResourceError(f"broker {self.broker_id} stopped")
            await self.changed.wait()
        return self.image

    # -- the hook ---------------------------------------------------------------------------

    def observe(self, ready: Ready, core: RaftCore, now_ms: int) -> None:
        self.follower.observe(ready)

    def call(self, item: ControllerCall, core: RaftCore, now_ms: int) -> None:
        raise AssertionError(
            f"a controller request ({type(item.request).__name__}) reached broker "
            f"{self.broker_id}, which has no controller"
        )

    def broker_connection_lost(self, broker_id: int, now_ms: int) -> None:
        """A broker has no controller listener, so no broker heartbeats to it."""

    def proposed(self, offsets: OffsetRange) -> None:
        raise AssertionError(f"broker {self.broker_id} never proposes records ({offsets})")

    def has_work(self, now_ms: int) -> bool:
        return self.follower.has_work()

    def work(self, core: RaftCore, now_ms: int) -> Work:
        report = self.follower.step(core, now_ms)
        built = self.follower.take_built_snapshot()
        return Work(
            slices=() if report is None else (report,),
            snapshots=() if built is None else (built,),
        )

    def deadline_ms(self) -> int | None:
        return None

    def close(self) -> None:
        self.closed = True
        self.changed.set()  # waiters look again and see the node stop

    # -- publication --------------------------------------------------------------------------

    def _adopt(self, image: MetadataImage) -> None:
        old, self._image = self._image, image
        for listener in self._listeners:
            listener(old, image)
        self.changed.set()
        self.changed = trio.Event()

    def _partitions_changed(
        self, publication: Publication, changes: Sequence[ChangedPartition], last: bool
    ) -> None:
        """This broker's assignments among ``changes``, handed to the replica manager."""
        changed: list[PartitionAssignment] = []
        removed: list[PartitionAssignment] = []
        broker_id = self.broker_id
        # before and after both come from the images (no table of what was handed over:
        # at 100,000 hosted partitions it cost about 280 B each)
        for change in changes:
            before = after = None
            if change.old is not None and change.old_topic is not None:
                before = assignment_of(change.old_topic, change.index, change.old, broker_id)
            if change.new is not None and change.new_topic is not None:
                after = assignment_of(change.new_topic, change.index, change.new, broker_id)
            if after is None:
                if before is not None:
                    removed.append(before)
            elif after != before:
                changed.append(after)
        if (changed or removed) and self._replica_manager is not None:
            self._replica_manager.apply(changed, removed, publication.new)
        if last:
            self._adopt(publication.new)
