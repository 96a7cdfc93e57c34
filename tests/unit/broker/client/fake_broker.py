"""A test double of the brokers' data plane, on real loopback sockets.

Brokers in this checkout do not serve Produce, Fetch or ListOffsets yet, so
the client's trio shells are tested against this: ``FakeCluster`` holds
in-memory partition logs (encoded v2 batches, base offset and leader epoch
rewritten on append, as a broker does) and ``FakeBroker``s that decode real
requests with ``quorum.wire`` and answer with real response messages. Only
what the tests need: one leader for every partition (``leader_id``),
ApiVersions, Metadata, Produce (acks 0 answers nothing), Fetch (whole
batches from the one holding the offset; an empty answer after a short
wait), ListOffsets (earliest, latest), InitProducerId (ids counting up
from 1000, epoch 0). Idempotent batches are checked as Kafka's
ProducerStateManager checks them, in little: per producer id and partition
the epoch and the last five batches' sequences; a retry of one of those is
answered with its original offset and not appended again, a gap is
OUT_OF_ORDER_SEQUENCE_NUMBER, an older epoch INVALID_PRODUCER_EPOCH, a newer
one must start at sequence 0, and an unknown producer id may start anywhere.
Tests steer it through ``inject`` (error codes to answer next, per API and
partition), ``hang_up`` (close the connection instead of answering),
``lose_answer`` (carry the request out, then close the connection instead
of answering) and the fields. It checks nothing a real broker checks
beyond what a test asserts.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Final

import attrs
import trio

from quorum.wire.batch import (
    BatchHeader,
    iter_batch_headers,
    set_base_offset,
    set_partition_leader_epoch,
)
from quorum.wire.error_codes import Errors
from quorum.wire.framing import FrameDecoder
from quorum.wire.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
    FetchRequest,
    FetchResponse,
    FetchResponsePartition,
    FetchResponseTopic,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsResponsePartition,
    ListOffsetsResponseTopic,
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
    ProduceRequest,
    ProduceResponse,
    ProduceResponsePartition,
    ProduceResponseTopic,
)
from quorum.wire.protocol import ResponseHeader, decode_request, encode_response

__all__ = [
    "FETCH", "INIT_PRODUCER_ID", "LIST_OFFSETS", "METADATA", "PRODUCE", "FakeBroker",
    "FakeCluster",
]

PRODUCE, FETCH, LIST_OFFSETS, METADATA, INIT_PRODUCER_ID = 0, 1, 2, 3, 22
TABLE: Final = {0: (3, 9), 1: (4, 12), 2: (1, 7), 3: (0, 12), 18: (0, 4), 22: (0, 4)}
_KEPT_BATCHES: Final = 5  # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN
_NO_ANSWER: Final = object()


@attrs.define
class PartitionLog:
    batches: list[bytearray] = attrs.field(factory=list)
    end_offset: int = 0
    start_offset: int = 0

    def append(self, batch: bytes, epoch: int) -> int:
        data = bytearray(batch)
        base = self.end_offset
        for pos, header in list(iter_batch_headers(data)):
            set_base_offset(data, pos, self.end_offset)
            set_partition_leader_epoch(data, pos, epoch)
            self.end_offset += header.last_offset_delta + 1
        self.batches.append(data)
        return base

    def read(self, offset: int, max_bytes: int) -> bytes:
        out = bytearray()
        for data in self.batches:
            for pos, header in iter_batch_headers(data, check_crc=False):
                if header.next_offset <= offset:
                    continue
                if out and len(out) + header.size > max_bytes:
                    return bytes(out)
                out += data[pos : pos + header.size]
        return bytes(out)


@attrs.define
class ProducerState:
    """One producer's epoch and last batches on one partition: (first seq, last seq, offset)."""

    epoch: int
    batches: deque[tuple[int, int, int]] = attrs.field(
        factory=lambda: deque(maxlen=_KEPT_BATCHES)
    )

    def check(self, header: BatchHeader) -> tuple[Errors, int]:
        """The verdict on a batch, and the base offset it was appended at if a duplicate."""
        first = header.base_sequence
        last = first + header.last_offset_delta
        if header.producer_epoch < self.epoch:
            return Errors.INVALID_PRODUCER_EPOCH, -1
        if header.producer_epoch > self.epoch:
            return (Errors.NONE if first == 0 else Errors.OUT_OF_ORDER_SEQUENCE_NUMBER), -1
        for kept_first, kept_last, offset in self.batches:
            if (kept_first, kept_last) == (first, last):
                return Errors.NONE, offset
        if self.batches and first != self.batches[-1][1] + 1:
            return Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, -1
        return Errors.NONE, -1

    def appended(self, header: BatchHeader, base_offset: int) -> None:
        if header.producer_epoch != self.epoch:
            self.epoch = header.producer_epoch
            self.batches.clear()
        first = header.base_sequence
        self.batches.append((first, first + header.last_offset_delta, base_offset))


class FakeCluster:
    def __init__(self, topics: dict[str, int], *, brokers: int = 1) -> None:
        self.partitions = {t: n for t, n in topics.items()}
        self.logs = {(t, p): PartitionLog() for t, n in topics.items() for p in range(n)}
        self.brokers = [FakeBroker(self, node_id) for node_id in range(1, brokers + 1)]
        self.leader_id = 1
        self.leader_epoch = 5
        # api key -> (topic, partition) or None (every partition) -> codes to answer next
        self.injected: dict[tuple[int, tuple[str, int] | None], deque[Errors]] = {}
        # api keys whose next request gets the connection closed instead of an answer
        self.hang_up: set[int] = set()
        # api keys whose next request is carried out, then its answer lost
        self.lose_answer: set[int] = set()
        # a Produce waits this long before it is carried out (requests pile up in flight)
        self.produce_delay_s = 0.0
        self.produce_answers: list[Errors] = []  # every partition's answer, in order
        self.next_producer_id = 1000
        self.producers: dict[tuple[int, tuple[str, int]], ProducerState] = {}
        self.requests: list[tuple[int, int, int, Any]] = []  # (broker, api key, version, message)

    async def start(self, nursery: trio.Nursery) -> list[int]:
        return [await broker.start(nursery) for broker in self.brokers]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{b.port}" for b in self.brokers)

    def inject(self, api_key: int, *codes: Errors, tp: tuple[str, int] | None = None) -> None:
        self.injected.setdefault((api_key, tp), deque()).extend(codes)

    def next_error(self, api_key: int, tp: tuple[str, int]) -> Errors:
        for key in ((api_key, tp), (api_key, None)):
            queue = self.injected.get(key)
            if queue:
                return queue.popleft()
        return Errors.NONE

    def seen(self, api_key: int) -> list[Any]:
        return [message for _, key, _, message in self.requests if key == api_key]


class FakeBroker:
    def __init__(self, cluster: FakeCluster, node_id: int) -> None:
        self.cluster = cluster
        self.node_id = node_id
        self.port = 0

    async def start(self, nursery: trio.Nursery) -> int:
        listeners = await nursery.start(partial(trio.serve_tcp, self._handle, 0, host="127.0.0.1"))
        self.port = listeners[0].socket.getsockname()[1]
        return self.port

    async def _handle(self, stream: trio.SocketStream) -> None:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await self._serve(stream)

    async def _serve(self, stream: trio.SocketStream) -> None:
        decoder = FrameDecoder()
        async with stream:
            while data := await stream.receive_some(1 << 20):
                decoder.feed(data)
                while (frame := decoder.next_frame()) is not None:
                    header, message = decode_request(frame)
                    self.cluster.requests.append(
                        (self.node_id, header.api_key, header.api_version, message)
                    )
                    if header.api_key in self.cluster.hang_up:
                        self.cluster.hang_up.discard(header.api_key)
                        return
                    answer = await self._answer(message)
                    if header.api_key in self.cluster.lose_answer:
                        self.cluster.lose_answer.discard(header.api_key)
                        return
                    if answer is _NO_ANSWER:
                        continue
                    await stream.send_all(encode_response(
                        ResponseHeader(header.correlation_id), header.api_key,
                        header.api_version, answer,
                    ))

    async def _answer(self, message: Any) -> Any:
        handlers: dict[type, Callable[[Any], Awaitable[Any]]] = {
            ApiVersionsRequest: self._api_versions,
            MetadataRequest: self._metadata,
            ProduceRequest: self._produce,
            FetchRequest: self._fetch,
            ListOffsetsRequest: self._list_offsets,
            InitProducerIdRequest: self._init_producer_id,
        }
        return await handlers[type(message)](message)

    async def _api_versions(self, _message: ApiVersionsRequest) -> ApiVersionsResponse:
        return ApiVersionsResponse(api_keys=tuple(
            ApiVersionsResponseApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in TABLE.items()
        ))

    async def _metadata(self, message: MetadataRequest) -> MetadataResponse:
        cluster = self.cluster
        names = (
            list(cluster.partitions) if message.topics is None
            else [t.name for t in message.topics if t.name]
        )
        topics = []
        for name in names:
            count = cluster.partitions.get(name)
            if count is None:
                topics.append(MetadataResponseTopic(
                    name=name, error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION
                ))
                continue
            replicas = tuple(b.node_id for b in cluster.brokers)
            topics.append(MetadataResponseTopic(name=name, partitions=tuple(
                MetadataResponsePartition(
                    partition_index=p, leader_id=cluster.leader_id,
                    leader_epoch=cluster.leader_epoch, replica_nodes=replicas, isr_nodes=replicas,
                )
                for p in range(count)
            )))
        return MetadataResponse(
            brokers=tuple(
                MetadataResponseBroker(node_id=b.node_id, host="127.0.0.1", port=b.port)
                for b in cluster.brokers
            ),
            cluster_id="fake-cluster",
            controller_id=cluster.brokers[0].node_id,
            topics=tuple(topics),
        )

    def _error_for(self, api_key: int, tp: tuple[str, int]) -> Errors:
        if tp not in self.cluster.logs:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        if self.node_id != self.cluster.leader_id:
            return Errors.NOT_LEADER_OR_FOLLOWER
        return self.cluster.next_error(api_key, tp)

    async def _produce(self, message: ProduceRequest) -> Any:
        if self.cluster.produce_delay_s:
            await trio.sleep(self.cluster.produce_delay_s)
        topics = []
        for topic in message.topic_data:
            parts = []
            for part in topic.partition_data:
                tp = (topic.name, part.index)
                error = self._error_for(PRODUCE, tp)
                base = -1
                if error is Errors.NONE and part.records is not None:
                    error, base = self._append(tp, part.records)
                self.cluster.produce_answers.append(error)
                parts.append(ProduceResponsePartition(
                    index=part.index, error_code=error, base_offset=base,
                ))
            topics.append(ProduceResponseTopic(name=topic.name, partition_responses=tuple(parts)))
        if message.acks == 0:
            return _NO_ANSWER
        return ProduceResponse(responses=tuple(topics))

    def _append(self, tp: tuple[str, int], records: bytes) -> tuple[Errors, int]:
        """Append one batch unless its producer state refuses it or it is a duplicate."""
        [(_, header)] = list(iter_batch_headers(records))
        state = None
        if header.producer_id >= 0:
            key = (header.producer_id, tp)
            state = self.cluster.producers.setdefault(key, ProducerState(header.producer_epoch))
            error, duplicate_at = state.check(header)
            if error is not Errors.NONE or duplicate_at >= 0:
                return error, duplicate_at
        base = self.cluster.logs[tp].append(records, self.cluster.leader_epoch)
        if state is not None:
            state.appended(header, base)
        return Errors.NONE, base

    async def _init_producer_id(self, _message: InitProducerIdRequest) -> InitProducerIdResponse:
        error = self.cluster.next_error(INIT_PRODUCER_ID, ("", -1))
        if error is not Errors.NONE:
            return InitProducerIdResponse(error_code=error)
        self.cluster.next_producer_id += 1
        return InitProducerIdResponse(producer_id=self.cluster.next_producer_id, producer_epoch=0)

    async def _fetch(self, message: FetchRequest) -> FetchResponse:
        answer = self._fetch_once(message)
        if not any(p.records for t in answer.responses for p in t.partitions):
            # a long poll, kept short: the tests poll with deadlines
            await trio.sleep(min(message.max_wait_ms, 20) / 1000)
            answer = self._fetch_once(message)
        return answer

    def _fetch_once(self, message: FetchRequest) -> FetchResponse:
        topics = []
        for topic in message.topics:
            parts = []
            for part in topic.partitions:
                tp = (topic.topic, part.partition)
                error = self._error_for(FETCH, tp)
                log = self.cluster.logs.get(tp)
                if log is not None and error is Errors.NONE and not (
                    log.start_offset <= part.fetch_offset <= log.end_offset
                ):
                    error = Errors.OFFSET_OUT_OF_RANGE
                records = None
                if error is Errors.NONE and log is not None:
                    records = log.read(part.fetch_offset, part.partition_max_bytes) or None
                parts.append(FetchResponsePartition(
                    partition_index=part.partition, error_code=error,
                    high_watermark=-1 if log is None else log.end_offset,
                    last_stable_offset=-1 if log is None else log.end_offset,
                    log_start_offset=-1 if log is None else log.start_offset,
                    records=records,
                ))
            topics.append(FetchResponseTopic(topic=topic.topic, partitions=tuple(parts)))
        return FetchResponse(responses=tuple(topics))

    async def _list_offsets(self, message: ListOffsetsRequest) -> ListOffsetsResponse:
        topics = []
        for topic in message.topics:
            parts = []
            for part in topic.partitions:
                tp = (topic.name, part.partition_index)
                error = self._error_for(LIST_OFFSETS, tp)
                offset = -1
                if error is Errors.NONE:
                    log = self.cluster.logs[tp]
                    offset = log.start_offset if part.timestamp == -2 else log.end_offset
                parts.append(ListOffsetsResponsePartition(
                    partition_index=part.partition_index, error_code=error, offset=offset,
                    timestamp=-1, leader_epoch=self.cluster.leader_epoch,
                ))
            topics.append(ListOffsetsResponseTopic(name=topic.name, partitions=tuple(parts)))
        return ListOffsetsResponse(topics=tuple(topics))
