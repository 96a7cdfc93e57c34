"""The text of ``kraft metadata-quorum describe``, line for line as Kafka prints it.

Pure functions returning strings (not rich renderables: the replication
table is tab-separated with trailing blanks and tabs, which a rich console
would expand and trim). Each returned text ends with a newline, as Java's
``println`` leaves it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from quorum.describe import QuorumInfo, ReplicaInfo, max_follower_lag
from quorum.wire.uuids import ZERO_UUID, uuid_to_str

__all__ = [
    "REPLICATION_HEADERS",
    "RelativeTimeError",
    "pretty_print_table",
    "relative_time_ms",
    "render_replication",
    "render_status",
]

REPLICATION_HEADERS: Final = (
    "NodeId",
    "DirectoryId",
    "LogEndOffset",
    "Lag",
    "LastFetchTimestamp",
    "LastCaughtUpTimestamp",
    "Status",
)
# every key and its padding: the values start at column 24
_KEY_WIDTH: Final = 24


class RelativeTimeError(Exception):
    """A timestamp in the future or at or before the epoch (``--human-readable``)."""


def _replica_json(info: QuorumInfo, replica: ReplicaInfo) -> str:
    # Kafka 4.x's MetadataQuorumCommand.Node leaves the zero directory id (a static
    # quorum's voters) out; 3.x printed "directoryId": null
    text = f'{{"id": {replica.replica_id}'
    if replica.directory_id != ZERO_UUID:
        text += f', "directoryId": "{uuid_to_str(replica.directory_id)}"'
    endpoints = info.endpoints_of(replica.replica_id)
    if endpoints:
        text += ', "endpoints": [' + ", ".join(f'"{e}"' for e in endpoints) + "]"
    return text + "}"


def _replica_list(info: QuorumInfo, replicas: Sequence[ReplicaInfo]) -> str:
    return "[" + ", ".join(_replica_json(info, r) for r in replicas) + "]"


def render_status(cluster_id: str, info: QuorumInfo) -> str:
    """``describe --status``: eight ``Key:`` lines, values at column 24."""
    lag = max_follower_lag(info)
    pairs = (
        ("ClusterId", cluster_id),
        ("LeaderId", str(info.leader_id)),
        ("LeaderEpoch", str(info.leader_epoch)),
        ("HighWatermark", str(info.high_watermark)),
        ("MaxFollowerLag", str(lag.lag)),
        ("MaxFollowerLagTimeMs", str(lag.lag_time_ms)),
        ("CurrentVoters", _replica_list(info, info.voters)),
        ("CurrentObservers", _replica_list(info, info.observers)),
    )
    return "".join(f"{key + ':':<{_KEY_WIDTH}}{value}\n" for key, value in pairs)


def relative_time_ms(timestamp_ms: int, description: str, now_ms: int) -> int:
    """How long ago ``timestamp_ms`` was; it must lie after the epoch and not after now."""
    if not 0 < timestamp_ms <= now_ms:
        raise RelativeTimeError(
            "Error while computing relative time, possible drift in system clock.\n"
            f"Current timestamp is {now_ms}, {description} timestamp is {timestamp_ms}"
        )
    return now_ms - timestamp_ms


def _timestamp(value: int | None, description: str, human_readable: bool, now_ms: int) -> str:
    if value is None:
        return "-1"
    if human_readable:
        return f"{relative_time_ms(value, description, now_ms)} ms ago"
    return str(value)


def _row(
    leader: ReplicaInfo, replica: ReplicaInfo, status: str, human_readable: bool, now_ms: int
) -> list[str]:
    return [
        str(replica.replica_id),
        # Kafka prints the directory id as it is, the zero UUID included
        uuid_to_str(replica.directory_id),
        str(replica.log_end_offset),
        str(leader.log_end_offset - replica.log_end_offset),
        _timestamp(replica.last_fetch_timestamp, "last fetch", human_readable, now_ms),
        _timestamp(replica.last_caught_up_timestamp, "last caught up", human_readable, now_ms),
        status,
    ]


def render_replication(info: QuorumInfo, *, human_readable: bool = False, now_ms: int = 0) -> str:
    """``describe --replication``: the leader, then the other voters, then observers.

    ``now_ms`` (wall clock) is needed only with ``human_readable``; raises
    RelativeTimeError for a timestamp it cannot show relative to now.
    """
    leader = info.leader
    rows = [_row(leader, leader, "Leader", human_readable, now_ms)]
    rows += [
        _row(leader, v, "Follower", human_readable, now_ms)
        for v in info.voters
        if v.replica_id != info.leader_id
    ]
    rows += [_row(leader, o, "Observer", human_readable, now_ms) for o in info.observers]
    return pretty_print_table(REPLICATION_HEADERS, rows)


def pretty_print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Kafka's ``ToolsUtils.prettyPrintTable``: each cell left-aligned and padded
    to its column's widest cell, then a tab, after the last column too."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    lines = [headers, *rows]
    return "".join(
        "".join(f"{cell:<{width}}\t" for cell, width in zip(line, widths, strict=True)) + "\n"
        for line in lines
    )
