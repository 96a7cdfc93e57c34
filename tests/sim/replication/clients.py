"""Producers and a consumer, as Kafka clients talking to the brokers.

A producer sends one batch at a time (1-3 records with unique values) to the
leader its metadata names, mostly with acks=all (min ISR 2 of RF 3), some
with acks=1, and hands every acknowledged acks=all batch to the checks. An
idempotent producer (a producer id, epoch 0, a sequence per partition, always
acks=all, as the Java client's default) sends the same batch again, same
sequence, after every error or lost answer until it is acknowledged, as
Kafka's clients retry: across leader changes, kills and crashes the brokers
must keep it exactly once (the checks look at the sequences of every
committed batch), and its last batch must be acknowledged in the liveness
phase (a batch refused for good, OUT_OF_ORDER_SEQUENCE_NUMBER from the real
leader, say, never is). A consumer reads each
partition from its leader below the high watermark, sessionless, and hands
every batch it receives to the checks.
"""

from __future__ import annotations

import random
from functools import partial
from typing import TYPE_CHECKING

import attrs

from quorum.controller.image import MetadataImage, TopicImage
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    FetchResponse,
    ProduceRequest,
    ProduceRequestPartition,
    ProduceRequestTopic,
    ProduceResponse,
)
from quorum.wire.records import Record, build_batch, build_batch_from_values

if TYPE_CHECKING:
    from .cluster import Simulation

__all__ = ["TOPIC", "Consumer", "Producer", "SentBatch"]

TOPIC = "events"
PRODUCE_TIMEOUT_MS = 1_500


@attrs.frozen(kw_only=True)
class SentBatch:
    partition: int
    acks: int
    values: tuple[bytes, ...]
    sent_ms: int
    records: bytes = b""
    base_sequence: int = -1


# what only a bug can answer an idempotent producer's well-formed batch
_FATAL_FOR_IDEMPOTENT = frozenset({Errors.INVALID_RECORD, Errors.CORRUPT_MESSAGE})
# what a deposed leader that does not know it yet (its metadata is stale, so may be the
# client's) can answer: its producer state ends before the batches the new leader took.
# Retried like any error: the real leader takes or deduplicates the batch, and one that
# refuses it for good fails the liveness phase
_SEQUENCE_REFUSALS = frozenset({
    Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, Errors.INVALID_PRODUCER_EPOCH,
})


def _leader(image: MetadataImage, index: int) -> tuple[int, int, TopicImage | None]:
    topic = image.topic(TOPIC)
    partition = None if topic is None else topic.partition(index)
    if partition is None:
        return -1, -1, topic
    return partition.leader, partition.leader_epoch, topic


class Producer:
    def __init__(self, sim: Simulation, node_id: int, *, idempotent: bool = False) -> None:
        self.sim = sim
        self.node_id = node_id
        self.idempotent = idempotent
        # its own stream: adding idempotent producers leaves the others' draws alone
        self.rng = (random.Random(f"{sim.seed}-idempotent-{node_id}") if idempotent
                    else random.Random(sim.rng.getrandbits(64)))
        self.producer_id = 1_000 + node_id if idempotent else -1
        self._next_sequence: dict[int, int] = {}
        # the batch an idempotent producer sends until it is acknowledged
        self.unacknowledged: SentBatch | None = None
        self.retries = 0
        self.sequence_refusals = 0
        self.running = False
        self._sequence = 0
        self._request_no = 0
        self._waiting: dict[int, SentBatch] = {}
        # request number -> the error code it was answered with
        self.outcomes: dict[int, int] = {}
        self.acked_all = 0
        self.acked_one = 0
        self.errors = 0

    def start(self) -> None:
        self.running = True
        self._next(self.rng.randint(1, 20))

    def stop(self) -> None:
        self.running = False

    def _next(self, delay_ms: int) -> None:
        if self.running:
            self.sim.queue.after(delay_ms, f"{self.node_id} produce", self._scheduled)

    def _scheduled(self) -> None:
        if self.running:
            self.send_one()

    def send_one(self, *, acks: int | None = None, partition: int | None = None) -> int | None:
        """Send one batch now; its request number (None: no leader known)."""
        retry = self.unacknowledged
        if retry is not None:
            index = retry.partition
        else:
            index = (self.rng.randrange(self.sim.world.partitions) if partition is None
                     else partition)
        leader, _, _ = _leader(self.sim.metadata_view(), index)  # type: ignore[arg-type]
        if leader < 0:
            self._next(50)
            return None
        if retry is not None:
            sent = attrs.evolve(retry, sent_ms=self.sim.now_ms)
            self.retries += 1
        else:
            sent = self._new_batch(index, acks)
            self.unacknowledged = sent if self.idempotent else None
        self._request_no += 1
        number = self._request_no
        self._waiting[number] = sent
        request = ProduceRequest(
            acks=sent.acks,
            timeout_ms=PRODUCE_TIMEOUT_MS,
            topic_data=(ProduceRequestTopic(name=TOPIC, partition_data=(ProduceRequestPartition(
                index=index, records=sent.records
            ),)),),
        )
        handle = ("client", self.node_id, number)
        broker = self.sim.brokers[leader]
        alive = broker.life()
        self.sim.send(self.node_id, leader, "Produce", lambda: self.sim.call(
            broker, "Produce", lambda core, now: core.produce(handle, request, now), alive
        ))
        self.sim.queue.after(PRODUCE_TIMEOUT_MS + 1_000, f"{self.node_id} produce timeout",
                             lambda: self._give_up(number))
        return number

    def _new_batch(self, index: int, acks: int | None) -> SentBatch:
        if self.idempotent:
            acks = -1  # enable.idempotence needs acks=all
        elif acks is None:
            acks = -1 if self.rng.random() < self.sim.world.acks_all_share else 1
        values = tuple(
            f"{self.node_id}-{self._sequence + i}".encode() for i in range(self.rng.randint(1, 3))
        )
        self._sequence += len(values)
        sequence = self._next_sequence.get(index, 0)
        if self.idempotent:
            records = [Record(offset_delta=i, value=v) for i, v in enumerate(values)]
            data = build_batch(records, producer_id=self.producer_id, producer_epoch=0,
                               base_sequence=sequence, base_timestamp=self.sim.now_ms)
        else:
            data = build_batch_from_values(values, timestamp=self.sim.now_ms)
        return SentBatch(partition=index, acks=acks, values=values, sent_ms=self.sim.now_ms,
                         records=data, base_sequence=sequence if self.idempotent else -1)

    def _give_up(self, number: int) -> None:
        if self._waiting.pop(number, None) is not None:
            self.errors += 1
            self._next(self.rng.randint(5, 50))

    def on_answer(self, number: int, leader: int, response: FetchResponse | ProduceResponse) -> None:
        sent = self._waiting.pop(number, None)
        if sent is None:
            return
        assert isinstance(response, ProduceResponse)
        (answer,) = response.responses[0].partition_responses
        self.outcomes[number] = answer.error_code
        if self.idempotent and answer.error_code in _FATAL_FOR_IDEMPOTENT:
            self.sim.checks.fail(
                f"idempotent producer {self.producer_id}'s batch of sequence "
                f"{sent.base_sequence} to partition {sent.partition} (retry {self.retries}) was "
                f"answered {Errors.from_code(answer.error_code).name} by {leader}: "
                f"{answer.error_message}"
            )
        self.sequence_refusals += answer.error_code in _SEQUENCE_REFUSALS
        if answer.error_code == Errors.NONE:
            if self.idempotent:
                self.unacknowledged = None
                self._next_sequence[sent.partition] = sent.base_sequence + len(sent.values)
            if sent.acks == -1:
                self.acked_all += 1
                self.sim.checks.acknowledged(sent, answer.base_offset, leader)
            else:
                self.acked_one += 1
        else:
            self.errors += 1
        self._next(self.rng.randint(0, 10))

    def answered(self, number: int) -> bool:
        return number not in self._waiting

    def finish_unacknowledged(self, deadline_ms: int) -> bool:
        """An idempotent producer retries its last batch until it is acknowledged (liveness:
        a retry after the faults, to whichever broker leads now)."""
        while self.unacknowledged is not None and self.sim.now_ms < deadline_ms:
            number = self.send_one()
            if number is None:
                self.sim.run_for(50)
                continue
            self.sim.run_until(partial(self.answered, number), deadline_ms - self.sim.now_ms)
            if self.unacknowledged is not None:
                self.sim.run_for(50)
        return self.unacknowledged is None

    def send_until_acknowledged(self, partition: int, deadline_ms: int) -> bool:
        """Send acks=all batches to ``partition`` until one is acknowledged (liveness)."""
        while self.sim.now_ms < deadline_ms:
            number = self.send_one(acks=-1, partition=partition)
            if number is None:
                self.sim.run_for(50)
                continue
            self.sim.run_until(partial(self.answered, number), deadline_ms - self.sim.now_ms)
            if self.outcomes.get(number) == Errors.NONE:
                return True
            self.sim.run_for(50)
        return False


class Consumer:
    def __init__(self, sim: Simulation, node_id: int) -> None:
        self.sim = sim
        self.node_id = node_id
        self.rng = random.Random(sim.rng.getrandbits(64))
        self.running = False
        self.positions = dict.fromkeys(range(sim.world.partitions), 0)
        self._request_no = 0
        self._waiting: dict[int, int] = {}
        self.batches = 0

    def start(self) -> None:
        self.running = True
        self._next(self.rng.randint(1, 50))

    def stop(self) -> None:
        self.running = False

    def _next(self, delay_ms: int) -> None:
        if self.running:
            self.sim.queue.after(delay_ms, f"{self.node_id} consume", self._scheduled)

    def _scheduled(self) -> None:
        if self.running:
            self._fetch()

    def _fetch(self) -> None:
        index = self.rng.randrange(self.sim.world.partitions)
        leader, epoch, _ = _leader(self.sim.metadata_view(), index)  # type: ignore[arg-type]
        if leader < 0:
            self._next(50)
            return
        self._request_no += 1
        number = self._request_no
        self._waiting[number] = index
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=100,
            min_bytes=1,
            max_bytes=1 << 20,
            session_id=0,
            session_epoch=-1,  # sessionless, as a client may be
            topics=(FetchRequestTopic(topic=TOPIC, partitions=(FetchRequestPartition(
                partition=index,
                current_leader_epoch=epoch,
                fetch_offset=self.positions[index],
                partition_max_bytes=2048,
            ),)),),
        )
        handle = ("client", self.node_id, number)
        broker = self.sim.brokers[leader]
        alive = broker.life()
        self.sim.send(self.node_id, leader, "consumer Fetch", lambda: self.sim.call(
            broker, "consumer Fetch", lambda core, now: core.fetch(handle, request, 12, now), alive
        ))
        self.sim.queue.after(1_000, f"{self.node_id} fetch timeout", lambda: self._give_up(number))

    def _give_up(self, number: int) -> None:
        if self._waiting.pop(number, None) is not None:
            self._next(10)

    def on_answer(self, number: int, leader: int, response: FetchResponse | ProduceResponse) -> None:
        index = self._waiting.pop(number, None)
        if index is None:
            return
        assert isinstance(response, FetchResponse)
        for topic in response.responses:
            for answer in topic.partitions:
                if answer.error_code == Errors.NONE:
                    end = self.sim.checks.consumed(index, answer, self.positions[index])
                    self.batches += end != self.positions[index]
                    self.positions[index] = end
        self._next(self.rng.randint(1, 30))
