"""The report of ``bench.bench_vs_kafka``: one markdown table, pykraft beside Kafka, and one
JSON line with every value.

A cell is the median [min-max] over runs (pooled rounds say their count and
maximum); where a side failed instead of giving a figure, the cell is its
failure and cause. The last column is the ratio of the medians, pykraft / Kafka
(below 1: pykraft took less time or memory, above 1 for a rate: pykraft is
faster).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from typing import Final

import attrs

from bench.vs_kafka_figures import Figures, plan_topics

__all__ = ["KAFKA", "PYKRAFT", "Row", "cell", "ratio", "report", "rows"]

PYKRAFT: Final = "pykraft"
KAFKA: Final = "kafka"


@attrs.frozen
class Row:
    label: str
    key: str
    digits: int = 0
    pooled: bool = False  # rounds of every run together: median, max and n
    # a failure under this name stands for every row of its scope (a whole size)
    scope: str = ""


def rows(sizes: Sequence[int], latency_topics: int) -> list[Row]:
    found = [
        Row("cluster start (3 controllers + 3 brokers) -> every node ready, s", "start_s", 1),
        Row(f"CreateTopics 1 partition RF 3, {latency_topics} one after another: p50, ms",
            "create1.p50_ms", 1),
        Row("... p99, ms", "create1.p99_ms", 1),
        Row("controller failover: kill -9 of the active controller -> next CreateTopics "
            "answered, ms", "failover_ms", 0, pooled=True),
        Row("graceful hand-over: SIGTERM of the active controller -> next CreateTopics "
            "answered, ms", "handover_ms", 0, pooled=True),
        Row("RSS per broker, empty cluster, MiB", "rss.empty.broker_mib", 1),
        Row("RSS per controller, empty cluster, MiB", "rss.empty.controller_mib", 1),
        Row("JVM heap in use after GC.run, broker, empty cluster, MiB",
            "heap.empty.broker_mib", 1),
        Row("JVM heap in use after a full GC, broker, empty cluster, MiB",
            "heap_full.empty.broker_mib", 1),
        Row("open files per broker, empty cluster", "files.empty.broker", 0),
        Row("memory map areas per broker, empty cluster", "maps.empty.broker", 0),
    ]
    for size in sizes:
        scope = f"size.{size}"
        requests = len(plan_topics(size))
        found += [
            Row(f"**{size:,} partitions** RF 3 in {requests} CreateTopics of <= 9,999: "
                "last answer, s", f"create.{size}.answer_s", 2, scope=scope),
            Row("... every broker knows every partition with a leader (Metadata), s",
                f"create.{size}.caught_up_s", 2, scope=scope),
            Row("... every broker hosts every replica (DescribeLogDirs), s",
                f"create.{size}.hosted_s", 2, scope=scope),
            Row("... partitions created per second (to every broker knowing them)",
                f"create.{size}.rate", 0, scope=scope),
            Row("... CPU seconds of all 6 nodes, first request -> every replica hosted",
                f"create.{size}.cpu_s", 1, scope=scope),
            Row("... RSS per broker, MiB", f"rss.{size}.broker_mib", 1, scope=scope),
            Row("... RSS per controller, MiB", f"rss.{size}.controller_mib", 1, scope=scope),
            Row("... RSS per idle replica (broker slope from the empty cluster), B",
                f"rss.{size}.per_replica_b", 0, scope=scope),
            Row("... JVM heap in use after GC.run, broker, MiB", f"heap.{size}.broker_mib", 1,
                scope=scope),
            Row("... JVM heap in use after a full GC, broker, MiB",
                f"heap_full.{size}.broker_mib", 1, scope=scope),
            Row("... JVM heap in use after a full GC, controller, MiB",
                f"heap_full.{size}.controller_mib", 1, scope=scope),
            Row("... open files per broker", f"files.{size}.broker", 0, scope=scope),
            Row("... memory map areas per broker", f"maps.{size}.broker", 0, scope=scope),
        ]
    return found


def _number(value: float, digits: int) -> str:
    return f"{value:,.{digits}f}"


def _failure(figures: Figures, row: Row, shown: set[str] | None) -> str | None:
    """The row's own failure, else its scope's: in full the first time the scope is
    shown (``shown`` remembers it), after that a pointer to it."""
    failures = figures.failures.get(row.key)
    if not failures and row.scope in figures.failures:
        failures = figures.failures[row.scope]
        if shown is not None:
            if row.scope in shown:
                return "failed (above)"
            shown.add(row.scope)
    if not failures:
        return None
    more = f" ({len(failures)} runs)" if len(failures) > 1 else ""
    return f"failed{more}: {failures[0]}"


def cell(figures: Figures, row: Row, shown: set[str] | None = None) -> str:
    values = figures.values.get(row.key, [])
    failure = _failure(figures, row, shown)
    if not values:
        return failure or "-"
    if row.pooled:
        text = (f"median {_number(statistics.median(values), row.digits)}, "
                f"max {_number(max(values), row.digits)} (n={len(values)})")
    elif len(values) == 1:
        text = _number(values[0], row.digits)
    else:
        text = (f"{_number(statistics.median(values), row.digits)} "
                f"[{_number(min(values), row.digits)}-{_number(max(values), row.digits)}]")
    return text if failure is None else f"{text}; {failure}"


def ratio(ours: Figures, theirs: Figures, key: str) -> str:
    a, b = ours.median(key), theirs.median(key)
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}"


def report(sides: Mapping[str, Figures], sizes: Sequence[int], latency_topics: int,
           command: str, notes: Sequence[str] = ()) -> str:
    """The markdown table, the notes, and a JSON line of every value and failure."""
    ours, theirs = sides[PYKRAFT], sides[KAFKA]
    lines = [
        f"$ {command}",
        "",
        "| measure | pykraft | Kafka | pykraft / Kafka |",
        "| --- | ---: | ---: | ---: |",
    ]
    shown: dict[str, set[str]] = {PYKRAFT: set(), KAFKA: set()}
    for row in rows(sizes, latency_topics):
        lines.append(f"| {row.label} | {cell(ours, row, shown[PYKRAFT])} | "
                     f"{cell(theirs, row, shown[KAFKA])} | "
                     f"{ratio(ours, theirs, row.key)} |")
    if notes:
        lines += ["", *(f"- {note}" for note in notes)]
    lines += ["", json.dumps({name: {"values": f.values, "failures": f.failures}
                              for name, f in sides.items()}, sort_keys=True)]
    return "\n".join(lines)
