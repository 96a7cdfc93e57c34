"""``MetadataLogFollower``: committed ``__cluster_metadata`` records into images, in slices.

One follower serves every kind of node: the controllers' ``ControllerMachine``
(the committed image of the active controller and of the standbys) and the
brokers' ``BrokerMetadataMachine``. The task that owns the Raft core hands it
every ``Ready`` (``observe``: cheap bookkeeping only) and then asks it to work
one slice at a time (``step``): a slice decodes and replays whole batches of
at most ``MAX_UNITS_PER_SLICE`` records, or a part of a snapshot being loaded
or written, so the thread serves timers and fetches between slices however
much metadata there is.

Images are published only at batch boundaries outside a metadata
transaction (KIP-868): records between a ``BeginTransactionRecord`` and its
``EndTransactionRecord`` appear in one image or not at all, and an
``AbortTransactionRecord`` (written by the next active controller when the
one that began the transaction lost its leadership) drops them. The
published image's offset is therefore Kafka's last stable offset: what a
controller may answer for, and where a snapshot may be taken.

A published image comes with what it changed (``Publication``); when a
caller walks the changed partitions (the broker's replica assignments, the
controller's offline partitions), ``changed_partitions`` hands them out a
slice at a time too. Snapshots: a snapshot the core names in
``Ready.loaded_snapshot`` replaces the image once read; ``SnapshotPolicy``
says when this node writes its own, which is then built in slices from the
published image (immutable, so later publications do not disturb it) and
handed to the core.
"""

from __future__ import annotations

import logging
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Sequence

import attrs

from quorum.controller.delta import MetadataDelta, MetadataReplayError
from quorum.controller.image import (
    EMPTY_IMAGE,
    MetadataImage,
    PartitionRegistration,
    Provenance,
    TopicImage,
)
from quorum.controller.log_records import LogBatch, LogBatchCursor, MetadataLogError
from quorum.controller.partition_map import EMPTY_PARTITIONS, PartitionMap
from quorum.controller.slicing import MAX_UNITS_PER_SLICE, SliceReport
from quorum.controller.snapshot import SnapshotBuilder, SnapshotReader
from quorum.log import OffsetAndEpoch
from quorum.node.snapshot_policy import (
    MIN_RECORDS_BETWEEN_SNAPSHOTS,
    SnapshotPolicy,
    SnapshotReason,
    snapshot_reason_text,
)
from quorum.raft import RaftCore, Ready
from quorum.raft.snapshots import snapshot_timestamp_ms
from quorum.wire.messages.metadata_records import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
)

__all__ = [
    "ChangedPartition",
    "ChangesListener",
    "MetadataLogFollower",
    "Publication",
    "SnapshotFile",
]

logger = logging.getLogger(__name__)


@attrs.frozen(eq=False)
class Publication:
    """A new image and what it changed since the previous one."""

    old: MetadataImage
    new: MetadataImage
    # topics whose registration or partitions may differ (a superset is allowed)
    changed_topics: frozenset[uuid.UUID]
    records: int  # metadata records folded in since the previous image
    from_snapshot: bool = False


@attrs.frozen
class ChangedPartition:
    """One partition that a publication may have changed (None: absent on that side)."""

    topic_id: uuid.UUID
    index: int
    old_topic: TopicImage | None
    new_topic: TopicImage | None
    old: PartitionRegistration | None
    new: PartitionRegistration | None


# called in the core's task: a publication, then (if walked) its changed partitions in chunks
PublishListener = Callable[["Publication"], None]
# (publication, changed partitions, whether they are the publication's last)
ChangesListener = Callable[["Publication", Sequence["ChangedPartition"], bool], None]


@attrs.define
class _Walk:
    publication: Publication
    changes: Iterator[ChangedPartition]


@attrs.define
class _SnapshotWrite:
    builder: SnapshotBuilder
    reason: SnapshotReason


@attrs.frozen(eq=False)
class SnapshotFile:
    """A snapshot built and ready to store (the owner writes it: ``RaftCore.accepts_snapshot``
    then the log's ``create_snapshot``, which may run in a worker thread)."""

    snapshot_id: OffsetAndEpoch
    parts: list[bytes]
    reason: SnapshotReason

    @property
    def why(self) -> str:
        return snapshot_reason_text(self.reason)


class MetadataLogFollower:
    def __init__(
        self,
        *,
        snapshot_max_bytes: int = 20 * 1024 * 1024,
        snapshot_max_interval_ms: int = 3_600_000,
        snapshot_min_records: int | None = MIN_RECORDS_BETWEEN_SNAPSHOTS,
        slice_units: int = MAX_UNITS_PER_SLICE,
        on_publish: PublishListener | None = None,
        on_changes: ChangesListener | None = None,
    ) -> None:
        self._slice_units = slice_units
        self._on_publish = on_publish
        self._on_changes = on_changes
        self.image = EMPTY_IMAGE  # the last published image
        # the image the open delta builds on: the published one, or the state just
        # before an open transaction's BeginTransactionRecord (which may sit mid-batch)
        self._base = EMPTY_IMAGE
        self._delta = MetadataDelta(EMPTY_IMAGE)
        self._touched: set[uuid.UUID] = set()  # topics changed since the last publication
        self._records_since = 0
        self._cursor: LogBatchCursor | None = None
        self._committed_end = 0  # what the core says is committed
        self.transaction_start: int | None = None  # offset of an open transaction's begin
        self._last_epoch = 0
        self._last_timestamp_ms = 0  # of the last batch replayed (snapshot headers)
        self._snapshot_to_load: OffsetAndEpoch | None = None
        self._loading: SnapshotReader | None = None
        self._policy = SnapshotPolicy(
            max_bytes=snapshot_max_bytes, max_interval_ms=snapshot_max_interval_ms,
            min_records=snapshot_min_records,
        )
        self._writing: _SnapshotWrite | None = None
        self._built: SnapshotFile | None = None  # for the owner to store
        self._walks: deque[_Walk] = deque()
        self._walk_turn = False

    # -- views ------------------------------------------------------------------------------

    @property
    def replayed_offset(self) -> int:
        """Everything before this offset is replayed (published or in the open delta)."""
        return self._position

    @property
    def _position(self) -> int:
        if self._cursor is not None:
            return self._cursor.position
        return self.image.provenance.offset

    @property
    def walking(self) -> bool:
        """Whether a published image's changes are still being walked."""
        return bool(self._walks)

    @property
    def committed_end(self) -> int:
        return self._committed_end

    # -- inputs -----------------------------------------------------------------------------

    def observe(self, ready: Ready) -> None:
        """Note what a Ready committed or loaded; the work happens in ``step``."""
        if ready.loaded_snapshot is not None:
            self._snapshot_to_load = ready.loaded_snapshot
            self._loading = None
            self._cursor = None
            self._walks.clear()
        if ready.committed is not None:
            self._committed_end = max(self._committed_end, ready.committed.end)

    def has_work(self) -> bool:
        return (
            self._snapshot_to_load is not None
            or self._loading is not None
            or bool(self._walks)
            or self._position < self._committed_end
            or self._writing is not None
        )

    def step(self, core: RaftCore, now_ms: int) -> SliceReport | None:
        """One bounded slice of whatever is pending (None: nothing was)."""
        if self._snapshot_to_load is not None or self._loading is not None:
            return SliceReport("snapshot-load", self._load_step(core, now_ms))
        replay_due = self._position < self._committed_end
        # walks and replay take turns: the walk of a 100,000-partition publication must not
        # hold back the publication of the small records committed after it (an answer
        # waits for those), and publications are still walked in their order
        self._walk_turn = not self._walk_turn or not replay_due
        if self._walks and self._walk_turn:
            return SliceReport("image-diff", self._walk_step())
        if replay_due:
            return SliceReport("replay", self._replay_step(core, now_ms))
        if self._writing is not None:
            return SliceReport("snapshot-write", self._write_step(core, now_ms))
        return None

    def _walk_step(self) -> int:
        """Hand the next changed partitions of the oldest unwalked publication to the listener
        (publications are walked in their order; replay goes on between walk slices)."""
        walk = self._walks[0]
        chunk: list[ChangedPartition] = []
        last = False
        for change in walk.changes:
            chunk.append(change)
            if len(chunk) >= self._slice_units:
                break
        else:
            self._walks.popleft()
            last = True
        if self._on_changes is not None:
            self._on_changes(walk.publication, chunk, last)
        return len(chunk)

    # -- snapshots loaded -----------------------------------------------------------------------

    def _load_step(self, core: RaftCore, now_ms: int) -> int:
        if self._snapshot_to_load is not None:
            snapshot_id, self._snapshot_to_load = self._snapshot_to_load, None
            self._loading = SnapshotReader(core.log.read_snapshot(snapshot_id), snapshot_id)
        reader = self._loading
        assert reader is not None
        units = reader.step(self._slice_units)
        if reader.image is None:
            return units
        self._loading = None
        snapshot_id = reader.snapshot_id
        self.transaction_start = None  # a snapshot holds no part of a transaction
        self._last_epoch = snapshot_id.epoch
        self._last_timestamp_ms = snapshot_timestamp_ms(core.log, snapshot_id) or 0
        self._policy.reset(now_ms)
        old = self.image
        self._set_image(reader.image)
        self._cursor = LogBatchCursor(core.log, snapshot_id.offset)
        changed = frozenset(old.topics_by_id.keys() | reader.image.topics_by_id.keys())
        self._publish(Publication(old, reader.image, changed, 0, from_snapshot=True))
        logger.info("loaded metadata snapshot %d-%d", snapshot_id.offset, snapshot_id.epoch)
        return units

    # -- committed records ----------------------------------------------------------------------

    def _replay_step(self, core: RaftCore, now_ms: int) -> int:
        cursor = self._cursor
        if cursor is None:
            cursor = self._cursor = LogBatchCursor(core.log, self.image.provenance.offset)
        units = 0
        size_bytes = 0
        records = 0
        end = self._committed_end
        while (count := cursor.next_record_count(end)) is not None:
            # whole batches only; a batch larger than a slice (none this code writes) is one
            if units and units + count > self._slice_units:
                break
            batch = cursor.next_batch(end)
            assert batch is not None
            self._replay_batch(batch)
            units += max(1, count)
            records += count
            size_bytes += batch.size_bytes
        if self.transaction_start is None and cursor.position > self.image.provenance.offset:
            self._publish_delta(cursor.position)
        elif self.transaction_start is not None and self._delta.record_count:
            self._stage(cursor.position)
        # the bytes count inside a transaction too; the snapshot waits for its end, so it
        # holds the transaction (a snapshot of the image before it would soon be stale)
        reason = self._policy.replayed(
            size_bytes, now_ms, records=records, image_records=self._image_records
        )
        if reason is not None and self.transaction_start is None and self._writing is None:
            self._start_snapshot(core, reason, now_ms)
        return units

    def _replay_batch(self, batch: LogBatch) -> None:
        for offset, record in batch.records:
            if isinstance(record, BeginTransactionRecord):
                self._begin(offset, batch)
            elif isinstance(record, EndTransactionRecord):
                self._end(offset)
            elif isinstance(record, AbortTransactionRecord):
                self._abort(offset, record)
            else:
                try:
                    self._delta.replay(record)
                except MetadataReplayError as exc:
                    raise MetadataLogError(
                        f"the metadata record at offset {offset} does not apply: {exc}"
                    ) from exc
                self._records_since += 1
        self._last_epoch = batch.epoch
        if batch.max_timestamp >= 0:
            self._last_timestamp_ms = batch.max_timestamp

    def _begin(self, offset: int, batch: LogBatch) -> None:
        if self.transaction_start is not None:
            raise MetadataLogError(
                f"a BeginTransactionRecord at offset {offset} while the transaction begun "
                f"at {self.transaction_start} is still open"
            )
        if offset == batch.base_offset and offset > self.image.provenance.offset:
            # a batch boundary: what came before is published now, not after the transaction
            self._publish_delta(offset)
        self.transaction_start = offset
        # the state before the transaction (maybe mid-batch): what an abort returns to
        self._touched |= self._delta.changed_topic_ids
        self._base = self._delta.apply(Provenance(offset, batch.epoch))
        self._delta = MetadataDelta(self._base)

    def _end(self, offset: int) -> None:
        if self.transaction_start is None:
            raise MetadataLogError(f"an EndTransactionRecord at offset {offset} ends no transaction")
        self.transaction_start = None

    def _abort(self, offset: int, record: AbortTransactionRecord) -> None:
        if self.transaction_start is None:
            raise MetadataLogError(
                f"an AbortTransactionRecord at offset {offset} aborts no transaction"
            )
        logger.info(
            "metadata transaction begun at offset %d aborted at %d (%s)",
            self.transaction_start, offset, record.reason or "no reason given",
        )
        self.transaction_start = None
        self._delta = MetadataDelta(self._base)

    def _stage(self, end_offset: int) -> None:
        """Fold what a transaction brought in this slice into an image that is not
        published: the transaction's end then publishes at once what its slices built
        (each slice pays for its own records, none for the whole transaction), and an
        abort returns to ``_base``."""
        self._touched |= self._delta.changed_topic_ids
        staged = self._delta.apply(Provenance(end_offset, self._last_epoch))
        self._delta = MetadataDelta(staged)

    def _publish_delta(self, end_offset: int) -> None:
        new = self._delta.apply(Provenance(end_offset, self._last_epoch))
        changed = frozenset(self._touched | self._delta.changed_topic_ids)
        old, records = self.image, self._records_since
        self._set_image(new)
        self._publish(Publication(old, new, changed, records))

    def _set_image(self, image: MetadataImage) -> None:
        self.image = self._base = image
        self._delta = MetadataDelta(image)
        self._touched = set()
        self._records_since = 0

    def _publish(self, publication: Publication) -> None:
        if self._on_publish is not None:
            self._on_publish(publication)
        if self._on_changes is not None:
            self._walks.append(_Walk(publication, _walk(publication)))

    # -- snapshots written ----------------------------------------------------------------------

    def _image_records(self) -> int:
        """About how many records a snapshot of the published image holds."""
        image = self.image
        return (sum(len(topic.partitions) + 1 for topic in image.topics_by_id.values())
                + len(image.brokers) + len(image.configs))

    def _start_snapshot(
        self, core: RaftCore, reason: SnapshotReason, now_ms: int,
        after: OffsetAndEpoch | None = None,
    ) -> None:
        """Build a snapshot of the published image, unless one at or past it exists (or
        was just built, ``after``: it may not be stored yet)."""
        image = self.image
        latest = core.log.latest_snapshot_id
        newest = max(filter(None, (latest, after)), default=None, key=lambda i: i.offset)
        if newest is not None and newest.offset >= image.provenance.offset:
            return
        builder = SnapshotBuilder(image, last_contained_timestamp_ms=self._last_timestamp_ms)
        self._writing = _SnapshotWrite(builder, reason)
        self._policy.reset(now_ms)  # the snapshot holds everything replayed so far

    def _write_step(self, core: RaftCore, now_ms: int) -> int:
        writing = self._writing
        assert writing is not None
        units = writing.builder.step(self._slice_units)
        if not writing.builder.done:
            return units
        self._writing = None
        builder = writing.builder
        latest = core.log.latest_snapshot_id
        if latest is None or latest.offset < builder.snapshot_id.offset:
            self._built = SnapshotFile(builder.snapshot_id, builder.parts(), writing.reason)
        # what was replayed while this one was built may call for the next already
        reason = self._policy.replayed(0, now_ms, image_records=self._image_records)
        if reason is not None and self.transaction_start is None:
            self._start_snapshot(core, reason, now_ms, after=builder.snapshot_id)
        return units

    def take_built_snapshot(self) -> SnapshotFile | None:
        """The snapshot a slice finished building, once (the owner stores it)."""
        built, self._built = self._built, None
        return built


def _walk(publication: Publication) -> Iterator[ChangedPartition]:
    """Every partition of the changed topics that is not the same object on both sides.

    Lazy, in the topics' own order; chunks of a topic's partitions that both
    images share are skipped unread (``PartitionMap.changed_against``).
    """
    old_topics, new_topics = publication.old.topics_by_id, publication.new.topics_by_id
    for topic_id in sorted(publication.changed_topics):
        old_topic, new_topic = old_topics.get(topic_id), new_topics.get(topic_id)
        if old_topic is new_topic:
            continue  # shared by both images: nothing in it changed
        old_parts = EMPTY_PARTITIONS if old_topic is None else old_topic.partitions
        new_parts = EMPTY_PARTITIONS if new_topic is None else new_topic.partitions
        for index, old, new in PartitionMap.of(new_parts).changed_against(old_parts):
            yield ChangedPartition(topic_id, index, old_topic, new_topic, old, new)
