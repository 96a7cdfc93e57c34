"""The simulated state machine: Kafka's ReplicatedCounter, with a digest of every value.

Each node life has one ``SimMachine``. It applies the committed ranges its
driver hands over (the data records' values, in order), loads the snapshots
the core tells it to load (``Ready.loaded_snapshot``), and every
``snapshot_every`` committed offsets writes a snapshot of what it holds:

    b"<end offset> <record count> <digest hex>\\n" + the last values, joined by b"\\n"

Like Kafka's counter the state is small: the number of committed data records
and a digest chaining every value (``tests.sim.digest``), so two states are
equal exactly when their (end, count, digest) are. The invariants compare each
machine and each stored snapshot with the global committed record at the same
offset. The last few values only give a snapshot some bytes to download in
several chunks. A machine that acts for the leader (it has seen its node lead
in the current epoch) must never be told to load a snapshot
(LeaderNeverLoadSnapshot).
"""

from __future__ import annotations

import attrs

from quorum.log import MemoryLog, OffsetAndEpoch
from quorum.raft.output import OffsetRange, Ready
from quorum.raft.snapshots import snapshot_timestamp_ms
from quorum.wire.batch import batch_size_at
from quorum.wire.codec import encode
from quorum.wire.control import ControlRecordType, build_control_batch
from quorum.wire.messages.control_records import SnapshotHeaderRecord
from quorum.wire.records import iter_batches

from .committed import InvariantViolation
from .digest import GENESIS, chain

__all__ = ["SimMachine", "SnapshotContent", "parse_snapshot"]


TAIL = 8  # values kept verbatim in a snapshot


@attrs.frozen
class SnapshotContent:
    end: int
    count: int
    digest: bytes
    tail: tuple[bytes, ...]


def parse_snapshot(data: bytes) -> SnapshotContent:
    # a first batch with a SnapshotHeaderRecord: the last record's time (retention by age reads it)
    stamp = batch_size_at(data, 0)
    if stamp is None:
        raise InvariantViolation("a snapshot without its header batch")
    header, _, body = data[stamp:].partition(b"\n")
    end, count, digest_hex = header.split(b" ")
    tail = tuple(body.split(b"\n")) if body else ()
    content = SnapshotContent(int(end), int(count), bytes.fromhex(digest_hex.decode()), tail)
    if len(tail) != min(content.count, TAIL):
        raise InvariantViolation(f"snapshot ending at {content.end} does not match its own header")
    return content


class SimMachine:
    def __init__(self, node_id: int, snapshot_every: int | None) -> None:
        self.node_id = node_id
        self.snapshot_every = snapshot_every
        self.end = 0  # offsets below are applied
        self.last_epoch = 0  # epoch of the batch that ends at ``end``
        self.last_timestamp = 0  # max timestamp of that batch
        self.count = 0
        self.digest = GENESIS
        self.tail: list[bytes] = []
        self.since_snapshot = 0
        self.claimed_epoch: int | None = None  # acts for the leader of this epoch
        self.loads: list[tuple[OffsetAndEpoch, bool]] = []  # (snapshot, at start-up)

    @property
    def snapshot_due(self) -> bool:
        return self.snapshot_every is not None and self.since_snapshot >= self.snapshot_every

    def observe(self, ready: Ready, log: MemoryLog, *, first: bool) -> None:
        """Step 4 of the Ready contract: load a snapshot, then apply committed records."""
        if ready.loaded_snapshot is not None:
            if self.claimed_epoch is not None:
                raise InvariantViolation(
                    f"LeaderNeverLoadSnapshot: node {self.node_id} leads epoch "
                    f"{self.claimed_epoch} and was told to load {ready.loaded_snapshot}"
                )
            self._load(log, ready.loaded_snapshot, first)
        if ready.committed is not None:
            self._apply(log, ready.committed)
        self.claimed_epoch = ready.leader.epoch if ready.role == "Leader" else None

    def _load(self, log: MemoryLog, snapshot_id: OffsetAndEpoch, first: bool) -> None:
        content = parse_snapshot(log.read_snapshot(snapshot_id))
        if content.end != snapshot_id.offset:
            raise InvariantViolation(f"snapshot {snapshot_id} holds state up to {content.end}")
        self.end, self.last_epoch = snapshot_id.offset, snapshot_id.epoch
        self.last_timestamp = snapshot_timestamp_ms(log, snapshot_id) or 0
        self.count, self.digest, self.tail = content.count, content.digest, list(content.tail)
        self.since_snapshot = 0
        self.loads.append((snapshot_id, first))

    def _apply(self, log: MemoryLog, committed: OffsetRange) -> None:
        if committed.start != self.end:
            raise InvariantViolation(
                f"node {self.node_id}'s state machine is at {self.end} but was handed {committed}"
            )
        read = log.read(committed.start, 1 << 40, max_offset=committed.end)
        added: list[bytes] = []
        for batch in iter_batches(read.records):
            self.last_epoch = batch.header.partition_leader_epoch
            self.last_timestamp = batch.header.max_timestamp
            if not batch.header.is_control:
                added += [record.value or b"" for record in batch.records]
        self.tail = (self.tail + added)[-TAIL:]
        self.count += len(added)
        self.digest = chain(self.digest, added)
        self.since_snapshot += committed.end - committed.start
        self.end = committed.end

    def snapshot(self) -> tuple[OffsetAndEpoch, bytes]:
        """This machine's state as a snapshot id and bytes; resets the counter."""
        self.since_snapshot = 0
        header = b"%d %d %s\n" % (self.end, self.count, self.digest.hex().encode())
        stamp = build_control_batch(
            ControlRecordType.SNAPSHOT_HEADER,
            encode(SnapshotHeaderRecord(last_contained_log_timestamp=self.last_timestamp), 0),
        )
        return OffsetAndEpoch(self.end, self.last_epoch), stamp + header + b"\n".join(self.tail)
