"""The report of ``bench.nats_peer``: markdown tables (median [min-max] over runs) and one JSON line.

Markdown, so that the output can go into docs/performance.md as it is. The
CPU table is in percent of one core, medians over runs, with the machine's
total beside this bench's processes: the machine may be shared, and what
else ran during a phase is the difference.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import cattrs

from bench.nats_figures import NatsFigures, median_headline

__all__ = ["report"]

# bench performance anchors: NATS JetStream 2.9.10 R3, same kind of 2-core machine
ANCHORS: Final = {
    "publish_mb_per_s_w64": "16.6",
    "publish_mb_per_s_w512": "19.8",
    "ack_p50_ms": "0.31 (100 B)",
    "ack_p99_ms": "0.73 (100 B)",
    "consume_mb_per_s": "about 200",
}


def _cell(values: Sequence[float], digits: int) -> str:
    def fmt(v: float) -> str:
        return f"{v:,.{digits}f}"

    if len(values) == 1:
        return fmt(values[0])
    return f"{fmt(statistics.median(values))} [{fmt(min(values))}-{fmt(max(values))}]"


def _rows(first: NatsFigures) -> list[tuple[str, str, int]]:
    publish = first.publish[0].processes
    rows = [(f"publish MB/s, {p.window} acks outstanding per process, {publish} processes",
             f"publish_mb_per_s_w{p.window}", 1) for p in first.publish]
    rows += [
        ("publish -> ack latency p50 (ms), one at a time", "ack_p50_ms", 2),
        ("publish -> ack latency p99 (ms)", "ack_p99_ms", 2),
        ("publish -> delivery to a consumer p50 (ms), one at a time", "delivery_p50_ms", 2),
        ("publish -> delivery to a consumer p99 (ms)", "delivery_p99_ms", 2),
        (f"consume MB/s, whole stream, {first.consume.processes} processes",
         "consume_mb_per_s", 1),
    ]
    return rows


# a phase as the CPU table sees it: its label, CPU per process (% of a core), machine busy
Phase = tuple[str, Mapping[str, float], float]


def _phases(figures: NatsFigures) -> list[Phase]:
    """Each phase's label, CPU per process and machine busy share."""
    latency = figures.latency
    return [*((f"publish, window {p.window}", p.cpu_percent, p.machine_busy_percent)
              for p in figures.publish),
            ("latency", latency.cpu_percent, latency.machine_busy_percent),
            ("consume", figures.consume.cpu_percent, figures.consume.machine_busy_percent)]


def cpu_table(
    runs: Sequence[Sequence[Phase]], *, column_key: Callable[[str], Any], total_label: str
) -> list[str]:
    """The markdown table of CPU per process and phase, median over runs (each run lists the
    same phases in the same order); one column per process, ordered by ``column_key``."""
    cores = os.cpu_count() or 1
    columns = sorted({name for phases in runs for _, cpu, _ in phases for name in cpu},
                     key=column_key)
    lines = [f"| phase | {' | '.join(columns)} | {total_label} | whole machine ({cores} cores) |",
             "| --- " * (len(columns) + 3) + "|"]
    for index, (label, _, _) in enumerate(runs[0]):
        phases = [run[index] for run in runs]
        cells = []
        for name in columns:
            values = [cpu[name] for _, cpu, _ in phases if name in cpu]
            cells.append(f"{statistics.median(values):.0f}" if values else "")
        ours = statistics.median(sum(cpu.values()) for _, cpu, _ in phases)
        machine = statistics.median(cores * busy for _, _, busy in phases)
        lines.append(f"| {label} | {' | '.join(cells)} | {ours:.0f} | {machine:.0f} |")
    return lines


def _cpu_table(runs: Sequence[NatsFigures]) -> list[str]:
    return cpu_table([_phases(r) for r in runs], total_label="this bench",
                     column_key=lambda n: (not n.startswith("load"), n != "leader", n))


def report(runs: Sequence[NatsFigures], out: Callable[[str], None] = print) -> None:
    first = runs[0]
    out(f"NATS JetStream {first.server_version} (nats-server), {first.nodes} nodes on loopback, "
        f"R{first.replicas} stream; {first.durability}. Load: {first.client}, processes "
        f"connected to the stream's {first.connect_to}, {first.message_bytes:,}-byte messages. "
        f"{len(runs)} run(s); median [min-max]; MB = 10^6 bytes of payload.\n")
    out("| measure | NATS JetStream | anchor |")
    out("| --- | --- | --- |")
    for label, key, digits in _rows(first):
        values = [r.headline()[key] for r in runs]
        out(f"| {label} | {_cell(values, digits)} | {ANCHORS.get(key, '')} |")
    out("\nCPU during each phase, % of one core (median over runs):\n")
    for line in _cpu_table(runs):
        out(line)
    out("\n" + json.dumps({"bench": "nats_peer", "median": median_headline(runs),
                           "runs": [cattrs.unstructure(r) for r in runs]}))
