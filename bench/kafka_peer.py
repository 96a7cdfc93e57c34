"""The Apache Kafka peer of the data-plane bench: the same phases against a real Kafka cluster.

``run_kafka_peer`` is called by ``bench.bench_data_plane`` after pykraft's cluster of
the same run has stopped (the two never run at once): a fresh
``deploy.kafka_cluster.KafkaCluster`` of 3 controllers and 3 brokers, Kafka's defaults
and its start script's JVM settings (``-Xmx1G -Xms1G``, G1), the same topic (the
bench's partitions, RF 3, ``min.insync.replicas=2`` as a topic config, as for
pykraft's), then exactly pykraft's pass (``bench.dataplane_side.measure_cluster``): the
start probe, the phases with the same confluent-kafka load processes
(``bench.dataplane_load`` speaks to any Kafka), Kafka's perf tools, the JVMs' RSS and
heap in use after a full GC, the leader kills. Its figures are a ``DataPlaneRun`` that
pykraft's run carries as ``kafka``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Final

from bench.dataplane_figures import DataPlaneRun
from bench.dataplane_lineup import DataPlaneWorkload
from bench.dataplane_side import SideOptions, measure_cluster, measured_then_removed
from deploy.kafka import KafkaClusterSpec, KafkaDistribution, pinned_version
from deploy.kafka_cluster import KafkaCluster

__all__ = ["kafka_settings", "run_kafka_peer"]

# six JVMs start on 2 cores in 15-40 s; with the load of a bench beside them, more
_READY_TIMEOUT_S: Final = 180.0


def run_kafka_peer(workload: DataPlaneWorkload, distribution: KafkaDistribution,
                   options: SideOptions, *, base_dir: Path | None,
                   say: Callable[[str], None]) -> DataPlaneRun:
    """One run of the Kafka side; its directory is kept (and named) when it fails."""
    base = Path(tempfile.mkdtemp(prefix="data-plane-kafka-", dir=base_dir))
    spec = KafkaClusterSpec(controllers=3, brokers=3, ready_timeout_s=_READY_TIMEOUT_S)
    cluster = KafkaCluster(base / "cluster", spec, distribution=distribution)
    # the profile is pykraft's (py-spy samples Python); Kafka's side runs without it
    return measured_then_removed(
        cluster, base,
        lambda: measure_cluster(cluster, lambda: cluster.controller_ids, workload, base,
                                _without_profile(options), jvm=True, say=say),
        "the Kafka cluster")


def _without_profile(options: SideOptions) -> SideOptions:
    return SideOptions(idempotence_pair=options.idempotence_pair, java=options.java,
                       perf_tools=options.perf_tools, perf_records=options.perf_records,
                       kills=options.kills)


def kafka_settings() -> str:
    """The report's line on the peer."""
    return (f"Apache Kafka {pinned_version()} (deploy.kafka_cluster.KafkaCluster): 3 "
            "controllers + 3 brokers on loopback, Kafka's defaults, kafka-server-start.sh's "
            "JVM settings (-Xmx1G -Xms1G, G1, MaxGCPauseMillis=20); the same topic and load, "
            "after pykraft's cluster of the same run stopped")
