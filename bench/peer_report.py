"""The Kafka peer's part of ``bench.bench_data_plane``'s report: markdown tables.

Every figure beside Kafka's from the same runs and the ratio pykraft / Kafka; the
servers' CPU seconds per MB of each throughput phase (brokers summed, controllers
apart); each server's RSS and, for Kafka's JVMs, the heap in use after a full GC;
issue 20's goals. The arithmetic is ``bench.peer_figures``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bench.dataplane_figures import DataPlaneRun, NodeMemory, goal_met, median_figures
from bench.dataplane_report import cell, cpu_rows, figure_label
from bench.peer_figures import (
    ROLES,
    cpu_per_mb,
    kafka_goal_gaps,
    kafka_ratios,
    median_cpu_per_mb,
    memory_medians,
    role_totals,
)

__all__ = ["cpu_per_mb_rows", "kafka_figure_rows", "kafka_report", "memory_rows"]

_MIB = 1024 * 1024


def _paired(runs: Sequence[DataPlaneRun]) -> tuple[list[DataPlaneRun], list[DataPlaneRun]]:
    ours = [run for run in runs if run.kafka is not None]
    return ours, [run.kafka for run in ours if run.kafka is not None]


def kafka_figure_rows(runs: Sequence[DataPlaneRun]) -> list[str]:
    ours, theirs = _paired(runs)
    ratio = kafka_ratios(runs)
    our_heads = [r.headline() for r in ours]
    their_heads = [r.headline() for r in theirs]
    lines = ["| measure | pykraft | Apache Kafka (same runs) | pykraft / Kafka |",
             "| --- | ---: | ---: | ---: |"]
    their_keys = median_figures(theirs)
    for key in median_figures(ours):
        label, digits = figure_label(key)
        mine = cell([h[key] for h in our_heads if key in h], digits)
        peer = cell([h[key] for h in their_heads if key in h], digits) if key in their_keys else ""
        factor = f"{ratio[key]:.2f}" if key in ratio else ""
        lines.append(f"| {label} | {mine} | {peer} | {factor} |")
    return lines


def cpu_per_mb_rows(runs: Sequence[DataPlaneRun]) -> list[str]:
    ours, theirs = _paired(runs)
    mine, peer = median_cpu_per_mb(ours), median_cpu_per_mb(theirs)
    columns = []
    for role in ROLES:
        columns += [f"pykraft {role}", f"Kafka {role}", f"{role} pykraft / Kafka"]
    lines = [f"| phase | {' | '.join(columns)} |", "| --- " + "| ---: " * len(columns) + "|"]
    phases = dict.fromkeys(key.rsplit(", ", 1)[0] for run in ours for key in cpu_per_mb(run))
    for phase in phases:
        cells = []
        for role in ROLES:
            a, b = mine.get(f"{phase}, {role}"), peer.get(f"{phase}, {role}")
            cells += ["" if a is None else f"{a:.3g}", "" if b is None else f"{b:.3g}",
                      f"{a / b:.2f}" if a is not None and b else ""]
        lines.append(f"| {phase} | {' | '.join(cells)} |")
    return lines


def _mib(value: int | None) -> str:
    return "" if value is None else f"{value / _MIB:,.0f}"


def memory_rows(runs: Sequence[DataPlaneRun]) -> list[str]:
    ours, theirs = _paired(runs)
    mine = memory_medians(ours or list(runs))
    peer = memory_medians(theirs)
    lines = ["| server | pykraft RSS (MiB) | Kafka RSS (MiB) | Kafka heap in use after a full "
             "GC (MiB) | RSS pykraft / Kafka |", "| --- | ---: | ---: | ---: | ---: |"]
    rows: list[tuple[str, NodeMemory | None, NodeMemory | None]] = [
        (name, mine.get(name), peer.get(name))
        for name in sorted(dict.fromkeys([*mine, *peer]), key=lambda n: (n[0] != "b", n))]
    my_totals, peer_totals = role_totals(mine), role_totals(peer)
    rows += [(f"all {role}", my_totals.get(role), peer_totals.get(role)) for role in ROLES]
    for name, a, b in rows:
        factor = f"{a.rss_bytes / b.rss_bytes:.2f}" if a and b and b.rss_bytes else ""
        lines.append(f"| {name} | {_mib(a.rss_bytes if a else None)} | "
                     f"{_mib(b.rss_bytes if b else None)} | "
                     f"{_mib(b.heap_used_bytes if b else None)} | {factor} |")
    return lines


def _goal_rows(runs: Sequence[DataPlaneRun]) -> list[str]:
    lines = ["| goal (issue 20) | pykraft / Kafka | met |", "| --- | ---: | --- |"]
    for goal, factor in kafka_goal_gaps(runs):
        lines.append(f"| {goal.label} | {factor:.2f} | {'yes' if goal_met(goal, factor) else 'no'} |")
    return lines


def kafka_report(runs: Sequence[DataPlaneRun], out: Callable[[str], None] = print) -> None:
    """The Kafka peer's sections (nothing when no run ran it but the memory of pykraft's)."""
    if any(run.kafka is not None for run in runs):
        out("\nBeside Apache Kafka, the same phases and load after pykraft's cluster stopped "
            "(median [min-max] over runs):\n")
        for line in kafka_figure_rows(runs):
            out(line)
        out("\nAgainst Kafka (issue 20):\n")
        for line in _goal_rows(runs):
            out(line)
        out("\nServers' CPU seconds per MB, each throughput phase (brokers summed, controllers "
            "summed; medians over runs):\n")
        for line in cpu_per_mb_rows(runs):
            out(line)
        out("\nKafka's CPU during each phase, % of one core (median over runs; pykraft's is "
            "above):\n")
        for line in cpu_rows(_paired(runs)[1]):
            out(line)
    if any(run.memory for run in runs):
        out("\nMemory of each server at the end of a run (medians over runs):\n")
        for line in memory_rows(runs):
            out(line)
