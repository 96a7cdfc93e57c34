"""The data plane's metrics, with Kafka's names in Prometheus' style.

Counted as requests pass through the replica driver (``DataPlaneCounters``):
Kafka's ``BrokerTopicMetrics`` (bytes and messages in, bytes out, produce and
fetch requests; totals, as Prometheus counters: a scraper derives the rates
Kafka's ``...PerSec`` meters report), ``ReplicaManager`` ISR shrinks and
expands (counted when the leader asks the controller for the change), and
``RequestMetrics`` total time of Produce and Fetch (quantiles over the last
minute; a long-poll fetch counts its wait, as in Kafka). Counted over the
replica core's partitions at scrape time (``PartitionCensus``, fed a slice of
partitions at a time by the replica driver, so a scrape of a broker hosting
100,000 replicas never holds the event loop for the whole walk): partitions
hosted and led, under-replicated partitions (led here with an ISR smaller than
the replica set), under-min-ISR partitions, and the size of the partition logs,
per topic (a per-partition series would be 100,000 series on a large broker).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable
from typing import Final

import attrs

from broker.replica.manager import PartitionKey
from broker.replica.partition import Partition
from quorum.metrics.exposition import Family, Sample, gauge
from quorum.wire.messages import AlterPartitionRequest, FetchResponse, ProduceRequest

__all__ = ["DataPlaneCounters", "PartitionCensus", "batch_counts", "data_plane_families"]

_QUANTILES: Final = (0.5, 0.99, 0.999)
_RESERVOIR: Final = 4_096
_WINDOW_MS: Final = 60_000
# record batch v2: batchLength at bytes 8-12 counts from byte 12; recordCount at 57-61
_LENGTH_AT: Final = 8
_HEADER_BEFORE_LENGTH: Final = 12
_COUNT_AT: Final = 57


def batch_counts(records: bytes | bytearray | memoryview | None) -> tuple[int, int]:
    """(bytes, records) of v2 batches, from their headers only (a torn tail counts as bytes)."""
    if not records:
        return 0, 0
    view = memoryview(records)
    size = len(view)
    count = 0
    position = 0
    while position + _COUNT_AT + 4 <= size:
        length = int.from_bytes(view[position + _LENGTH_AT:position + _HEADER_BEFORE_LENGTH], "big",
                                signed=True)
        if length <= 0:
            break
        count += int.from_bytes(view[position + _COUNT_AT:position + _COUNT_AT + 4], "big",
                                signed=True)
        position += _HEADER_BEFORE_LENGTH + length
    return size, count


class _LatencyWindow:
    """The request times of the last minute (at most ``_RESERVOIR`` kept, newest first)."""

    def __init__(self) -> None:
        self._samples: collections.deque[tuple[int, float]] = collections.deque(maxlen=_RESERVOIR)
        self.count = 0
        self.total_ms = 0.0

    def record(self, now_ms: int, took_ms: float) -> None:
        self._samples.append((now_ms, took_ms))
        self.count += 1
        self.total_ms += took_ms

    def quantiles(self, now_ms: int) -> list[tuple[float, float]]:
        recent = sorted(took for at, took in self._samples if now_ms - at <= _WINDOW_MS)
        if not recent:
            return [(q, float("nan")) for q in _QUANTILES]
        return [(q, recent[min(len(recent) - 1, int(q * len(recent)))]) for q in _QUANTILES]


@attrs.define
class DataPlaneCounters:
    bytes_in: int = 0
    messages_in: int = 0
    bytes_out: int = 0
    produce_requests: int = 0
    fetch_requests: int = 0
    isr_shrinks: int = 0
    isr_expands: int = 0
    produce_time: _LatencyWindow = attrs.field(factory=_LatencyWindow)
    fetch_time: _LatencyWindow = attrs.field(factory=_LatencyWindow)

    def produced(self, request: ProduceRequest) -> None:
        self.produce_requests += 1
        for topic in request.topic_data:
            for partition in topic.partition_data:
                size, count = batch_counts(partition.records)
                self.bytes_in += size
                self.messages_in += count

    def fetched(self, response: FetchResponse) -> None:
        for topic in response.responses:
            for partition in topic.partitions:
                if partition.records:
                    self.bytes_out += len(partition.records)

    def isr_change_asked(
        self, request: AlterPartitionRequest, current: Callable[[PartitionKey], int | None]
    ) -> None:
        """Count each partition's proposed ISR against its current size (shrink or expand)."""
        for topic in request.topics:
            for partition in topic.partitions:
                proposed = len(partition.new_isr_with_epochs) or len(partition.new_isr)
                before = current(PartitionKey(topic.topic_id, partition.partition_index))
                if before is None or proposed == before:
                    continue
                if proposed < before:
                    self.isr_shrinks += 1
                else:
                    self.isr_expands += 1


def _counter(name: str, help_text: str, value: float) -> Family:
    return Family(name, help_text, (Sample({}, value),), type="counter")


def _summary(name: str, help_text: str, window: _LatencyWindow, now_ms: int,
             **labels: str) -> list[Sample]:
    samples = [Sample({**labels, "quantile": str(q)}, v) for q, v in window.quantiles(now_ms)]
    samples.append(Sample(labels, window.total_ms, suffix="_sum"))
    samples.append(Sample(labels, window.count, suffix="_count"))
    return samples


@attrs.define
class PartitionCensus:
    """What the gauges count over the hosted partitions, added a slice at a time."""

    hosted: int = 0
    led: int = 0
    under_replicated: int = 0
    under_min_isr: int = 0
    log_sizes: dict[str, int] = attrs.field(factory=lambda: collections.defaultdict(int))

    def add(self, partitions: Iterable[Partition]) -> None:
        for partition in partitions:
            self.hosted += 1
            if partition.has_log:
                size = getattr(partition.log, "size_in_bytes", None)
                if isinstance(size, int):
                    self.log_sizes[partition.topic] += size
            if not partition.is_leader:
                continue
            self.led += 1
            if len(partition.isr_state.isr) < len(partition.followers) + 1:
                self.under_replicated += 1
            if partition.is_under_min_isr:
                self.under_min_isr += 1


def data_plane_families(
    census: PartitionCensus, counters: DataPlaneCounters, now_ms: int
) -> list[Family]:
    return [
        gauge("kafka_server_replicamanager_partitioncount", "Partitions hosted here.",
              census.hosted),
        gauge("kafka_server_replicamanager_leadercount", "Partitions led here.", census.led),
        gauge("kafka_server_replicamanager_underreplicatedpartitions",
              "Partitions led here whose ISR is smaller than their replica set.",
              census.under_replicated),
        gauge("kafka_server_replicamanager_underminisrpartitioncount",
              "Partitions led here whose ISR is below min.insync.replicas.", census.under_min_isr),
        _counter("kafka_server_replicamanager_isrshrinks_total",
                 "ISR shrinks this broker asked the controller for.", counters.isr_shrinks),
        _counter("kafka_server_replicamanager_isrexpands_total",
                 "ISR expansions this broker asked the controller for.", counters.isr_expands),
        _counter("kafka_server_brokertopicmetrics_bytesin_total",
                 "Bytes of record batches produced to this broker.", counters.bytes_in),
        _counter("kafka_server_brokertopicmetrics_messagesin_total",
                 "Records produced to this broker.", counters.messages_in),
        _counter("kafka_server_brokertopicmetrics_bytesout_total",
                 "Bytes of record batches fetched from this broker (consumers and followers).",
                 counters.bytes_out),
        _counter("kafka_server_brokertopicmetrics_totalproducerequests_total",
                 "Produce requests received.", counters.produce_requests),
        _counter("kafka_server_brokertopicmetrics_totalfetchrequests_total",
                 "Fetch requests received (consumers and followers).", counters.fetch_requests),
        Family("kafka_network_requestmetrics_totaltimems",
               "Time from a request's arrival to its answer, ms (last minute's quantiles).",
               (*_summary("", "", counters.produce_time, now_ms, request="Produce"),
                *_summary("", "", counters.fetch_time, now_ms, request="Fetch")),
               type="summary"),
        Family("kafka_log_log_size", "Bytes of the partition logs hosted here, per topic.",
               tuple(Sample({"topic": topic}, size)
                     for topic, size in sorted(census.log_sizes.items()))),
    ]
