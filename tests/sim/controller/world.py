"""The controller world: a committed log, three controller replicas, one active.

Mechanics only (``driver`` picks the events). Raft is reduced to what the
controller sees: the active controller's proposals become the uncommitted
tail; commit advances at batch boundaries; a failover keeps or truncates the
tail, deactivates the old active and appends the new leader's control batch;
the new leader activates (``claim``) only once that batch is committed and
it has replayed everything committed, at the next offset. Every replica
replays committed batches at its own pace, decoding the bytes each time, or
loads a snapshot of another replica's committed image. ``check`` runs the
invariants after every event.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from typing import Any

import attrs

from quorum.controller.controller import QuorumController
from quorum.controller.image import MetadataImage
from quorum.controller.results import ControllerConfig
from quorum.controller.snapshot import read_snapshot, write_snapshot
from quorum.log.protocol import OffsetAndEpoch
from quorum.wire.messages.metadata_records import RegisterBrokerRecord
from quorum.wire.metadata_serde import MetadataRecord

from .answers import AnswerChecker, Proposal
from .checks import (
    DigestCache,
    InvariantViolation,
    ProducerBlocks,
    TopicWatches,
    check_epochs_never_decrease,
    check_image,
    require,
)
from .log import CommittedImages, SimLog, fresh_fold

__all__ = ["ControllerWorld", "ReplayFilter"]

# a fault injected into one replica's replay: (replica index, records) -> records replayed
ReplayFilter = Callable[[int, list[MetadataRecord]], list[MetadataRecord]]


class ControllerWorld:
    def __init__(self, config: ControllerConfig, rng: random.Random, *, replicas: int = 3) -> None:
        self.config = config
        self.rng = rng
        self.now_ms = 1_000_000
        self.log = SimLog()
        self.images = CommittedImages()
        self.digests = DigestCache()
        self.watches = TopicWatches()
        self.answers = AnswerChecker(
            config, self.images, self.digests, self.watches, ProducerBlocks()
        )
        self.replicas = [
            QuorumController(attrs.evolve(config, node_id=i), rng=random.Random(rng.getrandbits(64)))
            for i in range(replicas)
        ]
        self.leader: int | None = None  # the node that leads the quorum
        self.epoch = 0
        self.epoch_start = 0  # offset of the leader's control batch
        self.zombie: int | None = None  # an old active that has not noticed the failover yet
        self.pending: deque[Proposal] = deque()
        self.replay_filter: ReplayFilter | None = None
        self.trace: list[str] = []

    def note(self, text: str) -> None:
        self.trace.append(f"t={self.now_ms} {text}")

    @property
    def active(self) -> QuorumController | None:
        if self.leader is None:
            return None
        controller = self.replicas[self.leader]
        return controller if controller.epoch == self.epoch else None

    # -- leadership ------------------------------------------------------------------------

    def failover(self, new_leader: int, *, keep_tail: bool, zombie: bool) -> None:
        """A new Raft epoch led by ``new_leader`` (maybe the same node)."""
        if not keep_tail:
            cut = self.log.truncate_tail()
            self.note(f"truncated {len(cut)} uncommitted batches")
        for proposal in self.pending:  # renounce: every waiting answer fails
            if proposal.reply is not None:
                proposal.reply(None)
        self.pending.clear()
        self._retire_zombie()
        old = self.leader
        if old is not None and self.replicas[old].is_active:
            if zombie and old != new_leader:
                self.zombie = old
            else:
                self.replicas[old].deactivate()
        self.epoch += 1
        self.leader = new_leader
        self.epoch_start = self.log.append_control(self.epoch).base_offset
        self.note(f"failover to node {new_leader} epoch {self.epoch} at {self.epoch_start} "
                  f"({'kept' if keep_tail else 'cut'} tail, old {old}, zombie {self.zombie})")

    def _retire_zombie(self) -> None:
        if self.zombie is not None:
            self.replicas[self.zombie].deactivate()
            self.zombie = None

    def can_claim(self) -> bool:
        return (self.leader is not None and self.active is None
                and self.log.committed_end > self.epoch_start)

    def claim(self, *, via_snapshot: bool) -> None:
        """Kafka's claim: replay everything committed, then activate at the next offset."""
        assert self.leader is not None and self.can_claim()
        node = self.leader
        if node == self.zombie:
            self._retire_zombie()
        controller = self.replicas[node]
        assert not controller.is_active, "a failover deactivates the old active first"
        if via_snapshot:
            self.load_snapshot(node)
        self.replay(node, self.log.committed_end)
        require(controller.committed.provenance.offset == self.log.committed_end,
                f"node {node} claims before replaying everything committed")
        assert self.log.end_offset == self.log.committed_end
        start = self.log.end_offset
        result = controller.activate(self.now_ms, next_offset=start, epoch=self.epoch)
        self._propose(None, 0, start, result.records, None, None)
        self.note(f"node {node} active in epoch {self.epoch} at {start}")

    # -- replicas --------------------------------------------------------------------------

    def replay(self, node: int, end: int) -> None:
        controller = self.replicas[node]
        start = controller.committed.provenance.offset
        if end > start:
            batches = self.log.committed_between(start, end)
            records = [record for batch in batches for record in batch.records()]
            if self.replay_filter is not None:
                records = self.replay_filter(node, records)
            controller.replay_committed(records, end, batches[-1].epoch)
        if node == self.zombie:
            self._retire_zombie()  # it replays, then sees that it no longer leads

    def load_snapshot(self, node: int) -> bool:
        """Load a snapshot of a replica further ahead (or the leader's latest) instead of replaying."""
        controller = self.replicas[node]
        mine = controller.committed.provenance.offset
        ahead = [c.committed for c in self.replicas if c.committed.provenance.offset > mine]
        if not ahead or controller.is_active:
            return False
        source = self.rng.choice(ahead)
        data = write_snapshot(source, last_contained_timestamp_ms=self.now_ms)
        snapshot_id = OffsetAndEpoch(source.provenance.offset, source.provenance.epoch)
        controller.load_snapshot(read_snapshot(data, snapshot_id))
        self.note(f"node {node} loads snapshot {snapshot_id.offset}-{snapshot_id.epoch}")
        return True

    # -- requests, timers, commit ----------------------------------------------------------

    def send(self, request: Any, version: int, reply: Callable[[Any], None] | None) -> None:
        """A request to the node believed to lead; answered once its offsets commit."""
        node = self.leader if self.leader is not None else self.rng.randrange(len(self.replicas))
        controller = self.replicas[node]
        start = self.log.end_offset
        result = controller.handle(request, version, now_ms=self.now_ms, next_offset=start)
        if controller.epoch != self.epoch:
            require(not result.records, f"standby node {node} wrote records")
            if reply is not None:
                reply(None)  # NOT_CONTROLLER: the sender tries again later
            return
        self._propose(request, version, start, result.records, result.response, reply)

    def _propose(
        self,
        request: Any,
        version: int,
        start: int,
        records: tuple[MetadataRecord, ...],
        response: Any,
        reply: Callable[[Any], None] | None,
    ) -> None:
        self.log.append(self.epoch, records)
        active = self.active
        assert active is not None
        self.pending.append(Proposal(
            wait_until=start + len(records), epoch=self.epoch, request=request, version=version,
            response=response, records=records, working=active.working, reply=reply,
        ))

    def tick(self) -> None:
        """The active controller's timers, as the node runs them when a deadline passes."""
        for _ in range(10):
            active = self.active
            deadline = None if active is None else active.next_deadline_ms()
            if active is None or deadline is None or deadline > self.now_ms:
                return
            start = self.log.end_offset
            result = active.tick(self.now_ms, next_offset=start)
            if not result.records:
                after = active.next_deadline_ms()
                require(after is None or after > self.now_ms,
                        f"a tick that wrote nothing left a deadline at {after} <= now: "
                        "the node would spin")
                return
            self.note(f"tick wrote {len(result.records)} records at {start}")
            self._propose(None, 0, start, result.records, None, None)

    def commit(self, count: int) -> None:
        """Commit ``count`` more batches, check each new image, answer what is due."""
        for batch in self.log.commit(count):
            records = batch.records()
            for offset, record in enumerate(records, batch.base_offset):
                # Kafka's rule: a broker epoch is the offset of its RegisterBrokerRecord
                require(not isinstance(record, RegisterBrokerRecord)
                        or record.broker_epoch == offset,
                        f"RegisterBrokerRecord at offset {offset} carries epoch "
                        f"{getattr(record, 'broker_epoch', None)}")
            before = self.images.latest
            image = self.images.extend(batch, records)
            where = f"committed offset {batch.end_offset}"
            check_image(image, where)
            check_epochs_never_decrease(before, image, where)
        self.watches.check(self.images.images)
        self.deliver()

    def deliver(self) -> None:
        while self.pending and self.pending[0].wait_until <= self.log.committed_end:
            proposal = self.pending.popleft()
            self.answers.check(proposal)
            if proposal.reply is not None:
                proposal.reply(proposal.response)

    # -- invariants ------------------------------------------------------------------------

    def check(self) -> None:
        """Every replica's committed image is the reference image at its offset."""
        for node, controller in enumerate(self.replicas):
            image = controller.committed
            offset = image.provenance.offset
            require(self.images.is_boundary(offset),
                    f"node {node} replayed to {offset}, not a committed batch boundary")
            require(self.digests(image) == self.digests(self.images.at(offset)),
                    f"node {node}'s committed image at offset {offset} differs from the log's")
            if not controller.is_active:
                require(controller.working is image, f"standby node {node} has a working image")

    def check_fresh_fold(self) -> MetadataImage:
        """The whole committed log folded from empty equals the reference image."""
        image = fresh_fold(self.log.batches[:self.log.committed_count])
        require(self.digests(image) == self.digests(self.images.latest),
                "a fresh fold of the committed log differs from the batch-by-batch images")
        return image


def describe_failure(exc: InvariantViolation, world: ControllerWorld) -> str:
    return "\n".join([str(exc), "last events:", *world.trace[-15:]])
