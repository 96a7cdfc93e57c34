"""The full restart of a ``bench.bench_scale`` run: every node stopped in order, then started.

Brokers first (SIGTERM: a controlled shutdown), then the controllers (a leader
hands over), then all of them started at once, controllers first, as the
100,000-partition scale test does. Timed from the start:

* ``fullrestart.claim``: the first "controller active in epoch" line of a
  controller (replayed everything before its epoch and claimed);
* ``fullrestart.registered``: every broker registered (the time of the last
  broker process's "RECOVERY" log line; every simulated broker's lifecycle
  past STARTING);
* ``fullrestart.unfenced``: every broker unfenced (the last "RUNNING" line,
  once the active controller's gauges show them all);
* ``fullrestart.isr_full``: every broker process hosts every replica it should
  and leads no under-replicated partition. Only when every broker is a
  process: a simulated broker fetches nothing, so the partitions it follows
  never fill their ISRs;
* the longest single step of any controller's and any broker's loop in the
  phase (every node is a new process: its all-time maximum is the phase's).

The lifecycle's answer times while this runs (``LifecycleTimes``): each
broker process's own, from its /metrics (it starts with the process, so it
covers the restart), and the simulated brokers', whose loops keep every
sample with its time (the phase's window is taken). p50 and p99 of the
processes are the largest of any one process's (their summaries cannot be
pooled); the simulated brokers' are of all their samples. Requests that got
no answer are counted.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Iterable, Mapping

from bench.scale_phases import ScaleRun, brokers_unfenced, leader_sample, record_slices, wait
from bench.scale_probes import NodeSample, StallWatch, log_times, scrape, scrape_all
from broker.lifecycle import BrokerState
from broker.lifecycle_times import UNANSWERED_REASONS

__all__ = ["full_restart"]

_KINDS = ("BrokerRegistration", "BrokerHeartbeat")
_STOP_TIMEOUT_S = 120.0


def full_restart(run: ScaleRun) -> None:
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

    def reached(state: str) -> float | None:
        """When the last broker process logged ``state`` (None: one has not yet); the
        simulated brokers' states are read at once (no log)."""
        times = [log_times(cluster.layout[n].log_path, f" {state} (broker epoch", log_from[n])
                 for n in brokers]
        if any(not t for t in times):
            return None
        wanted = (BrokerState.RECOVERY, BrokerState.RUNNING) if state == "RECOVERY" else (
            BrokerState.RUNNING,)
        if any(s not in wanted for s in run.sim.states().values()):
            return None
        return max([t[0][0] for t in times], default=time.time())

    run.figures["fullrestart.claim"] = wait(claimed, run.wait_s, "a controller's claim") - begun
    # the simulated brokers heartbeat through the whole restart: what went unanswered while
    # no controller ran is not the controller's to answer, so they count from the claim
    before = {(kind, reason): run.sim.unanswered(kind, reason)
              for kind in _KINDS for reason in UNANSWERED_REASONS}
    registered = wait(lambda: reached("RECOVERY"), run.wait_s, "every broker registered")
    run.figures["fullrestart.registered"] = registered - begun
    wait(lambda: brokers_unfenced(run, run.brokers), run.wait_s, "every broker unfenced")
    run.figures["fullrestart.unfenced"] = (reached("RUNNING") or time.time()) - begun
    if run.sim.ids:
        run.notes.append("full restart: every ISR full not measured: simulated brokers fetch "
                         "nothing, so the partitions they follow never fill their ISRs")
    elif brokers:
        wait(lambda: _isrs_full(run, brokers), run.wait_s, "every ISR full")
        run.figures["fullrestart.isr_full"] = time.time() - begun
    samples = scrape_all(cluster, run.nodes)
    run.stalls["fullrestart"] = watch.end(samples)
    # every node is a new process: its all-time longest step is the phase's
    steps = {n: _longest_step(s) for n, s in samples.items() if s is not None}
    for node, (ms, _) in steps.items():
        run.node_figure("fullrestart.max_step_ms", node, ms)
    for role, nodes in (("controller", controllers), ("broker", brokers)):
        found = [(ms, work, n) for n, (ms, work) in steps.items() if n in nodes]
        if found:
            ms, work, node = max(found)
            run.figures[f"fullrestart.{role}_step_ms"] = ms
            run.notes.append(f"full restart: the longest step of a {role} was {ms:.0f} ms on "
                             f"node {node}" + (f" ({work})" if work else ""))
    record_slices(run, "fullrestart", samples)
    _lifecycle_figures(run, [samples.get(n) for n in brokers], begun, before)
    run.record_rss("fullrestart")


def _isrs_full(run: ScaleRun, brokers: list[int]) -> bool:
    """Every broker hosts its share of every partition's three replicas (every broker a
    process: each hosts RF x partitions / brokers) and leads none under-replicated."""
    leader = leader_sample(run)
    total = None if leader is None else leader.raw.get("kafka_controller_global_partition_count")
    if total is None:
        return False
    replicas = int(total) * 3 // len(brokers)
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
    run: ScaleRun, samples: Iterable[NodeSample | None], since: float,
    simulated_before: Mapping[tuple[str, str], int],
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
        unanswered = {reason: sum(
            s.raw.get(f'pykraft_broker_lifecycle_requests_unanswered_total{label},'
                      f'reason="{reason}"}}', 0.0) for s in real
        ) for reason in UNANSWERED_REASONS}
        for name, values in (("p50", p50), ("p99", p99), ("max", longest)):
            known = [v for v in values if v is not None and v == v]  # NaN: no request yet
            if known:
                run.figures[f"fullrestart.{kind}.brokers.{name}_ms"] = max(known)
        if real:
            for reason, count in unanswered.items():
                run.figures[f"fullrestart.{kind}.brokers.unanswered_{reason}"] = count
        simulated = run.sim.lifecycle_samples(kind, since)
        if simulated:
            ordered = sorted(simulated)
            run.figures[f"fullrestart.{kind}.simulated.p50_ms"] = statistics.median(ordered)
            run.figures[f"fullrestart.{kind}.simulated.p99_ms"] = ordered[
                min(len(ordered) - 1, int(0.99 * len(ordered)))]
            run.figures[f"fullrestart.{kind}.simulated.max_ms"] = ordered[-1]
            run.figures[f"fullrestart.{kind}.simulated.count"] = len(ordered)
        if run.sim.ids:
            for reason in UNANSWERED_REASONS:
                run.figures[f"fullrestart.{kind}.simulated.unanswered_{reason}"] = (
                    run.sim.unanswered(kind, reason) - simulated_before[kind, reason])


def _longest_step(sample: NodeSample) -> tuple[float, str]:
    """A node's longest step since it started, and the work it names."""
    prefix = 'pykraft_event_loop_max_step_ms{window="all"'
    for key, value in sample.raw.items():
        if key.startswith(prefix):
            found = re.search(r'work="([^"]*)"', key)
            return value, "" if found is None else found.group(1)
    return 0.0, ""
