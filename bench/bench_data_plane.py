"""The data plane under load: produce, end-to-end latency and consume, beside NATS JetStream R3.

Run ``python -m bench.bench_data_plane [--runs 3] [--seconds 10] [--no-nats]
[--idempotence-pair] [--profile DIR] [--out FILE]``, or ``--rss-partitions 100000``
for the memory of idle partition replicas instead.

Each run: a fresh cluster of 3 controllers and 3 brokers (real processes on
loopback, ``deploy.LocalCluster``) with Kafka's default settings, not the
test profile (a benchmark should see what a user gets); one topic of
``--partitions`` partitions, RF 3, ``min.insync.replicas=2``; 1 KB records.
Load from confluent-kafka (librdkafka) processes (``bench.dataplane_load``),
lined up by ``bench.nats_phases.run_phase`` as the NATS peer's are:

1. produce at acks=all, 1 and 0: ``--producers`` processes, each as fast as
   librdkafka accepts records, for ``--seconds``; MB/s of acknowledged
   payload (for acks=0, of records handed to the socket);
2. latency at acks=all, 1 and 0: one process, linger.ms=0, one record at a
   time to partition 0: the time to its delivery report, and end to end, to
   its arrival at a consumer polling in the same process;
   With ``--idempotence-pair``, then acks=all three more times: librdkafka's idempotent
   producer (enable.idempotence=true, which caps max.in.flight at 5), the same without
   idempotence, and without it at max.in.flight=5 (what the broker's sequence checks
   cost, told from what the client's cap costs); their ratio on / off per run, and the
   brokers' CPU per MB on / off. librdkafka's idempotent producer keeps one request in
   flight per partition (its non-idempotent one pipelines), so the Java client's
   ``kafka-producer-perf-test`` of the pinned Kafka runs the pair too (on, off; skipped
   with ``--no-java`` or when the jars cannot be resolved): its ratio is the goal's;
3. consume: the whole topic (everything the phases above wrote) by
   ``--consumers`` processes, partitions dealt out evenly; MB/s of payload.

Then, in the same run, the NATS peer (``bench.nats_peer.run_nats_peer``) with the
same record size and publish time, after the pykraft cluster has stopped.
Reported: median [min-max] over runs, pykraft / NATS, the goals, and the CPU of
every process per phase. ``--profile DIR`` samples one broker with py-spy
during produce acks=all and consume (a separate run, not counted in the
figures: the sampler takes CPU from the same two cores).

MB is 10^6 bytes of record value (keys are empty; headers and framing not
counted).
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Final

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from bench.dataplane_figures import DataPlaneRun, RssFigures
from bench.dataplane_lineup import (
    ACK_LEVELS,
    IDEMPOTENCE_PAIR,
    JAVA_IDEMPOTENCE_PAIR,
    DataPlaneWorkload,
    consume_phase,
    java_producer_props,
    java_records,
    latency_phase,
    phase_log_dir,
    produce_phase,
)
from bench.dataplane_report import idempotence_label, report, rss_report
from bench.java_producer_load import run_java_produce
from bench.nats_figures import LatencyFigures, NatsFigures, ThroughputFigures
from bench.nats_lineup import NatsWorkload, PhasePlan, PhaseResult
from bench.nats_peer import run_nats_peer
from bench.nats_phases import cpu_seconds, latency_figures, run_phase, throughput_figures
from bench.profile_summary import summarize
from bench.scale_phases import create_one_topic
from bench.scale_probes import rss_bytes
from broker.client import BlockingAdmin
from deploy import ClusterSpec, LocalCluster
from deploy.kafka import KafkaDistribution, resolve_kafka

__all__ = ["main"]

TOPIC: Final = "bench"
_LOAD: Final = "bench.dataplane_load"
_TIMEOUT_S: Final = 60.0
IDLE_CPU_WINDOW_S: Final = 20.0
# the phases sampled by --profile: throughput (the issue asks) and one record at a time
_PROFILED: Final = ("produce acks=all", "latency acks=all", "consume")


class _Run:
    """One cluster and its topic: each phase run against them."""

    def __init__(self, cluster: LocalCluster, workload: DataPlaneWorkload, base: Path,
                 profile_dir: Path | None) -> None:
        self.cluster = cluster
        self.workload = workload
        self.base = base
        self.profile_dir = profile_dir
        self.bootstrap = ",".join(f"{h}:{p}" for h, p in map(cluster.address, cluster.broker_ids))
        self.pids = {
            (f"broker-{n}" if n in cluster.broker_ids else f"controller-{n}"): cluster.pid(n)
            for n in [*cluster.node_ids, *cluster.broker_ids]}

    def phase(self, plan: PhasePlan, label: str) -> PhaseResult:
        profiler: list[subprocess.Popen[bytes]] = []
        on_go = None
        if self.profile_dir is not None and label in _PROFILED:
            on_go = lambda: profiler.append(self._sample(label))  # noqa: E731
        try:
            return run_phase(plan, server_pids=self.pids, log_dir=phase_log_dir(self.base, label),
                             module=_LOAD, on_go=on_go)
        finally:
            for sampler in profiler:
                _stop_sampler(sampler)

    def _sample(self, label: str) -> subprocess.Popen[bytes]:
        """py-spy on the first broker until the phase ends (SIGINT makes it write)."""
        assert self.profile_dir is not None
        broker = self.cluster.broker_ids[0]
        out = self.profile_dir / f"{label.replace(' ', '-').replace('=', '')}-broker-{broker}.txt"
        return subprocess.Popen(
            [str(Path(sys.executable).parent / "py-spy"), "record", "--pid",
             str(self.cluster.pid(broker)), "--format", "raw", "--nonblocking",
             "--rate", "200", "--output", str(out)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def produce(self, acks: str) -> ThroughputFigures:
        result = self.phase(produce_phase(self.workload, acks, self.bootstrap, TOPIC),
                            f"produce acks={acks}")
        return throughput_figures(result)

    def produce_idempotence(self, name: str) -> ThroughputFigures:
        """One phase of the idempotence pair: acks=all, idempotence on or off."""
        idempotence, max_in_flight = IDEMPOTENCE_PAIR[name]
        plan = produce_phase(self.workload, "all", self.bootstrap, TOPIC,
                             idempotence=idempotence, max_in_flight=max_in_flight)
        return throughput_figures(self.phase(plan, idempotence_label(name)))

    def produce_idempotence_java(self, name: str, distribution: KafkaDistribution,
                                 records: int) -> ThroughputFigures:
        """One phase of the Java client's pair: kafka-producer-perf-test at acks=all with
        the librdkafka phases' batching, idempotence on or off."""
        idempotence, _max_in_flight = IDEMPOTENCE_PAIR[name]
        label = idempotence_label(name, java=True)
        result = run_java_produce(
            distribution, self.bootstrap, TOPIC, records=records,
            record_bytes=self.workload.record_bytes,
            producer_props=java_producer_props(self.workload, idempotence),
            server_pids=self.pids, log_dir=phase_log_dir(self.base, label))
        return throughput_figures(result)

    def latency(self, acks: str) -> LatencyFigures:
        result = self.phase(latency_phase(self.workload, acks, self.bootstrap, TOPIC),
                            f"latency acks={acks}")
        return latency_figures(result)

    def consume(self) -> ThroughputFigures:
        ends = end_offsets(self.bootstrap, self.workload.partitions)
        result = self.phase(consume_phase(self.workload, ends, self.bootstrap, TOPIC), "consume")
        if result.messages != sum(ends.values()):
            raise RuntimeError(f"consumed {result.messages} of {sum(ends.values())} records")
        return throughput_figures(result)


def _stop_sampler(sampler: subprocess.Popen[bytes]) -> None:
    if sampler.poll() is None:
        sampler.send_signal(signal.SIGINT)
    try:
        sampler.wait(timeout=30)
    except subprocess.TimeoutExpired:
        sampler.kill()
        sampler.wait()


def end_offsets(bootstrap: str, partitions: int) -> dict[int, int]:
    """Each partition's high watermark (the log start is 0: nothing is deleted)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-offsets"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p),
                                                  timeout=_TIMEOUT_S)[1]
                for p in range(partitions)}
    finally:
        consumer.close()


def create_topic(bootstrap: str, name: str, workload: DataPlaneWorkload,
                 partitions: int | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic(name, partitions or workload.partitions, workload.replication_factor,
                     config={"min.insync.replicas": str(workload.min_insync_replicas)})
    (future,) = admin.create_topics([topic], request_timeout=_TIMEOUT_S).values()
    future.result(_TIMEOUT_S)


def wait_for_leaders(bootstrap: str, partitions: int) -> None:
    """Every partition has a leader and a full ISR in some broker's metadata."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + _TIMEOUT_S
    while time.monotonic() < deadline:
        topic = admin.list_topics(TOPIC, timeout=10).topics.get(TOPIC)
        if topic is not None and topic.error is None and len(topic.partitions) == partitions \
                and all(p.leader >= 0 and len(p.isrs) == 3 for p in topic.partitions.values()):
            return
        time.sleep(0.1)
    raise RuntimeError(f"the partitions of {TOPIC} have no leaders after {_TIMEOUT_S} s")


def _cluster_spec(properties: dict[str, str]) -> ClusterSpec:
    # Kafka's defaults, not the test profile: a user's cluster
    return ClusterSpec(controllers=3, brokers=3, test_profile=False, properties=properties,
                       ready_timeout_s=_TIMEOUT_S)


def one_run(workload: DataPlaneWorkload, nats: NatsWorkload | None, *, base_dir: Path | None,
            profile_dir: Path | None, properties: dict[str, str],
            idempotence_pair: bool = False, java: KafkaDistribution | None = None
            ) -> DataPlaneRun:
    base = Path(tempfile.mkdtemp(prefix="data-plane-", dir=base_dir))
    done = False
    try:
        with LocalCluster(base / "cluster", _cluster_spec(properties)) as cluster:
            run = _Run(cluster, workload, base, profile_dir)
            create_topic(run.bootstrap, TOPIC, workload)
            wait_for_leaders(run.bootstrap, workload.partitions)
            produce = {acks: run.produce(acks) for acks in ACK_LEVELS}
            # right after the produce phases, on the same cluster and topic
            idempotence = ({name: run.produce_idempotence(name) for name in IDEMPOTENCE_PAIR}
                           if idempotence_pair else {})
            java_idempotence = {}
            if idempotence_pair and java is not None:
                records = java_records(idempotence["off"], workload)
                java_idempotence = {name: run.produce_idempotence_java(name, java, records)
                                    for name in JAVA_IDEMPOTENCE_PAIR}
            latency = {acks: run.latency(acks) for acks in ACK_LEVELS}
            consume = run.consume()
        done = True
    finally:
        if done:
            shutil.rmtree(base, ignore_errors=True)
        else:
            print(f"the cluster's data and logs are kept in {base}", file=sys.stderr)
    return DataPlaneRun(produce=produce, latency=latency, consume=consume,
                        nats=_nats_or_none(nats), idempotence=idempotence,
                        java_idempotence=java_idempotence)


def _java_or_none(say: Callable[[str], None]) -> KafkaDistribution | None:
    """The pinned Kafka's jars for the Java client's pair, or None (said) when they cannot
    be had: the librdkafka pair's figures must not be lost to a missing JDK."""
    try:
        return resolve_kafka()
    except Exception as exc:  # no java, no mvn, no network: reported, then skipped
        say(f"no Java client pair: Kafka's jars could not be resolved: {exc}")
        return None


def _nats_or_none(nats: NatsWorkload | None) -> NatsFigures | None:
    """The peer's figures, or None (said on stderr) when the peer's run failed: a
    failure of the peer must not throw away pykraft's figures of the same run."""
    if nats is None:
        return None
    try:
        return run_nats_peer(nats)
    except Exception as exc:  # any failure of the peer: reported, then skipped
        print(f"the NATS peer failed in this run, no ratio from it: {exc!r}", file=sys.stderr)
        return None


# -- idle partition replicas ------------------------------------------------------------------


def _hosted(cluster: LocalCluster, node: int, topic: str) -> int:
    """Replicas of ``topic`` the broker hosts, as it reports them (DescribeLogDirs): a new
    partition has no directory until its first record, so the files cannot tell."""
    host, port = cluster.address(node)
    admin = BlockingAdmin({"bootstrap.servers": f"{host}:{port}", "request.timeout.ms": "60000"})
    try:
        described = admin.describe_log_dirs([node])
    finally:
        admin.close()
    return sum(
        1 for by_path in described.get(node, {}).values() for name, _ in by_path.replicas
        if name == topic
    )


def rss_run(partitions: int, *, base_dir: Path | None, properties: dict[str, str],
            wait_s: float, say: Callable[[str], None]) -> RssFigures:
    """``partitions`` at RF 3 on 3 brokers, nothing produced: RSS before and after."""
    base = Path(tempfile.mkdtemp(prefix="data-plane-rss-", dir=base_dir))
    try:
        with LocalCluster(base / "cluster", _cluster_spec(properties)) as cluster:
            brokers = cluster.broker_ids
            time.sleep(2.0)  # let the brokers' start-up garbage settle before the baseline
            before = {n: rss_bytes(cluster.pid(n))[0] for n in brokers}
            began = time.monotonic()
            # the controller channel the scale bench uses: one request, answered after the
            # commit, however long 100,000 partitions take (librdkafka's admin times out)
            create_one_topic(cluster, "idle", partitions, wait_s)
            created = time.monotonic() - began
            say(f"created {partitions} partitions in {created:.1f} s")
            deadline = began + wait_s
            hosted = {n: 0 for n in brokers}
            while time.monotonic() < deadline:
                hosted = {n: _hosted(cluster, n, "idle") for n in brokers}
                if all(count >= partitions for count in hosted.values()):
                    break
                time.sleep(2.0)
            else:
                raise RuntimeError(f"brokers host {hosted} replicas after {wait_s} s")
            until_hosted = time.monotonic() - began
            time.sleep(5.0)  # the last replicas' first checkpoints
            after = {n: rss_bytes(cluster.pid(n))[0] for n in brokers}
            # what 100,000 idle replicas cost each broker per second, with nothing produced
            cpu_before = {n: cpu_seconds(cluster.pid(n)) for n in brokers}
            window_began = time.monotonic()
            time.sleep(IDLE_CPU_WINDOW_S)
            window = time.monotonic() - window_began
            idle_cpu = {n: (cpu_seconds(cluster.pid(n)) - cpu_before[n]) / window
                        for n in brokers}
            settled = {n: rss_bytes(cluster.pid(n))[0] for n in brokers}
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return RssFigures(partitions=partitions, replication_factor=3, before=before, after=after,
                      hosted=hosted, seconds_to_create=created,
                      seconds_until_hosted=until_hosted, idle_cpu=idle_cpu, settled=settled)


# -- the command ------------------------------------------------------------------------------


def _properties(pairs: Sequence[str]) -> dict[str, str]:
    found = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--property takes KEY=VALUE, not {pair!r}")
        found[key] = value
    return found


def _write_profiles(profile_dir: Path, out: Callable[[str], None]) -> None:
    for path in sorted(profile_dir.glob("*.txt")):
        with path.open() as lines:
            profile = summarize(lines)
        out(f"\n{path.stem}: {profile.samples} samples, top functions by self time\n")
        for line in profile.lines():
            out(line)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0, help="each produce phase")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--producers", type=int, default=2)
    parser.add_argument("--consumers", type=int, default=2)
    parser.add_argument("--latency", type=int, default=2000, help="samples per ack level")
    parser.add_argument("--no-nats", action="store_true", help="skip the NATS peer")
    parser.add_argument("--idempotence-pair", action="store_true",
                        help="after the produce phases, acks=all with idempotence on, off, "
                             "and off at max.in.flight=5 (issue 19)")
    parser.add_argument("--no-java", action="store_true",
                        help="with --idempotence-pair: skip the Java client's pair")
    parser.add_argument("--profile", default=None, metavar="DIR",
                        help="one extra run with py-spy on a broker; summaries in DIR")
    parser.add_argument("--rss-partitions", type=int, default=0,
                        help="measure broker RSS with this many idle partitions instead")
    parser.add_argument("--rss-wait", type=float, default=1800.0)
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting for every node")
    parser.add_argument("--dir", default=None, help="where the nodes keep their data")
    parser.add_argument("--out", default=None, help="also write the report to this file")
    args = parser.parse_args(argv)
    base_dir = Path(args.dir) if args.dir else None
    properties = _properties(args.property)
    lines: list[str] = []

    def out(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    command = f"$ python -m bench.bench_data_plane {shlex.join(sys.argv[1:] if argv is None else argv)}"
    if args.rss_partitions:
        figures = rss_run(args.rss_partitions, base_dir=base_dir, properties=properties,
                          wait_s=args.rss_wait, say=say)
        out(command + f"  ({date.today()})\n")
        rss_report(figures, out)
    else:
        workload = DataPlaneWorkload(
            partitions=args.partitions, produce_processes=args.producers,
            produce_seconds=args.seconds, latency_messages=args.latency,
            consume_processes=args.consumers)
        nats = None if args.no_nats else NatsWorkload(
            message_bytes=workload.record_bytes, publish_seconds=args.seconds,
            latency_messages=args.latency, base_dir=base_dir)
        profile_dir = Path(args.profile) if args.profile else None
        java = _java_or_none(say) if args.idempotence_pair and not args.no_java else None
        runs = []
        for i in range(args.runs):
            runs.append(one_run(workload, nats, base_dir=base_dir, profile_dir=None,
                                properties=properties, idempotence_pair=args.idempotence_pair,
                                java=java))
            say(f"run {i + 1}/{args.runs} done")
        header = (f"{command}  ({date.today()})\n\n3 controllers + 3 brokers on loopback, "
                  f"Kafka's default settings; topic of {workload.partitions} partitions, RF "
                  f"{workload.replication_factor}, min.insync.replicas "
                  f"{workload.min_insync_replicas}; {workload.record_bytes:,}-byte records; "
                  f"load: confluent-kafka processes ({workload.produce_processes} producers, "
                  f"{workload.consume_processes} consumers); {len(runs)} run(s), median "
                  f"[min-max]; MB = 10^6 bytes of record values.")
        settings = workload.settings()
        if args.idempotence_pair:
            settings["idempotence pair"] = (
                "acks=all, the producer's batching; on: enable.idempotence=true (librdkafka "
                "caps max.in.flight at 5 and keeps one request in flight per partition); off: "
                "as the producer above; off, max.in.flight=5")
            if java is not None:
                settings["Java client pair"] = (
                    "kafka-producer-perf-test of the pinned Kafka (one JVM, -Xmx512M), acks=all, "
                    "the same linger.ms and batch.size, buffer.memory 256 MiB, its default "
                    "max.in.flight 5, enable.idempotence true then false; as many records as "
                    "the librdkafka 'off' phase produced in a phase's seconds")
        report(runs, header, settings, out)
        if profile_dir is not None:
            # after the report: a failure here must not lose the figures
            profile_dir.mkdir(parents=True, exist_ok=True)
            one_run(workload, None, base_dir=base_dir, profile_dir=profile_dir,
                    properties=properties)
            _write_profiles(profile_dir, out)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
