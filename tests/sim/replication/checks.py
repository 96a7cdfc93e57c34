"""The invariants, checked after every event.

* **Committed data never changes, and replicas agree below the HW.** A
  reference log per partition grows from every replica's log below that
  replica's own high watermark; every such prefix must equal the reference
  (batch for batch, byte for byte), so two replicas never disagree below a
  high watermark and no high watermark ever covers data another one covered
  differently.
* **Every acknowledged acks=all batch is on every member of the maximal
  ISR.** At its acknowledgement the batch must be in the reference (below a
  high watermark) with the producer's values; after every event, each member
  of the current leader's maximal ISR holds the reference up to the end of
  the last acknowledged batch. A member whose machine crashed since is
  exempt until it is back in the ISR with a new registration (it lost its
  unflushed tail; the controller takes it out of the ISR before it returns).
* **The leader's high watermark never moves back** while one broker leads
  one epoch.
* **Consumers never see an offset at or above the high watermark**: every
  batch a consumer gets ends below the answer's high watermark and equals the
  reference.
* **One leader per leader epoch.**
* **Idempotent producers' batches are committed exactly once, in order**:
  the committed batches of each producer id in a partition carry sequences
  0, 1, 2, ... with no repeat and no gap, however often a batch was retried
  across leader changes, kills and crashes (and the liveness phase checks
  that each one's last batch is acknowledged after healing).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import TYPE_CHECKING

from broker.replica.manager import PartitionKey
from quorum.log import ReplicatedLog
from quorum.wire.batch import iter_batch_headers
from quorum.wire.messages import FetchResponsePartition
from quorum.wire.records import decode_batch

from .clients import TOPIC, SentBatch

if TYPE_CHECKING:
    from .cluster import Simulation

__all__ = ["Checks", "InvariantViolation", "Reference"]


class InvariantViolation(AssertionError):
    pass


def require(condition: bool, message: str) -> None:
    if not condition:
        raise InvariantViolation(message)


def batches_between(log: ReplicatedLog, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    """(base offset, bytes) of each whole batch from ``start`` (a batch start) below ``end``."""
    position = start
    while position < end:
        found = log.read(position, 1 << 20, max_offset=end)
        if found.is_empty:
            return
        data = bytes(found.records)
        for at, header in iter_batch_headers(data, check_crc=False):
            yield header.base_offset, data[at : at + header.size]
            position = header.next_offset


class Reference:
    """The committed log of one partition, as every high watermark has shown it."""

    def __init__(self) -> None:
        self.batches: dict[int, bytes] = {}
        self.bases: list[int] = []
        self.end = 0
        # producer id -> the next sequence its next committed batch must carry
        self.next_sequences: dict[int, int] = {}
        self.idempotent_batches = 0

    def batch_at(self, base: int) -> bytes | None:
        return self.batches.get(base)

    def take(self, base: int, data: bytes, where: str) -> None:
        """A batch below some high watermark: new (it extends the log) or equal to the known one."""
        if base < self.end:
            known = self.batches.get(base)
            require(known is not None,
                    f"{where}: a batch at {base} below the committed end {self.end} "
                    f"does not start where a committed batch does")
            require(known == data, f"{where}: committed batch at {base} differs")
            return
        require(base == self.end, f"{where}: a batch at {base} leaves a gap after {self.end}")
        self._exactly_once(base, data, where)
        self.batches[base] = data
        self.bases.append(base)
        self.end = base + decode_header_span(data)

    def _exactly_once(self, base: int, data: bytes, where: str) -> None:
        (_, header), = iter_batch_headers(data, check_crc=False)
        if header.producer_id < 0:
            return
        expected = self.next_sequences.get(header.producer_id, 0)
        kind = "a duplicate" if header.base_sequence < expected else "out of order"
        require(header.base_sequence == expected,
                f"{where}: the committed batch at {base} of idempotent producer "
                f"{header.producer_id} has sequence {header.base_sequence}, {kind} (the next "
                f"expected is {expected})")
        self.next_sequences[header.producer_id] = expected + header.last_offset_delta + 1
        self.idempotent_batches += 1

    def floor_base(self, offset: int) -> int | None:
        index = bisect.bisect_right(self.bases, offset) - 1
        return self.bases[index] if index >= 0 else None


def decode_header_span(data: bytes) -> int:
    (_, header), = iter_batch_headers(data, check_crc=False)
    return header.last_offset_delta + 1


class Checks:
    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.references: dict[PartitionKey, Reference] = {}
        self.verified: dict[tuple[int, PartitionKey], int] = {}
        # how far each replica's log was found equal to the reference for acknowledged
        # records (lowered when its log is cut, like ``verified``)
        self.acked_checked: dict[tuple[int, PartitionKey], int] = {}
        self.acked_end: dict[PartitionKey, int] = {}
        self.acked_count = 0
        self.leaders: dict[tuple[PartitionKey, int], int] = {}
        self.high_watermarks: dict[tuple[int, int, PartitionKey, int], int] = {}
        self.tainted: set[int] = set()
        self.consumed_batches = 0
        self.checked = 0

    def fail(self, message: str) -> None:
        """A client saw what only a bug can answer."""
        raise InvariantViolation(message)

    @property
    def idempotent_batches(self) -> int:
        """Committed batches of idempotent producers, every partition."""
        return sum(r.idempotent_batches for r in self.references.values())

    def reference(self, key: PartitionKey) -> Reference:
        found = self.references.get(key)
        if found is None:
            found = self.references[key] = Reference()
        return found

    def key_of(self, index: int) -> PartitionKey | None:
        topic = self.sim.controller.image.topic(TOPIC)
        return None if topic is None else PartitionKey(topic.topic_id, index)

    # -- after every event -----------------------------------------------------------------

    def check(self) -> None:
        self.checked += 1
        for broker in self.sim.brokers.values():
            for key, log in broker.disk.logs.items():
                cut = log.take_cut()
                slot = (broker.node_id, key)
                if cut is not None and self.verified.get(slot, 0) > cut:
                    self.verified[slot] = cut
                if cut is not None and self.acked_checked.get(slot, 0) > cut:
                    self.acked_checked[slot] = cut
            if broker.core is None:
                continue
            for partition in broker.core.partitions:
                key = partition.key
                if partition.is_leader:
                    self._leader(broker.node_id, broker.incarnation, partition.key,
                                 partition.leader_epoch, partition.high_watermark)
                self._agree(broker.node_id, key, partition.log,
                            min(partition.high_watermark, partition.log_end_offset))
        self._acked_on_maximal_isr()
        self._untaint()

    def _leader(self, broker: int, life: int, key: PartitionKey, epoch: int, hw: int) -> None:
        leader = self.leaders.setdefault((key, epoch), broker)
        require(leader == broker, f"epoch {epoch} of {key.partition} has two leaders: "
                                  f"{leader} and {broker}")
        slot = (broker, life, key, epoch)
        previous = self.high_watermarks.get(slot, hw)
        require(hw >= previous, f"leader {broker} of partition {key.partition} epoch {epoch} "
                                f"moved its high watermark back from {previous} to {hw}")
        self.high_watermarks[slot] = hw

    def _agree(self, broker: int, key: PartitionKey, log: ReplicatedLog, end: int) -> None:
        """The log below ``end`` (its high watermark) equals the committed reference."""
        slot = (broker, key)
        start = self.verified.get(slot, 0)
        if start >= end:
            return
        reference = self.reference(key)
        base = start
        for base, data in batches_between(log, start, end):
            reference.take(base, data, f"broker {broker} partition {key.partition}")
            start = base + decode_header_span(data)
        self.verified[slot] = start

    def _current_leader(self, key: PartitionKey) -> tuple[int, frozenset[int]] | None:
        registration = self.sim.controller.image.partition(key.topic_id, key.partition)
        if registration is None or registration.leader < 0:
            return None
        broker = self.sim.brokers[registration.leader]
        partition = None if broker.core is None else broker.core.partitions.get(key)
        if (partition is None or not partition.is_leader
                or partition.leader_epoch != registration.leader_epoch):
            return None
        return broker.node_id, partition.maximal_isr

    def _acked_on_maximal_isr(self) -> None:
        for key, acked_end in self.acked_end.items():
            current = self._current_leader(key)
            if current is None:
                continue
            leader, members = current
            reference = self.reference(key)
            for member in sorted(members):
                if member in self.tainted:
                    continue
                log = self.sim.brokers[member].disk.logs.get(key)
                where = (f"member {member} of leader {leader}'s maximal ISR {sorted(members)} "
                         f"for partition {key.partition}")
                require(log is not None and log.log_end_offset >= acked_end,
                        f"{where} ends at {None if log is None else log.log_end_offset}, "
                        f"before acknowledged acks=all records up to {acked_end}")
                assert log is not None
                slot = (member, key)
                start = max(self.verified.get(slot, 0), self.acked_checked.get(slot, 0))
                if start >= acked_end:
                    continue
                for base, data in batches_between(log, start, acked_end):
                    require(reference.batch_at(base) == data,
                            f"{where} holds a batch at {base} other than the committed one "
                            f"(acknowledged records up to {acked_end})")
                    start = base + decode_header_span(data)
                self.acked_checked[slot] = start

    def _untaint(self) -> None:
        image = self.sim.controller.image
        for broker_id in sorted(self.tainted):
            broker = self.sim.brokers[broker_id]
            registration = image.broker(broker_id)
            if not broker.alive or registration is None or registration.epoch != broker.epoch:
                continue
            hosted = [p for _, _, p in image.iter_partitions() if broker_id in p.replicas]
            if all(broker_id in p.isr for p in hosted):
                self.tainted.discard(broker_id)
                self.sim.note(f"broker {broker_id} is back in every ISR after its crash")

    # -- client events ---------------------------------------------------------------------

    def acknowledged(self, sent: SentBatch, base_offset: int, leader: int) -> None:
        key = self.key_of(sent.partition)
        assert key is not None
        reference = self.reference(key)
        data = reference.batch_at(base_offset)
        require(data is not None,
                f"an acks=all batch acknowledged by {leader} at {base_offset} of partition "
                f"{sent.partition} is not below any high watermark (committed end "
                f"{reference.end})")
        assert data is not None
        values = tuple(r.value for r in decode_batch(data).records)
        require(values == sent.values,
                f"the committed batch at {base_offset} of partition {sent.partition} holds "
                f"{values}, not the acknowledged {sent.values}")
        end = base_offset + len(values)
        self.acked_end[key] = max(self.acked_end.get(key, 0), end)
        self.acked_count += 1

    def consumed(self, index: int, answer: FetchResponsePartition, position: int) -> int:
        """Check what a consumer read; its next position."""
        key = self.key_of(index)
        assert key is not None
        reference = self.reference(key)
        records = answer.records or b""
        for at, header in iter_batch_headers(records, check_crc=False):
            data = bytes(records[at : at + header.size])
            require(header.last_offset < answer.high_watermark,
                    f"a consumer read offsets {header.base_offset}-{header.last_offset} of "
                    f"partition {index} at or above the high watermark {answer.high_watermark}")
            require(reference.batch_at(header.base_offset) == data,
                    f"a consumer read a batch at {header.base_offset} of partition {index} "
                    f"that is not the committed one")
            position = max(position, header.next_offset)
            self.consumed_batches += 1
        return position
