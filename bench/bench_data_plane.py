"""The data plane under load: produce, end-to-end latency and consume, beside NATS and Apache Kafka.

Run ``python -m bench.bench_data_plane [--runs 3] [--seconds 10] [--no-nats]
[--no-kafka] [--perf-records 500000] [--kills 3] [--idempotence-pair] [--profile DIR]
[--out FILE]``, or ``--rss-partitions 100000`` for the memory of idle partition
replicas instead.

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

With the pinned Kafka's jars (``deploy.kafka``; skipped with ``--no-kafka`` or, said,
when they cannot be resolved), Kafka's perf tools are a second load:
kafka-producer-perf-test (acks=all, the same record size and batching) after the
produce phases and kafka-consumer-perf-test of the whole topic after consume. Every
server's RSS at the end (``bench.dataplane_probes``); then ``--kills`` kill -9 of a
partition leader, each timed to the next acknowledged produce at acks=all. Before all
of it, the cluster's start: processes launched -> first acknowledged produce.
(``bench.dataplane_side.measure_cluster`` runs this pass.)

Then, in the same run, the NATS peer (``bench.nats_peer.run_nats_peer``) with the
same record size and publish time, after the pykraft cluster has stopped; and the
Apache Kafka peer (``bench.kafka_peer``): a KafkaCluster of 3 controllers + 3 brokers
at Kafka's defaults runs exactly the same pass with the same load processes, its JVMs'
heap in use after a full GC measured with jcmd. Reported beside pykraft's: Kafka's
figures, pykraft / Kafka, the servers' CPU seconds per MB (``bench.peer_report``).
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
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Final

import attrs

from bench.dataplane_figures import DataPlaneRun, RssFigures
from bench.dataplane_lineup import DataPlaneWorkload
from bench.dataplane_report import report, rss_report
from bench.dataplane_side import SideOptions, measure_cluster, measured_then_removed
from bench.kafka_peer import kafka_settings, run_kafka_peer
from bench.nats_figures import NatsFigures
from bench.nats_lineup import NatsWorkload
from bench.nats_peer import run_nats_peer
from bench.nats_phases import cpu_seconds
from bench.peer_report import kafka_report
from bench.profile_summary import summarize
from bench.scale_phases import create_one_topic
from bench.scale_probes import rss_bytes
from broker.client import BlockingAdmin
from deploy import ClusterSpec, LocalCluster
from deploy.kafka import KafkaDistribution, resolve_kafka

__all__ = ["main"]

_TIMEOUT_S: Final = 60.0
IDLE_CPU_WINDOW_S: Final = 20.0


def _cluster_spec(properties: dict[str, str]) -> ClusterSpec:
    # Kafka's defaults, not the test profile: a user's cluster
    return ClusterSpec(controllers=3, brokers=3, test_profile=False, properties=properties,
                       ready_timeout_s=_TIMEOUT_S)


def one_run(workload: DataPlaneWorkload, nats: NatsWorkload | None, *, base_dir: Path | None,
            profile_dir: Path | None, properties: dict[str, str],
            idempotence_pair: bool = False, java: KafkaDistribution | None = None,
            kafka: KafkaDistribution | None = None, perf_records: int = 500_000,
            kills: int = 3, say: Callable[[str], None] = print) -> DataPlaneRun:
    """pykraft's cluster, then (each after the other has stopped) the NATS peer and the
    Kafka peer. ``kafka``: the jars for the Kafka peer and for Kafka's perf tools as a
    second load of both clusters; None runs neither."""
    options = SideOptions(idempotence_pair=idempotence_pair, java=java, perf_tools=kafka,
                          perf_records=perf_records, kills=kills, profile_dir=profile_dir)
    base = Path(tempfile.mkdtemp(prefix="data-plane-", dir=base_dir))
    cluster = LocalCluster(base / "cluster", _cluster_spec(properties))
    run = measured_then_removed(
        cluster, base,
        lambda: measure_cluster(cluster, lambda: cluster.node_ids, workload, base, options,
                                jvm=False, say=say),
        "the cluster")
    return attrs.evolve(run, nats=_nats_or_none(nats),
                        kafka=_kafka_or_none(workload, kafka, options, base_dir, say))


def _kafka_or_none(workload: DataPlaneWorkload, kafka: KafkaDistribution | None,
                   options: SideOptions, base_dir: Path | None, say: Callable[[str], None]
                   ) -> DataPlaneRun | None:
    """The Kafka peer's run, or None (said) when it was not asked for or failed: a failure
    of the peer must not throw away pykraft's figures of the same run."""
    if kafka is None:
        return None
    try:
        return run_kafka_peer(workload, kafka, options, base_dir=base_dir, say=say)
    except Exception as exc:  # any failure of the peer: reported, then skipped
        say(f"the Kafka peer failed in this run, no ratio from it: {exc!r}")
        return None


def _java_or_none(say: Callable[[str], None], what: str = "Java client pair"
                  ) -> KafkaDistribution | None:
    """The pinned Kafka's jars (the Java client's pair, the Kafka peer, its perf tools), or
    None (said) when they cannot be had: pykraft's figures must not be lost to a missing
    JDK."""
    try:
        return resolve_kafka()
    except Exception as exc:  # no java, no mvn, no network: reported, then skipped
        say(f"no {what}: Kafka's jars could not be resolved: {exc}")
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
    parser.add_argument("--kafka", action=argparse.BooleanOptionalAction, default=True,
                        help="the Apache Kafka peer and Kafka's perf tools as a second load "
                             "(--no-kafka skips both; skipped, said, without the jars)")
    parser.add_argument("--perf-records", type=int, default=500_000,
                        help="records of kafka-producer-perf-test, the same on both clusters")
    parser.add_argument("--kills", type=int, default=3,
                        help="kill -9 failovers of a partition leader per run and cluster")
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
        kafka = _java_or_none(say, "Kafka peer and perf tools") if args.kafka else None
        runs = []
        for i in range(args.runs):
            runs.append(one_run(workload, nats, base_dir=base_dir, profile_dir=None,
                                properties=properties, idempotence_pair=args.idempotence_pair,
                                java=java, kafka=kafka, perf_records=args.perf_records,
                                kills=args.kills, say=say))
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
        if kafka is not None:
            settings["Kafka peer"] = kafka_settings()
            settings["perf tools (both clusters)"] = (
                f"kafka-producer-perf-test, {args.perf_records:,} records, acks=all, the "
                "producer's linger.ms and batch.size, the Java client's default idempotence "
                "(on), -Xmx512M; kafka-consumer-perf-test of the whole topic at its defaults "
                "(MB/s over its fetch time, the group's join left out)")
        settings["failure probes"] = (
            "start: processes launched -> first acked produce (a probe in the bench process "
            "creating a 1-partition RF 3 topic and producing at acks=all, 50-200 ms client "
            f"backoff), one per fresh cluster; failover: {args.kills} kill(s) -9 of the probe "
            "partition's leader per run, one record every 5 ms at acks=all (librdkafka's "
            "defaults), kill -> first ack of a record sent after the kill, the broker "
            "restarted and the ISR full before the next")
        report(runs, header, settings, out, more=lambda write: kafka_report(runs, write))
        if profile_dir is not None:
            # after the report: a failure here must not lose the figures
            profile_dir.mkdir(parents=True, exist_ok=True)
            one_run(workload, None, base_dir=base_dir, profile_dir=profile_dir,
                    properties=properties, kills=0, say=say)
            _write_profiles(profile_dir, out)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
