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
the committed range of that Ready is replayed. After every
``snapshot_max_bytes`` of replayed log (Kafka's
``metadata.log.max.record.bytes.between.snapshots``) the broker writes its own
snapshot through the core (Kafka: every node snapshots its own committed
state), at the end of a committed range: a batch boundary at or below the
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
from quorum.controller.snapshot import read_snapshot, write_snapshot
from quorum.log import OffsetAndEpoch, ReplicatedLog
from quorum.node.inputs import ControllerCall
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
    ) -> None:
        assert snapshot_max_bytes > 0
        self.broker_id = broker_id
        self._replica_manager = replica_manager
        self._snapshot_max_bytes = snapshot_max_bytes
        self._since_snapshot = 0  # bytes of log replayed since the last snapshot
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
            self.load_snapshot(core.log, ready.loaded_snapshot)
        if ready.committed is not None:
            self.replay(core, ready.committed)

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

    def load_snapshot(self, log: ReplicatedLog, snapshot_id: OffsetAndEpoch) -> None:
        """Replace the image with the snapshot's (it holds everything before its offset)."""
        image = read_snapshot(log.read_snapshot(snapshot_id), snapshot_id)
        self._since_snapshot = 0
        logger.info("loaded metadata snapshot %d-%d", snapshot_id.offset, snapshot_id.epoch)
        self._publish(image)

    def replay(self, core: RaftCore, committed: OffsetRange) -> None:
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
        self._since_snapshot += read.size_bytes
        if self._since_snapshot >= self._snapshot_max_bytes:
            self._snapshot(core)

    def _snapshot(self, core: RaftCore) -> None:
        image = self._image
        snapshot_id = OffsetAndEpoch(image.provenance.offset, image.provenance.epoch)
        self._since_snapshot = 0
        latest = core.log.latest_snapshot_id
        if latest is not None and latest.offset >= snapshot_id.offset:
            return
        data = write_snapshot(image, last_contained_timestamp_ms=0)
        if core.create_snapshot(snapshot_id, data):
            logger.info(
                "wrote metadata snapshot %d-%d (%d bytes)",
                snapshot_id.offset, snapshot_id.epoch, len(data),
            )

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

