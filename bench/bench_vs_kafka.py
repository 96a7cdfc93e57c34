"""pykraft's controllers and brokers beside Apache Kafka's, in one invocation.

Run ``python -m bench.bench_vs_kafka [--runs 3] [--partitions 100000]``: sizes
10,000 and 30,000 partitions always (``--sizes`` replaces them), plus each
``--partitions``.

Both sides are 3 controllers + 3 brokers on loopback at Kafka's default
timeouts: pykraft as ``deploy.LocalCluster(ClusterSpec(test_profile=False))``,
Kafka as ``deploy.kafka_cluster.KafkaCluster`` (the pinned 4.x release, the
start script's JVM settings: 1 GiB heap, G1). The clusters alternate (the side
that goes first swaps every run) and never run together; every cluster is
fresh. Everything is asked over the Kafka protocol the same way on both sides
(``bench.vs_kafka_sides``). Per run and side, for each size a cluster:

1. start: until every node is ready and every broker lists the 3 brokers;
   each node's RSS (VmRSS) and, for a JVM, its heap in use after
   ``jcmd PID GC.run`` (the empty cluster);
2. on the first size's cluster only: ``--latency-topics`` CreateTopics of one
   1-partition RF 3 topic one after another (p50/p99 of send -> answer; both
   controllers answer after the commit); ``--failover-rounds`` kill -9 of the
   active controller (DescribeQuorum) -> the next CreateTopics answered through
   the survivors (5 ms between retries), and ``--handover-rounds`` the same
   with SIGTERM; the stopped controller restarts and catches up between rounds;
3. the size: its partitions at RF 3 as topics of at most 9,999 partitions,
   one CreateTopics each, one after another (Kafka refuses a request writing
   more than 10,000 metadata records); timed to the last answer, until every
   broker's Metadata shows every partition with a leader, and until every
   broker's DescribeLogDirs lists every replica; CPU seconds of all nodes
   meanwhile; then RSS per node, the RSS per idle replica (each broker's slope
   from the empty cluster), the brokers' open files and map areas, and the JVMs'
   heap in use after ``jcmd PID GC.run`` and after a full GC
   (``GC.class_histogram``).

Kafka's system limits: around each Kafka cluster the bench raises (as root)
``vm.max_map_count`` above two map areas per hosted replica and the open-files
limit its JVMs inherit above one file per hosted replica, prints what it set
and restores both afterwards. Where a side fails (a JVM out of heap, a limit,
a timeout), its cells say so and why, and the larger sizes of that side are
not run.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Final

from bench.scale_probes import cpu_seconds, rss_bytes
from bench.vs_kafka_figures import (
    Figures,
    Limits,
    failure_cause,
    limits_for,
    per_replica_bytes,
    percentile,
    plan_topics,
)
from bench.vs_kafka_report import KAFKA, PYKRAFT, report
from bench.vs_kafka_sides import (
    Side,
    active_controller,
    create_each,
    heap_after_gc,
    kafka_limits,
    kafka_side,
    leaders_known,
    map_areas,
    open_files,
    pykraft_side,
    replicas_hosted,
    voters_caught_up,
)
from deploy.probes import request_at
from quorum.client import ClientError
from quorum.controller_client import AdminSettings
from quorum.wire.messages import MetadataRequest, MetadataResponse

__all__ = ["main"]

MIB: Final = 1024 * 1024
DEFAULT_SIZES: Final = (10_000, 30_000)
_POLL_S: Final = 0.2
_QUORUM_WAIT_S: Final = 120.0
# a failover is timed by retries: 5 ms between them (bench_controller's FAST_RETRY)
_FAST_RETRY: Final = AdminSettings(api_timeout_ms=120_000, request_timeout_ms=5_000,
                                   retry_backoff_ms=5)
# the latency and failover topics created before a size's partitions
_SMALL_TOPICS_ROOM: Final = 1_000


class SideFailed(Exception):
    """A node of the side died, or a wait ran out."""


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def why_failed(side: Side, exc: BaseException) -> str:
    """The exception, each dead node, and every cause found in the nodes' logs."""
    parts = [f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"]
    dead = [n for n in side.nodes if not side.is_running(n)]
    if dead and not isinstance(exc, SideFailed):  # a SideFailed names them already
        parts.append(f"node(s) {dead} exited")
    by_cause: dict[str, list[int]] = {}
    for node in side.nodes:
        cause = failure_cause(side.log_text(node))
        if cause is not None:
            by_cause.setdefault(cause, []).append(node)
    parts += [f"node(s) {nodes}: {cause}" for cause, nodes in by_cause.items()]
    return "; ".join(parts)


def check_alive(side: Side) -> None:
    dead = [n for n in side.nodes if not side.is_running(n)]
    if dead:
        raise SideFailed(f"{side.name} node(s) {dead} exited")


def wait_for(side: Side, condition: Callable[[], bool], timeout: float, what: str) -> float:
    """Poll until ``condition()``; perf_counter() when it held. Fails at once when a node
    of the side is gone."""
    deadline = time.perf_counter() + timeout
    while True:
        check_alive(side)
        if condition():
            return time.perf_counter()
        if time.perf_counter() > deadline:
            raise SideFailed(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(_POLL_S)


def every_broker(side: Side, count: Callable[[int], int | None], expected: int,
                 timeout: float, what: str) -> float:
    """perf_counter() by which every broker's ``count`` reached ``expected``."""
    pending = set(side.brokers)

    def reached() -> bool:
        for broker in sorted(pending):
            found = count(broker)
            if found is not None and found >= expected:
                pending.discard(broker)
        return not pending

    return wait_for(side, reached, timeout, what)


# -- memory -----------------------------------------------------------------------------------


def record_memory(side: Side, figures: Figures, label: str) -> dict[int, int]:
    """Each node's RSS (median per role into ``figures``), the brokers' open files and map
    areas, then for a JVM its heap in use after GC; returns the brokers' RSS."""
    rss = {n: rss_bytes(side.pid(n))[0] for n in side.nodes}
    brokers = {n: rss[n] for n in side.brokers}
    figures.add(f"rss.{label}.broker_mib", statistics.median(brokers.values()) / MIB)
    figures.add(f"rss.{label}.controller_mib",
                statistics.median(rss[n] for n in side.controllers) / MIB)
    figures.add(f"files.{label}.broker",
                statistics.median(open_files(side.pid(n)) for n in side.brokers))
    figures.add(f"maps.{label}.broker",
                statistics.median(map_areas(side.pid(n)) for n in side.brokers))
    if side.jvm:
        found = {n: heap_after_gc(side.pid(n)) for n in side.nodes}
        for kind, index in (("heap", 0), ("heap_full", 1)):
            used = {n: heaps[index].used_bytes for n, heaps in found.items()}
            figures.add(f"{kind}.{label}.broker_mib",
                        statistics.median(used[n] for n in side.brokers) / MIB)
            figures.add(f"{kind}.{label}.controller_mib",
                        statistics.median(used[n] for n in side.controllers) / MIB)
        say(f"  {side.name} {label}: RSS MiB {_mib(rss)}; heap in use MiB after GC.run "
            f"{_mib({n: h[0].used_bytes for n, h in found.items()})}, after a full GC "
            f"{_mib({n: h[1].used_bytes for n, h in found.items()})}")
    else:
        say(f"  {side.name} {label}: RSS MiB {_mib(rss)}")
    return brokers


def _mib(values: dict[int, int]) -> str:
    return ", ".join(f"{n}: {v / MIB:.0f}" for n, v in sorted(values.items()))


# -- phases -----------------------------------------------------------------------------------


def start(name: str, base: Path, figures: Figures) -> Side:
    begun = time.perf_counter()
    side = pykraft_side(base) if name == PYKRAFT else kafka_side(base)
    try:
        every_broker(side, lambda b: _brokers_listed(side, b), len(side.brokers),
                     _QUORUM_WAIT_S, "every broker to list every broker")
    except BaseException:
        side.close()
        raise
    figures.add("start_s", time.perf_counter() - begun)
    return side


def _brokers_listed(side: Side, via: int) -> int | None:
    """How many of the side's brokers broker ``via`` lists (Kafka lists unfenced ones)."""
    try:
        answer: MetadataResponse = request_at(side.broker_address(via),
                                              MetadataRequest(topics=()))
    except (ClientError, OSError):
        return None
    return len({b.node_id for b in answer.brokers} & set(side.brokers))


def latency(side: Side, figures: Figures, count: int) -> None:
    took = create_each(side, [(f"latency-{i}", 1) for i in range(count)])
    figures.add("create1.p50_ms", 1000 * percentile(took, 50))
    figures.add("create1.p99_ms", 1000 * percentile(took, 99))
    say(f"  {side.name}: CreateTopics p50 {1000 * percentile(took, 50):.1f} ms, "
        f"p99 {1000 * percentile(took, 99):.1f} ms (n={count})")


def controller_rounds(side: Side, figures: Figures, rounds: int, sig: signal.Signals,
                      key: str) -> None:
    """Each round: the active controller sent ``sig``; the time until a one-partition
    CreateTopics is answered through the other controllers; then it restarts."""
    for i in range(rounds):
        wait_for(side, lambda: voters_caught_up(side), _QUORUM_WAIT_S,
                 "every voter at the high watermark")
        found = active_controller(side)
        if found is None:
            raise SideFailed("no active controller")
        leader = found[0]
        survivors = [n for n in side.controllers if n != leader]
        begun = time.perf_counter()
        side.kill(leader, sig)
        create_each(side, [(f"{key}-{i}", 1)], among=survivors, settings=_FAST_RETRY)
        took = time.perf_counter() - begun
        figures.add(key, 1000 * took)
        say(f"  {side.name}: {key} round {i + 1}: controller {leader}, {1000 * took:.0f} ms")
        if sig != signal.SIGKILL:
            deadline = time.perf_counter() + _QUORUM_WAIT_S
            while side.is_running(leader) and time.perf_counter() < deadline:
                time.sleep(0.05)
            side.stop(leader)  # reaps it (SIGKILL if it still runs)
        side.start_node(leader)
    wait_for(side, lambda: voters_caught_up(side), _QUORUM_WAIT_S,
             "every voter at the high watermark")


def hosted(side: Side) -> dict[int, int]:
    found = {b: replicas_hosted(side, b, "") for b in side.brokers}
    missing = [b for b, n in found.items() if n is None]
    if missing:
        raise SideFailed(f"broker(s) {missing} did not answer DescribeLogDirs")
    return {b: n for b, n in found.items() if n is not None}


def scale(side: Side, figures: Figures, size: int, empty_rss: dict[int, int],
          empty_hosted: dict[int, int], wait_s: float) -> None:
    prefix = f"s{size}-"
    topics = [(f"{prefix}{i}", count) for i, count in enumerate(plan_topics(size))]
    cpu_before = {n: cpu_seconds(side.pid(n)) for n in side.nodes}
    wait_ms = int(1000 * wait_s)
    begun = time.perf_counter()
    create_each(side, topics, settings=AdminSettings(api_timeout_ms=wait_ms,
                                                     request_timeout_ms=wait_ms))
    answered = time.perf_counter() - begun
    say(f"  {side.name} {size:,}: last CreateTopics answered after {answered:.1f} s")
    known = every_broker(side, lambda b: leaders_known(side, b, prefix), size, wait_s,
                         f"every broker to know {size} partitions with a leader") - begun
    say(f"  {side.name} {size:,}: every broker knows every partition after {known:.1f} s")
    held = every_broker(side, lambda b: replicas_hosted(side, b, prefix), size, wait_s,
                        f"every broker to host {size} replicas") - begun
    cpu = sum(cpu_seconds(side.pid(n)) - cpu_before[n] for n in side.nodes)
    say(f"  {side.name} {size:,}: every broker hosts every replica after {held:.1f} s, "
        f"{cpu:.1f} CPU s")
    figures.add(f"create.{size}.answer_s", answered)
    figures.add(f"create.{size}.caught_up_s", known)
    figures.add(f"create.{size}.hosted_s", held)
    figures.add(f"create.{size}.rate", size / known)
    figures.add(f"create.{size}.cpu_s", cpu)
    loaded_rss = record_memory(side, figures, str(size))
    loaded_hosted = hosted(side)
    slopes = [per_replica_bytes(empty_rss[b], loaded_rss[b], loaded_hosted[b] - empty_hosted[b])
              for b in side.brokers]
    figures.add(f"rss.{size}.per_replica_b", statistics.median(slopes))


# -- one cluster ------------------------------------------------------------------------------


@contextlib.contextmanager
def limits_around(name: str, size: int, notes: list[str]) -> Iterator[None]:
    """Kafka's limits for a cluster of ``size`` partitions (every broker hosts every
    replica at RF 3 over 3 brokers); nothing for pykraft."""
    if name != KAFKA:
        yield
        return

    def note(text: str) -> None:
        say(f"  {text}")
        if text not in notes:
            notes.append(f"Kafka at {size:,} partitions: {text}")

    with kafka_limits(limits_for(size + _SMALL_TOPICS_ROOM), note) as held:
        _say_limits(held)
        yield


def _say_limits(held: Limits) -> None:
    say(f"  limits for Kafka's JVMs: vm.max_map_count {held.map_count}, "
        f"open files {held.open_files}")


def one_cluster(name: str, base: Path, figures: Figures, size: int, first: bool,
                args: argparse.Namespace, notes: list[str]) -> bool:
    """One fresh cluster of side ``name`` measured at ``size``; False if it failed (the
    failure is recorded under the size)."""
    wait_s = max(120.0, size / 100)
    with limits_around(name, size, notes):
        try:
            side = start(name, base, figures)
        except Exception as exc:
            figures.fail(f"size.{size}", f"cluster start: {type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else ''}")
            say(f"  {name} {size:,}: FAILED to start: {exc}")
            return False
        try:
            empty_rss = record_memory(side, figures, "empty")
            empty_hosted = hosted(side)
            if first:
                latency(side, figures, args.latency_topics)
                controller_rounds(side, figures, args.failover_rounds, signal.SIGKILL,
                                  "failover_ms")
                controller_rounds(side, figures, args.handover_rounds, signal.SIGTERM,
                                  "handover_ms")
                # the baseline of the slope: the brokers after the small topics
                empty_rss = {b: rss_bytes(side.pid(b))[0] for b in side.brokers}
                empty_hosted = hosted(side)
            scale(side, figures, size, empty_rss, empty_hosted, wait_s)
        except Exception as exc:
            why = why_failed(side, exc)
            figures.fail(f"size.{size}", why)
            say(f"  {name} {size:,}: FAILED: {why}")
            return False
        finally:
            side.close()
    return True


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES),
                        help="partition counts always measured (default 10000 30000)")
    parser.add_argument("--partitions", type=int, action="append", default=[],
                        help="a further size (repeatable), e.g. 100000")
    parser.add_argument("--latency-topics", type=int, default=100)
    parser.add_argument("--failover-rounds", type=int, default=3)
    parser.add_argument("--handover-rounds", type=int, default=3)
    parser.add_argument("--sides", nargs="+", choices=(PYKRAFT, KAFKA),
                        default=[PYKRAFT, KAFKA])
    parser.add_argument("--dir", default=None, help="where the nodes keep their data")
    parser.add_argument("--keep", action="store_true", help="keep the nodes' data and logs")
    args = parser.parse_args(argv)
    sizes = sorted(set(args.sizes) | set(args.partitions))
    base = Path(tempfile.mkdtemp(dir=args.dir, prefix="bench-vs-kafka-"))
    figures = {PYKRAFT: Figures(), KAFKA: Figures()}
    notes: list[str] = []
    failed_at: dict[str, int] = {}
    started = time.perf_counter()
    try:
        for run in range(args.runs):
            # the side that goes first swaps every run
            order = args.sides if run % 2 == 0 else list(reversed(args.sides))
            for i, size in enumerate(sizes):
                for name in order:
                    if name in failed_at and size > failed_at[name]:
                        figures[name].fail(f"size.{size}",
                                           f"not run: failed at {failed_at[name]:,} partitions")
                        continue
                    say(f"run {run + 1}/{args.runs}: {name} at {size:,} partitions "
                        f"({time.perf_counter() - started:.0f} s)")
                    directory = base / f"run-{run}" / f"{name}-{size}"
                    if not one_cluster(name, directory, figures[name], size, i == 0, args,
                                       notes):
                        failed_at[name] = size
                    if not args.keep:
                        shutil.rmtree(directory, ignore_errors=True)
    finally:
        if args.keep:
            say(f"data and logs kept in {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    say(f"done after {time.perf_counter() - started:.0f} s")
    given = sys.argv[1:] if argv is None else list(argv)
    command = f"python -m bench.bench_vs_kafka {shlex.join(given)}".rstrip()
    print(report(figures, sizes, args.latency_topics, command, notes))


if __name__ == "__main__":
    main()
