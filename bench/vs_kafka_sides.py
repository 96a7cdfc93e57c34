"""The two clusters of ``bench.bench_vs_kafka`` behind one shape, and what the bench asks them.

``Side`` wraps a started ``deploy.LocalCluster`` (pykraft, Kafka's default
timeouts) or ``deploy.kafka_cluster.KafkaCluster`` (Apache Kafka, its start
script's JVM settings), 3 controllers and 3 brokers each. Everything the bench
asks goes over the Kafka protocol, the same way on both sides:

* ``active_controller``: DescribeQuorum at every running controller; the one
  that claims leadership in the newest epoch any of them knows;
* ``create_each``: CreateTopics through ``ControllerChannel`` (DescribeCluster
  at a controller finds the active one; NOT_CONTROLLER and lost connections
  are retried), one request per topic, each timed; the controller answers
  after the commit on both sides;
* ``leaders_known``: Metadata (all topics) at a broker: how many partitions of
  the bench's topics it knows with a leader;
* ``voters_caught_up``: the leader's DescribeQuorum shows every voter at the
  high watermark;
* ``heap_after_gc``: ``jcmd PID GC.run`` then ``jcmd PID GC.heap_info``, and
  the same after a full GC (``GC.class_histogram``), jcmd from the JDK of
  ``java``;
* ``open_files`` / ``map_areas``: what a process holds of the two limits;
* ``kafka_limits``: ``vm.max_map_count`` and the open-files limit raised (as
  root) while Kafka's JVMs start, which inherit this process's limit; both
  restored on leaving.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import attrs
import trio

from bench.vs_kafka_figures import HeapInfo, Limits, parse_heap_info
from deploy import ClusterSpec, LocalCluster
from deploy.kafka.jvm import java_program
from deploy.kafka_cluster import KafkaCluster, KafkaClusterSpec
from deploy.probes import describe_quorum_at, request_at
from quorum.client import ClientError
from quorum.config.values import HostPort
from quorum.controller_client import AdminSettings, ControllerChannel, ControllerUnavailableError
from quorum.describe import DescribeQuorumError, QuorumInfo, quorum_info_from_response
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestTopic,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    MetadataRequest,
    MetadataResponse,
)

__all__ = [
    "CreateFailed",
    "Side",
    "active_controller",
    "create_each",
    "heap_after_gc",
    "kafka_limits",
    "kafka_side",
    "leaders_known",
    "map_areas",
    "open_files",
    "pykraft_side",
    "replicas_hosted",
    "voters_caught_up",
]

_PROBE_TIMEOUT_S: Final = 5.0
_METADATA_TIMEOUT_S: Final = 60.0
_MAP_COUNT: Final = Path("/proc/sys/vm/max_map_count")
# the controller answers after the commit: a request may wait that long for it
_CREATE_TIMEOUT_MS: Final = 120_000


class CreateFailed(Exception):
    """CreateTopics refused, or no controller answered in time."""


@attrs.define
class Side:
    """A running 3+3 cluster, pykraft's or Kafka's, as the bench sees it."""

    name: str
    jvm: bool
    controllers: list[int]
    brokers: list[int]
    controller_address: Callable[[int], tuple[str, int]]
    broker_address: Callable[[int], tuple[str, int]]
    pid: Callable[[int], int]
    is_running: Callable[[int], bool]
    kill: Callable[[int, signal.Signals], None]
    stop: Callable[[int], int]  # SIGTERM, wait for the exit
    start_node: Callable[[int], None]  # start and wait until ready
    log_path: Callable[[int], Path]
    close: Callable[[], None]

    @property
    def nodes(self) -> list[int]:
        return [*self.controllers, *self.brokers]

    def log_text(self, node: int) -> str:
        path = self.log_path(node)
        return path.read_text(errors="replace") if path.exists() else ""


def pykraft_side(base: Path) -> Side:
    """pykraft 3+3 at Kafka's default timeouts, started."""
    cluster = LocalCluster(base, ClusterSpec(controllers=3, brokers=3, test_profile=False,
                                             ready_timeout_s=120.0))
    try:
        cluster.start()
    except BaseException:
        cluster.close()
        raise
    return Side(
        name="pykraft", jvm=False, controllers=cluster.node_ids, brokers=cluster.broker_ids,
        controller_address=cluster.address, broker_address=cluster.address, pid=cluster.pid,
        is_running=cluster.is_running, kill=cluster.kill, stop=cluster.stop,
        start_node=cluster.start_node, log_path=lambda n: cluster.layout[n].log_path,
        close=cluster.close,
    )


def kafka_side(base: Path) -> Side:
    """Apache Kafka 3+3, the start script's JVM settings and Kafka's defaults, started."""
    cluster = KafkaCluster(base, KafkaClusterSpec(controllers=3, brokers=3))
    try:
        cluster.start()
    except BaseException:
        cluster.close()
        raise
    return Side(
        name="kafka", jvm=True, controllers=cluster.controller_ids, brokers=cluster.broker_ids,
        controller_address=cluster.controller_address, broker_address=cluster.address,
        pid=cluster.pid, is_running=cluster.is_running, kill=cluster.kill, stop=cluster.stop,
        start_node=cluster.start_node, log_path=lambda n: cluster.nodes[n].log_path,
        close=cluster.close,
    )


# -- the quorum -------------------------------------------------------------------------------


def _quorum_at(side: Side, node: int) -> QuorumInfo | int | None:
    """The node's quorum description if it leads; else the newest epoch it knows."""
    if not side.is_running(node):
        return None
    try:
        answer = describe_quorum_at(side.controller_address(node), timeout=_PROBE_TIMEOUT_S)
    except (ClientError, OSError):
        return None
    try:
        info = quorum_info_from_response(answer)
    except DescribeQuorumError:
        partitions = [p for t in answer.topics for p in t.partitions]
        return max((p.leader_epoch for p in partitions), default=None)
    return info if info.leader_id == node else info.leader_epoch


def active_controller(side: Side, among: Sequence[int] | None = None
                      ) -> tuple[int, QuorumInfo] | None:
    """The running controller that leads in the newest epoch any controller knows."""
    claims: list[tuple[int, QuorumInfo]] = []
    newest = -1
    for node in among if among is not None else side.controllers:
        found = _quorum_at(side, node)
        if isinstance(found, QuorumInfo):
            claims.append((node, found))
            newest = max(newest, found.leader_epoch)
        elif found is not None:
            newest = max(newest, found)
    best = max(claims, key=lambda claim: claim[1].leader_epoch, default=None)
    return best if best is not None and best[1].leader_epoch >= newest else None


def voters_caught_up(side: Side) -> bool:
    """The leader's high watermark is its log end, and every voter is there."""
    found = active_controller(side)
    if found is None:
        return False
    info = found[1]
    end = info.leader.log_end_offset
    return info.high_watermark == end and all(v.log_end_offset == end for v in info.voters)


# -- requests ---------------------------------------------------------------------------------


def create_each(side: Side, topics: Sequence[tuple[str, int]], *,
                among: Sequence[int] | None = None,
                settings: AdminSettings | None = None) -> list[float]:
    """One CreateTopics per ``(name, partitions)`` at RF 3, each sent after the previous
    answer over one channel; seconds from each send to its answer. Raises CreateFailed."""
    addresses = [HostPort(*side.controller_address(n)) for n in (among or side.controllers)]
    took: list[float] = []

    async def call() -> None:
        async with ControllerChannel(addresses, settings) as channel:
            for name, count in topics:
                sent = time.perf_counter()
                response = await channel.call(CreateTopicsRequest(
                    topics=(CreateTopicsRequestTopic(
                        name=name, num_partitions=count, replication_factor=3),),
                    timeout_ms=_CREATE_TIMEOUT_MS,
                ))
                took.append(time.perf_counter() - sent)
                for topic in response.topics:
                    if topic.error_code != Errors.NONE:
                        raise CreateFailed(
                            f"CreateTopics {topic.name} ({count} partitions) refused: "
                            f"{Errors.from_code(topic.error_code).name}: "
                            f"{topic.error_message}")

    try:
        trio.run(call)
    except ControllerUnavailableError as exc:
        raise CreateFailed(str(exc)) from exc
    return took


def _answer(side: Side, broker: int, request: Any) -> Any | None:
    """Broker ``broker``'s answer to ``request``, or None if it does not answer."""
    try:
        return request_at(side.broker_address(broker), request, timeout=_METADATA_TIMEOUT_S)
    except (ClientError, OSError):
        return None


def leaders_known(side: Side, broker: int, prefix: str) -> int | None:
    """How many partitions of the topics named ``prefix...`` broker ``broker`` knows with
    a leader (Metadata for all topics); None if it does not answer."""
    answer: MetadataResponse | None = _answer(side, broker, MetadataRequest(topics=None))
    if answer is None:
        return None
    return sum(
        1 for topic in answer.topics
        if topic.error_code == Errors.NONE and (topic.name or "").startswith(prefix)
        for partition in topic.partitions
        if partition.error_code == Errors.NONE and partition.leader_id >= 0
    )


def replicas_hosted(side: Side, broker: int, prefix: str) -> int | None:
    """How many replicas of the topics named ``prefix...`` broker ``broker`` hosts, as it
    reports them (DescribeLogDirs of every topic); None if it does not answer."""
    answer: DescribeLogDirsResponse | None = _answer(
        side, broker, DescribeLogDirsRequest(topics=None))
    if answer is None:
        return None
    return sum(
        len(topic.partitions) for result in answer.results
        if result.error_code == Errors.NONE
        for topic in result.topics if topic.name.startswith(prefix)
    )


# -- the JVM ----------------------------------------------------------------------------------


def _jcmd() -> str:
    """jcmd of the JDK whose ``java`` runs Kafka."""
    return str(Path(java_program()).resolve().with_name("jcmd"))


def _heap_info(jcmd: str, pid: int) -> HeapInfo:
    shown = subprocess.run([jcmd, str(pid), "GC.heap_info"], check=True, capture_output=True,
                           text=True, timeout=60)
    return parse_heap_info(shown.stdout)


def heap_after_gc(pid: int) -> tuple[HeapInfo, HeapInfo]:
    """The heap after ``jcmd PID GC.run``, then after a stop-the-world full GC.

    GC.run is System.gc(): with the start script's -XX:+ExplicitGCInvokesConcurrent G1
    runs a concurrent cycle (jcmd waits for it), which frees only regions left wholly
    empty; garbage in partly live old regions stays until later mixed collections.
    ``GC.class_histogram`` first collects the whole heap ("Heap Inspection Initiated
    GC", a full GC whatever that flag says): what is left is the live data."""
    jcmd = _jcmd()
    subprocess.run([jcmd, str(pid), "GC.run"], check=True, capture_output=True, timeout=120)
    concurrent = _heap_info(jcmd, pid)
    subprocess.run([jcmd, str(pid), "GC.class_histogram"], check=True, capture_output=True,
                   timeout=300)
    return concurrent, _heap_info(jcmd, pid)


def open_files(pid: int) -> int:
    """The descriptors process ``pid`` holds open (what RLIMIT_NOFILE bounds)."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def map_areas(pid: int) -> int:
    """The memory map areas of process ``pid`` (what vm.max_map_count bounds)."""
    with open(f"/proc/{pid}/maps", "rb") as maps:
        return sum(1 for _ in maps)


# -- limits -----------------------------------------------------------------------------------


@contextlib.contextmanager
def kafka_limits(wanted: Limits, say: Callable[[str], None]) -> Iterator[Limits]:
    """Raise ``vm.max_map_count`` and this process's open-files limit (inherited by the
    JVMs started inside) to at least ``wanted`` where allowed; yield what holds; restore
    both on leaving. Each change and each refusal is said."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    map_before = int(_MAP_COUNT.read_text()) if _MAP_COUNT.exists() else None
    map_set = False
    files = soft
    try:
        if map_before is not None and map_before < wanted.map_count:
            try:
                _MAP_COUNT.write_text(f"{wanted.map_count}\n")
                map_set = True
                say(f"set vm.max_map_count {map_before} -> {wanted.map_count}")
            except OSError as exc:
                say(f"could not set vm.max_map_count to {wanted.map_count} (stays "
                    f"{map_before}): {exc}")
        if soft < wanted.open_files:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE,
                                   (wanted.open_files, max(hard, wanted.open_files)))
                files = wanted.open_files
                say(f"set the open-files limit {soft}/{hard} -> {wanted.open_files}/"
                    f"{max(hard, wanted.open_files)} for Kafka's JVMs")
            except (OSError, ValueError) as exc:
                if soft < hard:  # the soft limit may rise to the hard one without privilege
                    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
                    files = hard
                say(f"could not raise the open-files limit to {wanted.open_files} "
                    f"(it is {files}/{hard}; before {soft}/{hard}): {exc}")
        held = int(_MAP_COUNT.read_text()) if map_before is not None else 0
        yield Limits(map_count=held, open_files=files)
    finally:
        if files != soft:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
            say(f"restored the open-files limit {soft}/{hard}")
        if map_set:
            _MAP_COUNT.write_text(f"{map_before}\n")
            say(f"restored vm.max_map_count {map_before}")
