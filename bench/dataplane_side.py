"""One side of the data-plane bench: a fresh cluster measured from its launch to its failovers.

``measure_cluster`` does, for pykraft's ``deploy.LocalCluster`` and Kafka's
``KafkaCluster`` alike: format, launch while the start probe produces (cluster start ->
first acknowledged produce), the bench topic made and led, the phases
(``bench.dataplane_run.run_phases``), every server's memory, then ``kills`` kill -9
failovers of a partition leader (``bench.dataplane_probes``). A probe that fails is said
and its figure left out; the phases' failures raise, as they always did.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import attrs

from bench.dataplane_figures import DataPlaneRun
from bench.dataplane_lineup import DataPlaneWorkload
from bench.dataplane_probes import (
    ProbedCluster,
    ProbeFailed,
    leader_failover,
    node_memory,
    start_to_first_produce,
)
from bench.dataplane_run import (
    TOPIC,
    PhaseRunner,
    create_topic,
    run_phases,
    server_pids,
    wait_for_leaders,
)
from deploy.kafka import KafkaDistribution

__all__ = ["SideOptions", "measure_cluster"]


@attrs.frozen(kw_only=True)
class SideOptions:
    """What both sides run, from the command line."""

    idempotence_pair: bool = False
    # the Java client's idempotence pair (kafka-producer-perf-test)
    java: KafkaDistribution | None = None
    # Kafka's perf tools as a second load, and the producer perf test's records
    perf_tools: KafkaDistribution | None = None
    perf_records: int = 500_000
    # kill -9 failovers of a partition leader at the end of the run
    kills: int = 3
    profile_dir: Path | None = None


class _Cluster(ProbedCluster, Protocol):
    """What ``measure_cluster`` uses beyond the probes (both launchers have it)."""

    @property
    def broker_ids(self) -> list[int]: ...
    def address(self, node_id: int) -> tuple[str, int]: ...
    def pid(self, node_id: int) -> int: ...


class _Closable(Protocol):
    def close(self) -> None: ...


def measured_then_removed(cluster: _Closable, base: Path, measure: Callable[[], DataPlaneRun],
                          what: str) -> DataPlaneRun:
    """``measure()``, then the cluster closed and ``base`` removed; kept (and named on
    stderr) when the measurement failed, for its logs."""
    done = False
    try:
        run = measure()
        done = True
    finally:
        cluster.close()
        if done:
            shutil.rmtree(base, ignore_errors=True)
        else:
            print(f"{what}'s data and logs are kept in {base}", file=sys.stderr)
    return run


def measure_cluster(cluster: _Cluster, controllers: Callable[[], Sequence[int]],
                    workload: DataPlaneWorkload, base: Path, options: SideOptions, *,
                    jvm: bool, say: Callable[[str], None]) -> DataPlaneRun:
    """The whole pass over one fresh, unprepared cluster; it is left running (the
    caller's ``with`` or ``close`` ends it)."""
    cluster.prepare()
    bootstrap = ",".join(f"{h}:{p}" for h, p in map(cluster.address, cluster.broker_ids))
    start_s: float | None = None
    try:
        start_s = start_to_first_produce(cluster, bootstrap)
    except ProbeFailed as exc:  # the figure is lost, not the run
        say(f"the start probe failed: {exc!r}")
    pids = server_pids(controllers(), cluster.broker_ids, cluster.pid)
    profiled = cluster.broker_ids[0]
    runner = PhaseRunner(bootstrap, pids, workload, base, profile_dir=options.profile_dir,
                         profile_pid=cluster.pid(profiled), profile_name=f"broker-{profiled}")
    create_topic(bootstrap, TOPIC, workload)
    wait_for_leaders(bootstrap, workload.partitions)
    run = run_phases(runner, idempotence_pair=options.idempotence_pair, java=options.java,
                     perf_tools=options.perf_tools, perf_records=options.perf_records)
    memory = {name: node_memory(pid, jvm=jvm) for name, pid in pids.items()}
    failovers: list[float] = []
    for kill in range(options.kills):
        try:
            failovers.append(leader_failover(cluster, bootstrap,
                                             restart=kill < options.kills - 1))
        except Exception as exc:  # the cluster may be short of a broker: no more kills
            say(f"the leader failover probe failed (kill {kill + 1}): {exc!r}")
            break
    return attrs.evolve(run, memory=memory, failover_ms=tuple(1000.0 * s for s in failovers),
                        start_to_produce_ms=None if start_s is None else 1000.0 * start_s)
