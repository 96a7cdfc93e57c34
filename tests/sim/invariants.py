"""Safety invariants, checked after every event (Kafka's RaftEventSimulationTest list, and more).

* one leader per epoch, across all time, from live cores and every durable
  quorum-state file;
* durable epochs never decrease on a node; an idle core's epoch is its durable epoch;
* no node's high watermark goes backwards within one life (so neither does the
  leader's within its term);
* committed batches (below any node's high watermark) are identical on every
  node that exposes them, and a node never truncates below its high watermark;
* a majority of voters holds the whole committed prefix in its *durable* log;
* a proposal acknowledged by its leader is in the committed record at its offsets;
* observers never stand, lead or vote;
* SnapshotAtLogStart: a log's earliest snapshot is at or above its start,
  ends at a batch of its own epoch (or is the log start), and is the log start
  when that is above 0;
* every stored snapshot, and every state machine, holds exactly the committed
  data values below its offset (ConsistentCommittedData with snapshots);
* LeaderNeverLoadSnapshot (raised by ``tests.sim.machine`` when it happens).

A wiped disk breaks what the node cannot keep; ``wiped`` switches off its epoch
monotonicity and, as Kafka's test does, the majority check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from quorum.log import OffsetAndEpoch
from quorum.raft.quorum_math import majority_size
from quorum.wire.batch import BatchHeader

from .committed import CommittedRecord, InvariantViolation, LogProgress
from .machine import parse_snapshot

if TYPE_CHECKING:
    from .driver import SimNode
    from .simulator import Simulation

__all__ = ["Invariants"]

_NEVER_FOR_OBSERVERS = frozenset({"Prospective", "Candidate", "Leader", "Resigned"})


def _fail(message: str) -> None:
    raise InvariantViolation(message)


class Invariants:
    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.record = CommittedRecord()
        self.leaders: dict[int, int] = {}  # epoch -> its leader, over all time
        self.majority_check = True
        self._epoch_exempt: set[int] = set()
        self._durable_epoch: dict[int, int] = {}
        # per node: (life, highest epoch, highest HW, offset verified below the HW)
        self._life: dict[int, tuple[int, int, int, int]] = {}
        self._progress: dict[int, LogProgress] = {}
        # per node: the (log, its snapshot changes, log start) last checked, and the
        # (life, offset) its state machine was last checked at
        self._snapshots_seen: dict[int, tuple[object, int, int]] = {}
        self._machine_seen: dict[int, tuple[int, int]] = {}

    def wiped(self, node_id: int) -> None:
        self._epoch_exempt.add(node_id)
        self._durable_epoch.pop(node_id, None)
        self.majority_check = False

    def check(self) -> None:
        for node in self.sim.nodes.values():
            lost = node.disk.log.take_lost_from()
            self._check_epochs(node)
            self._check_life(node, lost)
            self._check_progress(node, lost)
            if not node.is_voter:
                self._check_observer(node)
            # after _check_life: what this node exposes is in the record by now
            self._check_snapshots(node)
            self._check_machine(node)
        self._check_majority()
        self._check_acknowledged()

    # -- leaders and epochs --------------------------------------------------------------

    def _claim(self, epoch: int, leader_id: int, source: str) -> None:
        known = self.leaders.setdefault(epoch, leader_id)
        if known != leader_id:
            _fail(f"epoch {epoch} has two leaders: {known} and {leader_id} ({source})")

    def _check_epochs(self, node: SimNode) -> None:
        stored = node.disk.election
        if stored is not None:
            if stored.leader_id is not None:
                self._claim(stored.epoch, stored.leader_id, f"quorum-state of node {node.node_id}")
            before = self._durable_epoch.get(node.node_id, 0)
            if stored.epoch < before and node.node_id not in self._epoch_exempt:
                _fail(f"node {node.node_id}'s durable epoch fell from {before} to {stored.epoch}")
            self._durable_epoch[node.node_id] = stored.epoch
        core = node.core
        if core is None:
            return
        if core.is_leader:
            self._claim(core.epoch, node.node_id, f"node {node.node_id} leads")
        if not node.busy and stored is not None and core.epoch != stored.epoch:
            _fail(
                f"node {node.node_id} is idle in epoch {core.epoch} but its quorum-state "
                f"holds epoch {stored.epoch}"
            )

    def _check_observer(self, node: SimNode) -> None:
        if node.core is not None and node.core.role in _NEVER_FOR_OBSERVERS:
            _fail(f"observer {node.node_id} became {node.core.role}")
        stored = node.disk.election
        if stored is not None and stored.voted_id is not None:
            _fail(f"observer {node.node_id} voted for {stored.voted_id}")

    # -- high watermarks and the committed record -----------------------------------------

    def _check_life(self, node: SimNode, lost: int | None) -> None:
        core = node.core
        if core is None:
            self._life.pop(node.node_id, None)
            return
        life, top_epoch, top_hw, verified = self._life.get(
            node.node_id, (node.incarnation, 0, 0, 0)
        )
        if life != node.incarnation:
            life, top_epoch, top_hw, verified = node.incarnation, 0, 0, 0
        elif lost is not None and lost < verified:
            _fail(f"node {node.node_id} truncated to {lost}, below its high watermark {verified}")
        if core.epoch < top_epoch:
            _fail(f"node {node.node_id}'s epoch fell from {top_epoch} to {core.epoch}")
        hw = core.high_watermark
        if hw is not None:
            if hw < top_hw:
                _fail(f"node {node.node_id}'s high watermark fell from {top_hw} to {hw}")
            top_hw = hw
            verified = self.record.absorb(node.node_id, node.disk.log, verified, hw)
        self._life[node.node_id] = (life, max(top_epoch, core.epoch), top_hw, verified)

    def _check_progress(self, node: SimNode, lost: int | None) -> None:
        progress = self._progress.get(node.node_id)
        if progress is None or progress.log is not node.disk.log:
            progress = self._progress[node.node_id] = LogProgress(node.disk.log)
        elif lost is not None:
            progress.lost(lost)

    def _check_majority(self) -> None:
        if not self.majority_check or self.record.end == 0:
            return
        holders = []
        for node in self.sim.nodes.values():
            progress = self._progress[node.node_id]
            progress.advance(self.record)
            if node.is_voter and progress.durable_match >= self.record.end:
                holders.append(node.node_id)
        if len(holders) < majority_size(len(self.sim.voters)):
            _fail(
                f"only voters {holders} hold the committed prefix (to offset "
                f"{self.record.end}) on disk: not a majority of {sorted(self.sim.voters)}"
            )

    def _check_acknowledged(self) -> None:
        for proposal in self.sim.client.take_acknowledged():
            span = proposal.accepted
            assert span is not None
            if span.end > self.record.end:
                _fail(
                    f"{proposal} was acknowledged beyond the committed record ({self.record.end})"
                )
            found = self.record.values(span.start, span.end)
            if found != list(proposal.payloads):
                _fail(f"{proposal} was acknowledged but offsets {span} hold {found}")

    # -- snapshots and state machines ---------------------------------------------------------

    def _check_snapshots(self, node: SimNode) -> None:
        log = node.disk.log
        key = (log, log.snapshot_changes, log.log_start_offset)
        if self._snapshots_seen.get(node.node_id) == key:
            return
        self._check_snapshot_at_log_start(node)
        for snapshot_id in log.snapshot_ids():
            self._check_snapshot(node, snapshot_id)
        self._snapshots_seen[node.node_id] = key

    def _check_snapshot(self, node: SimNode, snapshot_id: OffsetAndEpoch) -> None:
        """The snapshot holds the state machine's state at its offset."""
        content = parse_snapshot(node.disk.log.read_snapshot(snapshot_id))
        expected = self.record.prefix_at(snapshot_id.offset)
        if content.end != snapshot_id.offset or expected != (content.count, content.digest):
            _fail(
                f"node {node.node_id}'s snapshot {snapshot_id} holds {content.count} values "
                f"that are not the committed ones below offset {snapshot_id.offset}"
            )

    def _check_snapshot_at_log_start(self, node: SimNode) -> None:
        log = node.disk.log
        start, earliest = log.log_start_offset, log.earliest_snapshot_id
        where = f"node {node.node_id} (log start {start}, earliest snapshot {earliest})"
        if earliest is None:
            if start > 0:
                _fail(f"SnapshotAtLogStart: {where} has no snapshot at its log start")
        elif earliest.offset < start or (start > 0 and earliest.offset != start):
            _fail(f"SnapshotAtLogStart: {where}: the earliest snapshot is not the log start")
        elif start < earliest.offset <= log.log_end_offset:
            # (past the log end only after a crash mid-download: start-up repairs that)
            header = BatchHeader.parse(log.read(earliest.offset - 1, 1).records)
            if (header.last_offset, header.partition_leader_epoch) != (
                earliest.offset - 1,
                earliest.epoch,
            ):
                _fail(
                    f"SnapshotAtLogStart: {where}: the log's batch at "
                    f"{header.base_offset}..{header.last_offset} (epoch "
                    f"{header.partition_leader_epoch}) does not end the snapshot"
                )

    def _check_machine(self, node: SimNode) -> None:
        machine = node.machine
        if node.core is None or machine.end == 0:
            return
        key = (node.incarnation, machine.end)
        if self._machine_seen.get(node.node_id) == key:
            return
        if self.record.prefix_at(machine.end) != (machine.count, machine.digest):
            _fail(
                f"node {node.node_id}'s state machine holds {machine.count} values below "
                f"offset {machine.end} that are not the committed ones"
            )
        self._machine_seen[node.node_id] = key
