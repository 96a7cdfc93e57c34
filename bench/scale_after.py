"""The phases of a ``bench.bench_scale`` run after the creation: snapshots, restarts of a
follower controller, failover of the active controller, a new broker's catch-up.

Each records into its ``ScaleRun`` as ``bench.scale_phases`` describes.
"""

from __future__ import annotations

import os
import signal
import time

from bench.controller_probes import (
    FAST_RETRY,
    create_topics,
    leader_high_watermark,
    metadata_files,
    unfenced_brokers,
)
from bench.scale_phases import ScaleRun, agreed, apply_rate, record_slices, wait
from bench.scale_probes import (
    NodeSample,
    PhaseStall,
    StallWatch,
    log_times,
    scrape,
    scrape_all,
)

__all__ = [
    "broker_catch_up",
    "failover",
    "follower_controller",
    "restart",
    "snapshot_offset",
    "snapshots",
]


# -- snapshots --------------------------------------------------------------------------------


def snapshot_offset(run: ScaleRun, node: int) -> int:
    latest = metadata_files(run.cluster, node).latest_snapshot
    return -1 if latest is None else latest[0][0]


def snapshots(run: ScaleRun, wait_s: float) -> None:
    """Every node's snapshot of the created image: its size, and the time from the
    creation's answer to the node's log line saying it was written. A node that wrote
    none within ``wait_s`` is named in the notes (and left out of the figures)."""
    cluster = run.cluster

    def taken() -> bool:
        return all(snapshot_offset(run, n) >= run.created_end for n in run.nodes)

    try:
        wait(taken, wait_s, f"snapshots at or after offset {run.created_end}")
    except TimeoutError:
        missing = [n for n in run.nodes if snapshot_offset(run, n) < run.created_end]
        run.notes.append(
            f"nodes {missing} wrote no snapshot of the created image within {wait_s:.0f} s "
            f"(their latest: {[snapshot_offset(run, n) for n in missing]}; an image holding "
            f"the creation ends at {run.created_end} or later)")
    for node in run.nodes:
        latest = metadata_files(cluster, node).latest_snapshot
        if latest is None or latest[0][0] < run.created_end:
            continue
        (offset, epoch), size = latest
        run.node_figure("snapshot.bytes", node, size)
        run.node_figure("snapshot.offset", node, offset)
        lines = log_times(cluster.layout[node].log_path, f"wrote metadata snapshot {offset}-{epoch} ")
        if lines:
            run.node_figure("snapshot.written", node, lines[0][0] - run.answered_at)
        else:
            run.notes.append(f"node {node}: snapshot {offset}-{epoch} was loaded, not written "
                             "by the node (no 'wrote metadata snapshot' line)")
    record_slices(run, "snapshot", scrape_all(cluster, run.nodes))


# -- restarts ---------------------------------------------------------------------------------


def follower_controller(run: ScaleRun) -> int | None:
    """A follower controller holding a snapshot of the created image (None: none does)."""
    leader = run.cluster.leader()
    found = [n for n in run.cluster.node_ids
             if n != leader and snapshot_offset(run, n) >= run.created_end]
    return max(found) if found else None


def restart(run: ScaleRun, phase: str, *, drop_snapshots: bool) -> None:
    """Stop a follower controller (SIGTERM), start it again (without its snapshots if asked:
    it then replays its log from offset 0), and time until it logs the snapshot loaded and
    until its image is back at the committed offset it had before."""
    cluster = run.cluster
    node = follower_controller(run)
    if node is None:
        run.notes.append(f"{phase}: not measured: no follower controller holds a snapshot "
                         "of the created image")
        return
    target = leader_high_watermark(cluster) or 0
    cluster.stop(node)
    if drop_snapshots:
        directory = cluster.layout[node].metadata_dir / "__cluster_metadata-0"
        for path in directory.glob("*.checkpoint"):
            path.unlink()
    log_from = cluster.layout[node].log_path.stat().st_size
    begun = time.time()
    cluster.start_node(node, wait=False)
    points: list[NodeSample] = []

    def back() -> bool:
        sample = scrape(cluster, node) if cluster.is_running(node) else None
        if sample is not None:
            points.append(sample)
        return sample is not None and sample.image_offset >= target

    # a finer poll than the creation's: one node, replaying faster than the leader commits
    wait(back, run.wait_s, f"node {node}'s image back at offset {target}", poll_s=0.1)
    run.figures[f"{phase}.image"] = points[-1].at - begun
    loaded = log_times(cluster.layout[node].log_path, "loaded metadata snapshot", log_from)
    if loaded:
        run.figures[f"{phase}.loaded"] = loaded[0][0] - begun
    elif not drop_snapshots:
        run.notes.append(f"{phase}: node {node} logged no snapshot loaded")
    if drop_snapshots:
        rate = apply_rate(points)
        if rate is not None:
            run.figures[f"{phase}.apply_rate"] = rate
        else:
            run.notes.append(f"{phase}: node {node}'s records applied rose within two "
                             "scrapes (0.1 s apart): no rate")
    sample = points[-1]
    run.stalls[phase] = {node: PhaseStall(sample.stall_ms_all, False)}
    for kind in ("snapshot-load", "replay"):
        figures = sample.slices.get(kind)
        if figures is not None:
            run.figures[f"{phase}.{kind}.max_ms"] = figures.max_ms_all
    record_slices(run, phase, {node: sample})
    run.record_rss(phase, [node])


# -- failover ---------------------------------------------------------------------------------


def everyone_agrees(run: ScaleRun, what: str) -> None:
    wait(lambda: agreed(scrape_all(run.cluster, run.nodes), 0), run.wait_s, what)


def failover(run: ScaleRun, rounds: int) -> list[float]:
    """Seconds from kill -9 of the active controller to the next committed CreateTopics
    (one partition) through the survivors; the killed node restarts between rounds."""
    cluster = run.cluster
    watch = StallWatch(cluster, run.nodes)
    watch.begin()
    times = []
    for i in range(rounds):
        leader = cluster.leader()
        survivors = [n for n in cluster.node_ids if n != leader]
        begun = time.perf_counter()
        os.kill(cluster.pid(leader), signal.SIGKILL)  # reaping it would sit in the timing
        create_topics(cluster, [[(f"failover-{i}", 1)]], bootstrap=survivors,
                      settings=FAST_RETRY)
        times.append(time.perf_counter() - begun)
        cluster.wait_exit(leader, timeout=20)
        cluster.start_node(leader, wait=False)
        everyone_agrees(run, f"every node's image after failover round {i + 1}")
    samples = scrape_all(cluster, run.nodes)
    run.stalls["failover"] = watch.end(samples)
    record_slices(run, "failover", samples)
    run.record_rss("failover")
    return times


# -- a new broker -------------------------------------------------------------------------------


def broker_catch_up(run: ScaleRun) -> None:
    """A real broker from empty: seconds to unfenced (it lists itself in Metadata, which it
    answers only once unfenced) and to the active controller's image (same digest)."""
    cluster, spare = run.cluster, run.spare
    assert spare is not None
    watch = StallWatch(cluster, run.nodes)
    watch.begin()
    log_from = cluster.layout[spare].log_path.stat().st_size if \
        cluster.layout[spare].log_path.exists() else 0
    begun = time.time()
    cluster.start_node(spare, wait=False)
    wait(lambda: spare in (unfenced_brokers(cluster, spare) or set()), run.wait_s,
         f"broker {spare} unfenced")
    run.figures["catchup.unfenced"] = time.time() - begun

    def same() -> float | None:
        leader = cluster.leader()
        return agreed(scrape_all(cluster, [leader, spare]), 0)

    run.figures["catchup.agree"] = wait(same, run.wait_s, f"broker {spare}'s image") - begun
    loaded = log_times(cluster.layout[spare].log_path, "loaded metadata snapshot", log_from)
    if loaded:
        run.figures["catchup.loaded"] = loaded[0][0] - begun
        offset = int(loaded[0][1].rsplit(" ", 1)[1].split("-")[0])
        if offset < run.created_end:
            run.notes.append(f"broker {spare} loaded snapshot {offset}, older than the "
                             f"created image ({run.created_end}), and replayed the log after it")
    else:
        run.notes.append(f"broker {spare} loaded no snapshot (it replayed the log)")
    samples = scrape_all(cluster, [*run.nodes, spare])
    stalls = watch.end(samples)
    sample = samples[spare]
    stalls[spare] = None if sample is None else PhaseStall(sample.stall_ms_all, False)
    run.stalls["catchup"] = stalls
    record_slices(run, "catchup", samples)
    run.record_rss("catchup", [*run.nodes, spare])
