"""What ``bench.bench_controller`` asks a running cluster, and reads from its disks.

* ``replica_offsets`` / ``leader_high_watermark``: the active controller's
  DescribeQuorum (every voter's and observer's log end offset): cheap, so it
  gates the expensive checks.
* ``images``: PykraftDescribeImage at several nodes at once (one thread
  each), with the time each answer arrived. A node hashes its whole image
  for every such request (about 40 ms at 10,000 partitions, on its own
  event loop), so callers ask only nodes that DescribeQuorum shows holding
  the records.
* ``unfenced_brokers``: the brokers a running broker's Metadata answer
  lists (Kafka lists only unfenced ones).
* ``create_topics``: CreateTopics through ``ControllerChannel``, which
  follows the active controller; the controller answers after the commit.
* ``start_nodes``, ``wait_reached``, ``wait_agreed``: waits on a running
  cluster built from the above (see each for what it times).
* ``metadata_files``: snapshots, log bytes and log start of a node's
  ``__cluster_metadata-0`` directory.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final

import attrs
import trio

from deploy import LaunchError, LocalCluster
from deploy.probes import request_at
from quorum.client import ClientError
from quorum.config.values import HostPort
from quorum.controller_client import AdminSettings, ControllerChannel, ControllerUnavailableError
from quorum.storage import METADATA_PARTITION_DIR
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestTopic,
    DescribeQuorumResponse,
    MetadataRequest,
    MetadataResponse,
)
from quorum.wire.messages.pykraft_describe_image import (
    PykraftDescribeImageRequest,
    PykraftDescribeImageResponse,
)

__all__ = [
    "FAST_RETRY",
    "WAIT_S",
    "CreateFailed",
    "ImageState",
    "MetadataFiles",
    "create_topics",
    "describe_image_s",
    "images",
    "leader_high_watermark",
    "metadata_files",
    "replica_offsets",
    "start_nodes",
    "unfenced_brokers",
    "wait_agreed",
    "wait_reached",
    "wait_until",
]

_PROBE_TIMEOUT_S: Final = 5.0
# how long any one wait of the bench may take before it gives up
WAIT_S: Final = 60.0
_CHECKPOINT = re.compile(r"(\d{20})-(\d{10})\.checkpoint")
# a failover is timed by retries: back off briefly (Kafka's admin client: 100 ms)
FAST_RETRY = AdminSettings(api_timeout_ms=60_000, request_timeout_ms=5_000, retry_backoff_ms=5)


class CreateFailed(Exception):
    """The controller refused a CreateTopics request (the message lists the errors)."""


@attrs.frozen
class ImageState:
    offset: int
    digest: str
    # perf_counter() when the answer arrived: the node held this image by then
    answered_at: float = attrs.field(eq=False, default=0.0)


@attrs.frozen(kw_only=True)
class MetadataFiles:
    # (offset, epoch) -> bytes of each snapshot file, oldest first
    snapshots: dict[tuple[int, int], int]
    log_bytes: int
    log_start_offset: int
    first_segment_offset: int | None

    @property
    def latest_snapshot(self) -> tuple[tuple[int, int], int] | None:
        return max(self.snapshots.items()) if self.snapshots else None


# -- the protocol ---------------------------------------------------------------------------


def _describe_quorum(cluster: LocalCluster) -> DescribeQuorumResponse | None:
    try:
        leader = cluster.leader(timeout=10)
    except LaunchError:  # no leader right now: the caller polls again
        return None
    return cluster.quorum_answer(leader)


def replica_offsets(cluster: LocalCluster) -> tuple[int, dict[int, int]] | None:
    """(high watermark, node id -> log end offset) from the active controller."""
    answer = _describe_quorum(cluster)
    if answer is None or answer.error_code != Errors.NONE:
        return None
    partition = answer.topics[0].partitions[0]
    if partition.error_code != Errors.NONE:
        return None
    offsets = {r.replica_id: r.log_end_offset
               for r in (*partition.current_voters, *partition.observers)}
    return partition.high_watermark, offsets


def leader_high_watermark(cluster: LocalCluster) -> int | None:
    found = replica_offsets(cluster)
    return None if found is None else found[0]


def _image_at(address: tuple[str, int]) -> ImageState | None:
    try:
        answer: PykraftDescribeImageResponse = request_at(
            address, PykraftDescribeImageRequest(), timeout=_PROBE_TIMEOUT_S
        )
    except (ClientError, OSError):
        return None
    if answer.error_code != Errors.NONE:
        return None
    return ImageState(answer.offset, answer.digest, time.perf_counter())


def describe_image_s(cluster: LocalCluster, node: int) -> float:
    """Seconds for one PykraftDescribeImage round trip to ``node``."""
    start = time.perf_counter()
    if _image_at(cluster.address(node)) is None:
        raise RuntimeError(f"node {node} did not describe its image")
    return time.perf_counter() - start


def images(cluster: LocalCluster, nodes: Sequence[int]) -> dict[int, ImageState | None]:
    """Each node's committed image (offset, digest), asked of all at once."""
    if not nodes:
        return {}
    with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
        found = pool.map(_image_at, [cluster.address(n) for n in nodes])
        return dict(zip(nodes, found, strict=True))


def unfenced_brokers(cluster: LocalCluster, via: int) -> set[int] | None:
    """The brokers that broker ``via`` lists in Metadata (the unfenced ones it knows)."""
    try:
        answer: MetadataResponse = request_at(
            cluster.address(via), MetadataRequest(topics=()), timeout=_PROBE_TIMEOUT_S
        )
    except (ClientError, OSError):
        return None
    return {b.node_id for b in answer.brokers}


def create_topics(
    cluster: LocalCluster, requests: Sequence[Sequence[tuple[str, int]]], *,
    replication_factor: int = 3, bootstrap: Sequence[int] | None = None,
    settings: AdminSettings | None = None,
) -> None:
    """Send each request (a list of ``(name, partitions)`` topics) in turn over one
    channel, each after the previous answer; raises CreateFailed."""
    addresses = [HostPort(*cluster.address(n)) for n in (bootstrap or cluster.node_ids)]

    async def call() -> None:
        async with ControllerChannel(addresses, settings) as channel:
            for topics in requests:
                response = await channel.call(CreateTopicsRequest(
                    topics=tuple(CreateTopicsRequestTopic(
                        name=name, num_partitions=count, replication_factor=replication_factor
                    ) for name, count in topics),
                    timeout_ms=60_000,
                ))
                errors = [(t.name, Errors.from_code(t.error_code).name)
                          for t in response.topics if t.error_code != Errors.NONE]
                if errors:
                    raise CreateFailed(f"CreateTopics refused: {errors[:5]}")

    try:
        trio.run(call)
    except ControllerUnavailableError as exc:
        raise CreateFailed(str(exc)) from exc


def wait_until(condition: Callable[[], object], timeout: float, what: str,
               poll_s: float = 0.02) -> float:
    """Poll ``condition()`` until it is truthy; returns ``time.perf_counter()`` when the
    poll that succeeded returned (the condition held by then)."""
    deadline = time.perf_counter() + timeout
    while True:
        if condition():
            return time.perf_counter()
        if time.perf_counter() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(poll_s)


# -- waiting for the cluster ----------------------------------------------------------------


def start_nodes(cluster: LocalCluster, nodes: Sequence[int]) -> None:
    """Start ``nodes`` and wait until every broker among them is unfenced."""
    for node_id in nodes:
        cluster.start_node(node_id, wait=False)
    for node_id in nodes:
        cluster.wait_ready(node_id)
    brokers = {n for n in nodes if n in cluster.broker_ids}
    via = min(brokers)
    wait_until(lambda: brokers <= (unfenced_brokers(cluster, via) or set()), WAIT_S,
               "the brokers to be unfenced")


def wait_reached(cluster: LocalCluster, nodes: Sequence[int], offset: int) -> float:
    """perf_counter() by which each of ``nodes`` reported a committed image at or past
    ``offset`` (the latest of the times their answers arrived: an upper bound, by the
    poll interval plus the node's hashing of its image for the answer)."""
    reached: dict[int, float] = {}

    def all_reached() -> bool:
        found = replica_offsets(cluster)
        if found is None:
            return False
        log_ends = found[1]
        # ask only nodes that hold the records: every answer costs the node a hash
        ready = [n for n in nodes if n not in reached and log_ends.get(n, -1) >= offset]
        for node, state in images(cluster, ready).items():
            if state is not None and state.offset >= offset:
                reached[node] = state.answered_at
        return len(reached) == len(nodes)

    wait_until(all_reached, WAIT_S, f"nodes {list(nodes)} to replay up to offset {offset}")
    return max(reached.values())


def wait_agreed(cluster: LocalCluster, nodes: Sequence[int]) -> None:
    """Until ``nodes`` hold the same image: offset and digest (the correctness check
    behind every timing; not itself timed)."""
    def agreed() -> bool:
        found = replica_offsets(cluster)
        if found is None:
            return False
        high_watermark, log_ends = found
        if any(log_ends.get(n, -1) < high_watermark for n in nodes):
            return False
        states = set(images(cluster, nodes).values())
        return len(states) == 1 and None not in states

    wait_until(agreed, WAIT_S, f"equal images on nodes {list(nodes)}", poll_s=0.1)


# -- the files ------------------------------------------------------------------------------


def _log_start(directory: Path) -> int:
    path = directory / "log-start-offset-checkpoint"
    if not path.exists():
        return 0
    # Kafka's checkpoint text: version, row count, then the one row
    lines = path.read_text().split()
    return int(lines[2]) if len(lines) >= 3 else 0


def metadata_files(cluster: LocalCluster, node_id: int) -> MetadataFiles:
    directory = cluster.layout[node_id].metadata_dir / METADATA_PARTITION_DIR
    snapshots: dict[tuple[int, int], int] = {}
    segments: list[int] = []
    log_bytes = 0
    for path in directory.iterdir() if directory.exists() else ():
        match = _CHECKPOINT.fullmatch(path.name)
        try:
            if match:
                snapshots[(int(match[1]), int(match[2]))] = path.stat().st_size
            elif path.suffix == ".log":
                segments.append(int(path.stem))
                log_bytes += path.stat().st_size
        except FileNotFoundError:  # deleted by retention while we looked
            continue
    return MetadataFiles(
        snapshots=dict(sorted(snapshots.items())),
        log_bytes=log_bytes,
        log_start_offset=_log_start(directory),
        first_segment_offset=min(segments) if segments else None,
    )
