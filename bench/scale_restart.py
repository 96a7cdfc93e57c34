"""The full restart of a ``bench.bench_scale`` run: every node stopped in order, then started.

Brokers first (SIGTERM: a controlled shutdown), then the controllers (a leader
hands over), then all of them started at once, controllers first, as the
100,000-partition scale test does. Timed from the start:

* ``fullrestart.claim``: the first "controller active in epoch" line of a
  controller (replayed everything before its epoch and claimed);
* ``fullrestart.registered``: every broker registered (each broker process's
  state past STARTING; every simulated broker's lifecycle likewise);
* ``fullrestart.unfenced``: the active controller's gauges show every broker
  unfenced;
* ``fullrestart.isr_full``: every broker process hosts every replica it should
  and leads no under-replicated partition. Only when every broker is a
  process: a simulated broker fetches nothing, so the partitions it follows
  never fill their ISRs.

The lifecycle's answer times while this runs (``LifecycleTimes``): each
broker process's own, from its /metrics (it starts with the process, so it
covers the restart), and the simulated brokers', whose loops keep every
sample with its time (the phase's window is taken). p50 and p99 of the
processes are the largest of any one process's (their summaries cannot be
pooled); the simulated brokers' are of all their samples. Requests that got
no answer are counted.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterable

from bench.scale_phases import ScaleRun, brokers_unfenced, record_slices, wait
from bench.scale_probes import NodeSample, StallWatch, log_times, scrape, scrape_all
from broker.lifecycle import BrokerState

__all__ = ["full_restart"]

_KINDS = ("BrokerRegistration", "BrokerHeartbeat")
_STOP_TIMEOUT_S = 120.0


def full_restart(run: ScaleRun, partitions: int) -> None:
    cluster = run.cluster
    brokers = [n for n in run.nodes if n in cluster.broker_ids]
    controllers = [n for n in run.nodes if n in cluster.node_ids]
    for node in brokers + controllers:
        cluster.stop(node, timeout=_STOP_TIMEOUT_S)
    log_from = {n: cluster.layout[n].log_path.stat().st_size for n in run.nodes}
    watch = StallWatch(cluster, run.nodes)
    begun = time.time()
    for node in controllers + brokers:
        cluster.start_node(node, wait=False)
    watch.begin()

    def claimed() -> float | None:
        times = [t for n in controllers for t, _ in log_times(
            cluster.layout[n].log_path, "controller active in epoch", log_from[n])]
        return min(times) if times else None

    run.figures["fullrestart.claim"] = wait(claimed, run.wait_s, "a controller's claim") - begun
    wait(lambda: _registered(run, brokers), run.wait_s, "every broker registered")
    run.figures["fullrestart.registered"] = time.time() - begun
    wait(lambda: brokers_unfenced(run, run.brokers), run.wait_s, "every broker unfenced")
    run.figures["fullrestart.unfenced"] = time.time() - begun
    if run.sim.ids:
        run.notes.append("full restart: every ISR full not measured: simulated brokers fetch "
                         "nothing, so the partitions they follow never fill their ISRs")
    elif brokers:
        replicas = partitions * 3 // len(brokers)  # RF 3, spread evenly
        wait(lambda: _isrs_full(run, brokers, replicas), run.wait_s, "every ISR full")
        run.figures["fullrestart.isr_full"] = time.time() - begun
    samples = scrape_all(cluster, run.nodes)
    run.stalls["fullrestart"] = watch.end(samples)
    record_slices(run, "fullrestart", samples)
    _lifecycle_figures(run, [samples.get(n) for n in brokers], begun)
    run.record_rss("fullrestart")


def _registered(run: ScaleRun, brokers: list[int]) -> bool:
    for node in brokers:
        sample = scrape(run.cluster, node)
        state = None if sample is None else sample.raw.get("kafka_server_broker_state")
        if state is None or state <= BrokerState.STARTING:
            return False
    return all(s is not BrokerState.STARTING for s in run.sim.states().values())


def _isrs_full(run: ScaleRun, brokers: list[int], replicas: int) -> bool:
    for node in brokers:
        sample = scrape(run.cluster, node)
        if sample is None or sample.raw.get(
            "kafka_server_replicamanager_partitioncount"
        ) != replicas or sample.raw.get(
            "kafka_server_replicamanager_underreplicatedpartitions"
        ) != 0:
            return False
    return True


def _lifecycle_figures(
    run: ScaleRun, samples: Iterable[NodeSample | None], since: float
) -> None:
    for kind in _KINDS:
        real = [s for s in samples if s is not None]
        label = f'{{request="{kind}"'
        p50 = [s.raw.get(f'pykraft_broker_lifecycle_request_time_ms{label},quantile="0.5"}}')
               for s in real]
        p99 = [s.raw.get(f'pykraft_broker_lifecycle_request_time_ms{label},quantile="0.99"}}')
               for s in real]
        longest = [s.raw.get(f'pykraft_broker_lifecycle_request_time_ms_max{label},'
                             'window="all"}') for s in real]
        unanswered = sum(
            v for s in real for k, v in s.raw.items()
            if k.startswith(f"pykraft_broker_lifecycle_requests_unanswered_total{label}")
        )
        for name, values in (("p50", p50), ("p99", p99), ("max", longest)):
            known = [v for v in values if v is not None and v == v]  # NaN: no request yet
            if known:
                run.figures[f"fullrestart.{kind}.brokers.{name}_ms"] = max(known)
        if real:
            run.figures[f"fullrestart.{kind}.brokers.unanswered"] = unanswered
        simulated = run.sim.lifecycle_samples(kind, since)
        if simulated:
            ordered = sorted(simulated)
            run.figures[f"fullrestart.{kind}.simulated.p50_ms"] = statistics.median(ordered)
            run.figures[f"fullrestart.{kind}.simulated.p99_ms"] = ordered[
                min(len(ordered) - 1, int(0.99 * len(ordered)))]
            run.figures[f"fullrestart.{kind}.simulated.max_ms"] = ordered[-1]
            run.figures[f"fullrestart.{kind}.simulated.count"] = len(ordered)
        if run.sim.ids:
            run.figures[f"fullrestart.{kind}.simulated.unanswered"] = run.sim.unanswered(kind)
