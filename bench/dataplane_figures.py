"""What one run of the data-plane bench measured, and the arithmetic over runs.

``DataPlaneRun.headline()`` names each figure (``produce_mb_per_s_acks_all``,
``e2e_p50_ms_acks_1``, ``consume_mb_per_s`` ...); ``median_figures`` takes each
figure's median over runs on its own; ``ratios`` divides pykraft's medians by the
NATS peer's from the same runs; ``goal_gaps`` says how far each figure is from
its goal. Pure, so that the unit tests check the arithmetic without a cluster.
Kafka's perf tools, the failure probes (``start_to_produce_ms``, ``leader_failover_ms``)
and each server's memory are in a run too; ``DataPlaneRun.kafka`` holds the Apache
Kafka peer's run of the same phases (``bench.peer_figures`` compares the two).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Final

import attrs

from bench.nats_figures import LatencyFigures, NatsFigures, ThroughputFigures, median_headline

__all__ = [
    "GOALS",
    "IDEMPOTENCE_CPU_RATIO",
    "IDEMPOTENCE_RATIO",
    "JAVA_IDEMPOTENCE_CPU_RATIO",
    "JAVA_IDEMPOTENCE_RATIO",
    "PERF_TOOLS",
    "DataPlaneRun",
    "Goal",
    "NodeMemory",
    "RssFigures",
    "broker_cpu_ms_per_mb",
    "goal_gaps",
    "idempotence_key",
    "median_figures",
    "nats_counterpart",
    "ratios",
]


# Kafka's perf tools as a second load: phase name -> headline key
PERF_TOOLS: Final = {"producer perf test": "perf_producer_mb_per_s",
                     "consumer perf test": "perf_consumer_mb_per_s"}


@attrs.frozen(kw_only=True)
class NodeMemory:
    """One server process at the end of a run: its resident set and, for a JVM, the heap
    in use after a full GC (None for pykraft's Python processes)."""

    rss_bytes: int
    heap_used_bytes: int | None = None


@attrs.frozen(kw_only=True)
class DataPlaneRun:
    # acks ("all", "1", "0") -> figures
    produce: Mapping[str, ThroughputFigures]
    latency: Mapping[str, LatencyFigures]
    consume: ThroughputFigures
    nats: NatsFigures | None = None
    # --idempotence-pair: the name in dataplane_lineup.IDEMPOTENCE_PAIR -> figures of a
    # produce phase at acks=all; empty without the option
    idempotence: Mapping[str, ThroughputFigures] = attrs.field(factory=dict)
    # --idempotence-pair with the Java client's perf test as the load: "on", "off"
    java_idempotence: Mapping[str, ThroughputFigures] = attrs.field(factory=dict)
    # Kafka's perf tools against this cluster (a name in PERF_TOOLS -> figures); empty
    # when the jars could not be had
    perf_tools: Mapping[str, ThroughputFigures] = attrs.field(factory=dict)
    # "broker-4", "controller-1" ... -> the process's memory at the end of the run
    memory: Mapping[str, NodeMemory] = attrs.field(factory=dict)
    # kill -9 of a partition leader -> the next acknowledged produce at acks=all, ms, one
    # per kill; and processes launched -> first acknowledged produce, ms (a fresh cluster)
    failover_ms: tuple[float, ...] = ()
    start_to_produce_ms: float | None = None
    # the Kafka peer's run of the same phases (its own ``kafka`` is None), after this one
    kafka: DataPlaneRun | None = None

    def headline(self) -> dict[str, float]:
        figures = {f"produce_mb_per_s_acks_{a}": f.mb_per_s for a, f in self.produce.items()}
        for name, found in self.idempotence.items():
            figures[idempotence_key(name)] = found.mb_per_s
        for name, found in self.java_idempotence.items():
            figures[idempotence_key(name, java=True)] = found.mb_per_s
        # within the run: the two phases of a pair ran against the same cluster, in turn
        figures.update(_pair_ratios(self.idempotence, IDEMPOTENCE_RATIO, IDEMPOTENCE_CPU_RATIO))
        figures.update(_pair_ratios(self.java_idempotence, JAVA_IDEMPOTENCE_RATIO,
                                    JAVA_IDEMPOTENCE_CPU_RATIO))
        for acks, lat in self.latency.items():
            figures[f"ack_p50_ms_acks_{acks}"] = lat.ack_p50_ms
            figures[f"ack_p99_ms_acks_{acks}"] = lat.ack_p99_ms
            figures[f"e2e_p50_ms_acks_{acks}"] = lat.delivery_p50_ms
            figures[f"e2e_p99_ms_acks_{acks}"] = lat.delivery_p99_ms
        figures["consume_mb_per_s"] = self.consume.mb_per_s
        for name, key in PERF_TOOLS.items():
            if name in self.perf_tools:
                figures[key] = self.perf_tools[name].mb_per_s
        if self.start_to_produce_ms is not None:
            figures["start_to_produce_ms"] = self.start_to_produce_ms
        if self.failover_ms:
            figures["leader_failover_ms"] = statistics.median(self.failover_ms)
        return figures


IDEMPOTENCE_RATIO: Final = "idempotence_on_over_off"
IDEMPOTENCE_CPU_RATIO: Final = "broker_cpu_per_mb_idempotence_on_over_off"
JAVA_IDEMPOTENCE_RATIO: Final = "java_idempotence_on_over_off"
JAVA_IDEMPOTENCE_CPU_RATIO: Final = "broker_cpu_per_mb_java_idempotence_on_over_off"


def idempotence_key(name: str, *, java: bool = False) -> str:
    """The headline key of an idempotence pair's phase: ``produce_mb_per_s_idempotence_on``,
    ``..._off``, ``..._off_max_in_flight_5``; ``produce_mb_per_s_java_idempotence_on`` ..."""
    slug = "".join(c if c.isalnum() else "_" for c in name.replace(", ", "_"))
    return f"produce_mb_per_s_{'java_' if java else ''}idempotence_{slug}"


def broker_cpu_ms_per_mb(figures: ThroughputFigures) -> float:
    """The brokers' CPU milliseconds per MB produced in a phase (every ``broker-*``
    process's share of a core over the phase's seconds, divided by the MB)."""
    shares = sum(v for k, v in figures.cpu_percent.items() if k.startswith("broker"))
    return 1000.0 * shares / 100.0 / max(figures.mb_per_s, 1e-9)


def _pair_ratios(pair: Mapping[str, ThroughputFigures], rate_key: str, cpu_key: str
                 ) -> dict[str, float]:
    on, off = pair.get("on"), pair.get("off")
    if on is None or off is None or off.mb_per_s <= 0 or on.mb_per_s <= 0:
        return {}
    found = {rate_key: on.mb_per_s / off.mb_per_s}
    if broker_cpu_ms_per_mb(off) > 0:
        found[cpu_key] = broker_cpu_ms_per_mb(on) / broker_cpu_ms_per_mb(off)
    return found


def median_figures(runs: Sequence[DataPlaneRun]) -> dict[str, float]:
    """Each headline figure's median over ``runs``, taken figure by figure."""
    if not runs:
        raise ValueError("no runs to take the median of")
    heads = [run.headline() for run in runs]
    # a figure one run could not measure (a failed probe) is the median of the others'
    keys = dict.fromkeys(key for head in heads for key in head)
    return {key: statistics.median(head[key] for head in heads if key in head) for key in keys}


def nats_counterpart(key: str, nats: Mapping[str, float]) -> float | None:
    """The NATS peer's figure a pykraft figure is compared with, or None.

    Publish: the peer's best window (JetStream has one kind of ack, the counterpart
    of acks=all; acks=1 and 0 are compared with it too, as what a user of either
    system gets). Latency: publish -> ack for the delivery report, publish ->
    delivery for end to end. Consume: consume."""
    if "idempotence" in key or key.startswith("perf_") or key in _KAFKA_ONLY:
        return None  # the pair is compared with itself (IDEMPOTENCE_RATIO), not with NATS
    if key.startswith("produce_mb_per_s"):
        publish = [v for k, v in nats.items() if k.startswith("publish_mb_per_s")]
        return max(publish) if publish else None
    for prefix in ("ack_p50_ms", "ack_p99_ms"):
        if key.startswith(prefix):
            return nats.get(prefix)
    if key.startswith("e2e_p50_ms"):
        return nats.get("delivery_p50_ms")
    if key.startswith("e2e_p99_ms"):
        return nats.get("delivery_p99_ms")
    return nats.get(key)


# figures the NATS peer does not measure: compared with the Kafka peer alone
_KAFKA_ONLY: Final = ("start_to_produce_ms", "leader_failover_ms")


def ratios(runs: Sequence[DataPlaneRun]) -> dict[str, float]:
    """pykraft's median / the NATS peer's median, for every figure with a counterpart,
    over the runs that ran the peer."""
    paired = [run for run in runs if run.nats is not None]
    if not paired:
        return {}
    ours = median_figures(paired)
    theirs = median_headline([run.nats for run in paired if run.nats is not None])
    found = {}
    for key, value in ours.items():
        peer = nats_counterpart(key, theirs)
        if peer:
            found[key] = value / peer
    return found


@attrs.frozen
class Goal:
    key: str
    target: float
    # True: the figure must be at least the target (throughput); False: at most (latency)
    at_least: bool
    label: str


GOALS: Final = (
    Goal("produce_mb_per_s_acks_all", 45.0, True, "acks=all >= 45 MB/s"),
    Goal("e2e_p50_ms_acks_all", 2.0, False, "acks=all p50 <= 2 ms"),
    Goal("consume_mb_per_s", 250.0, True, "consume >= 250 MB/s"),
    # issue 19, measured with --idempotence-pair: the Java client's pipelined idempotent
    # producer (librdkafka's keeps one request in flight per partition: its ratio is
    # reported, and what idempotence costs the brokers is their CPU per MB)
    Goal(JAVA_IDEMPOTENCE_RATIO, 0.9, True, "Java client: idempotence on >= 0.9x off (issue 19)"),
    Goal(IDEMPOTENCE_CPU_RATIO, 1.1, False,
         "brokers' CPU per MB, idempotence on <= 1.1x off, librdkafka (issue 19)"),
    Goal(JAVA_IDEMPOTENCE_CPU_RATIO, 1.1, False,
         "brokers' CPU per MB, idempotence on <= 1.1x off, Java client (issue 19)"),
)
RATIO_GOALS: Final = (
    Goal("produce_mb_per_s_acks_all", 2.5, True, "acks=all >= 2.5x NATS"),
    Goal("consume_mb_per_s", 1.0, True, "consume ahead of NATS"),
)


def goal_gaps(medians: Mapping[str, float], ratio: Mapping[str, float]
              ) -> list[tuple[Goal, float, float]]:
    """(goal, measured, measured / target) for every goal whose figure was measured;
    a factor of at least 1 means met for an at-least goal, at most 1 for an at-most one."""
    gaps = []
    for goals, figures in ((GOALS, medians), (RATIO_GOALS, ratio)):
        for goal in goals:
            if goal.key in figures:
                gaps.append((goal, figures[goal.key], figures[goal.key] / goal.target))
    return gaps


def goal_met(goal: Goal, factor: float) -> bool:
    return factor >= 1.0 if goal.at_least else factor <= 1.0


@attrs.frozen(kw_only=True)
class RssFigures:
    """Each broker's resident set before and after ``partitions`` idle replicas appeared."""

    partitions: int
    replication_factor: int
    # broker node id -> bytes
    before: Mapping[int, int]
    after: Mapping[int, int]
    # broker node id -> replicas it hosts
    hosted: Mapping[int, int]
    seconds_to_create: float
    seconds_until_hosted: float
    # broker node id -> CPU it used while idle, as a share of one core (a window after
    # every replica is hosted: followers' fetch sessions, ISR checks, retention, timers)
    idle_cpu: Mapping[int, float] = attrs.field(factory=dict)
    # broker node id -> bytes once that idle window is over (the fetch sessions filled,
    # the first ISR checks run): the steady cost of idle replicas
    settled: Mapping[int, int] = attrs.field(factory=dict)

    def per_replica_bytes(self) -> dict[int, float]:
        return {node: (self.after[node] - self.before[node]) / max(self.hosted[node], 1)
                for node in self.before}

    def settled_per_replica_bytes(self) -> dict[int, float]:
        return {node: (self.settled[node] - self.before[node]) / max(self.hosted[node], 1)
                for node in self.settled}
