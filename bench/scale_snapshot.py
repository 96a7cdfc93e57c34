"""A node's snapshot file, timed in this process: the same code a node runs, on one core.

``time_snapshot(path)`` reads the file into an image (``SnapshotReader``, one
slice of ``MAX_UNITS_PER_SLICE`` records at a time, as a node loads it), then
writes the image again (``SnapshotBuilder`` slices, then the join a node does
before it writes the file) and hashes it (``ImageSummaryBuilder`` slices, the
digest a node computes for /metrics and PykraftDescribeImage). Each gives the
whole time and the median and longest slice: the "typical slice" beside the
longest one that /metrics reports from the nodes. As on a node, the objects a
load slice built leave the collector's generations after it (``gc.freeze``),
and the last write slice also joins the batches and writes and fsyncs the file
(here a scratch file beside the original, removed at once).
"""

from __future__ import annotations

import gc
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import attrs

from bench.controller_probes import MetadataFiles
from deploy import LocalCluster
from quorum.controller.digest import ImageSummaryBuilder
from quorum.controller.image import MetadataImage
from quorum.controller.slicing import MAX_UNITS_PER_SLICE
from quorum.controller.snapshot import SnapshotBuilder, SnapshotReader
from quorum.log.protocol import OffsetAndEpoch
from quorum.log.snapshots import snapshot_file_name
from quorum.storage import METADATA_PARTITION_DIR

__all__ = ["SlicedWork", "SnapshotTimes", "snapshot_path", "time_snapshot"]


@attrs.frozen(kw_only=True)
class SlicedWork:
    total_s: float
    slices: int
    median_slice_ms: float
    max_slice_ms: float


@attrs.frozen(kw_only=True)
class SnapshotTimes:
    size_bytes: int
    records: int
    load: SlicedWork
    write: SlicedWork
    digest: SlicedWork


def snapshot_path(cluster: LocalCluster, node: int, files: MetadataFiles) -> Path:
    latest = files.latest_snapshot
    assert latest is not None, f"node {node} holds no snapshot"
    return (cluster.layout[node].metadata_dir / METADATA_PARTITION_DIR
            / snapshot_file_name(OffsetAndEpoch(*latest[0])))


def _sliced(step: Callable[[], bool], finish: Callable[[], object] = lambda: None,
            after: Callable[[], object] = lambda: None) -> SlicedWork:
    """Run ``step`` until it returns True, timing each call with ``after`` (what a node
    does after each slice); ``finish`` counts as part of the last slice (a node does it
    in the same turn)."""
    times = []
    start = time.perf_counter()
    while True:
        begun = time.perf_counter()
        done = step()
        if done:
            finish()
        after()
        times.append(time.perf_counter() - begun)
        if done:
            break
    total = time.perf_counter() - start
    return SlicedWork(total_s=total, slices=len(times),
                      median_slice_ms=1000 * statistics.median(times),
                      max_slice_ms=1000 * max(times))


def time_snapshot(path: Path, snapshot_id: OffsetAndEpoch) -> SnapshotTimes:
    data = path.read_bytes()
    reader = SnapshotReader(data, snapshot_id)
    records = 0

    def load_step() -> bool:
        nonlocal records
        records += reader.step(MAX_UNITS_PER_SLICE)
        return reader.image is not None

    load = _sliced(load_step, after=gc.freeze)
    image: MetadataImage | None = reader.image
    assert image is not None
    builder = SnapshotBuilder(image, last_contained_timestamp_ms=0)

    def write_step() -> bool:
        builder.step(MAX_UNITS_PER_SLICE)
        return builder.done

    scratch = path.with_name(path.name + ".bench-scratch")

    def store() -> None:
        with scratch.open("wb") as file:
            file.write(builder.data())
            file.flush()
            os.fsync(file.fileno())

    try:
        write = _sliced(write_step, store)
    finally:
        scratch.unlink(missing_ok=True)
    summary = ImageSummaryBuilder(image)
    digest = _sliced(lambda: summary.step(MAX_UNITS_PER_SLICE))
    gc.unfreeze()
    return SnapshotTimes(size_bytes=len(data), records=records, load=load, write=write,
                         digest=digest)
