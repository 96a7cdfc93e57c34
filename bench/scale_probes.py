"""What ``bench.bench_scale`` reads from running nodes: /metrics, /proc, node logs.

* ``scrape`` / ``scrape_all``: one node's or several nodes' GET /metrics as a
  ``NodeSample`` (image offset and digest, records applied, loop stalls,
  work slices by kind), with the time the answer arrived. A scrape costs a
  node the digest of its image once per image (``LatestImageSummary``), so
  callers scrape at phase boundaries, and often only while the image does
  not change (inside a metadata transaction).
* ``describe_images``: PykraftDescribeImage at several nodes at once, with a
  timeout long enough for a node to hash a large image first (/metrics gives
  a request 5 s, which a busy node's first digest of 1,000,000 partitions can
  exceed).
* ``rss_bytes``: a process's resident set and its peak (VmRSS, VmHWM).
* ``StallWatch``: the longest event-loop stall of each node within a phase,
  from ``pykraft_event_loop_max_stall_ms`` read at the phase's start and end.
* ``log_times``: the wall-clock times of a node's log lines that match.
"""

from __future__ import annotations

import datetime
import os
import re
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final

import attrs

from deploy import LocalCluster
from deploy.probes import metrics_at, request_at
from quorum.client import ClientError
from quorum.wire.error_codes import Errors
from quorum.wire.messages.pykraft_describe_image import (
    PykraftDescribeImageRequest,
    PykraftDescribeImageResponse,
)

__all__ = [
    "ImageAnswer",
    "NodeSample",
    "PhaseStall",
    "SliceFigures",
    "StallWatch",
    "cpu_seconds",
    "describe_images",
    "log_times",
    "rss_bytes",
    "scrape",
    "scrape_all",
]

# the node's metrics server gives a request 5 s; more here only to see its answer
_SCRAPE_TIMEOUT_S: Final = 10.0
_ONE_MINUTE_S: Final = 60.0
_LABEL: Final = re.compile(r'(\w+)="([^"]*)"')
# the node log's asctime: "2026-11-26 07:07:51,377"
_LOG_TIME: Final = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) ")


@attrs.frozen(kw_only=True)
class SliceFigures:
    count: int
    units: int
    max_ms_all: float
    max_ms_1m: float


@attrs.frozen(kw_only=True)
class NodeSample:
    node: int
    at: float  # time.time() when the answer arrived
    image_offset: int
    digest: str
    applied_total: int
    applied_per_second: float
    stall_ms_all: float
    stall_ms_1m: float
    slices: dict[str, SliceFigures]
    raw: dict[str, float] = attrs.field(repr=False)


def _labels(key: str) -> dict[str, str]:
    return dict(_LABEL.findall(key[key.find("{"):])) if "{" in key else {}


def _slices(samples: dict[str, float]) -> dict[str, SliceFigures]:
    found: dict[str, dict[str, float]] = {}
    names = {
        "pykraft_work_slices_total": "count",
        "pykraft_work_slice_units_total": "units",
        "pykraft_work_slice_max_ms": "max_ms",
    }
    for key, value in samples.items():
        name = key.split("{", 1)[0]
        if name not in names:
            continue
        labels = _labels(key)
        field = names[name]
        if field == "max_ms":
            field = f"max_ms_{labels.get('window', 'all')}"
        found.setdefault(labels["kind"], {})[field] = value
    return {
        kind: SliceFigures(count=int(v.get("count", 0)), units=int(v.get("units", 0)),
                           max_ms_all=v.get("max_ms_all", 0.0), max_ms_1m=v.get("max_ms_1m", 0.0))
        for kind, v in sorted(found.items())
    }


def scrape(cluster: LocalCluster, node: int) -> NodeSample | None:
    samples = metrics_at(cluster.metrics_address(node), timeout=_SCRAPE_TIMEOUT_S)
    if samples is None:
        return None
    at = time.time()
    digests = [_labels(k).get("digest", "") for k in samples
               if k.startswith("pykraft_metadata_image_info{")]
    return NodeSample(
        node=node, at=at,
        image_offset=int(samples.get("pykraft_metadata_image_offset", -1)),
        digest=digests[0] if digests else "",
        applied_total=int(samples.get("pykraft_metadata_records_applied_total", 0)),
        applied_per_second=samples.get("pykraft_metadata_records_applied_per_second", 0.0),
        stall_ms_all=samples.get('pykraft_event_loop_max_stall_ms{window="all"}', 0.0),
        stall_ms_1m=samples.get('pykraft_event_loop_max_stall_ms{window="1m"}', 0.0),
        slices=_slices(samples),
        raw=samples,
    )


def scrape_all(cluster: LocalCluster, nodes: Sequence[int]) -> dict[int, NodeSample | None]:
    """Every node's sample, asked of all at once (one thread each)."""
    if not nodes:
        return {}
    with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
        return dict(zip(nodes, pool.map(lambda n: scrape(cluster, n), nodes), strict=True))


@attrs.frozen
class ImageAnswer:
    offset: int
    digest: str
    at: float  # time.time() when the answer arrived


def _describe(cluster: LocalCluster, node: int, timeout: float) -> ImageAnswer | None:
    try:
        answer: PykraftDescribeImageResponse = request_at(
            cluster.address(node), PykraftDescribeImageRequest(), timeout=timeout)
    except (ClientError, OSError):
        return None
    if answer.error_code != Errors.NONE:
        return None
    return ImageAnswer(answer.offset, answer.digest, time.time())


def describe_images(cluster: LocalCluster, nodes: Sequence[int], timeout: float
                    ) -> dict[int, ImageAnswer | None]:
    """Each node's committed image (offset, digest), asked of all at once."""
    if not nodes:
        return {}
    with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
        found = pool.map(lambda n: _describe(cluster, n, timeout), nodes)
        return dict(zip(nodes, found, strict=True))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far, every thread's, in seconds."""
    # /proc/PID/stat: the command name (field 2) may hold spaces; utime and stime are
    # fields 14 and 15, counted after its closing parenthesis
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_bytes(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of process ``pid``, in bytes."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) * 1024  # kB
    return fields.get("VmRSS", 0), fields.get("VmHWM", 0)


@attrs.frozen
class PhaseStall:
    """A node's longest stall within a phase: exact when the phase set a new all-time
    maximum; otherwise at most ``ms`` (``bound`` True), from the one-minute window."""

    ms: float
    bound: bool

    def text(self) -> str:
        return f"<={self.ms:.0f}" if self.bound else f"{self.ms:.0f}"


class StallWatch:
    """Reads every node's loop-stall maximum at a phase's start and end."""

    def __init__(self, cluster: LocalCluster, nodes: Iterable[int]) -> None:
        self.cluster = cluster
        self.nodes = list(nodes)
        self._start: dict[int, tuple[float, float]] = {}  # node -> (all-time ms, time)

    def begin(self, samples: dict[int, NodeSample | None] | None = None) -> None:
        samples = samples if samples is not None else scrape_all(self.cluster, self.nodes)
        self._start = {n: (s.stall_ms_all, s.at) for n, s in samples.items() if s is not None}

    def end(self, samples: dict[int, NodeSample | None] | None = None
            ) -> dict[int, PhaseStall | None]:
        samples = samples if samples is not None else scrape_all(self.cluster, self.nodes)
        found: dict[int, PhaseStall | None] = {}
        for node in self.nodes:
            sample, start = samples.get(node), self._start.get(node)
            if sample is None:
                found[node] = None
            elif start is None or sample.stall_ms_all > start[0]:
                # a new maximum since the phase began (or the node started within it)
                found[node] = PhaseStall(sample.stall_ms_all, False)
            elif sample.at - start[1] <= _ONE_MINUTE_S:
                # the last minute covers the phase (and a little before it)
                found[node] = PhaseStall(sample.stall_ms_1m, True)
            else:
                found[node] = PhaseStall(start[0], True)
        return found


def log_times(path: Path, pattern: str, since_byte: int = 0) -> list[tuple[float, str]]:
    """(time.time() of the line, the line) for every line of ``path`` from ``since_byte``
    on that contains ``pattern`` (node logs are in local time, millisecond resolution)."""
    found = []
    with path.open("rb") as log:
        log.seek(since_byte)
        text = log.read().decode(errors="replace")
    for line in text.splitlines():
        if pattern not in line:
            continue
        match = _LOG_TIME.match(line)
        if match:
            stamp = datetime.datetime.strptime(match[1], "%Y-%m-%d %H:%M:%S")
            found.append((stamp.timestamp() + int(match[2]) / 1000, line))
    return found
