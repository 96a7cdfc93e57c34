"""What the metadata simulation checks, from a reference built apart from the production code.

The reference reads the committed batches (``CommittedRecord``, which the
Raft invariants keep) with nothing but the record codec and the image delta:
where every metadata transaction begins and ends (KIP-868), which ones were
aborted, which topics those aborted transactions created, and the image at
every stable boundary (``ReferenceImages``). Against it, every image a node
publishes must

* end at a committed batch boundary outside every transaction (all of a
  transaction's records or none of them are visible);
* hold no topic that only an aborted transaction created;
* (the committed log itself) hold inside a transaction only records that the
  operation which began it wrote (``note_written``: the machines say which
  operation's step staged what, at which offset and epoch): no operation
  writes inside another's open transaction;
* equal the reference image at its offset, hence every other node's image
  there (images up to ``FULL_CHECK_PARTITIONS`` partitions);
* keep every partition's leader and partition epochs from going back, and
  pass the image invariants (``image_checks``).

Every answer a controller gives must be backed by a reference image
(``answers``); a topic answered as created stays in every later reference
image until a delete was asked; no two producer id blocks overlap.
"""

from __future__ import annotations

import collections
import uuid
from typing import TYPE_CHECKING, Any

from quorum.controller.digest import image_digest
from quorum.controller.image import MetadataImage
from quorum.controller.results import ControllerConfig
from quorum.controller.snapshot import read_snapshot
from quorum.log import OffsetAndEpoch
from quorum.wire.error_codes import Errors
from quorum.wire.messages.metadata_records import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    BrokerRegistrationChangeRecord,
    EndTransactionRecord,
    TopicRecord,
)
from quorum.wire.messages.topics import CreateTopicsResponse
from quorum.wire.metadata_serde import decode_metadata_record
from quorum.wire.records import decode_batch

from ..committed import CommittedRecord, InvariantViolation
from ..driver import SimNode
from ..invariants import Invariants
from ..simulator import Simulation
from .answers import Answer, AnswerChecker
from .image_checks import ProducerBlocks, TopicWatches, check_epochs_never_decrease, check_image
from .reference import ReferenceImages

if TYPE_CHECKING:
    from .nodes import MetadataNode

__all__ = ["MetadataChecks", "MetadataInvariants"]

# images up to this many partitions are digested and fully checked at every publication
FULL_CHECK_PARTITIONS = 20_000


class MetadataChecks:
    def __init__(
        self, record: CommittedRecord, config: ControllerConfig, *, reference: bool = True
    ) -> None:
        self._record = record
        # None: the scale scenario, whose images are too large to fold after every batch
        self.reference = ReferenceImages() if reference else None
        self.watches = TopicWatches()
        self.blocks = ProducerBlocks()
        self.answers = AnswerChecker(
            config, self.reference or ReferenceImages(), self.watches, self.blocks
        )
        self._answered: list[Answer] = []
        # what the committed log holds: record kinds, "leader change" (control batches),
        # "fenced" (registration changes that fence a broker), "aborted"
        self.seen: collections.Counter[str] = collections.Counter()
        self._scanned = 0  # batches of the record scanned so far
        self.windows: list[tuple[int, int | None]] = []  # (begin, end or abort; None: open)
        self.aborted: list[tuple[int, int]] = []
        self.aborted_topics: set[uuid.UUID] = set()
        self._open_topics: set[uuid.UUID] = set()
        self._open_names: set[str] = set()
        self.committed_topics: set[str] = set()  # names some committed, unaborted record created
        # (epoch, offset) -> the operation that staged the record there, as (name, token)
        self._writers: dict[tuple[int, int], tuple[str, int]] = {}
        self._window_owner: tuple[str, int] | None = None
        self._digests: dict[int, str] = {}  # offset -> digest of the first image seen there
        self._last: dict[int, MetadataImage] = {}  # node -> its last published image
        self.publications = 0
        self.created: set[str] = set()  # topics some controller answered as created
        self._pending: list[tuple[MetadataNode, MetadataImage, CreateTopicsResponse | None]] = []

    def rebind(self, record: CommittedRecord) -> None:
        """Read this committed record instead (before anything ran)."""
        assert self._scanned == 0
        self._record = record

    # -- the reference ------------------------------------------------------------------------

    def _scan(self) -> None:
        record = self._record
        bases, data = record._bases, record._data  # the record's own batches
        while self._scanned < len(bases):
            batch = decode_batch(data[self._scanned])
            self._scanned += 1
            if batch.header.is_control:
                self.seen["leader change"] += 1
            else:
                epoch = batch.header.partition_leader_epoch
                for item in batch.records:
                    assert item.value is not None
                    offset = batch.offset_of(item)
                    record = decode_metadata_record(item.value)
                    self._check_owner(offset, epoch, record)
                    self._note(offset, record)
            reference = self.reference
            if reference is not None and reference.batch_end(
                batch.header.last_offset + 1, batch.header.partition_leader_epoch
            ) is not None:
                self.watches.check(reference.images)

    def note_written(self, epoch: int, offset: int, count: int, writer: tuple[str, int]) -> None:
        """An operation's step staged ``count`` records from ``offset`` in ``epoch``."""
        for at in range(offset, offset + count):
            self._writers[(epoch, at)] = writer

    def _check_owner(self, offset: int, epoch: int, record: Any) -> None:
        writer = self._writers.pop((epoch, offset), None)
        if isinstance(record, BeginTransactionRecord):
            self._window_owner = writer
            return
        owner = self._window_owner
        if isinstance(record, EndTransactionRecord | AbortTransactionRecord):
            self._window_owner = None
            if isinstance(record, AbortTransactionRecord):
                return  # the next active controller's, by design
        open_window = self.windows and self.windows[-1][1] is None
        if open_window and owner is not None and writer is not None and writer != owner:
            raise InvariantViolation(
                f"{writer[0]} (operation {writer[1]}) wrote offset {offset} inside the "
                f"transaction that {owner[0]} (operation {owner[1]}) began at "
                f"{self.windows[-1][0]}"
            )

    def _note(self, offset: int, record: Any) -> None:
        self.seen[type(record).__name__] += 1
        if isinstance(record, BrokerRegistrationChangeRecord) and record.fenced == 1:
            self.seen["fenced"] += 1
        if self.reference is not None:
            self.reference.note(record)
        open_window = self.windows[-1] if self.windows and self.windows[-1][1] is None else None
        if isinstance(record, BeginTransactionRecord):
            if open_window is not None:
                raise InvariantViolation(f"a transaction begins at {offset} inside another")
            self.windows.append((offset, None))
            self._open_topics, self._open_names = set(), set()
        elif isinstance(record, EndTransactionRecord | AbortTransactionRecord):
            if open_window is None:
                raise InvariantViolation(f"a transaction marker at {offset} ends nothing")
            self.windows[-1] = (open_window[0], offset)
            if isinstance(record, AbortTransactionRecord):
                self.seen["aborted"] += 1
                self.aborted.append((open_window[0], offset))
                self.aborted_topics |= self._open_topics
            else:
                self.committed_topics |= self._open_names
        elif isinstance(record, TopicRecord):
            if open_window is None:
                self.committed_topics.add(record.name)
            else:
                self._open_topics.add(record.topic_id)
                self._open_names.add(record.name)

    # -- publications -------------------------------------------------------------------------

    def published(self, node: MetadataNode, image: MetadataImage) -> None:
        """Check once the event ends (the committed record catches up after each event)."""
        self._pending.append((node, image, None))

    def answered(self, node: MetadataNode, answer: Answer) -> None:
        """A controller's answer as it leaves the node, with the image it answered from."""
        if isinstance(answer.response, CreateTopicsResponse) and node.published is not None:
            self._pending.append((node, node.published, answer.response))
        if self.reference is not None:
            self._answered.append(answer)

    def check_pending(self) -> None:
        self._scan()
        pending, self._pending = self._pending, []
        for node, image, response in pending:
            if response is None:
                self._check_publication(node, image)
            else:
                self._check_answer(node, image, response)
        answered, self._answered = self._answered, []
        for answer in answered:
            self.answers.check(answer)

    def _check_publication(self, node: MetadataNode, image: MetadataImage) -> None:
        self.publications += 1
        offset = image.provenance.offset
        where = f"node {node.node_id}'s image at offset {offset}"
        if offset > self._record.end or self._record.prefix_at(offset) is None:
            raise InvariantViolation(f"{where} does not end at a committed batch boundary")
        for begin, end in self.windows:
            if begin < offset and (end is None or offset <= end):
                raise InvariantViolation(
                    f"{where} shows part of the transaction begun at {begin} "
                    f"(ended at {end})"
                )
        shown = self.aborted_topics & image.topics_by_id.keys()
        if shown:
            raise InvariantViolation(f"{where} holds topics of an aborted transaction: {shown}")
        before = self._last.get(node.node_id)
        self._last[node.node_id] = image
        if _partitions(image) > FULL_CHECK_PARTITIONS:
            return
        check_image(image, where)
        if before is not None and before.provenance.offset <= offset:
            check_epochs_never_decrease(before, image, where)
        digest = image_digest(image)
        if self._digests.setdefault(offset, digest) != digest:
            raise InvariantViolation(f"{where} differs from another node's image at that offset")
        reference = self.reference
        at = None if reference is None else reference.at(offset)
        if reference is not None and at is not None and reference.digests(at) != digest:
            raise InvariantViolation(f"{where} differs from the committed log's image there")

    def digest_at(self, offset: int) -> str | None:
        return self._digests.get(offset)

    def _check_answer(
        self, node: MetadataNode, image: MetadataImage, response: CreateTopicsResponse
    ) -> None:
        for topic in response.topics:
            if topic.error_code != Errors.NONE:
                continue
            # (a later request may have deleted it again before this answer left)
            if topic.name not in self.committed_topics:
                raise InvariantViolation(
                    f"node {node.node_id} answered that {topic.name} was created at image "
                    f"offset {image.provenance.offset}, but no committed record outside an "
                    "aborted transaction created it"
                )
            found = image.topic(topic.name)
            if found is not None and found.topic_id in self.aborted_topics:
                raise InvariantViolation(f"{topic.name} was answered from an aborted transaction")
            self.created.add(topic.name)


class MetadataInvariants(Invariants):
    """The Raft invariants, with snapshots that hold metadata images.

    A node's snapshot at an offset must hold the image the nodes published
    there (compared by digest when that image was small enough to digest),
    and the log must start at a snapshot (SnapshotAtLogStart, as for any log).
    """

    def __init__(self, sim: Simulation, checks: MetadataChecks) -> None:
        super().__init__(sim)
        self.metadata = checks

    def _check_snapshot(self, node: SimNode, snapshot_id: OffsetAndEpoch) -> None:
        image = read_snapshot(node.disk.log.read_snapshot(snapshot_id), snapshot_id)
        known = self.metadata.digest_at(snapshot_id.offset)
        if known is not None and image_digest(image) != known:
            raise InvariantViolation(
                f"node {node.node_id}'s snapshot {snapshot_id} differs from the image "
                "published at its offset"
            )


def _partitions(image: MetadataImage) -> int:
    return sum(len(t.partitions) for t in image.topics_by_id.values())
