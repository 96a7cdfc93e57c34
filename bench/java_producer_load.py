"""A produce phase whose load is the Java client: Kafka's own ``kafka-producer-perf-test``.

librdkafka's idempotent producer keeps one produce request in flight per partition (its
``rd_kafka_toppar_producer_serve`` caps a partition's requests at five minus the
partition's in-flight *messages*, so any batch in flight stops the next), while its
non-idempotent producer pipelines up to ``max.in.flight``: with librdkafka the on/off
ratio measures the client's rule as much as the broker. The Java client pipelines five
requests per connection with idempotence on or off, which is what Kafka's design of the
sequence window assumes, so its pair says what idempotence costs the brokers. The tool
runs unmodified from the pinned Kafka's jars (``deploy.kafka``), with the heap its script
gives it; ``run_java_produce`` returns the bench's usual ``PhaseResult``.

``run_java_consume`` runs Kafka's ``kafka-consumer-perf-test`` the same way: the Kafka
peer's second load for both clusters (its defaults: a group of one, subscribe, 1 MiB
per partition fetches), over the whole topic.
"""

from __future__ import annotations

import re
import resource
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import attrs

from bench.nats_lineup import LoadReport, PhaseResult
from bench.nats_phases import cpu_seconds, machine_busy_s
from bench.peer_figures import consumer_perf_summary
from deploy.kafka import KafkaDistribution
from deploy.kafka.jvm import tool_command, write_log_configs

__all__ = ["CONSUMER_PERF_TEST", "PERF_TEST", "parse_summary", "run_java_consume",
           "run_java_produce"]

PERF_TEST: Final = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER_PERF_TEST: Final = "org.apache.kafka.tools.ConsumerPerformance"
# kafka-consumer-perf-test's --timeout: the longest gap between returned records (ms)
_CONSUMER_GAP_MS: Final = 60_000
# kafka-producer-perf-test.sh: KAFKA_HEAP_OPTS="-Xmx512M"
_HEAP: Final = ("-Xmx512M",)
_TIMEOUT_S: Final = 300.0
# the tool's last line: "300000 records sent, 53985.963649 records/sec (52.72 MB/sec), ..."
_SUMMARY: Final = re.compile(r"^(\d+) records sent, ([\d.]+) records/sec ", re.MULTILINE)


def parse_summary(stdout: str) -> tuple[int, float]:
    """(records sent, records per second) from the tool's final summary line."""
    found = _SUMMARY.findall(stdout)
    if not found:
        raise RuntimeError(f"no summary line in the perf test's output:\n{stdout[-2000:]}")
    records, rate = found[-1]
    return int(records), float(rate)


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@attrs.frozen
class _ToolRun:
    """One perf tool's run: its output, when it ended, what the machine did meanwhile."""

    stdout: str
    ended: float
    server_cpu_s: Mapping[str, float]
    tool_cpu_s: float
    machine_busy_percent: float

    def phase(self, *, messages: int, record_bytes: int, tool_s: float) -> PhaseResult:
        """The bench's phase: the tool's own time (``tool_s``) ending at the run's end; the
        servers' CPU over the whole run (the JVM's start included: idle brokers cost little)
        against it, so that CPU per MB is the servers' whole cost."""
        load = LoadReport(messages=messages, bytes=messages * record_bytes,
                          start=self.ended - tool_s, end=self.ended, cpu_s=self.tool_cpu_s)
        return PhaseResult(loads=(load,), wall_s=tool_s, server_cpu_s=self.server_cpu_s,
                           machine_busy_percent=self.machine_busy_percent)


def _run_measured(
    distribution: KafkaDistribution, main_class: str, args: list[str], *,
    server_pids: Mapping[str, int], log_dir: Path,
) -> _ToolRun:
    """``main_class args`` as its script runs it, the servers' and the machine's CPU
    measured around it; RuntimeError with its stderr if it does not exit 0."""
    log_dir.mkdir(parents=True, exist_ok=True)
    _server_config, tools_config = write_log_configs(log_dir)
    command = tool_command(distribution, main_class, args, log_config=tools_config,
                           log_dir=log_dir, heap=_HEAP)
    cpu_before = {name: cpu_seconds(pid) for name, pid in server_pids.items()}
    busy_before, total_before = machine_busy_s()
    children_before = _children_cpu_s()
    result = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=_TIMEOUT_S, check=False)
    ended = time.monotonic()
    busy_after, total_after = machine_busy_s()
    server_cpu = {name: cpu_seconds(pid) - cpu_before[name] for name, pid in server_pids.items()}
    (log_dir / "perf-test.out").write_text(result.stdout + "\n--- stderr\n" + result.stderr)
    if result.returncode != 0:
        raise RuntimeError(f"{main_class} exited {result.returncode}: {result.stderr[-2000:]}")
    busy = 100.0 * (busy_after - busy_before) / max(total_after - total_before, 1e-9)
    return _ToolRun(stdout=result.stdout, ended=ended, server_cpu_s=server_cpu,
                    tool_cpu_s=_children_cpu_s() - children_before, machine_busy_percent=busy)


def run_java_produce(
    distribution: KafkaDistribution, bootstrap: str, topic: str, *, records: int,
    record_bytes: int, producer_props: Mapping[str, str], server_pids: Mapping[str, int],
    log_dir: Path,
) -> PhaseResult:
    """``kafka-producer-perf-test --throughput -1`` of ``records`` to ``topic``; the
    tool's own timing (from its first send), the servers' CPU over the whole run."""
    props = [f"bootstrap.servers={bootstrap}", *(f"{k}={v}" for k, v in producer_props.items())]
    run = _run_measured(
        distribution, PERF_TEST,
        ["--topic", topic, "--num-records", str(records), "--record-size", str(record_bytes),
         "--throughput", "-1", "--producer-props", *props],
        server_pids=server_pids, log_dir=log_dir)
    sent, rate = parse_summary(run.stdout)
    if sent != records:
        raise RuntimeError(f"{PERF_TEST} sent {sent} of {records} records")
    return run.phase(messages=sent, record_bytes=record_bytes, tool_s=sent / rate)


def run_java_consume(
    distribution: KafkaDistribution, bootstrap: str, topic: str, *, records: int,
    record_bytes: int, server_pids: Mapping[str, int], log_dir: Path,
) -> PhaseResult:
    """``kafka-consumer-perf-test --num-records RECORDS`` of ``topic`` from its start;
    the tool's fetch time (its run less the group's join), the servers' CPU over the run."""
    run = _run_measured(
        distribution, CONSUMER_PERF_TEST,
        ["--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(records),
         "--timeout", str(_CONSUMER_GAP_MS)],
        server_pids=server_pids, log_dir=log_dir)
    consumed, fetch_s = consumer_perf_summary(run.stdout)
    if consumed < records:
        raise RuntimeError(f"{CONSUMER_PERF_TEST} consumed {consumed} of {records} records")
    return run.phase(messages=consumed, record_bytes=record_bytes, tool_s=max(fetch_s, 1e-3))
