"""The controller at scale: one CreateTopics of 100,000 (or 1,000,000) partitions, real processes.

Run ``python -m bench.bench_scale [--partitions 100000] [--runs 3] [--brokers 3]``;
the big run is ``--partitions 1000000 --brokers 100 --runs 1``.

Every run is a fresh cluster (``deploy.LocalCluster``, fsync on, /metrics on):
3 controllers, ``--real-brokers`` broker processes, the rest of ``--brokers``
simulated in this process (``bench.sim_brokers``: registrations and heartbeats
over the brokers' own lifecycle code, no image), and one spare broker process
started only for the catch-up. Every node snapshots after the creation
(``metadata.log.max.record.bytes.between.snapshots`` = 8 B per partition) and
retention is off, so logs start at 0. The phases (``bench.scale_phases``):

1. start: the brokers registered and unfenced (the active controller's gauges);
2. create: one topic of ``--partitions`` at RF 3 in one request: seconds to
   the answer (the controller answers after the commit) and until every node
   holds the image at the committed offset with one digest (PykraftDescribeImage);
   each node's records applied per second meanwhile
   (``pykraft_metadata_records_applied_total`` from /metrics every 0.5 s until
   the node shows the created image), which cannot pass the pace at which the
   active controller commits the records;
3. snapshot: each node's snapshot size, and the time from the answer to the
   node's "wrote metadata snapshot" log line; then the leader's snapshot file
   read, written and hashed in this process (the node's code, slice by slice);
4. restart of a follower controller (SIGTERM, start): until its log says the
   snapshot is loaded, and until /metrics shows its image back;
5. the same without its snapshot files: it replays its whole log from offset 0
   (records applied per second with nothing else to wait for);
6. ``--failover-rounds`` kill -9 of the active controller: until a one-partition
   CreateTopics through the survivors is answered;
7. a full restart (``bench.scale_restart``): every node stopped in order and
   started again; to the active controller's claim, every broker registered,
   unfenced, every ISR full; the brokers' registration and heartbeat answer
   times meanwhile;
8. the spare broker from empty: to unfenced, to the snapshot loaded, to the
   active controller's digest.

Each node's longest event-loop stall per phase, RSS after each phase (VmRSS,
and VmHWM at the end), and per kind of work its slices (count, units, the
longest) are read from /metrics and /proc. Medians over runs, per-run values
in brackets. ``--profile kafka`` runs the nodes with Kafka's default timeouts
instead of the short test profile. ``--handicap FACTOR`` runs everything on
this machine made FACTOR times slower on purpose (``deploy.handicap``; the
report's first line says the factor reached).
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from bench import scale_after as after
from bench import scale_phases as phases
from bench.controller_probes import metadata_files
from bench.scale_checks import UnexplainedElection, check_epoch
from bench.scale_phases import ScaleRun
from bench.scale_report import report
from bench.scale_restart import full_restart
from bench.scale_snapshot import snapshot_path, time_snapshot
from bench.sim_brokers import SimulatedBrokers
from deploy import ClusterSpec, LocalCluster
from deploy.handicap import CpuHandicap
from quorum.log.protocol import OffsetAndEpoch

__all__ = ["main"]

CONTROLLERS: Final = 3
FIRST_SIMULATED_ID: Final = 1001
# a snapshot after the creation (about 74 B per partition), none after the small
# creations of the failover rounds
SNAPSHOT_BYTES_PER_PARTITION: Final = 8


def cluster_spec(args: argparse.Namespace, wait_s: float) -> ClusterSpec:
    return ClusterSpec(
        controllers=CONTROLLERS, brokers=args.real_brokers + 1, metrics=True,
        test_profile=args.profile == "test", ready_timeout_s=wait_s,
        properties={
            "metadata.log.max.record.bytes.between.snapshots":
                str(max(4096, SNAPSHOT_BYTES_PER_PARTITION * args.partitions)),
            # the log start stays 0: no snapshot is ever removed
            "metadata.max.retention.bytes": "-1",
            # brokers host every replica: with the test profile's 2 s lag time the followers'
            # sessions (filling 500 partitions a round trip) shrink and regrow most ISRs after
            # the creation, and the metadata log never holds still for the nodes to agree on
            # one image; Kafka's 30 s, as the 100,000-partition scale test uses
            "replica.lag.time.max.ms": "30000",
            **dict(p.split("=", 1) for p in args.property),
        },
    )


def in_process(run: ScaleRun) -> None:
    """A snapshot file of the created image (the active controller's if it has one) read,
    written and hashed in this process."""
    holders = [n for n in run.nodes if after.snapshot_offset(run, n) >= run.created_end]
    if not holders:
        run.notes.append("in-process snapshot figures: not measured: no node holds a "
                         "snapshot of the created image")
        return
    leader = run.cluster.leader()
    node = leader if leader in holders else holders[0]
    files = metadata_files(run.cluster, node)
    assert files.latest_snapshot is not None
    times = time_snapshot(snapshot_path(run.cluster, node, files),
                          OffsetAndEpoch(*files.latest_snapshot[0]))
    for name, work in (("load", times.load), ("write", times.write), ("digest", times.digest)):
        run.figures[f"inproc.{name}"] = work.total_s
        run.figures[f"inproc.{name}.median_ms"] = work.median_slice_ms
        run.figures[f"inproc.{name}.max_ms"] = work.max_slice_ms
    run.figures["inproc.records"] = times.records


def record_fenced(run: ScaleRun, phase: str) -> None:
    sample = phases.leader_sample(run)
    if sample is not None:
        fenced = sample.raw.get("kafka_controller_fenced_broker_count", -1)
        active = sample.raw.get("kafka_controller_active_broker_count", -1)
        run.figures[f"fenced.{phase}"] = fenced
        if fenced != 0:
            run.notes.append(f"after {phase}: {fenced:.0f} brokers fenced, {active:.0f} active")
    if run.sim.failure is not None:
        raise RuntimeError(f"the simulated brokers stopped: {run.sim.failure!r}")


def one_run(args: argparse.Namespace, base: Path, wait_s: float) -> ScaleRun:
    cluster = LocalCluster(base, cluster_spec(args, wait_s))
    cluster.prepare()
    sim = SimulatedBrokers(cluster, args.brokers - args.real_brokers, FIRST_SIMULATED_ID)
    run = ScaleRun(cluster, sim, nodes=cluster.node_ids + cluster.broker_ids[:args.real_brokers],
                   spare=cluster.broker_ids[args.real_brokers], brokers=args.brokers,
                   wait_s=wait_s)
    steps: list[tuple[str, Callable[[], object]]] = [
        ("start", lambda: phases.start(run)),
        ("create", lambda: phases.create(run, args.partitions)),
        ("snapshot", lambda: after.snapshots(run, 30 + args.partitions / 10_000)),
        ("in-process", lambda: in_process(run)),
        ("restart", lambda: after.restart(run, "restart", drop_snapshots=False)),
        ("replay", lambda: after.restart(run, "replay", drop_snapshots=True)),
        ("failover", lambda: failover(run, args.failover_rounds)),
        ("fullrestart", lambda: full_restart(run)),
        ("catchup", lambda: after.broker_catch_up(run)),
    ]
    try:
        run_steps(run, steps)
    finally:
        sim.close()
        cluster.close()
    return run


def run_steps(run: ScaleRun, steps: Sequence[tuple[str, Callable[[], object]]]) -> None:
    """Each phase in turn; an unexplained election stops the run (``run.stopped`` says
    why) and keeps what was measured before it."""
    cluster = run.cluster
    try:
        for name, step in steps:
            begun = time.perf_counter()
            since = time.time()
            found = cluster.find_leader()
            epoch = -1 if found is None else found[1].leader_epoch
            if name == "create":
                run.figures["leader"] = cluster.leader()
            step()
            if name not in ("start", "failover", "fullrestart"):
                check_epoch(cluster, run.nodes, name, epoch, since)
            record_fenced(run, name)
            print(f"  {name} done in {time.perf_counter() - begun:.1f} s", file=sys.stderr,
                  flush=True)
        run.record_rss("end", [*run.nodes, *([run.spare] if run.spare is not None else [])])
    except UnexplainedElection as exc:
        run.stopped = str(exc)


def failover(run: ScaleRun, rounds: int) -> None:
    for i, seconds in enumerate(after.failover(run, rounds)):
        run.figures[f"failover.{i}"] = seconds


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--brokers", type=int, default=3,
                        help="brokers registered before the creation (real and simulated)")
    parser.add_argument("--real-brokers", type=int, default=None,
                        help="how many of them are processes (default: all up to 3, else 1)")
    parser.add_argument("--failover-rounds", type=int, default=3)
    parser.add_argument("--profile", choices=("test", "kafka"), default="test",
                        help="the short test profile's timeouts, or Kafka's defaults")
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                        help="a node setting on top of the profile (repeatable)")
    parser.add_argument("--dir", default=None, help="where the nodes keep their data")
    parser.add_argument("--keep", action="store_true", help="keep the nodes' data and logs")
    parser.add_argument("--handicap", type=float, default=None, metavar="FACTOR",
                        help="make this machine FACTOR times slower on purpose (at least 1)")
    args = parser.parse_args(argv)
    if args.real_brokers is None:
        args.real_brokers = args.brokers if args.brokers <= 3 else 1
    if args.brokers < 3 or not 0 <= args.real_brokers <= args.brokers:
        parser.error("--brokers must be at least 3 (RF 3) and --real-brokers at most that")
    # the waits grow with the metadata (90 s, or 1 s per 4,000 partitions) and the handicap
    wait_s = max(90.0, args.partitions / 4000) * max(1.0, args.handicap or 1.0)
    base = Path(tempfile.mkdtemp(dir=args.dir, prefix="bench-scale-"))
    runs = []
    handicap = None if args.handicap is None else CpuHandicap(args.handicap)
    args.handicap_report = None
    if handicap is not None:
        args.handicap_report = handicap.start().describe()
        print(args.handicap_report, file=sys.stderr, flush=True)
    started = time.perf_counter()
    try:
        for i in range(args.runs):
            runs.append(one_run(args, base / f"run-{i}", wait_s))
            print(f"run {i + 1}/{args.runs} done after {time.perf_counter() - started:.0f} s",
                  file=sys.stderr, flush=True)
            if runs[-1].stopped:
                break
    finally:
        if handicap is not None:
            handicap.stop()
        if args.keep:
            print(f"data and logs kept in {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)
    print(f"\n$ python -m bench.bench_scale {shlex.join(sys.argv[1:])}")
    report(runs, args)
    if runs and runs[-1].stopped:
        sys.exit(1)


if __name__ == "__main__":
    main()
