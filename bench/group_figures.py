"""What one run of the consumer-group bench measured, and the arithmetic over runs, with no I/O.

``settled_at`` says when a group's members last received the assignments that share the
topic among them (each member's assignment history as its rebalance callbacks recorded
it); ``GroupRun.headline()`` names each figure; ``figure_rows`` lays the medians over runs
out as a markdown table, one column per settings profile. Pure, so that the unit tests
check the arithmetic without a cluster.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Final

import attrs

from bench.dataplane_report import cell

__all__ = [
    "AssignmentEvent",
    "GroupRun",
    "figure_rows",
    "median_figures",
    "percentile",
    "settled_at",
]

# (monotonic time, the partitions the member holds from then on; empty after a revoke)
AssignmentEvent = tuple[float, frozenset[int]]


def settled_at(histories: Mapping[str, Sequence[AssignmentEvent]], since: float,
               partitions: int) -> float | None:
    """The time the last of ``histories``' members received its part of a settled
    assignment, or None while the group has none.

    Settled: every member's latest event came at or after ``since`` (a member still
    holding what it had before the join or leave has not seen the rebalance), and the
    latest assignments are non-empty, disjoint and together hold partitions
    0..``partitions``-1."""
    if not histories:
        return None
    latest: list[AssignmentEvent] = []
    for events in histories.values():
        if not events or events[-1][0] < since:
            return None
        latest.append(events[-1])
    parts = [held for _, held in latest]
    owned = [p for held in parts for p in held]
    if not all(parts) or len(owned) != len(set(owned)) or set(owned) != set(range(partitions)):
        return None
    return max(at for at, _ in latest)


def percentile(values: Sequence[float], fraction: float) -> float:
    """The value at ``fraction`` of the sorted ``values`` (nearest rank, no interpolation)."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


@attrs.frozen(kw_only=True)
class GroupRun:
    """One run at one settings profile (``kafka``: Kafka's defaults; ``test``: the test
    profile). Times in seconds from the event (join, leave, kill -9)."""

    profile: str
    # 4 consumers subscribe to an empty group together -> all 4 hold their parts
    form_s: float
    # one of the 4 leaves (close(): LeaveGroup) -> the other 3 hold the new parts
    leave_s: float
    # a 4th joins the 3 -> all 4 hold the new parts
    join_s: float
    # one member's synchronous commits, one at a time
    sync_commits_per_s: float
    sync_commit_p50_ms: float
    sync_commit_p99_ms: float
    # asynchronous commits, at most ``in_flight`` unanswered
    async_commits_per_s: float
    in_flight: int
    # kill -9 of the coordinator's broker -> the first OffsetCommit that succeeds
    failover_commit_s: float
    # kill -9 -> a live broker's Metadata no longer lists the killed broker (fenced)
    fenced_s: float
    # kill -9 -> the group's __consumer_offsets partition has another leader
    offsets_leader_s: float
    # kill -9 -> that new leader answers OffsetFetch for the group without an error
    coordinator_loaded_s: float
    # the errors the committer saw between the kill and its first success, with counts
    failover_errors: Mapping[str, int] = attrs.field(factory=dict)

    def headline(self) -> dict[str, float]:
        return {
            "form_s": self.form_s, "leave_s": self.leave_s, "join_s": self.join_s,
            "sync_commits_per_s": self.sync_commits_per_s,
            "sync_commit_p50_ms": self.sync_commit_p50_ms,
            "sync_commit_p99_ms": self.sync_commit_p99_ms,
            "async_commits_per_s": self.async_commits_per_s,
            "failover_commit_s": self.failover_commit_s, "fenced_s": self.fenced_s,
            "offsets_leader_s": self.offsets_leader_s,
            "coordinator_loaded_s": self.coordinator_loaded_s,
            "failover_after_fence_s": self.failover_commit_s - self.fenced_s,
        }


def median_figures(runs: Sequence[GroupRun]) -> dict[str, float]:
    """Each headline figure's median over ``runs`` (of one profile), figure by figure."""
    if not runs:
        raise ValueError("no runs to take the median of")
    keys = runs[0].headline().keys()
    return {key: statistics.median(run.headline()[key] for run in runs) for key in keys}


_LABELS: Final = {
    "form_s": ("rebalance: 4 consumers join an empty group -> all 4 assigned (s)", 2),
    "leave_s": ("rebalance: 1 of 4 leaves -> the other 3 assigned (s)", 2),
    "join_s": ("rebalance: a 4th joins 3 -> all 4 assigned (s)", 2),
    "sync_commits_per_s": ("OffsetCommit, sync, one at a time (commits/s)", 0),
    "sync_commit_p50_ms": ("OffsetCommit, sync: p50 (ms)", 2),
    "sync_commit_p99_ms": ("OffsetCommit, sync: p99 (ms)", 2),
    "async_commits_per_s": ("OffsetCommit, async, {in_flight} in flight (commits/s)", 0),
    "failover_commit_s": ("failover: kill -9 of the coordinator -> first commit (s)", 2),
    "fenced_s": ("failover: kill -9 -> the killed broker fenced (s)", 2),
    "offsets_leader_s": ("failover: kill -9 -> new leader of the group's offsets "
                         "partition (s)", 2),
    "coordinator_loaded_s": ("failover: kill -9 -> the new coordinator answers OffsetFetch "
                             "(s)", 2),
    "failover_after_fence_s": ("failover: fenced -> first commit (s)", 2),
}


def figure_rows(runs: Sequence[GroupRun], profile_labels: Mapping[str, str]) -> list[str]:
    """A markdown table: one row per figure, one column per profile (in
    ``profile_labels``' order) with median [min-max] over that profile's runs."""
    by_profile = {p: [r for r in runs if r.profile == p] for p in profile_labels}
    by_profile = {p: found for p, found in by_profile.items() if found}
    if not by_profile:
        raise ValueError("no runs of the profiles asked for")
    lines = ["| measure | " + " | ".join(profile_labels[p] for p in by_profile) + " |",
             "| --- |" + " ---: |" * len(by_profile)]
    in_flight = next(iter(by_profile.values()))[0].in_flight
    for key, (label, digits) in _LABELS.items():
        cells = [cell([r.headline()[key] for r in found], digits)
                 for found in by_profile.values()]
        lines.append(f"| {label.format(in_flight=in_flight)} | " + " | ".join(cells) + " |")
    return lines
