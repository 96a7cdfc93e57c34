"""The report of ``bench.bench_data_plane``: markdown tables (median [min-max]) and one JSON line.

Markdown, so that docs/performance.md quotes it as it is: the figures beside the
NATS peer's from the same runs and their ratio, the goals and how far each
figure is from its goal, then the CPU of every process in every phase (percent
of one core, medians over runs) beside the whole machine's, which says whether
the brokers, the load or something else was the limit.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Mapping, Sequence

import cattrs

from bench.dataplane_figures import (
    IDEMPOTENCE_CPU_RATIO,
    IDEMPOTENCE_RATIO,
    JAVA_IDEMPOTENCE_CPU_RATIO,
    JAVA_IDEMPOTENCE_RATIO,
    PERF_TOOLS,
    DataPlaneRun,
    RssFigures,
    goal_gaps,
    goal_met,
    idempotence_key,
    median_figures,
    nats_counterpart,
    ratios,
)
from bench.dataplane_lineup import IDEMPOTENCE_PAIR
from bench.nats_figures import median_headline
from bench.nats_report import Phase, cpu_table
from bench.peer_figures import kafka_ratios

__all__ = ["cell", "cpu_rows", "figure_label", "figure_rows", "idempotence_label", "report", "rss_report"]

_MIB = 1024 * 1024


def cell(values: Sequence[float], digits: int) -> str:
    """``median [min-max]``, or the one value."""
    def fmt(v: float) -> str:
        return f"{v:,.{digits}f}"

    if not values:
        return ""
    if len(values) == 1:
        return fmt(values[0])
    return f"{fmt(statistics.median(values))} [{fmt(min(values))}-{fmt(max(values))}]"


def figure_label(key: str) -> tuple[str, int]:
    fixed = {
        IDEMPOTENCE_RATIO: ("idempotence on / off, acks=all, MB/s within each run", 3),
        IDEMPOTENCE_CPU_RATIO: ("idempotence on / off, brokers' CPU per MB", 3),
        JAVA_IDEMPOTENCE_RATIO: ("Java client: idempotence on / off, MB/s within each run", 3),
        JAVA_IDEMPOTENCE_CPU_RATIO: ("Java client: idempotence on / off, brokers' CPU per MB",
                                     3),
        PERF_TOOLS["producer perf test"]: (
            "kafka-producer-perf-test MB/s, acks=all, the same batching", 1),
        PERF_TOOLS["consumer perf test"]: (
            "kafka-consumer-perf-test MB/s, the whole topic (fetch time)", 1),
        "start_to_produce_ms": ("cluster start (processes launched) -> first acked produce "
                                "(ms)", 0),
        "leader_failover_ms": ("kill -9 of a partition leader -> next acked produce, "
                               "acks=all (ms, median of the run's kills)", 0),
    }
    if key in fixed:
        return fixed[key]
    for name in IDEMPOTENCE_PAIR:
        if key == idempotence_key(name):
            return f"produce MB/s, acks=all, idempotence {name}", 1
        if key == idempotence_key(name, java=True):
            return f"produce MB/s, acks=all, Java client (perf test), idempotence {name}", 1
    acks = key.rsplit("_acks_", 1)[-1]
    labels = {
        "produce_mb_per_s": (f"produce MB/s, acks={acks}", 1),
        "ack_p50_ms": (f"produce -> delivery report p50 (ms), acks={acks}, linger.ms=0", 2),
        "ack_p99_ms": (f"produce -> delivery report p99 (ms), acks={acks}", 2),
        "e2e_p50_ms": (f"end to end p50 (ms), acks={acks}, linger.ms=0", 2),
        "e2e_p99_ms": (f"end to end p99 (ms), acks={acks}", 2),
        "consume_mb_per_s": ("consume MB/s, the whole topic", 1),
    }
    return labels[key.rsplit("_acks_", 1)[0]]


def figure_rows(runs: Sequence[DataPlaneRun]) -> list[str]:
    paired = [r.nats for r in runs if r.nats is not None]
    nats_runs = [n.headline() for n in paired]
    nats_median = median_headline(paired) if paired else {}
    ratio = ratios(runs)
    lines = ["| measure | pykraft | NATS JetStream R3 (same runs) | pykraft / NATS |",
             "| --- | ---: | ---: | ---: |"]
    heads = [r.headline() for r in runs]
    for key in median_figures(runs):
        label, digits = figure_label(key)
        ours = cell([h[key] for h in heads if key in h], digits)
        theirs = [v for v in (nats_counterpart(key, h) for h in nats_runs) if v is not None]
        peer = cell(theirs, digits) if nats_counterpart(key, nats_median) is not None else ""
        factor = f"{ratio[key]:.2f}" if key in ratio else ""
        lines.append(f"| {label} | {ours} | {peer} | {factor} |")
    return lines


def goal_rows(runs: Sequence[DataPlaneRun]) -> list[str]:
    lines = ["| goal | measured (median) | measured / goal | met |", "| --- | ---: | ---: | --- |"]
    for goal, value, factor in goal_gaps(median_figures(runs), ratios(runs)):
        lines.append(f"| {goal.label} | {value:,.2f} | {factor:.2f} | "
                     f"{'yes' if goal_met(goal, factor) else 'no'} |")
    return lines


def _phases(run: DataPlaneRun) -> list[Phase]:
    phases = [(f"produce acks={a}", f.cpu_percent, f.machine_busy_percent)
              for a, f in run.produce.items()]
    phases += [(idempotence_label(name), f.cpu_percent, f.machine_busy_percent)
               for name, f in run.idempotence.items()]
    phases += [(idempotence_label(name, java=True), f.cpu_percent, f.machine_busy_percent)
               for name, f in run.java_idempotence.items()]
    phases += [(f"latency acks={a}", f.cpu_percent, f.machine_busy_percent)
               for a, f in run.latency.items()]
    phases.append(("consume", run.consume.cpu_percent, run.consume.machine_busy_percent))
    phases += [(name, f.cpu_percent, f.machine_busy_percent) for name, f in run.perf_tools.items()]
    return phases


def idempotence_label(name: str, *, java: bool = False) -> str:
    """The phase label of one of the idempotence pairs' produce phases."""
    return f"produce acks=all {'java ' if java else ''}idempotence {name}"


def _column_order(name: str) -> tuple[int, str]:
    rank = 0 if name.startswith("load") else 1 if name.startswith("broker") else 2
    return rank, name


def cpu_rows(runs: Sequence[DataPlaneRun]) -> list[str]:
    return cpu_table([_phases(r) for r in runs], column_key=_column_order,
                     total_label="all of these")


def report(runs: Sequence[DataPlaneRun], header: str, settings: Mapping[str, str],
           out: Callable[[str], None] = print,
           more: Callable[[Callable[[str], None]], None] | None = None) -> None:
    """The report; ``more`` writes further sections (the Kafka peer's) before the JSON."""
    out(header + "\n")
    for who, text in settings.items():
        out(f"- {who}: {text}")
    out("")
    for line in figure_rows(runs):
        out(line)
    out("\nAgainst the goals (issue 12):\n")
    for line in goal_rows(runs):
        out(line)
    out("\nCPU during each phase, % of one core (median over runs):\n")
    for line in cpu_rows(runs):
        out(line)
    if any(r.nats is not None for r in runs):
        out("\nThe NATS peer's own CPU table is in its JSON below (bench.nats_report's shape).")
    if more is not None:
        more(out)
    out("\n" + json.dumps({"bench": "bench_data_plane", "median": median_figures(runs),
                           "ratios": ratios(runs), "kafka_ratios": kafka_ratios(runs),
                           "runs": [cattrs.unstructure(r) for r in runs]}))


def rss_report(figures: RssFigures, out: Callable[[str], None] = print) -> None:
    per = figures.per_replica_bytes()
    out(f"{figures.partitions:,} partitions at RF {figures.replication_factor}: created in "
        f"{figures.seconds_to_create:.1f} s, every broker hosting its replicas after "
        f"{figures.seconds_until_hosted:.1f} s.\n")
    settled = figures.settled_per_replica_bytes()
    out("| broker | replicas hosted | RSS before (MiB) | RSS after (MiB) | bytes per replica "
        "| idle CPU (% of a core) | RSS settled (MiB) | bytes per idle replica |")
    out("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for node in sorted(per):
        cpu = figures.idle_cpu.get(node)
        steady = figures.settled.get(node)
        out(f"| {node} | {figures.hosted[node]:,} | {figures.before[node] / _MIB:,.1f} | "
            f"{figures.after[node] / _MIB:,.1f} | {per[node]:,.0f} | "
            f"{'-' if cpu is None else f'{100 * cpu:.1f}'} | "
            f"{'-' if steady is None else f'{steady / _MIB:,.1f}'} | "
            f"{'-' if node not in settled else f'{settled[node]:,.0f}'} |")
    out("\n" + json.dumps({"bench": "bench_data_plane.rss", **cattrs.unstructure(figures)}))
