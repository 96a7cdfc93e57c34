"""The phases of one ``bench.bench_scale`` run up to the creation, and what all phases share.

``ScaleRun`` holds the cluster and what the phases found: figures (one value
per name), per-node figures (name -> node -> value), the longest event-loop
stall of every node within each phase, and notes on anything that could not
be measured and why. Times are wall-clock (``time.time()``) so that they
compare with the nodes' log lines. The later phases are in
``bench.scale_after``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Final, TypeVar

import attrs
import trio

from bench.controller_probes import (
    leader_high_watermark,
    replica_offsets,
)
from bench.scale_checks import check_epoch, epoch_of
from bench.scale_probes import (
    ImageAnswer,
    NodeSample,
    PhaseStall,
    StallWatch,
    cpu_seconds,
    describe_images,
    rss_bytes,
    scrape,
    scrape_all,
)
from bench.sim_brokers import SimulatedBrokers
from deploy import LocalCluster
from quorum.config.values import HostPort
from quorum.controller_client import AdminSettings, ControllerChannel
from quorum.wire.error_codes import Errors
from quorum.wire.messages import CreateTopicsRequest, CreateTopicsRequestTopic

__all__ = ["ScaleRun", "apply_rate", "wait"]

T = TypeVar("T")
_POLL_S: Final = 0.5


@attrs.define
class ScaleRun:
    cluster: LocalCluster
    sim: SimulatedBrokers
    nodes: list[int]  # controllers and the real brokers running from the start
    spare: int | None  # a real broker started from empty in the catch-up phase
    brokers: int  # brokers registered before the creation (real and simulated)
    wait_s: float
    figures: dict[str, float] = attrs.Factory(dict)
    per_node: dict[str, dict[int, float]] = attrs.Factory(dict)
    stalls: dict[str, dict[int, PhaseStall | None]] = attrs.Factory(dict)
    notes: list[str] = attrs.Factory(list)
    # set by ``create``: when the answer came, the committed offset then, and the least
    # offset an image holding the whole creation can end at (its records after the
    # high watermark before it: the topic and one record per partition)
    answered_at: float = 0.0
    target: int = 0
    created_end: int = 0
    # why the run stopped before its last phase (an unexplained election), if it did
    stopped: str = ""

    def node_figure(self, name: str, node: int, value: float) -> None:
        self.per_node.setdefault(name, {})[node] = value

    def record_rss(self, phase: str, nodes: Sequence[int] | None = None) -> None:
        for node in nodes or self.nodes:
            if self.cluster.is_running(node):
                rss, peak = rss_bytes(self.cluster.pid(node))
                self.node_figure(f"rss.{phase}", node, rss)
                # the largest of every process the node ran as (a restart starts anew)
                self.node_figure("rss.peak", node,
                                 max(peak, self.per_node.get("rss.peak", {}).get(node, 0)))


def wait(condition: Callable[[], T | None], timeout: float, what: str,
         poll_s: float = _POLL_S) -> T:
    deadline = time.monotonic() + timeout
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(poll_s)


# -- registration ---------------------------------------------------------------------------


def leader_sample(run: ScaleRun) -> NodeSample | None:
    found = run.cluster.find_leader()
    return None if found is None else scrape(run.cluster, found[0])


def brokers_unfenced(run: ScaleRun, count: int) -> bool:
    """The active controller's image holds ``count`` unfenced brokers and no fenced one."""
    sample = leader_sample(run)
    return sample is not None and (
        sample.raw.get("kafka_controller_active_broker_count") == count
        and sample.raw.get("kafka_controller_fenced_broker_count") == 0
    )


def start(run: ScaleRun) -> None:
    """Controllers and real brokers, then the simulated brokers; timed until every broker
    is registered and unfenced."""
    cluster = run.cluster
    for node in run.nodes:
        cluster.start_node(node, wait=False)
    for node in run.nodes:
        cluster.wait_ready(node)
    begun = time.time()
    run.sim.start()
    wait(lambda: brokers_unfenced(run, run.brokers), run.wait_s,
         f"{run.brokers} unfenced brokers")
    run.figures["register"] = time.time() - begun
    run.record_rss("start")


# -- creation ---------------------------------------------------------------------------------


def create_one_topic(cluster: LocalCluster, name: str, partitions: int, wait_s: float) -> None:
    """One CreateTopics request, answered after the commit; no resend while it runs."""
    wait_ms = int(1000 * wait_s)
    settings = AdminSettings(api_timeout_ms=wait_ms, request_timeout_ms=wait_ms)

    async def call() -> None:
        bootstrap = [HostPort(*cluster.address(n)) for n in cluster.node_ids]
        async with ControllerChannel(bootstrap, settings) as channel:
            response = await channel.call(CreateTopicsRequest(
                topics=(CreateTopicsRequestTopic(
                    name=name, num_partitions=partitions, replication_factor=3),),
                timeout_ms=wait_ms,
            ))
        code = response.topics[0].error_code
        if code != Errors.NONE:
            raise RuntimeError(f"CreateTopics {name} refused: {Errors.from_code(code).name}")

    trio.run(call)


def agreed(samples: dict[int, NodeSample | None], target: int) -> float | None:
    """The time of the latest answer if every node holds one image at or past ``target``."""
    states = {(s.image_offset, s.digest) for s in samples.values() if s is not None}
    if None in samples.values() or len(states) != 1 or next(iter(states))[0] < target:
        return None
    return max(s.at for s in samples.values() if s is not None)


def images_agree(answers: dict[int, ImageAnswer], nodes: Sequence[int], target: int
                 ) -> float | None:
    """The time of the latest answer if ``nodes`` all answered one image at or past
    ``target`` (the same offset and digest)."""
    states = {(answers[n].offset, answers[n].digest) for n in nodes if n in answers}
    if len(states) != 1 or len(answers) < len(nodes) or next(iter(states))[0] < target:
        return None
    return max(answers[n].at for n in nodes)


def leader_epoch(cluster: LocalCluster) -> int:
    found = cluster.find_leader()
    return -1 if found is None else found[1].leader_epoch


@attrs.define
class _Creation:
    """What the creation phase has seen so far."""

    series: dict[int, list[NodeSample]]
    failed_scrapes: dict[int, int]
    # nodes whose /metrics showed the created image: no more scrapes (each new image costs
    # a node a digest per scrape), PykraftDescribeImage from then on
    published: dict[int, float] = attrs.Factory(dict)
    answers: dict[int, ImageAnswer] = attrs.Factory(dict)


def _sample(run: ScaleRun, seen: _Creation) -> None:
    """Scrape the nodes still replaying the creation (their image does not change, so the
    scrape costs no digest); note which ones show the created image."""
    replaying = [n for n in run.nodes if n not in seen.published]
    for node, sample in scrape_all(run.cluster, replaying).items():
        if sample is None:
            seen.failed_scrapes[node] += 1
            continue
        seen.series[node].append(sample)
        if sample.image_offset >= run.created_end:
            seen.published[node] = sample.at


def _describe(run: ScaleRun, seen: _Creation) -> float | None:
    """Ask the nodes that showed the created image which image they hold; the time they
    all held one at or past the committed offset, if they do."""
    found = replica_offsets(run.cluster)
    log_ends = {} if found is None else found[1]
    ask = [n for n in seen.published
           if log_ends.get(n, -1) >= run.target
           and (n not in seen.answers or seen.answers[n].offset < run.target)]
    for node, answer in describe_images(run.cluster, ask, run.wait_s).items():
        if answer is not None:
            seen.answers[node] = answer
    return images_agree(seen.answers, run.nodes, run.target)


def create(run: ScaleRun, partitions: int) -> None:
    """One topic of ``partitions`` partitions in one request. Meanwhile each node's /metrics
    every ``_POLL_S`` for its records applied until it shows the created image; then its
    PykraftDescribeImage, until every node holds the image at the committed offset with
    one digest."""
    cluster, nodes = run.cluster, run.nodes
    watch = StallWatch(cluster, nodes)
    first = scrape_all(cluster, nodes)
    watch.begin(first)
    epoch = epoch_of(first)
    before = leader_high_watermark(cluster)
    assert before is not None
    run.created_end = before + partitions + 1
    seen = _Creation(series={n: [] for n in nodes}, failed_scrapes=dict.fromkeys(nodes, 0))
    outcome: list[BaseException | float] = []

    def send() -> None:
        try:
            create_one_topic(cluster, "big", partitions, run.wait_s)
            outcome.append(time.time())
        except BaseException as exc:
            outcome.append(exc)

    cpu_before = _cpu_of(run)
    sent = time.time()
    threading.Thread(target=send, daemon=True).start()
    agree_at = None
    while agree_at is None:
        _sample(run, seen)
        # a leader change would leave the request unanswered until its timeout
        if leader_epoch(cluster) > epoch:
            check_epoch(cluster, nodes, "create", epoch, sent)
        if outcome and isinstance(outcome[0], BaseException):
            raise outcome[0]
        if outcome and not run.target:
            run.answered_at = float(outcome[0])  # type: ignore[arg-type]
            _record_cpu(run, cpu_before, _cpu_of(run), time.time() - sent)
            run.target = leader_high_watermark(cluster) or 0
        if run.target:
            agree_at = _describe(run, seen)
        if time.time() > sent + run.wait_s:
            raise TimeoutError(f"no agreement on the created image within {run.wait_s} s")
        time.sleep(_POLL_S)
    _record_creation(run, seen, watch, sent, agree_at, before)


_BENCH: Final = -1  # this process: the simulated brokers, the scrapes


def _cpu_of(run: ScaleRun) -> dict[int, float]:
    used = {n: cpu_seconds(run.cluster.pid(n)) for n in run.nodes if run.cluster.is_running(n)}
    used[_BENCH] = cpu_seconds(os.getpid())
    return used


def _record_cpu(run: ScaleRun, before: dict[int, float], after: dict[int, float],
                seconds: float) -> None:
    """Each node's CPU while the creation was committed, as a share of one core (all its
    threads), and the machine's cores in use by the nodes together: what bounds the pace."""
    shares = {n: (after[n] - before[n]) / seconds for n in before.keys() & after.keys()}
    run.figures["create.cpu_bench"] = shares.pop(_BENCH)
    run.figures["create.cpu_nodes"] = sum(shares.values())
    for node, share in shares.items():
        run.node_figure("create.cpu", node, share)


def _record_creation(run: ScaleRun, seen: _Creation, watch: StallWatch, sent: float,
                     agree_at: float, before: int) -> None:
    last = scrape_all(run.cluster, run.nodes)
    for node, sample in last.items():
        if sample is None:
            run.notes.append(f"node {node} did not answer /metrics after the creation")
    run.stalls["create"] = watch.end(last)
    run.figures["create.answer"] = run.answered_at - sent
    run.figures["create.agree"] = agree_at - sent
    run.figures["create.commit_rate"] = (run.target - before) / (run.answered_at - sent)
    for node, points in seen.series.items():
        if node in seen.published:
            run.node_figure("create.published", node, seen.published[node] - sent)
        if seen.failed_scrapes[node]:
            run.notes.append(f"node {node}: {seen.failed_scrapes[node]} /metrics scrapes failed "
                             "during the creation")
        rate = apply_rate(points)
        if rate is not None:
            run.node_figure("apply.create", node, rate)
        else:
            run.notes.append(f"node {node}: records applied during the creation rose within "
                             f"two scrapes ({_POLL_S} s apart): no rate")
    run.record_rss("create")


def apply_rate(points: Sequence[NodeSample]) -> float | None:
    """Records applied per second while the count rose: the slope between the first and
    the last sample taken strictly inside the rise. None when fewer than two samples fell
    inside it (a rise shorter than about two sampling intervals: no figure)."""
    if len(points) < 2:
        return None
    low, high = points[0].applied_total, points[-1].applied_total
    rising = [p for p in points if low < p.applied_total < high]
    if len(rising) < 2 or rising[-1].at <= rising[0].at:
        return None
    a, b = rising[0], rising[-1]
    return (b.applied_total - a.applied_total) / (b.at - a.at)


def record_slices(run: ScaleRun, phase: str, samples: dict[int, NodeSample | None]) -> None:
    """Each node's slices by kind since its process started, as read at the end of
    ``phase`` (``slice.<kind>.<figure>.<phase>``)."""
    for node, sample in samples.items():
        if sample is None:
            run.notes.append(f"{phase}: node {node} did not answer /metrics")
            continue
        for kind, figures in sample.slices.items():
            run.node_figure(f"slice.{kind}.max_ms.{phase}", node, figures.max_ms_all)
            run.node_figure(f"slice.{kind}.count.{phase}", node, figures.count)
            run.node_figure(f"slice.{kind}.units.{phase}", node, figures.units)
