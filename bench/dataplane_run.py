"""One cluster's pass through the data-plane bench's phases, whichever Kafka it is.

``PhaseRunner`` runs each phase (``bench.dataplane_lineup``'s plans, lined up by
``bench.nats_phases.run_phase``) against a bootstrap and reads the servers' CPU from
their PIDs; ``run_phases`` runs the bench's sequence, so that pykraft's cluster
(``deploy.LocalCluster``) and Apache Kafka's (``deploy.kafka_cluster.KafkaCluster``)
see exactly the same phases and load. ``server_pids`` names the processes as the
report does: ``broker-N``, ``controller-N``.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Final

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from bench.dataplane_figures import DataPlaneRun
from bench.dataplane_lineup import (
    ACK_LEVELS,
    IDEMPOTENCE_PAIR,
    JAVA_IDEMPOTENCE_PAIR,
    DataPlaneWorkload,
    consume_phase,
    java_producer_props,
    java_records,
    latency_phase,
    phase_log_dir,
    produce_phase,
)
from bench.dataplane_report import idempotence_label
from bench.java_producer_load import run_java_consume, run_java_produce
from bench.nats_figures import LatencyFigures, ThroughputFigures
from bench.nats_lineup import PhasePlan, PhaseResult
from bench.nats_phases import latency_figures, run_phase, throughput_figures
from deploy.kafka import KafkaDistribution

__all__ = [
    "PROFILED",
    "TOPIC",
    "PhaseRunner",
    "create_topic",
    "end_offsets",
    "run_phases",
    "server_pids",
    "wait_for_leaders",
]

TOPIC: Final = "bench"
_LOAD: Final = "bench.dataplane_load"
_TIMEOUT_S: Final = 60.0
# the phases sampled by --profile: throughput (the issue asks) and one record at a time
PROFILED: Final = ("produce acks=all", "latency acks=all", "consume")


def server_pids(controllers: Iterable[int], brokers: Iterable[int],
                pid: Callable[[int], int]) -> dict[str, int]:
    """The servers' PIDs under the names the report uses (``broker-N``, ``controller-N``)."""
    return {**{f"controller-{n}": pid(n) for n in controllers},
            **{f"broker-{n}": pid(n) for n in brokers}}


class PhaseRunner:
    """One cluster and its topic: each phase run against them."""

    def __init__(self, bootstrap: str, pids: Mapping[str, int], workload: DataPlaneWorkload,
                 base: Path, *, profile_dir: Path | None = None, profile_pid: int = 0,
                 profile_name: str = "broker") -> None:
        self.bootstrap = bootstrap
        self.pids = dict(pids)
        self.workload = workload
        self.base = base
        self.profile_dir = profile_dir
        self.profile_pid = profile_pid
        self.profile_name = profile_name

    def phase(self, plan: PhasePlan, label: str) -> PhaseResult:
        profiler: list[subprocess.Popen[bytes]] = []
        on_go = None
        if self.profile_dir is not None and label in PROFILED:
            on_go = lambda: profiler.append(self._sample(label))  # noqa: E731
        try:
            return run_phase(plan, server_pids=self.pids, log_dir=phase_log_dir(self.base, label),
                             module=_LOAD, on_go=on_go)
        finally:
            for sampler in profiler:
                _stop_sampler(sampler)

    def _sample(self, label: str) -> subprocess.Popen[bytes]:
        """py-spy on one broker until the phase ends (SIGINT makes it write)."""
        assert self.profile_dir is not None
        out = self.profile_dir / (f"{label.replace(' ', '-').replace('=', '')}-"
                                  f"{self.profile_name}.txt")
        return subprocess.Popen(
            [str(Path(sys.executable).parent / "py-spy"), "record", "--pid",
             str(self.profile_pid), "--format", "raw", "--nonblocking",
             "--rate", "200", "--output", str(out)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def produce(self, acks: str) -> ThroughputFigures:
        result = self.phase(produce_phase(self.workload, acks, self.bootstrap, TOPIC),
                            f"produce acks={acks}")
        return throughput_figures(result)

    def produce_idempotence(self, name: str) -> ThroughputFigures:
        """One phase of the idempotence pair: acks=all, idempotence on or off."""
        idempotence, max_in_flight = IDEMPOTENCE_PAIR[name]
        plan = produce_phase(self.workload, "all", self.bootstrap, TOPIC,
                             idempotence=idempotence, max_in_flight=max_in_flight)
        return throughput_figures(self.phase(plan, idempotence_label(name)))

    def produce_java(self, label: str, distribution: KafkaDistribution, records: int,
                     idempotence: bool) -> ThroughputFigures:
        """kafka-producer-perf-test at acks=all with the librdkafka phases' batching."""
        result = run_java_produce(
            distribution, self.bootstrap, TOPIC, records=records,
            record_bytes=self.workload.record_bytes,
            producer_props=java_producer_props(self.workload, idempotence),
            server_pids=self.pids, log_dir=phase_log_dir(self.base, label))
        return throughput_figures(result)

    def consume_java(self, label: str, distribution: KafkaDistribution) -> ThroughputFigures:
        """kafka-consumer-perf-test of the whole topic at the tool's defaults."""
        records = sum(end_offsets(self.bootstrap, self.workload.partitions).values())
        result = run_java_consume(
            distribution, self.bootstrap, TOPIC, records=records,
            record_bytes=self.workload.record_bytes, server_pids=self.pids,
            log_dir=phase_log_dir(self.base, label))
        return throughput_figures(result)

    def latency(self, acks: str) -> LatencyFigures:
        result = self.phase(latency_phase(self.workload, acks, self.bootstrap, TOPIC),
                            f"latency acks={acks}")
        return latency_figures(result)

    def consume(self) -> ThroughputFigures:
        ends = end_offsets(self.bootstrap, self.workload.partitions)
        result = self.phase(consume_phase(self.workload, ends, self.bootstrap, TOPIC), "consume")
        if result.messages != sum(ends.values()):
            raise RuntimeError(f"consumed {result.messages} of {sum(ends.values())} records")
        return throughput_figures(result)


def _stop_sampler(sampler: subprocess.Popen[bytes]) -> None:
    if sampler.poll() is None:
        sampler.send_signal(signal.SIGINT)
    try:
        sampler.wait(timeout=30)
    except subprocess.TimeoutExpired:
        sampler.kill()
        sampler.wait()


def run_phases(runner: PhaseRunner, *, idempotence_pair: bool = False,
               java: KafkaDistribution | None = None, perf_tools: KafkaDistribution | None = None,
               perf_records: int = 0) -> DataPlaneRun:
    """The bench's phases in order against a cluster whose topic is made and led:
    produce at each acks, the idempotence pairs, the producer perf test, latency at each
    acks, consume, the consumer perf test (the perf tools only with ``perf_tools``)."""
    workload = runner.workload
    produce = {acks: runner.produce(acks) for acks in ACK_LEVELS}
    # right after the produce phases, on the same cluster and topic
    idempotence = ({name: runner.produce_idempotence(name) for name in IDEMPOTENCE_PAIR}
                   if idempotence_pair else {})
    java_idempotence = {}
    if idempotence_pair and java is not None:
        records = java_records(idempotence["off"], workload)
        for name in JAVA_IDEMPOTENCE_PAIR:
            idempotent, _max_in_flight = IDEMPOTENCE_PAIR[name]
            java_idempotence[name] = runner.produce_java(
                idempotence_label(name, java=True), java, records, idempotent)
    perf: dict[str, ThroughputFigures] = {}
    if perf_tools is not None:
        # the Java client's default, idempotent at acks=all, as the tool's user gets it
        perf["producer perf test"] = runner.produce_java(
            "producer perf test", perf_tools, perf_records, idempotence=True)
    latency = {acks: runner.latency(acks) for acks in ACK_LEVELS}
    consume = runner.consume()
    if perf_tools is not None:
        perf["consumer perf test"] = runner.consume_java("consumer perf test", perf_tools)
    return DataPlaneRun(produce=produce, latency=latency, consume=consume,
                        idempotence=idempotence, java_idempotence=java_idempotence,
                        perf_tools=perf)


def end_offsets(bootstrap: str, partitions: int, topic: str = TOPIC) -> dict[int, int]:
    """Each partition's high watermark (the log start is 0: nothing is deleted)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-offsets"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p),
                                                  timeout=_TIMEOUT_S)[1]
                for p in range(partitions)}
    finally:
        consumer.close()


def create_topic(bootstrap: str, name: str, workload: DataPlaneWorkload,
                 partitions: int | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic(name, partitions or workload.partitions, workload.replication_factor,
                     config={"min.insync.replicas": str(workload.min_insync_replicas)})
    (future,) = admin.create_topics([topic], request_timeout=_TIMEOUT_S).values()
    future.result(_TIMEOUT_S)


def wait_for_leaders(bootstrap: str, partitions: int, topic: str = TOPIC,
                     timeout_s: float = _TIMEOUT_S) -> None:
    """Every partition has a leader and a full ISR in some broker's metadata."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = admin.list_topics(topic, timeout=10).topics.get(topic)
        if found is not None and found.error is None and len(found.partitions) == partitions \
                and all(p.leader >= 0 and len(p.isrs) == 3 for p in found.partitions.values()):
            return
        time.sleep(0.1)
    raise RuntimeError(f"the partitions of {topic} have no leaders after {timeout_s} s")
