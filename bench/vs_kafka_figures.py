"""The arithmetic of ``bench.bench_vs_kafka``: no process, no socket.

* ``plan_topics``: the topics a creation of N partitions is sent as, each one
  request of at most 9,999 partitions (Kafka's controller refuses an
  operation writing more than ``QuorumController.MAX_RECORDS_PER_USER_OP`` =
  10,000 records: one TopicRecord plus one PartitionRecord per partition).
* ``percentile``: nearest-rank percentiles of latencies.
* ``per_replica_bytes``: the RSS slope of a broker between two sizes.
* ``parse_heap_info``: ``jcmd PID GC.heap_info`` as numbers.
* ``limits_for``: the ``vm.max_map_count`` and open-files limit a Kafka
  broker hosting N replicas needs.
* ``failure_cause``: the reason a JVM gave in its log for dying.
* ``Figures``: one side's values by name over every run (pooled rounds too).
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence
from typing import Final

import attrs

__all__ = [
    "DEFAULT_MAP_COUNT",
    "MAX_PARTITIONS_PER_REQUEST",
    "Figures",
    "HeapInfo",
    "Limits",
    "failure_cause",
    "limits_for",
    "parse_heap_info",
    "per_replica_bytes",
    "percentile",
    "plan_topics",
]

# QuorumController.MAX_RECORDS_PER_USER_OP (= MAX_RECORDS_PER_BATCH, 10,000) less the
# TopicRecord of the one topic a request creates
MAX_PARTITIONS_PER_REQUEST: Final = 9_999
# the kernel's default vm.max_map_count (DEFAULT_MAX_MAP_COUNT)
DEFAULT_MAP_COUNT: Final = 65_530
# what a JVM maps besides its logs' indexes (heap regions, jars, threads' stacks), and
# what it opens besides its segments (jars, sockets, epoll, checkpoints): room for both
_MAP_HEADROOM: Final = DEFAULT_MAP_COUNT
_FILE_HEADROOM: Final = 20_000

_HEAP_LINE: Final = re.compile(r"heap\s+total\s+(\d+)K,\s+used\s+(\d+)K")
_METASPACE_LINE: Final = re.compile(r"Metaspace\s+used\s+(\d+)K,\s+committed\s+(\d+)K")
# what a JVM says when it dies of a limit, most telling first
_CAUSES: Final = (
    ("java.lang.OutOfMemoryError", "out of heap (java.lang.OutOfMemoryError)"),
    ("Map failed", "mmap refused: vm.max_map_count reached (Map failed)"),
    ("Too many open files", "open-files limit reached (Too many open files)"),
    ("Cannot allocate memory", "the kernel refused memory (Cannot allocate memory)"),
)


def plan_topics(partitions: int, per_request: int = MAX_PARTITIONS_PER_REQUEST) -> list[int]:
    """The partition counts of the topics that make ``partitions``: as few requests as
    the limit allows, the partitions spread evenly over them (the larger ones first)."""
    if partitions < 1 or per_request < 1:
        raise ValueError("partitions and the per-request limit must be positive")
    count = math.ceil(partitions / per_request)
    base, extra = divmod(partitions, count)
    return [base + 1] * extra + [base] * (count - extra)


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile (0 < q <= 100) of ``values``."""
    if not values or not 0 < q <= 100:
        raise ValueError("percentile of no values, or q outside (0, 100]")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def per_replica_bytes(empty_rss: float, loaded_rss: float, replicas: int) -> float:
    """Bytes of resident memory per idle replica: the slope between the node empty and
    the node hosting ``replicas`` more replicas."""
    if replicas <= 0:
        raise ValueError("no replicas hosted: no slope")
    return (loaded_rss - empty_rss) / replicas


@attrs.frozen
class HeapInfo:
    committed_bytes: int  # the heap's "total": committed regions
    used_bytes: int
    metaspace_used_bytes: int | None


def parse_heap_info(text: str) -> HeapInfo:
    """``jcmd PID GC.heap_info``: the heap's committed and used sizes (G1 and the other
    collectors print "<name> heap total NK, used NK"), and Metaspace's used size."""
    heap = _HEAP_LINE.search(text)
    if heap is None:
        raise ValueError(f"no heap line in GC.heap_info output: {text[:200]!r}")
    meta = _METASPACE_LINE.search(text)
    return HeapInfo(
        committed_bytes=int(heap[1]) * 1024, used_bytes=int(heap[2]) * 1024,
        metaspace_used_bytes=None if meta is None else int(meta[1]) * 1024,
    )


@attrs.frozen
class Limits:
    map_count: int  # vm.max_map_count
    open_files: int  # RLIMIT_NOFILE


def limits_for(replicas_per_broker: int) -> Limits:
    """What a Kafka broker hosting ``replicas_per_broker`` replicas needs: two map areas
    per replica (each segment's offset and time indexes are mapped) and one open file per
    segment (one segment per idle replica), above what the JVM needs anyway."""
    return Limits(map_count=2 * replicas_per_broker + _MAP_HEADROOM,
                  open_files=replicas_per_broker + _FILE_HEADROOM)


def failure_cause(log_text: str) -> str | None:
    """Why a JVM died, from its output: the first known cause found, in the order of
    ``_CAUSES``; None when none is found."""
    for needle, cause in _CAUSES:
        if needle in log_text:
            return cause
    return None


@attrs.define
class Figures:
    """One side's measured values by name (a list: one value per run, or per round for
    pooled figures), and its failures by name (what happened instead of a figure)."""

    values: dict[str, list[float]] = attrs.Factory(dict)
    failures: dict[str, list[str]] = attrs.Factory(dict)

    def add(self, name: str, value: float) -> None:
        self.values.setdefault(name, []).append(value)

    def fail(self, name: str, why: str) -> None:
        self.failures.setdefault(name, []).append(why)

    def median(self, name: str) -> float | None:
        found = self.values.get(name)
        return statistics.median(found) if found else None
