"""The metadata quorum under load: commit latency, commit rate, failover, handover.

Run ``python -m bench.bench_quorum [--runs 3] [--sequential 2000] [--commits 20000]
[--in-flight 64] [--failover-rounds 10] [--handover-rounds 5] [--profile DIR]``.

Each run starts a fresh 3-controller quorum: real processes on loopback,
fsync on, Kafka's default timeouts (``deploy.LocalCluster`` running
``bench.quorum_node``). Then:

* embedded writer: the leader's own process commits ``--sequential``
  single-record appends one after the other (latency), then ``--commits``
  more with ``--in-flight`` writer tasks (rate), through
  ``append_and_wait_committed`` (``bench.quorum_node``);
* network client: the same two workloads through one blocking
  ``BlockingKafkaConnection`` with PykraftAppend (pipelined for the rate);
* failover: kill -9 of the leader, until a client that retries the
  survivors commits again; the node is restarted and caught up each round;
* handover: SIGTERM of the leader (EndQuorumEpoch), until the next commit.

Records are 100 bytes. Rows are the median over runs [min-max]; failover
and handover pool every round of every run (median, max). ``--profile DIR``
writes a cProfile of each node's trio thread and prints the leader's top.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pstats
import shlex
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from deploy import ClusterSpec, LaunchError, LocalCluster
from quorum.client import BlockingKafkaConnection, ClientError
from quorum.wire.messages.pykraft_append import PykraftAppendRequest

__all__ = ["main"]

REQUEST = PykraftAppendRequest(records=(b"v" * 100,))
# Kafka's default timeouts (no test profile); fsync is on by default
SPEC = ClusterSpec(controllers=3, test_profile=False,
                   command=(sys.executable, "-m", "bench.quorum_node"))


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


# -- network client ------------------------------------------------------------------------


def network_latencies(conn: BlockingKafkaConnection, count: int) -> list[float]:
    for _ in range(min(200, count)):  # warm up
        conn.request(REQUEST, timeout=10)
    latencies = []
    for _ in range(count):
        start = time.perf_counter()
        answer = conn.request(REQUEST, timeout=10)
        latencies.append(time.perf_counter() - start)
        assert answer.error_code == 0, answer
    return latencies


def network_rate(conn: BlockingKafkaConnection, count: int, in_flight: int) -> float:
    pending = [conn.send(REQUEST, timeout=30) for _ in range(in_flight)]
    done = 0
    start = time.perf_counter()
    while done < count:
        answer = conn.receive(pending.pop(0))
        assert answer.error_code == 0, answer
        done += 1
        if done + len(pending) < count:
            pending.append(conn.send(REQUEST, timeout=30))
    return count / (time.perf_counter() - start)


# -- failover ------------------------------------------------------------------------------


def _connections(cluster: LocalCluster, nodes: Sequence[int]
                 ) -> dict[int, BlockingKafkaConnection]:
    return {n: BlockingKafkaConnection.connect(*cluster.address(n), timeout=2) for n in nodes}


def time_to_next_commit(
    conns: dict[int, BlockingKafkaConnection], start: float, timeout: float = 60.0
) -> float:
    """Seconds from ``start`` until one of ``conns`` commits, following leader hints."""
    hint: int | None = None
    while time.perf_counter() - start < timeout:
        order = sorted(conns, key=lambda n: n != hint)
        for node in order:
            try:
                answer = conns[node].request(REQUEST, timeout=2)
            except ClientError:
                continue
            if answer.error_code == 0:
                return time.perf_counter() - start
            hint = answer.leader_id if answer.leader_id in conns else None
            if hint is not None:
                break
        time.sleep(0.002)
    raise RuntimeError("no commit after the leader went away")


def leader_change_rounds(cluster: LocalCluster, rounds: int, signum: int,
                         node_args: Sequence[str]) -> list[float]:
    """Seconds from the signal to the leader until the next commit, per round."""
    times = []
    for _ in range(rounds):
        # every voter caught up, so any survivor can win and the leader commits
        leader = cluster.wait_caught_up(timeout=30).leader_id
        survivors = [n for n in cluster.node_ids if n != leader and cluster.is_running(n)]
        conns = _connections(cluster, survivors)
        start = time.perf_counter()
        # os.kill, not cluster.kill: reaping a SIGKILLed node would sit inside the timing
        os.kill(cluster.pid(leader), signum)
        try:
            times.append(time_to_next_commit(conns, start))
        finally:
            for conn in conns.values():
                conn.close()
        cluster.wait_exit(leader, timeout=20)
        cluster.start_node(leader, args=node_args)
        cluster.wait_caught_up(timeout=30)
        time.sleep(0.5)  # the restarted node follows before the next round
    return times


# -- one run ---------------------------------------------------------------------------------


def embedded_result(cluster: LocalCluster, timeout: float = 300.0) -> dict[str, object]:
    """The ``BENCH {json}`` line the leader's embedded workload prints (into node.log)."""
    def result() -> dict[str, object] | None:
        for node_id in cluster.node_ids:
            path = cluster.layout[node_id].log_path
            for line in path.read_text(errors="replace").splitlines():
                if line.startswith("BENCH "):
                    try:
                        found: dict[str, object] = json.loads(line[6:])
                    except ValueError:  # still being written
                        return None
                    return found
        return None

    return cluster.wait_for(result, "the embedded workload's result", timeout)


def stop_all(cluster: LocalCluster) -> None:
    """SIGTERM every node at once (profiles are written on an orderly exit), then reap."""
    running = [n for n in cluster.node_ids if cluster.is_running(n)]
    for node_id in running:
        cluster.kill(node_id, signal.SIGTERM)
    for node_id in running:
        with contextlib.suppress(LaunchError):  # close() kills it
            cluster.wait_exit(node_id, timeout=20)
    cluster.close()


def one_run(args: argparse.Namespace, base: Path, run: int) -> dict[str, list[float]]:
    node_args = ["--log-level", args.log_level, *(["--fsync-direct"] if args.fsync_direct else [])]
    # the embedded workload and the profile only on the first start of each node
    first_args = [*node_args, "--embedded-sequential", str(args.sequential),
                  "--embedded-commits", str(args.commits), "--in-flight", str(args.in_flight)]
    cluster = LocalCluster(base / f"run-{run}", SPEC)
    profile_dir = Path(args.profile) if args.profile else None
    try:
        cluster.prepare()
        for node_id in cluster.node_ids:
            extra = [] if profile_dir is None else [
                "--profile", str(profile_dir / f"run-{run}-node-{node_id}.prof")]
            cluster.start_node(node_id, wait=False, args=[*first_args, *extra])
        for node_id in cluster.node_ids:
            cluster.wait_ready(node_id)
        embedded = embedded_result(cluster)
        leader = cluster.wait_caught_up(timeout=30).leader_id
        with BlockingKafkaConnection.connect(*cluster.address(leader)) as conn:
            latencies = network_latencies(conn, args.sequential)
            rate = network_rate(conn, args.commits, args.in_flight)
        failover = leader_change_rounds(cluster, args.failover_rounds, signal.SIGKILL, node_args)
        handover = leader_change_rounds(cluster, args.handover_rounds, signal.SIGTERM, node_args)
    finally:
        stop_all(cluster)
    embedded_latencies = embedded["latencies_s"]
    assert isinstance(embedded_latencies, list)
    return {
        "net_p50": [percentile(latencies, 0.5)], "net_p99": [percentile(latencies, 0.99)],
        "net_rate": [rate],
        "emb_p50": [percentile(embedded_latencies, 0.5)],
        "emb_p99": [percentile(embedded_latencies, 0.99)],
        "emb_rate": [float(embedded["commits_per_s"])],  # type: ignore[arg-type]
        "failover": failover, "handover": handover,
    }


# -- report ----------------------------------------------------------------------------------


ROWS = [
    ("commit latency p50, 1 writer, network client", "net_p50", "ms", "<= 0.66 ms"),
    ("commit latency p99, 1 writer, network client", "net_p99", "ms", ""),
    ("commit latency p50, 1 writer, embedded", "emb_p50", "ms", ""),
    ("commit latency p99, 1 writer, embedded", "emb_p99", "ms", ""),
    ("commits/s, {k} in flight, network client", "net_rate", "/s", ">= 10,000"),
    ("commits/s, {k} in flight, embedded", "emb_rate", "/s", ">= 10,000"),
]


def _cell(values: Sequence[float], unit: str) -> str:
    scale, fmt = (1000.0, "{:.2f}") if unit == "ms" else (1.0, "{:,.0f}")
    med, low, high = (scale * v for v in (statistics.median(values), min(values), max(values)))
    return f"{fmt.format(med)} [{fmt.format(low)}-{fmt.format(high)}]"


def report(results: dict[str, list[float]], args: argparse.Namespace) -> None:
    print(f"\n$ python -m bench.bench_quorum {shlex.join(sys.argv[1:])}")
    print(f"3 controllers on loopback, fsync on, default timeouts, {os.cpu_count()} cores, "
          f"{args.runs} run(s); median [min-max]\n")
    print(f"{'measure':<48}{'result':<36}goal")
    for label, key, unit, goal in ROWS:
        cell = _cell(results[key], unit) + (" ms" if unit == "ms" else "")
        print(f"{label.format(k=args.in_flight):<48}{cell:<36}{goal}")
    for label, key, goal in [("failover, kill -9 -> next commit", "failover", "median <= 400 ms"),
                             ("handover, SIGTERM -> next commit", "handover", "<= 100 ms")]:
        values = results[key]
        if values:
            cell = (f"median {1000 * statistics.median(values):.0f} ms, "
                    f"max {1000 * max(values):.0f} ms (n={len(values)})")
            print(f"{label:<48}{cell:<36}{goal}")


def print_profile(directory: Path) -> None:
    for path in sorted(directory.glob("run-0-node-*.prof")):
        stats = pstats.Stats(str(path))
        print(f"\n== {path.name}")
        stats.sort_stats("tottime").print_stats(15)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sequential", type=int, default=2000)
    parser.add_argument("--commits", type=int, default=20000)
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--failover-rounds", type=int, default=10)
    parser.add_argument("--handover-rounds", type=int, default=5)
    parser.add_argument("--fsync-direct", action="store_true",
                        help="every fsync on the nodes' trio thread, a leader's too")
    parser.add_argument("--profile", default=None, metavar="DIR")
    parser.add_argument("--dir", default=None, help="where the nodes keep their data")
    parser.add_argument("--keep", action="store_true",
                        help="keep the nodes' data and logs (node.log) after the run")
    parser.add_argument("--log-level", default="WARNING", help="the nodes' log level")
    args = parser.parse_args(argv)
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
    results: dict[str, list[float]] = {}
    base = Path(tempfile.mkdtemp(dir=args.dir, prefix="bench-quorum-"))
    try:
        for run in range(args.runs):
            for key, values in one_run(args, base, run).items():
                results.setdefault(key, []).extend(values)
            print(f"run {run + 1}/{args.runs} done", file=sys.stderr, flush=True)
    finally:
        if args.keep:
            print(f"data and logs kept in {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)
    report(results, args)
    if args.profile:
        print_profile(Path(args.profile))


if __name__ == "__main__":
    main()
