"""The controller with 10,000 partitions: commit, snapshot, broker catch-up, failover.

Run ``python -m bench.bench_controller [--runs 3] [--partitions 10000]
[--failover-rounds 5] [--skip-layouts]``.

Every cluster is real processes on loopback (``deploy.LocalCluster``), fsync
on, the test profile; 3 controllers and 3 running brokers, plus spare brokers
formatted with the others but started only to time a catch-up. Per run:

* snapshot cluster (every node snapshots after 4 KiB of records; the log
  cleaner's byte limit is three creations' worth, see ``snapshot_properties``):
  one CreateTopics of one topic of ``--partitions`` partitions at RF 3, timed
  as below; the size of each node's snapshot and metadata log after it; a
  spare broker started from empty, which downloads the snapshot (Kafka's
  rule: a fetch from offset 0 is answered with the latest snapshot) though
  the log still starts at 0 (checked before it starts; if the log start has
  moved the figure is not taken and the report says why). Then pad topics,
  each followed by a snapshot, until the active controller's cleaner (every
  second in the test profile, ``metadata.log.cleaner.interval.ms``) moves the
  log start past 0, after which a second spare broker starts from empty.
* a log cluster (no node reaches Kafka's 20 MiB between snapshots) where the
  same CreateTopics is
  timed: seconds until the answer (the controller answers after the commit)
  and until every node reported an image at the committed offset (digests
  then checked equal); PykraftDescribeImage round trips to a broker holding
  that image (the digest is computed once per image); a spare broker started
  from empty replays the log from offset 0; then ``--failover-rounds`` times
  kill -9 of the active
  controller, seconds until a one-partition CreateTopics succeeds through
  the survivors (restart and catch-up between rounds). Then two side
  clusters: 100 topics of ``partitions / 100`` in one request, and in 100
  requests one after the other.

A catch-up is timed from the broker's process start until the cluster lists
it unfenced (Metadata at a running broker) and until it reported an image at
the active controller's committed offset. Rows are the median [min-max] over
runs; failover pools every round of every run (median, max).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from bench.controller_probes import (
    FAST_RETRY,
    WAIT_S,
    create_topics,
    describe_image_s,
    leader_high_watermark,
    metadata_files,
    start_nodes,
    unfenced_brokers,
    wait_agreed,
    wait_reached,
    wait_until,
)
from deploy import ClusterSpec, LocalCluster
from quorum.controller.digest import ImageSummary
from quorum.controller.snapshot import read_snapshot
from quorum.log.protocol import OffsetAndEpoch
from quorum.log.snapshots import snapshot_file_name
from quorum.storage import METADATA_PARTITION_DIR

__all__ = ["main"]

# a PartitionRecord at RF 3 takes about 74 B in the log and in a snapshot; a bound above it
PARTITION_BYTES: Final = 80


def snapshot_properties(partitions: int) -> dict[str, str]:
    """Every node snapshots after 4 KiB of records: once while the creation's metadata
    transaction is open (the image before it, at the offset where it began) and once after
    it. The cleaner drops the oldest snapshot while the log and the snapshots hold more than
    ``metadata.max.retention.bytes``: set to three creations' worth, it leaves both (the log
    start stays 0, whatever the cleaner's timing) until the pad topics of
    ``advance_log_start`` add snapshots of the whole image, after which it keeps only the
    latest."""
    return {
        # Kafka's default: every 20 MiB
        "metadata.log.max.record.bytes.between.snapshots": "4096",
        "metadata.max.retention.bytes": str(3 * PARTITION_BYTES * partitions),
    }


# two spare brokers: one started while the log starts at 0, one after the cleaner moved it
SPARE_BROKERS: Final = 2
# Kafka's snapshot interval (20 MiB of records): no snapshot during the bench
LOG_SPEC: Final = ClusterSpec(controllers=3, brokers=4)
SIDE_SPEC: Final = ClusterSpec(controllers=3, brokers=3)
RUNNING_BROKERS: Final = 3
# the test profile cleans every second; a margin for a busy machine
CLEANER_WAIT_S: Final = 30.0
DESCRIBE_ROUNDS: Final = 20
Requests = list[list[tuple[str, int]]]


# -- phases ----------------------------------------------------------------------------------


def measure_creation(cluster: LocalCluster, requests: Requests,
                     nodes: Sequence[int]) -> dict[str, float]:
    start = time.perf_counter()
    create_topics(cluster, requests)
    committed = time.perf_counter()
    target = leader_high_watermark(cluster)
    assert target is not None
    reached = wait_reached(cluster, nodes, target)
    wait_agreed(cluster, nodes)
    return {"commit": committed - start, "agree": reached - start}


def measure_snapshots(cluster: LocalCluster, nodes: Sequence[int],
                      min_offset: int) -> dict[str, float]:
    """Sizes once every node holds a snapshot at or after ``min_offset``."""
    def taken() -> bool:
        latest = [metadata_files(cluster, n).latest_snapshot for n in nodes]
        return all(s is not None and s[0][0] >= min_offset for s in latest)

    wait_until(taken, WAIT_S, f"snapshots at or after offset {min_offset}")
    files = {n: metadata_files(cluster, n) for n in nodes}
    sizes = {n: f.latest_snapshot[1] for n, f in files.items() if f.latest_snapshot}
    return {
        "snapshot_controller": statistics.median(sizes[n] for n in cluster.node_ids),
        "snapshot_broker": statistics.median(s for n, s in sizes.items()
                                             if n in cluster.broker_ids),
        "log_bytes": statistics.median(files[n].log_bytes for n in cluster.node_ids),
    }


def measure_summary(cluster: LocalCluster, node: int) -> float:
    """Seconds to compute the digest and offline count of ``node``'s latest snapshot's image,
    in this process (what a node's first PykraftDescribeImage answer for an image costs)."""
    latest = metadata_files(cluster, node).latest_snapshot
    assert latest is not None
    snapshot_id = OffsetAndEpoch(*latest[0])
    path = (cluster.layout[node].metadata_dir / METADATA_PARTITION_DIR
            / snapshot_file_name(snapshot_id))
    image = read_snapshot(path.read_bytes(), snapshot_id)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        ImageSummary.of(image)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure_catch_up(cluster: LocalCluster, broker: int, via: int) -> dict[str, float]:
    """A broker started from empty: seconds to unfenced and to the controllers' image
    (the committed offset once it is unfenced, which includes its own records)."""
    start = time.perf_counter()
    cluster.start_node(broker, wait=False)
    unfenced = wait_until(lambda: broker in (unfenced_brokers(cluster, via) or set()),
                          WAIT_S, f"broker {broker} unfenced")
    target = leader_high_watermark(cluster)
    assert target is not None
    reached = wait_reached(cluster, [broker], target)
    wait_agreed(cluster, [cluster.leader(), broker])
    return {"unfenced": unfenced - start, "agree": reached - start}


def advance_log_start(cluster: LocalCluster) -> None:
    """Pad topics until the active controller's log starts past offset 0: the cleaner
    (every second in the test profile) keeps only the latest snapshot, so the log start
    moves once a second snapshot exists; two snapshots side by side last under a second."""
    def moved() -> bool:
        return metadata_files(cluster, cluster.leader()).log_start_offset > 0

    for i in range(10):
        if moved():
            return
        # 100 partitions: more than the 4 KiB between snapshots
        create_topics(cluster, [[(f"pad-{i}", 100)]])
        try:
            wait_until(moved, CLEANER_WAIT_S / 10, "the log cleaner to move the log start",
                       poll_s=0.05)
        except TimeoutError:
            continue
    if not moved():
        raise RuntimeError("the active controller's log start did not move after 10 pad topics")


def failover_rounds(cluster: LocalCluster, rounds: int, run: int) -> list[float]:
    """Seconds from kill -9 of the active controller to the next successful CreateTopics."""
    times = []
    for i in range(rounds):
        leader = cluster.wait_caught_up(timeout=WAIT_S).leader_id
        survivors = [n for n in cluster.node_ids if n != leader]
        start = time.perf_counter()
        # os.kill, not cluster.kill: reaping the process would sit inside the timing
        os.kill(cluster.pid(leader), signal.SIGKILL)
        create_topics(cluster, [[(f"failover-{run}-{i}", 1)]], bootstrap=survivors,
                      settings=FAST_RETRY)
        times.append(time.perf_counter() - start)
        cluster.wait_exit(leader, timeout=20)
        cluster.start_node(leader)
        cluster.wait_caught_up(timeout=WAIT_S)
        wait_agreed(cluster, cluster.node_ids)
    return times


@contextmanager
def running(base: Path, spec: ClusterSpec) -> Iterator[LocalCluster]:
    cluster = LocalCluster(base, spec)
    try:
        cluster.prepare()
        yield cluster
    finally:
        cluster.close()


def measure_layouts(base: Path, partitions: int) -> dict[str, float]:
    """The same partitions as 100 topics, in one request and in 100, on fresh clusters."""
    per_topic = max(1, partitions // 100)
    layouts: dict[str, Requests] = {
        "hundred_one": [[(f"t{i}", per_topic) for i in range(100)]],
        "hundred_many": [[(f"t{i}", per_topic)] for i in range(100)],
    }
    results = {}
    for name, requests in layouts.items():
        with running(base / name, SIDE_SPEC) as cluster:
            nodes = cluster.node_ids + cluster.broker_ids
            start_nodes(cluster, nodes)
            for key, value in measure_creation(cluster, requests, nodes).items():
                results[f"{name}.{key}"] = value
    return results


def _check(condition: bool, problem: str) -> None:
    if not condition:
        raise RuntimeError(f"the run did not measure what it should: {problem}")


def _prefixed(prefix: str, values: dict[str, float]) -> dict[str, float]:
    return {f"{prefix}.{key}": value for key, value in values.items()}


class NotApplicable(Exception):
    """The state a figure is defined for did not hold (the message says why); the run
    goes on and the report prints the reason instead of the figure."""


def snapshot_catch_up(cluster: LocalCluster, broker: int, expect_log_start: bool
                      ) -> dict[str, float]:
    """A broker started from empty while the leader holds a snapshot: it must download it
    (Kafka's rule: a fetch from offset 0 is answered with the latest snapshot)."""
    leader_start = metadata_files(cluster, cluster.leader()).log_start_offset
    if (leader_start > 0) != expect_log_start:
        raise NotApplicable(f"the active controller's log started at {leader_start} when "
                            f"broker {broker} was to start")
    result = measure_catch_up(cluster, broker, cluster.broker_ids[0])
    files = metadata_files(cluster, broker)
    start = files.first_segment_offset
    downloaded = [size for (offset, _), size in files.snapshots.items() if offset == start]
    _check(start is not None and start > 0 and bool(downloaded),
           f"broker {broker} holds no downloaded snapshot at its log start ({files})")
    return {**result, "downloaded": downloaded[0]}


def without_snapshots(args: argparse.Namespace, base: Path, run: int
                      ) -> dict[str, list[float]]:
    """Creation and a broker's catch-up from the log (no node writes a snapshot: the
    log stays under Kafka's 20 MiB between snapshots), then the failover rounds."""
    with running(base, LOG_SPEC) as cluster:
        nodes = cluster.node_ids + cluster.broker_ids[:RUNNING_BROKERS]
        start_nodes(cluster, nodes)
        results = _prefixed("one", measure_creation(cluster, [[("big", args.partitions)]], nodes))
        # the same image every time: wait_agreed's answers hashed it, these reuse the digest
        rounds = [describe_image_s(cluster, cluster.broker_ids[0])
                  for _ in range(DESCRIBE_ROUNDS)]
        results["describe_again"] = statistics.median(rounds)
        spare = cluster.broker_ids[RUNNING_BROKERS]
        results.update(_prefixed("log", measure_catch_up(cluster, spare, cluster.broker_ids[0])))
        files = metadata_files(cluster, spare)
        _check(files.first_segment_offset == 0 and not files.snapshots,
               f"broker {spare} did not replay the log from offset 0 ({files})")
        failover = failover_rounds(cluster, args.failover_rounds, run)
    return {**{key: [value] for key, value in results.items()}, "failover": failover}


def one_run(args: argparse.Namespace, base: Path, run: int, notes: list[str]
            ) -> dict[str, list[float]]:
    """The snapshot cluster, the cluster without snapshots, the side layouts; ``notes``
    gets a line for every figure this run could not measure, and why."""
    results: dict[str, float] = {}
    spec = ClusterSpec(controllers=3, brokers=RUNNING_BROKERS + SPARE_BROKERS,
                       properties=snapshot_properties(args.partitions))
    with running(base / f"run-{run}-snapshots", spec) as cluster:
        nodes = cluster.node_ids + cluster.broker_ids[:RUNNING_BROKERS]
        start_nodes(cluster, nodes)
        before = leader_high_watermark(cluster)
        assert before is not None
        created = measure_creation(cluster, [[("big", args.partitions)]], nodes)
        results.update(_prefixed("snapshotting", created))
        # the topic record and one record per partition come after ``before``
        results.update(measure_snapshots(cluster, nodes, before + args.partitions + 1))
        results["summary"] = measure_summary(cluster, cluster.node_ids[0])
        spare, later = cluster.broker_ids[RUNNING_BROKERS:]
        try:
            results.update(_prefixed("snap0", snapshot_catch_up(cluster, spare, False)))
        except NotApplicable as exc:
            notes.append(f"run {run + 1}: 'new broker, snapshot, log start 0' not measured: "
                         f"{exc}")
        advance_log_start(cluster)
        results.update(_prefixed("snap", snapshot_catch_up(cluster, later, True)))
    pooled = without_snapshots(args, base / f"run-{run}-log", run)
    if not args.skip_layouts:
        results.update(measure_layouts(base / f"run-{run}-layouts", args.partitions))
    for key, value in results.items():
        pooled[key] = [value]
    return pooled


# -- report ----------------------------------------------------------------------------------


def rows(partitions: int) -> list[tuple[str, str, str]]:
    per = max(1, partitions // 100)
    return [
        (f"1 topic x {partitions:,} partitions, RF 3: answer (committed)", "one.commit", "s"),
        ("  ... until all 6 nodes hold the same image digest", "one.agree", "s"),
        ("image digest + offline count, in process (once per image)", "summary", "ms"),
        (f"PykraftDescribeImage round trip, same image (median of {DESCRIBE_ROUNDS})",
         "describe_again", "ms"),
        (f"100 topics x {per:,}, one request: answer", "hundred_one.commit", "s"),
        ("  ... until all 6 nodes agree", "hundred_one.agree", "s"),
        (f"100 topics x {per:,}, 100 requests in turn: last answer", "hundred_many.commit", "s"),
        ("  ... until all 6 nodes agree", "hundred_many.agree", "s"),
        ("1 topic, every node snapshotting after it: answer", "snapshotting.commit", "s"),
        ("  ... until all 6 nodes agree", "snapshotting.agree", "s"),
        ("snapshot (.checkpoint) after the creation, controllers", "snapshot_controller", "B"),
        ("snapshot (.checkpoint) after the creation, brokers", "snapshot_broker", "B"),
        ("metadata log (.log bytes) after the creation", "log_bytes", "B"),
        ("new broker, no snapshot (log from 0): start -> unfenced", "log.unfenced", "s"),
        ("  ... start -> same digest as the active controller", "log.agree", "s"),
        ("new broker, snapshot, log start 0: start -> unfenced", "snap0.unfenced", "s"),
        ("  ... start -> same digest", "snap0.agree", "s"),
        ("new broker, log start moved: start -> unfenced", "snap.unfenced", "s"),
        ("  ... start -> same digest", "snap.agree", "s"),
        ("  snapshot it downloaded (FetchSnapshot)", "snap.downloaded", "B"),
    ]


def _cell(values: Sequence[float], unit: str) -> str:
    fmt = {"s": "{:.2f} s", "ms": "{:.1f} ms", "B": "{:,.0f} B"}[unit]
    scale = 1000 if unit == "ms" else 1
    values = [scale * v for v in values]
    med, low, high = statistics.median(values), min(values), max(values)
    return f"{fmt.format(med)} [{fmt.format(low)} - {fmt.format(high)}]"


def report(results: dict[str, list[float]], args: argparse.Namespace,
           notes: Sequence[str]) -> None:
    print(f"\n$ python -m bench.bench_controller {shlex.join(sys.argv[1:])}")
    print(f"3 controllers + 3 brokers on loopback, fsync on, test profile, {os.cpu_count()} "
          f"cores, {args.runs} run(s); median [min - max]\n")
    for label, key, unit in rows(args.partitions):
        if results.get(key):
            count = len(results[key])
            runs = "" if count == args.runs else f" (n={count} of {args.runs} runs)"
            print(f"{label:<62}{_cell(results[key], unit)}{runs}")
        elif args.skip_layouts and key.startswith("hundred_"):
            print(f"{label:<62}not measured (--skip-layouts)")
        else:
            print(f"{label:<62}not measured (see the notes below)")
    failover = results.get("failover")
    if failover:
        label = "controller failover, kill -9 -> CreateTopics answered"
        print(f"{label:<62}median {1000 * statistics.median(failover):.0f} ms, "
              f"max {1000 * max(failover):.0f} ms (n={len(failover)})")
    for note in notes:
        print(f"note: {note}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--failover-rounds", type=int, default=5)
    parser.add_argument("--skip-layouts", action="store_true",
                        help="skip the 100-topic layouts (two side clusters per run)")
    parser.add_argument("--dir", default=None, help="where the nodes keep their data")
    parser.add_argument("--keep", action="store_true", help="keep the nodes' data and logs")
    args = parser.parse_args(argv)
    if args.partitions < 100:
        parser.error("--partitions must be at least 100 (100 topics in the side layouts, "
                     "and a creation that fills the 4 KiB between snapshots)")
    results: dict[str, list[float]] = {}
    notes: list[str] = []
    base = Path(tempfile.mkdtemp(dir=args.dir, prefix="bench-controller-"))
    started = time.perf_counter()
    try:
        for run in range(args.runs):
            for key, values in one_run(args, base, run, notes).items():
                results.setdefault(key, []).extend(values)
            print(f"run {run + 1}/{args.runs} done after {time.perf_counter() - started:.0f} s",
                  file=sys.stderr, flush=True)
    finally:
        if args.keep:
            print(f"data and logs kept in {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)
    report(results, args, notes)


if __name__ == "__main__":
    main()
