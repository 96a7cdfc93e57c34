"""Idempotent producers of one partition: each producer id's epoch and last five batches.

Kafka's ``ProducerStateManager`` / ``ProducerStateEntry`` / ``ProducerAppendInfo``
without transactions, sans-I/O. Every replica keeps it: the leader checks a
produced batch against it before appending (``check_leader_append``, Kafka's
``UnifiedLog.analyzeAndValidateProducerState`` for a client append), and
leader and followers alike ``update`` it with each appended batch (a
follower, or a rebuild from the log, checks nothing: the leader did).

The leader's rules for a batch of producer id ``P``, epoch ``E`` and
sequences ``[first, last]``, in Kafka's order:

* ``P`` known with epoch ``E`` and a batch among its last five with exactly
  ``[first, last]``: a duplicate (a retry); the original's offsets are the
  answer and nothing is appended;
* ``E`` below ``P``'s epoch: INVALID_PRODUCER_EPOCH;
* ``E`` above ``P``'s epoch: accepted only from sequence 0, else
  OUT_OF_ORDER_SEQUENCE_NUMBER;
* ``E`` equal: ``first`` must follow the last batch's last sequence
  (``Int32.MAX`` is followed by 0), else OUT_OF_ORDER_SEQUENCE_NUMBER (an
  older batch than the five, or a gap);
* ``P`` unknown: any sequence (Kafka since KIP-360: the state of a producer
  whose records were all deleted is gone, and it must be able to go on).

Because an unknown producer is admitted at any sequence, a state that failed
to rebuild would silently admit duplicates: ``rebuild_producer_state`` builds
it from the latest producer snapshot at or below the log end
(``quorum.log.producer_snapshots``) and the batches after it, dropping
producers whose last batch lies wholly below the log start and those idle
for ``producer.id.expiration.ms`` (Kafka's default 86,400,000: a day, judged
by the last batch's timestamp, as Kafka judges it).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import Final

import attrs

from quorum.log import (
    MAX_BATCHES_PER_PRODUCER,
    ProducerBatch,
    ProducerEntry,
    ReplicatedLog,
)
from quorum.wire.batch import BatchHeader, iter_batch_headers
from quorum.wire.error_codes import Errors

__all__ = [
    "DEFAULT_PRODUCER_ID_EXPIRATION_MS",
    "INT32_MAX",
    "NO_PRODUCER_EPOCH",
    "AppendedBatch",
    "ProducerRefusal",
    "ProducerStateManager",
    "appended_batches",
    "batch_of",
    "current_producer_state",
    "increment_sequence",
    "rebuild_producer_state",
    "track_appended",
]

DEFAULT_PRODUCER_ID_EXPIRATION_MS: Final = 86_400_000
NO_PRODUCER_EPOCH: Final = -1
INT32_MAX: Final = 2**31 - 1
# a rebuild reads the log in pieces of this size (whole batches, at least one)
_REBUILD_READ_BYTES: Final = 1 << 20


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's ``DefaultRecordBatch.incrementSequence``: sequences wrap at Int32 max to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


@attrs.frozen
class ProducerRefusal:
    error: Errors
    message: str


@attrs.frozen
class AppendedBatch:
    """An appended batch of an idempotent producer, with its offsets in the log."""

    producer_id: int
    producer_epoch: int
    batch: ProducerBatch


def batch_of(header: BatchHeader, *, first_offset: int, timestamp: int) -> AppendedBatch:
    """The producer facts of ``header`` appended at ``first_offset``."""
    return AppendedBatch(
        header.producer_id,
        header.producer_epoch,
        ProducerBatch(
            first_seq=header.base_sequence,
            last_seq=increment_sequence(header.base_sequence, header.last_offset_delta),
            first_offset=first_offset,
            last_offset=first_offset + header.last_offset_delta,
            timestamp=timestamp,
        ),
    )


def appended_batches(records: bytes | bytearray | memoryview) -> Iterator[AppendedBatch]:
    """The idempotent producers' batches among whole batches with their log offsets."""
    for _, header in iter_batch_headers(records, check_crc=False):
        if header.producer_id >= 0 and not header.is_control:
            yield batch_of(header, first_offset=header.base_offset, timestamp=header.max_timestamp)


class _Producer:
    """One producer id's epoch and last batches, oldest first (Kafka's ProducerStateEntry)."""

    __slots__ = ("batches", "epoch")

    def __init__(self, epoch: int, batches: Iterable[ProducerBatch] = ()) -> None:
        self.epoch = epoch
        self.batches: deque[ProducerBatch] = deque(batches, maxlen=MAX_BATCHES_PER_PRODUCER)

    @property
    def last(self) -> ProducerBatch:
        return self.batches[-1]

    def add(self, epoch: int, batch: ProducerBatch) -> None:
        if epoch != self.epoch:
            # a new epoch starts a new history (Kafka's maybeUpdateProducerEpoch)
            self.epoch = epoch
            self.batches.clear()
        self.batches.append(batch)

    def duplicate_of(self, epoch: int, first_seq: int, last_seq: int) -> ProducerBatch | None:
        if epoch != self.epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None


class ProducerStateManager:
    """The idempotent producers of one partition below ``end_offset``."""

    __slots__ = ("_producers", "end_offset", "expiration_ms", "log_start_offset")

    def __init__(self, *, expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS) -> None:
        self.expiration_ms = expiration_ms
        self._producers: dict[int, _Producer] = {}
        # the state holds the batches below end_offset, none below log_start_offset
        self.end_offset = 0
        self.log_start_offset = 0

    def __len__(self) -> int:
        return len(self._producers)

    def __contains__(self, producer_id: int) -> bool:
        return producer_id in self._producers

    def __repr__(self) -> str:
        return f"ProducerStateManager({len(self)} producers, end {self.end_offset})"

    def epoch_of(self, producer_id: int) -> int:
        found = self._producers.get(producer_id)
        return NO_PRODUCER_EPOCH if found is None else found.epoch

    def last_batch(self, producer_id: int) -> ProducerBatch | None:
        found = self._producers.get(producer_id)
        return None if found is None else found.last

    # -- the leader's check ----------------------------------------------------------------

    def check_leader_append(self, header: BatchHeader) -> ProducerBatch | ProducerRefusal | None:
        """A produced batch of an idempotent producer: the original batch if it is a retry
        of one of the last five, a refusal, or None to append it."""
        producer_id, epoch, first_seq = (
            header.producer_id, header.producer_epoch, header.base_sequence
        )
        known = self._producers.get(producer_id)
        if known is None:
            return None  # any sequence from an unknown producer (KIP-360)
        last_seq = increment_sequence(first_seq, header.last_offset_delta)
        duplicate = known.duplicate_of(epoch, first_seq, last_seq)
        if duplicate is not None:
            return duplicate
        if epoch < known.epoch:
            return ProducerRefusal(
                Errors.INVALID_PRODUCER_EPOCH,
                f"epoch {epoch} of producer {producer_id} is older than its epoch {known.epoch}",
            )
        if epoch > known.epoch:
            if first_seq != 0:
                return ProducerRefusal(
                    Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"a new epoch {epoch} of producer {producer_id} must start at sequence 0, "
                    f"not {first_seq}",
                )
            return None
        expected = increment_sequence(known.last.last_seq, 1)
        if not _in_sequence(known.last.last_seq, first_seq):
            return ProducerRefusal(
                Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"producer {producer_id} epoch {epoch} sent sequence {first_seq}; the next "
                f"expected is {expected}",
            )
        return None

    # -- changes ---------------------------------------------------------------------------

    def update(self, appended: AppendedBatch) -> None:
        """An appended batch (the leader's, a fetched one, or one read back from the log)."""
        known = self._producers.get(appended.producer_id)
        if known is None:
            self._producers[appended.producer_id] = _Producer(
                appended.producer_epoch, (appended.batch,)
            )
        else:
            known.add(appended.producer_epoch, appended.batch)

    def load(self, entries: Iterable[ProducerEntry], *, now_ms: int) -> None:
        """Entries read from a snapshot (expired and head-truncated ones are left out)."""
        for entry in entries:
            last = entry.batches[-1]
            if last.last_offset < self.log_start_offset or self._expired(last, now_ms):
                continue
            self._producers[entry.producer_id] = _Producer(entry.producer_epoch, entry.batches)

    def truncate_head(self, log_start_offset: int) -> None:
        """The log starts at ``log_start_offset``: producers whose last batch lies wholly
        below it are dropped (Kafka's ``onLogStartOffsetIncremented``)."""
        if log_start_offset <= self.log_start_offset:
            return
        self.log_start_offset = log_start_offset
        gone = [pid for pid, p in self._producers.items() if p.last.last_offset < log_start_offset]
        for producer_id in gone:
            del self._producers[producer_id]
        self.end_offset = max(self.end_offset, log_start_offset)

    def _expired(self, last: ProducerBatch, now_ms: int) -> bool:
        return now_ms - last.timestamp >= self.expiration_ms

    def remove_expired(self, now_ms: int) -> int:
        """Forget producers idle for ``producer.id.expiration.ms``; how many went."""
        gone = [pid for pid, p in self._producers.items() if self._expired(p.last, now_ms)]
        for producer_id in gone:
            del self._producers[producer_id]
        return len(gone)

    def entries(self) -> tuple[ProducerEntry, ...]:
        """The state as a snapshot holds it, by producer id."""
        return tuple(
            ProducerEntry(producer_id=pid, producer_epoch=p.epoch, batches=tuple(p.batches))
            for pid, p in sorted(self._producers.items())
        )


def rebuild_producer_state(
    log: ReplicatedLog, *, end: int | None = None, now_ms: int, expiration_ms: int
) -> ProducerStateManager:
    """The producer state below ``end`` (the log end offset by default): the latest
    producer snapshot at or below it, then the batches from there (or from the log start
    when no snapshot is left) up to it."""
    stop = log.log_end_offset if end is None else end
    start = log.log_start_offset
    state = ProducerStateManager(expiration_ms=expiration_ms)
    state.log_start_offset = start
    position = start
    snapshot = log.load_producer_snapshot(stop)
    if snapshot is not None and snapshot.offset >= start:
        state.load(snapshot.entries, now_ms=now_ms)
        position = snapshot.offset
    while position < stop:
        read = log.read(position, _REBUILD_READ_BYTES, max_offset=stop)
        if read.is_empty:
            break
        for appended in appended_batches(read.records):
            # a batch straddling the log start still counts (its producer is retained)
            if appended.batch.last_offset >= start:
                state.update(appended)
        position = read.next_offset
    state.remove_expired(now_ms)
    state.end_offset = max(stop, start)
    return state


def current_producer_state(
    log: ReplicatedLog, state: ProducerStateManager | None, *, now_ms: int, expiration_ms: int
) -> ProducerStateManager:
    """``state`` brought to the log as it is now: built if it is not (None), rebuilt if it
    no longer ends where the log does (the log changed in a way ``track_appended`` and a
    truncation's reset did not see: never trusted), head-truncated to the log start
    (retention or DeleteRecords may have moved it since)."""
    if state is None or state.end_offset != log.log_end_offset:
        return rebuild_producer_state(log, now_ms=now_ms, expiration_ms=expiration_ms)
    state.truncate_head(log.log_start_offset)
    return state


def track_appended(
    log: ReplicatedLog,
    state: ProducerStateManager | None,
    before: tuple[int, int],
    appended: Iterable[AppendedBatch],
    *,
    now_ms: int,
    expiration_ms: int,
) -> ProducerStateManager | None:
    """After an append (``before``: the active segment's base offset and the log end
    offset before it): if it rolled a segment, the state below the new segment is
    snapshotted first (Kafka's snapshot at a roll; built for it if it was not); then a
    built state takes the appended batches of idempotent producers. An unbuilt state
    stays unbuilt: the log holds the batches, and a build reads them."""
    segment_before, end_before = before
    if state is not None and state.end_offset != end_before:
        state = None  # it missed a change of the log: rebuilt, never trusted
    rolled_at = log.active_segment_base_offset
    if rolled_at != segment_before:
        if state is None:
            state = rebuild_producer_state(
                log, end=rolled_at, now_ms=now_ms, expiration_ms=expiration_ms
            )
        else:
            state.truncate_head(log.log_start_offset)
        log.write_producer_snapshot(rolled_at, state.entries())
    if state is not None:
        for batch in appended:
            state.update(batch)
        state.end_offset = log.log_end_offset
    return state
