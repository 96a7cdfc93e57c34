"""The report of ``bench.bench_scale``: medians over runs with every run's value, as tables.

Markdown tables, so that the output can go into docs/performance.md as it is.
A figure a run could not take is left out of its median and the run's notes
say why; a figure no run took is printed as "not measured".
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable, Sequence
from typing import Final

from bench.scale_phases import ScaleRun

__all__ = ["report"]

Format = Callable[[float], str]

_S: Final[Format] = lambda v: f"{v:.2f} s"  # noqa: E731
_MS: Final[Format] = lambda v: f"{v:.0f} ms"  # noqa: E731
_RATE: Final[Format] = lambda v: f"{v:,.0f}/s"  # noqa: E731
_BYTES: Final[Format] = lambda v: f"{v:,.0f} B"  # noqa: E731
_SHARE: Final[Format] = lambda v: f"{v:.2f}"  # noqa: E731
_MIB: Final[Format] = lambda v: f"{v / 2**20:,.0f} MiB"  # noqa: E731
_MS1: Final[Format] = lambda v: f"{v:.1f} ms"  # noqa: E731
_COUNT: Final[Format] = lambda v: f"{v:,.0f}"  # noqa: E731

GOALS: Final = {
    "apply": 100_000.0,  # records/s on each follower and broker
    "load": 10.0,  # s, snapshot load at 1M
    "failover": 1.0,  # s, kill -9 -> first CreateTopics at 1M
    "catchup": 10.0,  # s, empty broker -> unfenced with the same digest at 1M
}


def _cell(values: Sequence[float], fmt: Format) -> str:
    if not values:
        return "not measured"
    if len(values) == 1:
        return fmt(values[0])
    return f"{fmt(statistics.median(values))} [{', '.join(fmt(v) for v in values)}]"


def _figure(runs: Sequence[ScaleRun], key: str) -> list[float]:
    return [r.figures[key] for r in runs if key in r.figures]


def _scalar_rows(args: argparse.Namespace) -> list[tuple[str, str, Format]]:
    p = f"{args.partitions:,}"
    return [
        (f"{args.brokers} brokers registered and unfenced (from the first request)",
         "register", _S),
        (f"CreateTopics, 1 topic x {p} partitions, RF 3: answered (= committed)",
         "create.answer", _S),
        ("... until every node holds the image at that offset, one digest (PykraftDescribeImage)",
         "create.agree", _S),
        ("records committed per second by the active controller (creation / answer time)",
         "create.commit_rate", _RATE),
        ("  ... cores in use meanwhile: the node processes together (of the machine's "
         f"{os.cpu_count()}) / this process (simulated brokers, scrapes)", "create.cpu_nodes",
         _SHARE),
        ("", "create.cpu_bench", _SHARE),
        ("snapshot of the image, read in this process (SnapshotReader slices)",
         "inproc.load", _S),
        ("  ... median / longest slice of 1,000 records",
         "inproc.load.median_ms", _MS1),
        ("", "inproc.load.max_ms", _MS1),
        ("snapshot written in this process (SnapshotBuilder slices + join + write + fsync)",
         "inproc.write", _S),
        ("  ... median / longest slice (the last one joins and writes the file)",
         "inproc.write.median_ms", _MS1),
        ("", "inproc.write.max_ms", _MS1),
        ("image digest in this process (ImageSummaryBuilder slices)", "inproc.digest", _S),
        ("follower controller restarted (SIGTERM, start): start -> snapshot loaded (log line)",
         "restart.loaded", _S),
        ("  ... start -> image back at the committed offset (/metrics, after its digest)",
         "restart.image", _S),
        ("  ... longest snapshot-load slice on the node", "restart.snapshot-load.max_ms", _MS1),
        ("same node restarted without its snapshots: start -> image back (replays its log)",
         "replay.image", _S),
        ("  ... records applied per second while it replayed", "replay.apply_rate", _RATE),
        ("  ... longest replay slice on the node", "replay.replay.max_ms", _MS1),
        ("full restart (brokers stopped, then controllers; all started): start -> a "
         "controller claims (its log line)", "fullrestart.claim", _S),
        ("  ... start -> every broker registered", "fullrestart.registered", _S),
        ("  ... start -> every broker unfenced (active controller's gauges)",
         "fullrestart.unfenced", _S),
        ("  ... start -> every ISR full (broker processes' gauges)", "fullrestart.isr_full", _S),
        ("  ... longest single step of a controller's / a broker's event loop meanwhile",
         "fullrestart.controller_step_ms", _MS),
        ("", "fullrestart.broker_step_ms", _MS),
        *_lifecycle_rows(),
        ("new broker process from empty: start -> unfenced", "catchup.unfenced", _S),
        ("  ... start -> snapshot loaded (log line)", "catchup.loaded", _S),
        ("  ... start -> same digest as the active controller", "catchup.agree", _S),
    ]


def _lifecycle_rows() -> list[tuple[str, str, Format]]:
    rows: list[tuple[str, str, Format]] = []
    for kind in ("BrokerRegistration", "BrokerHeartbeat"):
        for who, what in (("brokers", "broker processes' (their /metrics; p50, p99: the "
                                      "largest of any one broker's)"),
                          ("simulated", "simulated brokers' (every answer; unanswered "
                                        "counted from the claim)")):
            rows += [
                (f"  ... {kind} answer time during it, {what}: p50 / p99 / max",
                 f"fullrestart.{kind}.{who}.p50_ms", _MS),
                ("", f"fullrestart.{kind}.{who}.p99_ms", _MS),
                ("", f"fullrestart.{kind}.{who}.max_ms", _MS),
                (f"  ... {kind}s without an answer, {who}: timed out / the leader moved "
                 "/ connection lost",
                 f"fullrestart.{kind}.{who}.unanswered_timeout", _COUNT),
                ("", f"fullrestart.{kind}.{who}.unanswered_leader_moved", _COUNT),
                ("", f"fullrestart.{kind}.{who}.unanswered_connection", _COUNT),
            ]
    return rows


def _print_scalars(runs: Sequence[ScaleRun], args: argparse.Namespace) -> None:
    print("| figure | median [per run] |\n| --- | ---: |")
    rows = _scalar_rows(args)
    for i, (label, key, fmt) in enumerate(rows):
        if not label:
            continue
        cell = _cell(_figure(runs, key), fmt)
        for follower in _followers(rows, i):
            cell += " / " + _cell(_figure(runs, follower[1]), follower[2])
        keys = [key, *(f[1] for f in _followers(rows, i))]
        if key.count(".") > 2 and all(not _figure(runs, k) for k in keys):
            continue  # answer times of a kind of broker this run did not have
        print(f"| {label} | {cell} |")
    failover = [v for r in runs for k, v in r.figures.items() if k.startswith("failover.")]
    cell = (f"median {1000 * statistics.median(failover):.0f} ms, max "
            f"{1000 * max(failover):.0f} ms (n={len(failover)})") if failover else "not measured"
    print(f"| kill -9 of the active controller -> 1-partition CreateTopics answered | {cell} |")


def _followers(
    rows: Sequence[tuple[str, str, Format]], i: int
) -> list[tuple[str, str, Format]]:
    """The unlabelled rows right after row ``i``: their values share its cell."""
    found = []
    for row in rows[i + 1:]:
        if row[0]:
            break
        found.append(row)
    return found


def _role(node: int, runs: Sequence[ScaleRun]) -> str:
    cluster = runs[0].cluster
    if node in cluster.node_ids:
        leaders = [i + 1 for i, r in enumerate(runs) if r.figures.get("leader") == node]
        return "controller" + (f" (active at creation in run {leaders})" if leaders else "")
    return "broker (spare, from empty)" if node == runs[0].spare else "broker"


def _print_nodes(runs: Sequence[ScaleRun]) -> None:
    nodes = sorted({n for r in runs for values in r.per_node.values() for n in values})
    columns: list[tuple[str, str, Format]] = [
        ("records applied/s during the creation", "apply.create", _RATE),
        ("CPU while the creation was committed (share of one core)", "create.cpu", _SHARE),
        ("request -> /metrics shows the created image", "create.published", _S),
        ("snapshot", "snapshot.bytes", _BYTES),
        ("answer -> snapshot written", "snapshot.written", _S),
        ("RSS after start", "rss.start", _MIB),
        ("RSS after creation", "rss.create", _MIB),
        ("RSS at the end", "rss.end", _MIB),
        ("peak RSS", "rss.peak", _MIB),
    ]
    print("\n| node | " + " | ".join(c[0] for c in columns) + " |")
    print("| --- |" + " ---: |" * len(columns))
    for node in nodes:
        cells = [_cell([r.per_node[key][node] for r in runs
                        if node in r.per_node.get(key, {})], fmt) for _, key, fmt in columns]
        print(f"| {node} {_role(node, runs)} | " + " | ".join(cells) + " |")


def _print_stalls(runs: Sequence[ScaleRun]) -> None:
    phases = [p for p in ("create", "restart", "replay", "failover", "fullrestart", "catchup")
              if any(p in r.stalls for r in runs)]
    nodes = sorted({n for r in runs for s in r.stalls.values() for n in s})
    print("\nLongest event-loop stall per node and phase, ms (each run; \"<=\": no new "
          "all-time maximum in the phase, the one-minute window's value; \"-\": not running "
          "or not scraped)\n")
    print("| node | " + " | ".join(phases) + " |")
    print("| --- |" + " ---: |" * len(phases))
    for node in nodes:
        cells = []
        for phase in phases:
            values = []
            for r in runs:
                stall = r.stalls.get(phase, {}).get(node)
                values.append("-" if stall is None else stall.text())
            cells.append(", ".join(values))
        print(f"| {node} | " + " | ".join(cells) + " |")


_TYPICAL: Final = {
    "snapshot-load": "inproc.load.median_ms",
    "replay": "inproc.load.median_ms",  # decoding and replaying 1,000 PartitionRecords
    "snapshot-write": "inproc.write.median_ms",
    "digest": "inproc.digest.median_ms",
}


def _longest(run: ScaleRun, kind: str) -> tuple[float, int, str] | None:
    """The longest slice of ``kind`` any node reported at the end of any phase."""
    found = [(value, node, key.rsplit(".", 1)[1])
             for key, values in run.per_node.items()
             if key.startswith(f"slice.{kind}.max_ms.") for node, value in values.items()]
    return max(found) if found else None


def _print_slices(runs: Sequence[ScaleRun]) -> None:
    kinds = sorted({key.split(".")[1] for r in runs for key in r.per_node
                    if key.startswith("slice.")})
    print("\nSlices of work by kind (/metrics). Slices and units: all nodes from their start "
          "to the end of the snapshot phase (creation, replay, snapshots). Longest: any node, "
          "any phase (ms @ node, phase read at; each run). Typical: the median slice of the "
          "same code in this process (no such figure on /metrics)\n")
    print("| kind | slices | units per slice | longest | typical (in process) |")
    print("| --- | ---: | ---: | --- | ---: |")
    for kind in kinds:
        counts = [sum(r.per_node.get(f"slice.{kind}.count.snapshot", {}).values())
                  for r in runs]
        units = [sum(r.per_node.get(f"slice.{kind}.units.snapshot", {}).values())
                 for r in runs]
        longest = [f"{v:.0f} @ {n}, {p}" for r in runs if (found := _longest(r, kind))
                   for v, n, p in [found]]
        per_slice = [u / c for u, c in zip(units, counts, strict=True) if c]
        typical = _figure(runs, _TYPICAL[kind]) if kind in _TYPICAL else []
        print(f"| {kind} | {_cell([c for c in counts if c], _COUNT)} | "
              f"{_cell(per_slice, _COUNT)} | {'; '.join(longest)} | "
              f"{_cell(typical, _MS1) if typical else '-'} |")


def _print_goals(runs: Sequence[ScaleRun]) -> None:
    streamed = [v for r in runs for n, v in r.per_node.get("apply.create", {}).items()
                if n != r.figures.get("leader")]
    replayed = _figure(runs, "replay.apply_rate")
    checks: list[tuple[str, float | None, Callable[[float], bool], Format]] = [
        ("apply >= 100,000 records/s: a node replaying its log, nothing else to wait for",
         min(replayed) if replayed else None, lambda v: v >= GOALS["apply"], _RATE),
        ("apply >= 100,000 records/s: followers and brokers while the creation streams in "
         "(at most the commit pace; the nodes then kept "
         f"{max(_figure(runs, 'create.cpu_nodes'), default=0):.2f} of {os.cpu_count()} cores "
         "busy)",
         min(streamed) if streamed else None, lambda v: v >= GOALS["apply"], _RATE),
        ("snapshot load < 10 s (node restart, to the log line)",
         max(_figure(runs, "restart.loaded"), default=None), lambda v: v < GOALS["load"], _S),
        ("failover: kill -9 -> first CreateTopics < 1 s (slowest round)",
         max((v for r in runs for k, v in r.figures.items() if k.startswith("failover.")),
             default=None), lambda v: v < GOALS["failover"], _S),
        ("broker from empty -> unfenced with the same digest < 10 s",
         max(_figure(runs, "catchup.agree"), default=None), lambda v: v < GOALS["catchup"], _S),
    ]
    print("\n| goal | worst seen | met |\n| --- | ---: | --- |")
    for label, value, met, fmt in checks:
        if value is None:
            print(f"| {label} | not measured | - |")
        else:
            print(f"| {label} | {fmt(value)} | {'yes' if met(value) else 'no'} |")


def report(runs: Sequence[ScaleRun], args: argparse.Namespace) -> None:
    simulated = args.brokers - args.real_brokers
    if args.handicap_report is not None:
        print(args.handicap_report)
    heartbeat = runs[0].sim.heartbeat_interval_ms if runs and simulated else None
    print(f"{args.partitions:,} partitions x RF 3; 3 controllers, {args.brokers} brokers "
          f"({args.real_brokers} processes, {simulated} simulated"
          + (f", heartbeat every {heartbeat} ms" if heartbeat else "")
          + f") + 1 spare broker process; {args.profile} profile; fsync on; "
          f"{os.cpu_count()} cores; {len(runs)} run(s)\n")
    if not runs:
        return
    _print_scalars(runs, args)
    _print_nodes(runs)
    _print_stalls(runs)
    _print_slices(runs)
    _print_goals(runs)
    for i, run in enumerate(runs):
        for note in run.notes:
            print(f"note (run {i + 1}): {note}")
        if run.stopped:
            print(f"\nRUN {i + 1} STOPPED: {run.stopped}")
