"""The NATS peer's phases lined up, with no I/O: what each load process is told, and what
their results add up to.

``publish_phase``, ``latency_phase`` and ``consume_phase`` turn a ``NatsWorkload``
into a ``PhasePlan``: one argument list per ``bench.nats_load`` process and the
phase's time bound. ``PhaseResult`` adds the processes' ``LoadReport`` lines up:
throughput spans all of them (first start to last end on the system-wide
monotonic clock), so a process that starts late or finishes early cannot make
the phase look faster than it was.

Nothing here imports nats-py, so the unit tests of the arithmetic run without it.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs
import cattrs

__all__ = [
    "ConnectTo",
    "LoadReport",
    "NatsWorkload",
    "PhasePlan",
    "PhaseResult",
    "consume_phase",
    "consume_ranges",
    "latency_phase",
    "publish_phase",
    "stream_roles",
]


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


@attrs.frozen(kw_only=True)
class PhasePlan:
    # a bench.nats_load KIND
    kind: str
    # one argument list per load process, server URL included
    process_args: tuple[tuple[str, ...], ...]
    # the longest the phase's own work may take (the load processes stop themselves there)
    bound_s: float


def stream_roles(server_names: Sequence[str], leader: str) -> dict[str, str]:
    """Server name -> its role for the stream (``leader``, ``follower-N``), so that runs
    whose streams have different leaders line up in one CPU table."""
    assert leader in server_names, f"the stream leader {leader} is not one of {server_names}"
    followers = [name for name in server_names if name != leader]
    return {leader: "leader", **{name: f"follower-{i + 1}" for i, name in enumerate(followers)}}


def server_for(process: int, workload: NatsWorkload, leader_url: str,
               urls: Sequence[str]) -> str:
    if workload.connect_to is ConnectTo.LEADER:
        return leader_url
    return urls[process % len(urls)]


def _plan(kind: str, workload: NatsWorkload, per_process: Sequence[Sequence[str]],
          bound_s: float, leader_url: str, urls: Sequence[str]) -> PhasePlan:
    common = ("--size", str(workload.message_bytes))
    return PhasePlan(kind=kind, bound_s=bound_s, process_args=tuple(
        ("--server", server_for(i, workload, leader_url, urls), *common, *args)
        for i, args in enumerate(per_process)))


def publish_phase(workload: NatsWorkload, window: int, leader_url: str,
                  urls: Sequence[str]) -> PhasePlan:
    args = ("--window", str(window), "--messages", str(workload.publish_messages),
            "--seconds", str(workload.publish_seconds), "--warmup", str(workload.publish_warmup))
    return _plan("publish", workload, [args] * workload.publish_processes,
                 workload.publish_seconds, leader_url, urls)


def latency_phase(workload: NatsWorkload, leader_url: str, urls: Sequence[str]) -> PhasePlan:
    # one process: sequential publishes are the point; a second would queue behind the first
    args = ("--messages", str(workload.latency_messages),
            "--seconds", str(workload.latency_seconds), "--warmup", str(workload.latency_warmup))
    return _plan("latency", workload, [args], workload.latency_seconds, leader_url, urls)


def consume_ranges(first_seq: int, last_seq: int, processes: int) -> list[tuple[int, int]]:
    """``first_seq..last_seq`` cut into at most ``processes`` contiguous, non-empty ranges
    of nearly equal size (inclusive bounds), in order."""
    count = last_seq - first_seq + 1
    if count <= 0:
        raise ValueError(f"the stream holds no messages to consume "
                         f"(sequences {first_seq}..{last_seq})")
    parts = max(1, min(processes, count))
    bounds = [first_seq + count * i // parts for i in range(parts + 1)]
    return [(bounds[i], bounds[i + 1] - 1) for i in range(parts)]


def consume_phase(workload: NatsWorkload, first_seq: int, last_seq: int, leader_url: str,
                  urls: Sequence[str]) -> PhasePlan:
    count = last_seq - first_seq + 1
    args = [("--first-seq", str(first), "--last-seq", str(last), "--messages", str(count),
             "--seconds", str(workload.consume_seconds))
            for first, last in consume_ranges(first_seq, last_seq, workload.consume_processes)]
    return _plan("consume", workload, args, workload.consume_seconds, leader_url, urls)


@attrs.frozen(kw_only=True)
class LoadReport:
    """What one load process prints after ``RESULT ``, as JSON (``cattrs``)."""

    messages: int
    bytes: int
    # the phase's start and end on the system-wide monotonic clock, and CPU used between
    start: float
    end: float
    cpu_s: float
    errors: int = 0
    first_error: str = ""
    # latency only: seconds from each publish to its ack and to its delivery
    ack_s: tuple[float, ...] = ()
    delivery_s: tuple[float, ...] = ()

    @property
    def cpu_percent(self) -> float:
        """This process's share of one core over its phase."""
        return 100.0 * self.cpu_s / max(self.end - self.start, 1e-9)

    def to_json(self) -> str:
        return json.dumps(cattrs.unstructure(self))

    @staticmethod
    def from_json(text: str) -> LoadReport:
        return cattrs.structure(json.loads(text), LoadReport)


@attrs.frozen(kw_only=True)
class PhaseResult:
    loads: tuple[LoadReport, ...] = attrs.field(validator=attrs.validators.min_len(1))
    # seconds from GO until the last result, and each server's CPU seconds meanwhile
    wall_s: float
    server_cpu_s: Mapping[str, float]
    # the whole machine meanwhile: busy share of all cores (100 = every core busy)
    machine_busy_percent: float

    @property
    def messages(self) -> int:
        return sum(r.messages for r in self.loads)

    @property
    def bytes(self) -> int:
        return sum(r.bytes for r in self.loads)

    @property
    def seconds(self) -> float:
        return max(r.end for r in self.loads) - min(r.start for r in self.loads)

    @property
    def mb_per_s(self) -> float:
        return self.bytes / max(self.seconds, 1e-9) / 1e6

    def cpu_percent(self) -> dict[str, float]:
        """Each process's share of one core over the phase: ``load-N`` and the servers."""
        shares = {f"load-{i + 1}": r.cpu_percent for i, r in enumerate(self.loads)}
        wall = max(self.wall_s, 1e-9)
        shares.update({name: 100.0 * s / wall for name, s in self.server_cpu_s.items()})
        return shares
