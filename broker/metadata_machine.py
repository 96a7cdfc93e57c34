"""``BrokerMetadataMachine``: a broker's metadata image, in the task that owns its Raft core.

The broker's core is an observer: it fetches ``__cluster_metadata`` and
reports committed ranges and downloaded snapshots in each ``Ready``. This
hook folds them into a ``MetadataImage`` with the controllers' own code
(``fold_records``, ``read_snapshot``), so a broker and a controller at the
same offset hold equal images. Each new image is published: this broker's
partition assignments are recomputed and their changes handed to the
``ReplicaManager``, subscribers are called with (old, new), and ``changed``
is set (and replaced) for tasks that wait on the image.

A snapshot the core names in ``Ready.loaded_snapshot`` (the latest local one
at start-up, or one downloaded from the leader) replaces the image before
the committed range of that Ready is replayed. When ``SnapshotPolicy`` says so
(Kafka's bytes-between-snapshots and snapshot-interval settings) the broker
writes its own snapshot through the core (Kafka: every node snapshots its own
committed state), at the end of a committed range: a batch boundary at or below the
high watermark, with that batch's epoch. A broker never proposes: ``call``
and ``proposed`` are broken invariants, ``due`` is always empty.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

import trio

from broker.replica_manager import (
    PartitionAssignment,
    PartitionKey,
    ReplicaManager,
    assignment_changes,
)
from quorum.controller.delta import fold_records
from quorum.controller.image import EMPTY_IMAGE, MetadataImage, Provenance
from quorum.controller.log_records import read_committed_range
from quorum.controller.snapshot import read_snapshot
from quorum.log import OffsetAndEpoch, ReplicatedLog
from quorum.node.inputs import ControllerCall
from quorum.node.snapshot_policy import SnapshotPolicy, write_image_snapshot
from quorum.raft import OffsetRange, RaftCore, Ready
from quorum.raft.snapshots import snapshot_timestamp_ms

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
    ) -> None:
        self.broker_id = broker_id
        self._replica_manager = replica_manager
        self._snapshots = SnapshotPolicy(
            max_bytes=snapshot_max_bytes, max_interval_ms=snapshot_max_interval_ms
        )
        self._last_timestamp_ms = 0  # of the last record replayed (snapshot headers)
        self._image = EMPTY_IMAGE
        self._assignments: dict[PartitionKey, PartitionAssignment] = {}
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
        return self._image.provenance.offset

    @property
    def assignments(self) -> Mapping[PartitionKey, PartitionAssignment]:
        """The partitions this broker hosts in the current image."""
        return self._assignments

    def subscribe(self, listener: ImageListener) -> None:
        self._listeners.append(listener)

    async def wait_for(self, predicate: Callable[[MetadataImage], bool]) -> MetadataImage:
        """Until the image satisfies ``predicate``; returns that image.

        Raises trio.ClosedResourceError if the node stops first.
        """
        while not predicate(self._image):
            if self.closed:
                raise trio.ClosedResourceError(f"broker {self.broker_id} stopped")
            await self.changed.wait()
        return self._image

    # -- the hook ---------------------------------------------------------------------------

    def observe(self, ready: Ready, core: RaftCore, now_ms: int) -> None:
        if ready.loaded_snapshot is not None:
            self.load_snapshot(core.log, ready.loaded_snapshot, now_ms)
        if ready.committed is not None:
            self.replay(core, ready.committed, now_ms)

    def call(self, item: ControllerCall, core: RaftCore, now_ms: int) -> list[bytes]:
        raise AssertionError(
            f"a controller request ({type(item.request).__name__}) reached broker "
            f"{self.broker_id}, which has no controller"
        )

    def proposed(self, offsets: OffsetRange) -> None:
        raise AssertionError(f"broker {self.broker_id} never proposes records ({offsets})")

    def due(self, core: RaftCore, now_ms: int) -> list[bytes]:
        return []

    def deadline_ms(self) -> int | None:
        return None

    def close(self) -> None:
        self.closed = True
        self.changed.set()  # waiters look again and see the node stop

    # -- committed state ----------------------------------------------------------------------

    def load_snapshot(self, log: ReplicatedLog, snapshot_id: OffsetAndEpoch, now_ms: int) -> None:
        """Replace the image with the snapshot's (it holds everything before its offset)."""
        image = read_snapshot(log.read_snapshot(snapshot_id), snapshot_id)
        self._last_timestamp_ms = snapshot_timestamp_ms(log, snapshot_id) or 0
        self._snapshots.reset(now_ms)
        logger.info("loaded metadata snapshot %d-%d", snapshot_id.offset, snapshot_id.epoch)
        self._publish(image)

    def replay(self, core: RaftCore, committed: OffsetRange, now_ms: int) -> None:
        """Fold the committed records ``committed`` holds beyond the image into it."""
        log = core.log
        start = max(committed.start, self.image_offset)
        if start >= committed.end:
            return
        # the core hands out nothing below a snapshot it told us to load
        assert start >= log.log_start_offset, (
            f"committed records from offset {start} are gone (log start "
            f"{log.log_start_offset}) and no loaded snapshot covers them"
        )
        read = read_committed_range(log, start, committed.end)
        epoch = self._image.provenance.epoch if read.last_epoch is None else read.last_epoch
        records = [record for _, record in read.records]
        self._publish(fold_records(self._image, records, Provenance(committed.end, epoch)))
        if read.last_timestamp_ms is not None:
            self._last_timestamp_ms = read.last_timestamp_ms
        reason = self._snapshots.replayed(read.size_bytes, now_ms)
        if reason is not None:
            write_image_snapshot(core, self._image, reason, timestamp_ms=self._last_timestamp_ms)
            self._snapshots.reset(now_ms)

    # -- publication --------------------------------------------------------------------------

    def _publish(self, image: MetadataImage) -> None:
        old, self._image = self._image, image
        changes = assignment_changes(old, image, self.broker_id)
        if changes:
            for gone in changes.removed:
                del self._assignments[gone.key]
            self._assignments.update((a.key, a) for a in changes.changed)
            if self._replica_manager is not None:
                self._replica_manager.apply(changes.changed, changes.removed)
        for listener in self._listeners:
            listener(old, image)
        self.changed.set()
        self.changed = trio.Event()

