"""What one run of the NATS peer measured (``bench.nats_peer.run_nats_peer`` returns these).

``NatsFigures.headline()`` gives the figures a ratio is taken against, by
name; the pykraft side of the data-plane bench divides its own by these.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

import attrs

__all__ = ["LatencyFigures", "NatsFigures", "ThroughputFigures", "median_headline", "percentile"]


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile: the smallest value with at least ``fraction`` of all
    values at or below it (always one of the measured values, never interpolated)."""
    if not values:
        raise ValueError("no values to take a percentile of")
    if not 0 < fraction <= 1:
        raise ValueError(f"a percentile's fraction is in (0, 1], not {fraction}")
    ordered = sorted(values)
    # rounded first: 0.99 * 2000 is 1979.9999999999998 in binary floating point
    rank = math.ceil(round(fraction * len(ordered), 9))
    return ordered[max(rank, 1) - 1]


@attrs.frozen(kw_only=True)
class ThroughputFigures:
    processes: int
    # publish acks outstanding per process; 0 for consume
    window: int
    messages: int
    seconds: float
    # 10^6 bytes of message payload per second
    mb_per_s: float
    # share of one core per process over the phase: load-N, leader, follower-N
    cpu_percent: Mapping[str, float]
    # all cores of the machine busy = 100; what else ran on it shows in the difference
    machine_busy_percent: float


@attrs.frozen(kw_only=True)
class LatencyFigures:
    messages: int
    # publish -> its ack (the stream's Raft quorum has it)
    ack_p50_ms: float
    ack_p99_ms: float
    # publish -> its delivery to a push consumer (Kafka's end-to-end latency)
    delivery_p50_ms: float
    delivery_p99_ms: float
    cpu_percent: Mapping[str, float]
    machine_busy_percent: float


@attrs.frozen(kw_only=True)
class NatsFigures:
    server_version: str
    client: str
    nodes: int
    replicas: int
    durability: str
    connect_to: str
    message_bytes: int
    publish: tuple[ThroughputFigures, ...]
    latency: LatencyFigures
    consume: ThroughputFigures
    # the servers' PIDs, all stopped and reaped once run_nats_peer has returned
    server_pids: tuple[int, ...]

    def headline(self) -> dict[str, float]:
        """``publish_mb_per_s_w64`` (one per window), ``ack_p50_ms``, ``ack_p99_ms``,
        ``delivery_p50_ms``, ``delivery_p99_ms``, ``consume_mb_per_s``."""
        figures = {f"publish_mb_per_s_w{p.window}": p.mb_per_s for p in self.publish}
        figures.update({
            "ack_p50_ms": self.latency.ack_p50_ms,
            "ack_p99_ms": self.latency.ack_p99_ms,
            "delivery_p50_ms": self.latency.delivery_p50_ms,
            "delivery_p99_ms": self.latency.delivery_p99_ms,
            "consume_mb_per_s": self.consume.mb_per_s,
        })
        return figures


def median_headline(runs: Sequence[NatsFigures]) -> dict[str, float]:
    """Each headline figure's median over ``runs`` (each figure on its own: the run with
    the median publish rate need not be the one with the median latency)."""
    if not runs:
        raise ValueError("no runs to take the median of")
    keys = runs[0].headline().keys()
    return {key: statistics.median(run.headline()[key] for run in runs) for key in keys}
