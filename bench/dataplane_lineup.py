"""The data-plane bench's workload and phases, with no I/O: what each load process is told.

``produce_phase``, ``latency_phase`` and ``consume_phase`` turn a
``DataPlaneWorkload`` into a ``bench.nats_lineup.PhasePlan`` of argument lists
for ``bench.dataplane_load`` processes, which ``bench.nats_phases.run_phase``
starts, lines up and adds up (``PhaseResult``), as for the NATS peer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

import attrs

from bench.nats_figures import ThroughputFigures
from bench.nats_lineup import PhasePlan

__all__ = [
    "ACK_LEVELS",
    "IDEMPOTENCE_PAIR",
    "JAVA_IDEMPOTENCE_PAIR",
    "DataPlaneWorkload",
    "consume_phase",
    "java_producer_props",
    "java_records",
    "latency_phase",
    "partition_shares",
    "produce_phase",
]

# librdkafka's acks values, in the order the report lists them
ACK_LEVELS: Final = ("all", "1", "0")
# --idempotence-pair: acks=all with librdkafka's idempotent producer (which caps
# max.in.flight at 5), the same without idempotence at librdkafka's default in-flight limit
# (the produce acks=all phase's settings), and without idempotence at 5 in flight, so that
# what the broker's sequence checks cost can be told from what the client's cap costs.
# name -> (enable.idempotence, max.in.flight or None for librdkafka's default)
IDEMPOTENCE_PAIR: Final = {"on": (True, None), "off": (False, None),
                           "off, max.in.flight=5": (False, 5)}
# the Java client's pair (kafka-producer-perf-test); max.in.flight is its default, 5
JAVA_IDEMPOTENCE_PAIR: Final = ("on", "off")
# the perf test's buffer: the JVM runs with its script's -Xmx512M, so less than librdkafka's
_JAVA_BUFFER_BYTES: Final = 256 * 1024 * 1024
# at least this many records per Java phase, however slow the librdkafka phase was
_JAVA_MIN_RECORDS: Final = 50_000
# the load processes stop themselves at their own bound; this covers drain and close
_CONSUME_BOUND_S: Final = 120.0


@attrs.frozen(kw_only=True)
class DataPlaneWorkload:
    record_bytes: int = 1024
    partitions: int = 6
    replication_factor: int = 3
    min_insync_replicas: int = 2
    produce_processes: int = 2
    produce_seconds: float = 10.0
    produce_messages: int = 10_000_000
    produce_warmup: int = 2_000
    # a throughput user's batching: librdkafka's default batch.size (1,000,000) is already
    # large; linger.ms 10 (its default is 5) lets each batch fill at these rates
    linger_ms: int = 10
    batch_bytes: int = 1_000_000
    latency_messages: int = 2_000
    latency_warmup: int = 200
    latency_seconds: float = 60.0
    consume_processes: int = 2
    # fetch sizes a throughput user sets: 8 MiB per partition, 50 MiB per request
    # (librdkafka's default), at least 1 MiB per response or 100 ms
    fetch_max_bytes: int = 52_428_800
    partition_fetch_bytes: int = 8_388_608
    fetch_min_bytes: int = 1_048_576
    consume_seconds: float = _CONSUME_BOUND_S

    def settings(self) -> dict[str, str]:
        """The client settings the report states (producer and consumer)."""
        return {
            "producer": (f"linger.ms={self.linger_ms}, batch.size={self.batch_bytes}, "
                         "compression.type=none, enable.idempotence=false"),
            "latency producer": "linger.ms=0, one record at a time",
            "consumer": (f"fetch.max.bytes={self.fetch_max_bytes}, max.partition.fetch.bytes="
                         f"{self.partition_fetch_bytes}, fetch.min.bytes={self.fetch_min_bytes}, "
                         f"fetch.wait.max.ms=100, fetch.queue.backoff.ms={CONSUMER_QUEUE_BACKOFF_MS}, "
                         "consume() of 10,000"),
        }


# librdkafka stops fetching a partition whose local queue is over its thresholds and, by
# default, looks again only 1,000 ms later (fetch.queue.backoff.ms): against a broker that
# answers faster than the application drains its queue, the consumer then idles for most of
# that second (traced: 8 MB fetches sent in 10-30 ms, then gaps of 1,010-1,020 ms before the
# next fetch on the same connection; 460-560 MB/s with the consumers 25-40% busy, 1,450-1,570
# MB/s at 10 ms). The bench measures the servers, not that pause: both clusters get 10 ms.
CONSUMER_QUEUE_BACKOFF_MS = 10


def _common(bootstrap: str, topic: str, workload: DataPlaneWorkload) -> tuple[str, ...]:
    return ("--bootstrap", bootstrap, "--topic", topic, "--size", str(workload.record_bytes))


def produce_phase(workload: DataPlaneWorkload, acks: str, bootstrap: str, topic: str, *,
                  idempotence: bool = False, max_in_flight: int | None = None) -> PhasePlan:
    if acks not in ACK_LEVELS:
        raise ValueError(f"acks is one of {ACK_LEVELS}, not {acks!r}")
    if idempotence and acks != "all":
        # librdkafka refuses an idempotent producer at any other acks
        raise ValueError(f"an idempotent producer needs acks=all, not {acks!r}")
    args: tuple[str, ...] = (
        *_common(bootstrap, topic, workload), "--acks", acks,
        "--linger-ms", str(workload.linger_ms), "--batch-bytes", str(workload.batch_bytes),
        "--messages", str(workload.produce_messages),
        "--seconds", str(workload.produce_seconds), "--warmup", str(workload.produce_warmup))
    if idempotence:
        args += ("--idempotence",)
    if max_in_flight is not None:
        args += ("--max-in-flight", str(max_in_flight))
    return PhasePlan(kind="produce", process_args=(args,) * workload.produce_processes,
                     bound_s=workload.produce_seconds)


def latency_phase(workload: DataPlaneWorkload, acks: str, bootstrap: str, topic: str,
                  partition: int = 0) -> PhasePlan:
    # one process: sequential records are the point
    args = (*_common(bootstrap, topic, workload), "--acks", acks,
            "--partition", str(partition), "--messages", str(workload.latency_messages),
            "--seconds", str(workload.latency_seconds), "--warmup", str(workload.latency_warmup))
    return PhasePlan(kind="latency", process_args=(args,), bound_s=workload.latency_seconds)


def partition_shares(end_offsets: Mapping[int, int], processes: int
                     ) -> list[dict[int, int]]:
    """Partitions dealt to at most ``processes`` consumers, largest first to the least
    loaded, so that each reads about as many records; empty partitions are left out."""
    if processes < 1:
        raise ValueError(f"at least one consumer process, not {processes}")
    filled = sorted(((end, p) for p, end in end_offsets.items() if end > 0), reverse=True)
    shares: list[dict[int, int]] = [{} for _ in range(min(processes, len(filled)))]
    for end, partition in filled:
        lightest = min(shares, key=lambda share: sum(share.values()))
        lightest[partition] = end
    return shares


def consume_phase(workload: DataPlaneWorkload, end_offsets: Mapping[int, int], bootstrap: str,
                  topic: str) -> PhasePlan:
    shares = partition_shares(end_offsets, workload.consume_processes)
    if not shares:
        raise ValueError("the topic holds no records to consume")
    per_process: list[Sequence[str]] = []
    for share in shares:
        partitions = sorted(share)
        per_process.append((
            *_common(bootstrap, topic, workload),
            "--partitions", ",".join(map(str, partitions)),
            "--end-offsets", ",".join(str(share[p]) for p in partitions),
            "--fetch-max-bytes", str(workload.fetch_max_bytes),
            "--partition-fetch-bytes", str(workload.partition_fetch_bytes),
            "--fetch-min-bytes", str(workload.fetch_min_bytes),
            "--seconds", str(workload.consume_seconds)))
    return PhasePlan(kind="consume", process_args=tuple(tuple(a) for a in per_process),
                     bound_s=workload.consume_seconds)


def phase_log_dir(base: Path, label: str) -> Path:
    return base / "load" / label.replace(" ", "-").replace("=", "")


def java_producer_props(workload: DataPlaneWorkload, idempotence: bool) -> dict[str, str]:
    """The perf test's producer settings: the librdkafka produce phases' batching, acks=all,
    and idempotence on or off (the Java client's default is on)."""
    return {"acks": "all", "enable.idempotence": "true" if idempotence else "false",
            "linger.ms": str(workload.linger_ms), "batch.size": str(workload.batch_bytes),
            "compression.type": "none", "buffer.memory": str(_JAVA_BUFFER_BYTES)}


def java_records(off: ThroughputFigures, workload: DataPlaneWorkload) -> int:
    """Records for one Java phase: what the librdkafka idempotence-off phase produced in
    a phase's seconds, so that the Java phases last about as long (the perf test has no
    time bound of its own)."""
    per_s = off.mb_per_s * 1e6 / workload.record_bytes
    return max(_JAVA_MIN_RECORDS, int(per_s * workload.produce_seconds))
