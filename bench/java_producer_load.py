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


def run_java_produce(
    distribution: KafkaDistribution, bootstrap: str, topic: str, *, records: int,
    record_bytes: int, producer_props: Mapping[str, str], server_pids: Mapping[str, int],
    log_dir: Path,
) -> PhaseResult:
    """``kafka-producer-perf-test --throughput -1`` of ``records`` to ``topic``; the
    tool's own timing (from its first send), the servers' CPU over the whole run."""
    log_dir.mkdir(parents=True, exist_ok=True)
    _server_config, tools_config = write_log_configs(log_dir)
    props = [f"bootstrap.servers={bootstrap}", *(f"{k}={v}" for k, v in producer_props.items())]
    command = tool_command(
        distribution, PERF_TEST,
        ["--topic", topic, "--num-records", str(records), "--record-size", str(record_bytes),
         "--throughput", "-1", "--producer-props", *props],
        log_config=tools_config, log_dir=log_dir, heap=_HEAP)
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
        raise RuntimeError(f"{PERF_TEST} exited {result.returncode}: {result.stderr[-2000:]}")
    sent, rate = parse_summary(result.stdout)
    if sent != records:
        raise RuntimeError(f"{PERF_TEST} sent {sent} of {records} records")
    sending_s = sent / rate
    load = LoadReport(messages=sent, bytes=sent * record_bytes, start=ended - sending_s,
                      end=ended, cpu_s=_children_cpu_s() - children_before)
    busy = 100.0 * (busy_after - busy_before) / max(total_after - total_before, 1e-9)
    # the servers' CPU over the whole run (the JVM's start included: idle brokers cost
    # little) against the tool's sending time, so that CPU per MB is the servers' whole cost
    return PhaseResult(loads=(load,), wall_s=sending_s, server_cpu_s=server_cpu,
                       machine_busy_percent=busy)


def run_java_consume(
    distribution: KafkaDistribution, bootstrap: str, topic: str, *, records: int,
    record_bytes: int, server_pids: Mapping[str, int], log_dir: Path,
) -> PhaseResult:
    """``kafka-consumer-perf-test --num-records RECORDS`` of ``topic`` from its start;
    the tool's fetch time (its run less the group's join), the servers' CPU over the run."""
    log_dir.mkdir(parents=True, exist_ok=True)
    _server_config, tools_config = write_log_configs(log_dir)
    command = tool_command(
        distribution, CONSUMER_PERF_TEST,
        ["--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(records),
         "--timeout", str(_CONSUMER_GAP_MS)],
        log_config=tools_config, log_dir=log_dir, heap=_HEAP)
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
        raise RuntimeError(f"{CONSUMER_PERF_TEST} exited {result.returncode}: "
                           f"{result.stderr[-2000:]}")
    consumed, fetch_s = consumer_perf_summary(result.stdout)
    if consumed < records:
        raise RuntimeError(f"{CONSUMER_PERF_TEST} consumed {consumed} of {records} records")
    fetch_s = max(fetch_s, 1e-3)
    load = LoadReport(messages=consumed, bytes=consumed * record_bytes, start=ended - fetch_s,
                      end=ended, cpu_s=_children_cpu_s() - children_before)
    busy = 100.0 * (busy_after - busy_before) / max(total_after - total_before, 1e-9)
    return PhaseResult(loads=(load,), wall_s=fetch_s, server_cpu_s=server_cpu,
                       machine_busy_percent=busy)
