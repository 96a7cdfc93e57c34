"""The Kafka peer of the data-plane bench, side by side with pykraft: the arithmetic, pure.

Each of pykraft's runs carries the Kafka peer's run of the same phases
(``DataPlaneRun.kafka``, run after pykraft's cluster stopped). ``kafka_ratios``
divides pykraft's medians by Kafka's over the runs that ran both; ``cpu_per_mb`` is
the servers' CPU seconds per MB of each throughput phase (the brokers summed, the
controllers apart); ``memory_medians`` each server's RSS and (JVMs) heap in use;
``heap_used_bytes`` reads ``jcmd PID GC.heap_info``; ``consumer_perf_summary`` reads
the consumer perf test's result line; ``first_ack_after`` is the failover probe's
gap. Pure, so that the unit tests check it without a cluster.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from typing import Final

from bench.dataplane_figures import PERF_TOOLS, DataPlaneRun, Goal, NodeMemory, median_figures
from bench.nats_figures import ThroughputFigures

__all__ = [
    "KAFKA_GOALS",
    "ROLES",
    "consumer_perf_summary",
    "cpu_per_mb",
    "cpu_s_per_mb",
    "first_ack_after",
    "heap_used_bytes",
    "kafka_goal_gaps",
    "kafka_ratios",
    "median_cpu_per_mb",
    "memory_medians",
    "role_totals",
    "throughput_phases",
]

# the server processes' names in a phase's CPU table, and how the report groups them
ROLES: Final = {"brokers": "broker-", "controllers": "controller-"}

# issue 20's goals against Kafka, as ratios pykraft / Kafka of the medians
KAFKA_GOALS: Final = (
    Goal("produce_mb_per_s_acks_all", 1.0, True, "produce acks=all at least equal to Kafka"),
    Goal("consume_mb_per_s", 1.0, True, "consume at least equal to Kafka"),
    Goal("e2e_p50_ms_acks_all", 1.0, False, "end-to-end p50, acks=all, at most Kafka's"),
    Goal("leader_failover_ms", 1.0, False, "leader kill -9 -> next acked produce ahead of Kafka"),
    Goal("start_to_produce_ms", 1.0, False, "cluster start -> first produce ahead of Kafka"),
)

# one line of ConsumerPerformance's result: start.time, end.time, data.consumed.in.MB,
# MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms,
# fetch.MB.sec, fetch.nMsg.sec (printed with "%s, %s, %.4f, %.4f, %d, %.4f, %d, %d, ...")
_CONSUMER_PERF_FIELDS: Final = 10
# G1: " garbage-first heap   total 1048576K, used 123456K [0x..., 0x...)"; the serial and
# parallel collectors print one such line per generation (Metaspace says "used ..., committed")
_HEAP_LINE: Final = re.compile(r"\btotal (\d+)K, used (\d+)K")


def kafka_ratios(runs: Sequence[DataPlaneRun]) -> dict[str, float]:
    """pykraft's median / Kafka's median for every figure both measured, over the runs
    that ran the Kafka peer (a latency or time ratio below 1 is pykraft ahead)."""
    paired = [run for run in runs if run.kafka is not None]
    if not paired:
        return {}
    ours = median_figures(paired)
    theirs = median_figures([run.kafka for run in paired if run.kafka is not None])
    return {key: value / theirs[key] for key, value in ours.items() if theirs.get(key)}


def kafka_goal_gaps(runs: Sequence[DataPlaneRun]) -> list[tuple[Goal, float]]:
    """(goal, pykraft / Kafka) for each of issue 20's goals whose ratio was measured."""
    ratio = kafka_ratios(runs)
    return [(goal, ratio[goal.key]) for goal in KAFKA_GOALS if goal.key in ratio]


def throughput_phases(run: DataPlaneRun) -> dict[str, ThroughputFigures]:
    """The run's throughput phases by label: produce at each acks, consume, the perf tools."""
    phases = {f"produce acks={acks}": figures for acks, figures in run.produce.items()}
    phases["consume"] = run.consume
    phases.update({name: run.perf_tools[name] for name in PERF_TOOLS if name in run.perf_tools})
    return phases


def cpu_s_per_mb(figures: ThroughputFigures, prefix: str) -> float | None:
    """CPU seconds per MB of the processes named ``prefix``*, summed: their shares of a
    core over the phase divided by the MB per second (None for a phase that moved nothing)."""
    if figures.mb_per_s <= 0:
        return None
    share = sum(v for k, v in figures.cpu_percent.items() if k.startswith(prefix)) / 100.0
    return share / figures.mb_per_s


def cpu_per_mb(run: DataPlaneRun) -> dict[str, float]:
    """``"PHASE, ROLE"`` (``"produce acks=all, brokers"``) -> CPU seconds per MB."""
    found = {}
    for label, figures in throughput_phases(run).items():
        for role, prefix in ROLES.items():
            value = cpu_s_per_mb(figures, prefix)
            if value is not None:
                found[f"{label}, {role}"] = value
    return found


def median_cpu_per_mb(runs: Sequence[DataPlaneRun]) -> dict[str, float]:
    """Each ``cpu_per_mb`` figure's median over the runs that have it."""
    each = [cpu_per_mb(run) for run in runs]
    keys = dict.fromkeys(key for figures in each for key in figures)
    return {key: statistics.median(f[key] for f in each if key in f) for key in keys}


def memory_medians(runs: Sequence[DataPlaneRun]) -> dict[str, NodeMemory]:
    """Each server process's RSS and heap in use, medians over the runs that measured it."""
    names = dict.fromkeys(name for run in runs for name in run.memory)
    found = {}
    for name in names:
        taken = [run.memory[name] for run in runs if name in run.memory]
        heaps = [m.heap_used_bytes for m in taken if m.heap_used_bytes is not None]
        found[name] = NodeMemory(
            rss_bytes=int(statistics.median(m.rss_bytes for m in taken)),
            heap_used_bytes=int(statistics.median(heaps)) if heaps else None)
    return found


def heap_used_bytes(heap_info: str) -> int:
    """The heap in use that ``jcmd PID GC.heap_info`` reports (every generation's line
    summed; Metaspace is not heap)."""
    found = _HEAP_LINE.findall(heap_info)
    if not found:
        raise ValueError(f"no heap line in GC.heap_info's output:\n{heap_info[-1000:]}")
    return sum(int(used) for _total, used in found) * 1024


def consumer_perf_summary(stdout: str) -> tuple[int, float]:
    """(records consumed, fetch seconds) from kafka-consumer-perf-test's result line: the
    fetch time is the run's less the group's join (its rebalance.time.ms)."""
    for line in reversed(stdout.splitlines()):
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == _CONSUMER_PERF_FIELDS and fields[4].isdigit():
            return int(fields[4]), int(fields[7]) / 1000.0
    raise RuntimeError(f"no result line in the consumer perf test's output:\n{stdout[-2000:]}")


def first_ack_after(kill_at: float, deliveries: Sequence[tuple[float, float | None]]
                    ) -> float | None:
    """Seconds from ``kill_at`` to the first acknowledgement of a record sent at or after
    it, from (sent at, acked at or None) pairs; None if none was acknowledged.

    Records sent before the kill are left out: an acknowledgement the dying leader had
    written to its socket would be read just after the kill and say nothing of failover."""
    acked = [at for sent, at in deliveries if sent >= kill_at and at is not None]
    return min(acked) - kill_at if acked else None


def role_totals(memory: Mapping[str, NodeMemory]) -> dict[str, NodeMemory]:
    """The brokers' and the controllers' memory summed (``ROLES``)."""
    totals = {}
    for role, prefix in ROLES.items():
        taken = [m for name, m in memory.items() if name.startswith(prefix)]
        if not taken:
            continue
        heaps = [m.heap_used_bytes for m in taken if m.heap_used_bytes is not None]
        totals[role] = NodeMemory(rss_bytes=sum(m.rss_bytes for m in taken),
                                  heap_used_bytes=sum(heaps) if heaps else None)
    return totals
