"""The NATS JetStream peer of the data-plane bench: the same workload against a 3-replica stream.

Run ``python -m bench.nats_peer [--runs 3] [--processes 2] [--windows 64,512]
[--seconds 10] [--latency 2000] [--consume-processes 2]``; the pykraft side
calls ``run_nats_peer(NatsWorkload(...))`` in the same bench run and reports
its own figures as ratios to these.

Each run: Debian's nats-server (installed if missing and root,
``bench.nats_server``), three processes on loopback forming a JetStream
cluster (``bench.nats_cluster``; no fsync before an ack, the server's
default), one R3 stream on file storage (``bench.nats_stream``), then load
processes of nats-py (``bench.nats_load``, lined up by ``bench.nats_phases``)
connected to the server that leads the stream, as a Kafka producer talks to
the partition leader:

1. publish: for each window, ``processes`` processes publish 1 KB messages
   with that many publish acks outstanding each, for ``publish_seconds`` (or
   ``publish_messages`` each, whichever comes first); MB/s of acknowledged
   payload over the span of all processes;
2. latency: one process, one publish at a time after a warm-up: the time to
   its ack (committed by the stream's Raft quorum) and to its delivery to an
   ordered push consumer in the same process (Kafka's end-to-end latency);
3. consume: the whole stream read back by ``consume_processes`` ordered push
   consumers, each a contiguous range of sequences; MB/s of payload.

MB is 10^6 bytes of message payload (subjects, headers and framing not
counted). CPU of every process over each phase is reported, so that a reader
sees whether the servers or the Python clients were the limit.
"""

from __future__ import annotations

import argparse
import enum
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Final

import attrs

from bench.nats_cluster import NatsCluster
from bench.nats_figures import LatencyFigures, NatsFigures, ThroughputFigures, percentile
from bench.nats_phases import PhaseResult, run_phase
from bench.nats_report import report
from bench.nats_server import find_nats_server
from bench.nats_stream import REPLICAS, StreamState, create_stream, stream_state

__all__ = [
    "ConnectTo",
    "LatencyFigures",
    "NatsFigures",
    "NatsWorkload",
    "ThroughputFigures",
    "main",
    "run_nats_peer",
]

DURABILITY: Final = ("JetStream file store, sync_interval at the server's default: no fsync "
                     "before a publish ack (replication is the durability, as in Kafka)")
_NODES: Final = 3


class ConnectTo(enum.Enum):
    # every load process on the server that leads the stream (a Kafka client sends to
    # the partition leader)
    LEADER = "leader"
    # load process i on server i mod 3 (what a NATS client's server list would spread)
    SPREAD = "spread"


@attrs.frozen(kw_only=True)
class NatsWorkload:
    message_bytes: int = 1024
    windows: tuple[int, ...] = (64, 512)
    publish_processes: int = 2
    # per process and window; the phase ends at whichever bound comes first
    publish_messages: int = 2_000_000
    publish_seconds: float = 10.0
    publish_warmup: int = 1_000
    latency_messages: int = 2_000
    latency_warmup: int = 200
    latency_seconds: float = 60.0
    consume_processes: int = 2
    consume_seconds: float = 120.0
    connect_to: ConnectTo = ConnectTo.LEADER
    start_timeout_s: float = 30.0
    # where each run's servers keep their stores and logs (a temporary directory inside)
    base_dir: Path | None = None
    keep: bool = False


def _roles(cluster: NatsCluster, leader: str) -> dict[str, str]:
    """Server name -> its role for the stream, so that runs with different leaders line up."""
    followers = [n.name for n in cluster.nodes if n.name != leader]
    return {leader: "leader", **{name: f"follower-{i + 1}" for i, name in enumerate(followers)}}


def _throughput(phase: PhaseResult, window: int, roles: Mapping[str, str]) -> ThroughputFigures:
    cpu = {roles.get(name, name): share for name, share in phase.cpu_percent().items()}
    return ThroughputFigures(processes=len(phase.loads), window=window, messages=phase.messages,
                             seconds=phase.seconds, mb_per_s=phase.mb_per_s, cpu_percent=cpu,
                             machine_busy_percent=phase.machine_busy_percent)


class _Run:
    """One run's cluster, stream leader and load-process addresses."""

    def __init__(self, workload: NatsWorkload, cluster: NatsCluster, state: StreamState,
                 base: Path) -> None:
        self.workload = workload
        self.cluster = cluster
        self.base = base
        self.leader_url = next(n.url for n in cluster.nodes if n.name == state.leader)
        self.roles = _roles(cluster, state.leader)

    def url(self, process: int) -> str:
        if self.workload.connect_to is ConnectTo.LEADER:
            return self.leader_url
        return self.cluster.nodes[process % len(self.cluster.nodes)].url

    def phase(self, kind: str, process_args: Sequence[Sequence[str]], bound_s: float
              ) -> PhaseResult:
        w = self.workload
        common = ["--size", str(w.message_bytes)]
        return run_phase(kind, [["--server", self.url(i), *common, *args]
                                for i, args in enumerate(process_args)],
                         bound_s=bound_s, server_pids=self.cluster.pids, log_dir=self.base / "load")

    def publish(self, window: int) -> ThroughputFigures:
        w = self.workload
        args = ["--window", str(window), "--messages", str(w.publish_messages),
                "--seconds", str(w.publish_seconds), "--warmup", str(w.publish_warmup)]
        phase = self.phase("publish", [args] * w.publish_processes, w.publish_seconds)
        return _throughput(phase, window, self.roles)

    def latency(self) -> LatencyFigures:
        w = self.workload
        args = ["--messages", str(w.latency_messages), "--seconds", str(w.latency_seconds),
                "--warmup", str(w.latency_warmup)]
        phase = self.phase("latency", [args], w.latency_seconds)
        (load,) = phase.loads
        return LatencyFigures(
            messages=load.messages,
            ack_p50_ms=1000 * percentile(load.ack_s, 0.5),
            ack_p99_ms=1000 * percentile(load.ack_s, 0.99),
            delivery_p50_ms=1000 * percentile(load.delivery_s, 0.5),
            delivery_p99_ms=1000 * percentile(load.delivery_s, 0.99),
            cpu_percent={self.roles.get(k, k): v for k, v in phase.cpu_percent().items()},
            machine_busy_percent=phase.machine_busy_percent)

    def consume(self) -> ThroughputFigures:
        w = self.workload
        state = stream_state(self.leader_url)
        count = state.last_seq - state.first_seq + 1
        processes = min(w.consume_processes, count)
        bounds = [state.first_seq + count * i // processes for i in range(processes + 1)]
        args = [["--first-seq", str(bounds[i]), "--last-seq", str(bounds[i + 1] - 1),
                 "--messages", str(count), "--seconds", str(w.consume_seconds)]
                for i in range(processes)]
        phase = self.phase("consume", args, w.consume_seconds)
        if phase.messages != state.messages:
            raise RuntimeError(f"consumed {phase.messages} messages of the stream's "
                               f"{state.messages}")
        return _throughput(phase, 0, self.roles)


def run_nats_peer(workload: NatsWorkload) -> NatsFigures:
    """One run: a fresh 3-node cluster and stream, the three phases, everything stopped.

    The servers' stores and every process's log stay in a directory named on stderr
    when the run fails (or with ``keep``); otherwise they are removed."""
    program = find_nats_server()
    base = Path(tempfile.mkdtemp(prefix="nats-peer-", dir=workload.base_dir))
    done = False
    try:
        cluster = NatsCluster(program, base, size=_NODES,
                              start_timeout_s=workload.start_timeout_s)
        with cluster:
            state = create_stream(cluster.client_urls[0])
            run = _Run(workload, cluster, state, base)
            publish = tuple(run.publish(window) for window in workload.windows)
            latency = run.latency()
            consume = run.consume()
            pids = tuple(cluster.pids.values())
        done = True
    finally:
        if done and not workload.keep:
            shutil.rmtree(base, ignore_errors=True)
        else:
            print(f"nats-server stores and logs kept in {base}", file=sys.stderr)
    return NatsFigures(server_version=program.version, client=f"nats-py {version('nats-py')}",
                       nodes=_NODES, replicas=REPLICAS, durability=DURABILITY,
                       connect_to=workload.connect_to.value,
                       message_bytes=workload.message_bytes, publish=publish, latency=latency,
                       consume=consume, server_pids=pids)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--processes", type=int, default=2, help="publish load processes")
    parser.add_argument("--windows", default="64,512",
                        help="publish acks outstanding per process, one phase each")
    parser.add_argument("--seconds", type=float, default=10.0, help="each publish phase")
    parser.add_argument("--messages", type=int, default=2_000_000,
                        help="at most this many per publish process and phase")
    parser.add_argument("--latency", type=int, default=2000, help="sequential publishes")
    parser.add_argument("--consume-processes", type=int, default=2)
    parser.add_argument("--size", type=int, default=1024, help="message payload bytes")
    parser.add_argument("--connect-to", choices=[c.value for c in ConnectTo], default="leader")
    parser.add_argument("--dir", default=None, help="where the servers keep their stores")
    parser.add_argument("--keep", action="store_true", help="keep stores and logs")
    args = parser.parse_args(argv)
    workload = NatsWorkload(
        message_bytes=args.size, windows=tuple(int(w) for w in args.windows.split(",")),
        publish_processes=args.processes, publish_messages=args.messages,
        publish_seconds=args.seconds, latency_messages=args.latency,
        consume_processes=args.consume_processes, connect_to=ConnectTo(args.connect_to),
        base_dir=Path(args.dir) if args.dir else None, keep=args.keep)
    runs = []
    for i in range(args.runs):
        runs.append(run_nats_peer(workload))
        print(f"run {i + 1}/{args.runs} done", file=sys.stderr, flush=True)
    print(f"\n$ python -m bench.nats_peer {shlex.join(sys.argv[1:] if argv is None else argv)}")
    report(runs)


if __name__ == "__main__":
    main()
