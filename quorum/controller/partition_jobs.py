"""Controller work over many partitions in independent parts, so that others run between.

A fencing, the removals of a controlled shutdown or of a new incarnation,
the elections after a broker is unfenced, the preferred-leader rebalance and
the unclean elections each change partitions one at a time, and every change
stands on its own: Kafka writes such controller-generated results in batches
of at most 10,000 records without a transaction. Here they run as *jobs*:
operations split into parts of at most ``PART_UNITS`` partitions examined
(``examine_in_parts``). Each part is computed from the working image at its
own start with a fresh examiner, writes what it found (one transaction if it
spans batches, as any operation), and ends with a ``BOUNDARY``, where the
controller may run a broker's registration or heartbeat, or a client's
request, before the next part. So a registration that arrives while 100,000
partitions are re-elected waits for one part, not for all of them.

What a part computes from a newer image than the last one saw is what makes
the split sound: a partition that another operation changed between two
parts is examined as it is now. A broker's departure (a fencing, a
controlled shutdown, a new incarnation replacing one that still holds
partitions) moves the partitions first and writes the broker's new state
last, as Kafka orders them, so no image ever shows a fenced or shutting-down
broker leading; while the parts run the broker is still active, so it may be
placed or elected meanwhile: with ``follow_changes`` every part first
examines the partitions changed since the previous part ended
(``changed_keys``: what the two images do not share, found chunk by chunk),
and the state record follows the last part at once, with no boundary
between (``departure_job``).
"""

from __future__ import annotations

import functools
import itertools
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from typing import Final

from quorum.controller.elections import preferred_leader_examiner, unclean_leader_examiner
from quorum.controller.image import MetadataImage
from quorum.controller.operations import (
    BOUNDARY,
    Slice,
    Steps,
    emit_in_slices,
    scan_in_slices,
)
from quorum.controller.partition_change import (
    PartitionEntry,
    PartitionExaminer,
    broker_removal_examiner,
    broker_unfence_examiner,
)
from quorum.controller.partition_index import PartitionKey
from quorum.controller.partition_map import EMPTY_PARTITIONS, PartitionMap, items_in_order
from quorum.controller.results import ControllerContext
from quorum.controller.slicing import MAX_UNITS_PER_SLICE
from quorum.wire.messages.metadata_records import (
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
)
from quorum.wire.metadata_serde import MetadataRecord

__all__ = [
    "PART_UNITS",
    "all_keys",
    "changed_keys",
    "departure_job",
    "election_job",
    "examine_in_parts",
    "examine_job",
    "fence_job",
    "preferred_leader_job",
    "removal_job",
    "unclean_leader_job",
]

# partitions examined per part: four slices of examination and at most four of records,
# so whatever waits for the next boundary waits at most about eight slices
PART_UNITS: Final = 4 * MAX_UNITS_PER_SLICE

ExaminerFor = Callable[[MetadataImage], PartitionExaminer]
# a key to examine, or None: a unit of work that found nothing to examine (a topic the
# two images share, skipped whole)
KeyOrSkip = PartitionKey | None


def all_keys(image: MetadataImage) -> Iterator[PartitionKey]:
    """Every partition of ``image``, lazily (topics in the image's order, partitions by
    index): nothing sorted up front, so a scan of 100,000 topics starts at once."""
    for topic_id, topic in image.topics_by_id.items():
        for index, _ in items_in_order(topic.partitions):
            yield topic_id, index


def changed_keys(old: MetadataImage, new: MetadataImage) -> Iterator[KeyOrSkip]:
    """The partitions of ``new`` that are not the same object in ``old`` (created or
    changed since); a topic both share is one skip, a shared chunk costs nothing."""
    old_topics = old.topics_by_id
    for topic_id, topic in new.topics_by_id.items():
        before = old_topics.get(topic_id)
        if before is topic:
            yield None
            continue
        old_parts = EMPTY_PARTITIONS if before is None else before.partitions
        for index, _, now in PartitionMap.of(topic.partitions).changed_against(old_parts):
            if now is not None:
                yield topic_id, index


class _KeyQueue:
    """Keys to examine: the job's own, and in front of them what others changed between
    parts; with one key of look-ahead (are the job's own used up?)."""

    def __init__(self, keys: Iterable[KeyOrSkip]) -> None:
        self._own = iter(keys)
        self._changed: deque[Iterator[KeyOrSkip]] = deque()
        self._ahead: list[KeyOrSkip] = []

    def add_changed(self, keys: Iterable[KeyOrSkip]) -> None:
        self._changed.append(iter(keys))

    def take(self, count: int | None) -> list[KeyOrSkip]:
        """Up to ``count`` keys (None: every one left), changed ones first."""
        taken: list[KeyOrSkip] = []
        while self._changed and (count is None or len(taken) < count):
            taken += itertools.islice(self._changed[0], None if count is None else count - len(taken))
            if count is None or len(taken) < count:
                self._changed.popleft()
        room = None if count is None else count - len(taken)
        if room is None or room > 0:
            ahead, self._ahead = self._ahead[:room], self._ahead[len(self._ahead[:room]):]
            taken += ahead
            if room is None or len(ahead) < room:
                taken += itertools.islice(self._own, None if room is None else room - len(ahead))
        return taken

    @property
    def own_used_up(self) -> bool:
        if not self._ahead:
            self._ahead = list(itertools.islice(self._own, 1))
        return not self._ahead


def _entries(image: MetadataImage, keys: Sequence[KeyOrSkip]) -> Iterator[PartitionEntry | None]:
    topics = image.topics_by_id
    for key in keys:
        if key is None:
            yield None
            continue
        topic = topics.get(key[0])
        partition = None if topic is None else topic.partitions.get(key[1])
        yield None if topic is None or partition is None else (topic, key[1], partition)


def _examine_entry(
    examine: PartitionExaminer, entry: PartitionEntry | None
) -> PartitionChangeRecord | None:
    return None if entry is None else examine(entry)


def examine_in_parts(
    ctx: ControllerContext,
    examiner_for: ExaminerFor,
    keys: Iterable[KeyOrSkip],
    *,
    follow_changes: bool = False,
) -> Steps[int]:
    """Examine ``keys`` ``PART_UNITS`` per part, each part against the working image at
    its start, with a ``BOUNDARY`` between parts but none after the last: what the caller
    yields next follows the last part's records with nothing between. Returns how many
    partition records were written."""
    working = ctx.working_image
    assert working is not None, "a job in parts reads the working image at each part"
    queue = _KeyQueue(keys)
    written = 0
    last_seen: MetadataImage | None = None
    while True:
        image = working()
        if follow_changes and last_seen is not None and last_seen is not image:
            queue.add_changed(changed_keys(last_seen, image))
        examine = examiner_for(image)
        # once its own keys are used up, a job takes every change left in one last part:
        # others cannot keep it chasing theirs (a fenced broker's zombie followers asking
        # back into ISRs), and that part is what changed while one part ran
        final = queue.own_used_up
        part = queue.take(None if final else PART_UNITS)
        found = yield from scan_in_slices(_entries(image, part), functools.partial(
            _examine_entry, examine
        ))
        final = final or (not follow_changes and queue.own_used_up)
        yield from emit_in_slices(found)
        written += len(found)
        if final:
            return written
        last_seen = working()  # this part's records are in it, nobody else's yet
        yield BOUNDARY


def removal_job(ctx: ControllerContext, broker_id: int) -> Steps[None]:
    """Take an inactive broker (fenced, or shutting down) out of every leadership and every
    ISR it shares, in parts: what a departure left behind, found later (a controller that
    took over). Inactive, it can be given no partition meanwhile: nothing to follow."""
    assert ctx.working_image is not None
    unclean = ctx.config.unclean_leader_election_enable
    yield from examine_in_parts(
        ctx, lambda image: broker_removal_examiner(image, broker_id, unclean_default=unclean),
        all_keys(ctx.working_image()),
    )
    return None


def departure_job(
    ctx: ControllerContext,
    broker_id: int,
    state_record: Callable[[MetadataImage], MetadataRecord | None],
) -> Generator[Slice, None, int | None]:
    """A broker leaves its leaderships and shared ISRs in parts (following what others
    change meanwhile, since it is still active), then ``state_record(image)`` (its fence
    or shutdown mark, None: no longer due) right after the last part. Returns the
    offset the state record got (None: none was written)."""
    assert ctx.working_image is not None
    unclean = ctx.config.unclean_leader_election_enable
    if ctx.may_hold is None or ctx.may_hold(broker_id) is not False:
        yield from examine_in_parts(
            ctx, lambda image: broker_removal_examiner(image, broker_id, unclean_default=unclean),
            all_keys(ctx.working_image()), follow_changes=True,
        )
    # (a broker known to hold nothing needs no parts: the record alone, at once)
    record = state_record(ctx.working_image())
    if record is None:
        return None
    offset = ctx.append_offset()
    yield Slice((record,))
    return offset


def fence_job(ctx: ControllerContext, broker_id: int, epoch: int) -> Steps[None]:
    """Fence an active broker (its session expired, or it asked to be): its removals in
    parts, then its fence record (Kafka's order), unless it registered again or was
    fenced meanwhile."""

    def fence(image: MetadataImage) -> MetadataRecord | None:
        broker = image.broker(broker_id)
        if broker is None or broker.epoch != epoch or broker.fenced:
            return None
        return BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=epoch, fenced=1)

    yield from departure_job(ctx, broker_id, fence)
    return None


def election_job(ctx: ControllerContext, broker_id: int) -> Steps[None]:
    """After ``broker_id`` was unfenced: a leader for every leaderless partition where one
    may be elected now (Kafka's handleBrokerUnfenced), in parts. Candidates: the committed
    image's leaderless partitions (the index), or every partition without one."""
    assert ctx.working_image is not None
    unclean = ctx.config.unclean_leader_election_enable
    index = ctx.partitions
    keys: Iterable[PartitionKey] = (
        all_keys(ctx.working_image()) if index is None else list(index.leaderless)
    )
    yield from examine_in_parts(
        ctx, lambda image: broker_unfence_examiner(image, broker_id, unclean_default=unclean),
        keys,
    )
    return None


def examine_job(
    ctx: ControllerContext, examiner_for: ExaminerFor, candidates: Iterable[PartitionKey]
) -> Steps[None]:
    """A periodic task over candidates of the partition index, in parts."""
    yield from examine_in_parts(ctx, examiner_for, list(candidates))
    return None


def preferred_leader_job(ctx: ControllerContext, candidates: Iterable[PartitionKey]) -> Steps[None]:
    return examine_job(ctx, preferred_leader_examiner, candidates)


def unclean_leader_job(ctx: ControllerContext, candidates: Iterable[PartitionKey]) -> Steps[None]:
    unclean = ctx.config.unclean_leader_election_enable
    return examine_job(
        ctx, lambda image: unclean_leader_examiner(image, unclean_default=unclean), candidates
    )
