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
3. consume: the whole stream read back by ``consume_processes`` flow-controlled
   push consumers, each a contiguous range of sequences (``bench.nats_lineup``);
   MB/s of payload.

MB is 10^6 bytes of message payload (subjects, headers and framing not
counted). CPU of every process over each phase is reported, so that a reader
sees whether the servers or the Python clients were the limit.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
import tempfile
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Final

from bench.nats_cluster import NatsCluster
from bench.nats_figures import (
    LatencyFigures,
    NatsFigures,
    ThroughputFigures,
    median_headline,
)
from bench.nats_lineup import (
    ConnectTo,
    NatsWorkload,
    PhasePlan,
    PhaseResult,
    consume_phase,
    latency_phase,
    publish_phase,
    stream_roles,
)
from bench.nats_phases import latency_figures, run_phase, throughput_figures
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
    "median_headline",
    "run_nats_peer",
]

DURABILITY: Final = ("JetStream file store at the server's defaults: no fsync before a publish "
                     "ack, the store synced in the background (replication is the durability, "
                     "as in Kafka)")
_NODES: Final = 3


class _Run:
    """One run's cluster and stream leader: runs each phase of the line-up against them."""

    def __init__(self, workload: NatsWorkload, cluster: NatsCluster, state: StreamState,
                 base: Path) -> None:
        self.workload = workload
        self.cluster = cluster
        self.base = base
        self.leader_url = next(n.url for n in cluster.nodes if n.name == state.leader)
        self.roles = stream_roles([n.name for n in cluster.nodes], state.leader)

    def phase(self, plan: PhasePlan) -> PhaseResult:
        return run_phase(plan, server_pids=self.cluster.pids, log_dir=self.base / "load")

    def publish(self, window: int) -> ThroughputFigures:
        plan = publish_phase(self.workload, window, self.leader_url, self.cluster.client_urls)
        return throughput_figures(self.phase(plan), window, self.roles)

    def latency(self) -> LatencyFigures:
        plan = latency_phase(self.workload, self.leader_url, self.cluster.client_urls)
        return latency_figures(self.phase(plan), self.roles)

    def consume(self) -> ThroughputFigures:
        state = stream_state(self.leader_url)
        plan = consume_phase(self.workload, state.first_seq, state.last_seq, self.leader_url,
                             self.cluster.client_urls)
        phase = self.phase(plan)
        if phase.messages != state.messages:
            raise RuntimeError(f"consumed {phase.messages} messages of the stream's "
                               f"{state.messages}")
        return throughput_figures(phase, 0, self.roles)


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


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _windows(text: str) -> tuple[int, ...]:
    try:
        return tuple(_positive(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a comma-separated list of positive integers, not {text!r}") from None


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=_positive, default=3)
    parser.add_argument("--processes", type=_positive, default=2, help="publish load processes")
    parser.add_argument("--windows", type=_windows, default=(64, 512),
                        help="publish acks outstanding per process, one phase each")
    parser.add_argument("--seconds", type=float, default=10.0, help="each publish phase")
    parser.add_argument("--messages", type=_positive, default=2_000_000,
                        help="at most this many per publish process and phase")
    parser.add_argument("--latency", type=_positive, default=2000, help="sequential publishes")
    parser.add_argument("--consume-processes", type=_positive, default=2)
    parser.add_argument("--size", type=_positive, default=1024, help="message payload bytes")
    parser.add_argument("--connect-to", choices=[c.value for c in ConnectTo], default="leader")
    parser.add_argument("--dir", default=None, help="where the servers keep their stores")
    parser.add_argument("--keep", action="store_true", help="keep stores and logs")
    args = parser.parse_args(argv)
    workload = NatsWorkload(
        message_bytes=args.size, windows=args.windows,
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
