"""What stops a ``bench.bench_scale`` run: a leader change no fault of the bench explains.

Outside the failover phase nothing kills or stops the active controller, so a
new quorum epoch there is a finding about the nodes, not a figure: the run
stops with ``UnexplainedElection``, whose message holds what is needed to
report it (the phase, the epochs, every node's longest event-loop stall and
controller event times from /metrics, and the nodes' log lines about the
election since the phase began).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Final

from bench.scale_probes import NodeSample, log_times, scrape_all
from deploy import LocalCluster

__all__ = ["UnexplainedElection", "check_epoch", "epoch_of"]

_ELECTION_LINES: Final = ("Prospective", "Candidate", "Resigned", "Leader in", "renounced",
                          "aborted", "no answer within", "WARNING")
_MAX_LINES: Final = 40
_FIGURES: Final = (
    'pykraft_event_loop_max_stall_ms{window="all"}',
    'pykraft_event_loop_max_stall_ms{window="1m"}',
    'kafka_controller_controllereventmanager_eventqueuetimems_max{window="all"}',
    "kafka_controller_controllereventmanager_eventqueuetimems_count",
    "pykraft_metadata_image_offset",
    "kafka_raft_high_watermark",
)


class UnexplainedElection(RuntimeError):
    """The quorum epoch changed in a phase where the bench did nothing to the leader."""


def epoch_of(samples: dict[int, NodeSample | None]) -> int:
    """The highest quorum epoch any node reports."""
    return max((int(s.raw.get("kafka_raft_current_epoch", -1))
                for s in samples.values() if s is not None), default=-1)


def check_epoch(cluster: LocalCluster, nodes: Sequence[int], phase: str, epoch: int,
                since: float, samples: dict[int, NodeSample | None] | None = None) -> None:
    """Raise ``UnexplainedElection`` if any node reports an epoch past ``epoch``."""
    samples = samples if samples is not None else scrape_all(cluster, nodes)
    now = epoch_of(samples)
    if now <= epoch:
        return
    # a second look once the dust settled: the figures of the nodes after the election
    time.sleep(1)
    later = scrape_all(cluster, nodes)
    figures = []
    for node in nodes:
        sample = later.get(node)
        shown = "no answer" if sample is None else ", ".join(
            f"{name}={sample.raw[name]:.0f}" for name in _FIGURES if name in sample.raw)
        figures.append(f"  node {node}: {shown}")
    lines = []
    for node in sorted(cluster.layout):
        path = cluster.layout[node].log_path
        if path.exists():
            lines += [(at, line) for at, line in log_times(path, "")
                      if at >= since - 1 and any(k in line for k in _ELECTION_LINES)]
    shown_lines = [f"  {line}" for _, line in sorted(lines)[:_MAX_LINES]]
    raise UnexplainedElection(
        f"the quorum epoch went from {epoch} to {now} during the {phase} phase, which "
        "does not stop or kill the active controller\n/metrics after it:\n"
        + "\n".join(figures) + "\nnode log lines since the phase began:\n"
        + "\n".join(shown_lines)
    )
