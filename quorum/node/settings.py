"""``NodeSettings``: what a controller node needs from its ``ServerConfig``, mapped once.

The boundary between the Kafka-named settings and the node: the Raft
timeouts (``controller.quorum.*``), the listener to bind and the address to
advertise, the voters' addresses, the request size limit and the metadata
log's directory and log settings. ``RaftNodeSettings`` holds what every node
with a metadata log needs (a controller's and a broker's settings both
extend it); ``metadata_raft_config`` and ``metadata_log_config`` map those
parts of the config the same way for both.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

import attrs

from quorum.config import ServerConfig
from quorum.config.values import HostPort
from quorum.controller.results import ControllerConfig
from quorum.log import LogConfig, partition_dir
from quorum.node.errors import NodeStartupError
from quorum.raft import RaftConfig
from quorum.raft.config import MAX_BATCH_SIZE_BYTES

__all__ = [
    "METADATA_TOPIC",
    "NodeSettings",
    "RaftNodeSettings",
    "controller_config",
    "metadata_log_config",
    "metadata_raft_config",
    "node_settings",
    "reconnect_backoff_max_ms",
]

METADATA_TOPIC: Final = "__cluster_metadata"
# room above the 8 MiB batch limit for one oversized record and batch framing
_METADATA_MAX_MESSAGE_BYTES: Final = MAX_BATCH_SIZE_BYTES + 1024 * 1024
# reconnects back off exponentially from retry.backoff.ms up to this (Kafka's
# reconnect.backoff.max.ms default)
_RECONNECT_BACKOFF_MAX_MS: Final = 1000


@attrs.frozen(kw_only=True)
class RaftNodeSettings:
    """What the metadata log, its Raft core and the links to the voters need."""

    node_id: int
    cluster_id: str
    # voter id -> (host, port) of its controller listener
    voters: Mapping[int, tuple[str, int]]
    metadata_partition_dir: Path
    raft: RaftConfig
    log: LogConfig
    max_request_bytes: int
    # the node writes a snapshot of its committed image after this many bytes of records
    snapshot_max_bytes: int = 20 * 1024 * 1024
    # ... or once this long has passed with records in no snapshot (0: never by time)
    snapshot_max_interval_ms: int = 3_600_000
    # where GET /metrics is served (``metrics.http.listener``; None: nowhere)
    metrics_listener: HostPort | None = None
    reconnect_backoff_max_ms: int = _RECONNECT_BACKOFF_MAX_MS


@attrs.frozen(kw_only=True)
class NodeSettings(RaftNodeSettings):
    listener_name: str
    bind_host: str | None
    bind_port: int
    advertised_host: str
    advertised_port: int
    controller: ControllerConfig
    # how long a resigning leader waits on shutdown for another voter to lead
    shutdown_grace_ms: int = 500


def node_settings(config: ServerConfig, cluster_id: str) -> NodeSettings:
    """Map a checked ``ServerConfig`` with the controller role onto the node's settings.

    A combined node (``process.roles=broker,controller``) maps its controller
    part here and its broker part with the broker's settings.
    """
    if not config.is_controller:
        roles = ",".join(sorted(r.value for r in config.process_roles))
        raise NodeStartupError(
            f"process.roles={roles}: a controller needs the controller role "
            "(process.roles=controller)"
        )
    if not config.quorum_voters:
        raise NodeStartupError(
            "controller.quorum.voters is empty: pykraft runs static quorums only; list "
            "every voter as id@host:port"
        )
    bound = config.controller_listeners[0]
    advertised = config.advertised_controller_listeners[0]
    return NodeSettings(
        node_id=config.node_id,
        cluster_id=cluster_id,
        voters={v.node_id: (v.host, v.port) for v in config.quorum_voters},
        listener_name=bound.listener_name,
        bind_host=bound.host,
        bind_port=bound.port,
        advertised_host=advertised.host or "localhost",
        advertised_port=advertised.port,
        metadata_partition_dir=partition_dir(Path(config.metadata_log_dir), METADATA_TOPIC, 0),
        raft=metadata_raft_config(config),
        log=metadata_log_config(config),
        max_request_bytes=config.socket_request_max_bytes,
        controller=controller_config(config, cluster_id),
        snapshot_max_bytes=config.metadata_snapshot_max_bytes,
        snapshot_max_interval_ms=config.metadata_snapshot_max_interval_ms,
        metrics_listener=config.metrics_http_listener,
        reconnect_backoff_max_ms=reconnect_backoff_max_ms(config),
    )


def metadata_raft_config(config: ServerConfig) -> RaftConfig:
    """The Raft core's timeouts and retention (``controller.quorum.*``), on every node."""
    return RaftConfig(
        election_timeout_ms=config.quorum_election_timeout_ms,
        fetch_timeout_ms=config.quorum_fetch_timeout_ms,
        election_backoff_max_ms=config.quorum_election_backoff_max_ms,
        request_timeout_ms=config.quorum_request_timeout_ms,
        retry_backoff_ms=config.quorum_retry_backoff_ms,
        append_linger_ms=config.quorum_append_linger_ms,
        high_watermark_notice_ms=config.quorum_high_watermark_notice_ms,
        metadata_max_retention_bytes=config.metadata_max_retention_bytes,
        metadata_max_retention_ms=config.metadata_max_retention_ms,
        log_cleaner_interval_ms=config.metadata_log_cleaner_interval_ms,
    )


def metadata_log_config(config: ServerConfig) -> LogConfig:
    """The metadata log's segments and record size limit, on every node."""
    return LogConfig(
        segment_bytes=config.metadata_log_segment_bytes,
        max_message_bytes=_METADATA_MAX_MESSAGE_BYTES,
    )


def reconnect_backoff_max_ms(config: ServerConfig) -> int:
    """The cap of the links' reconnect backoff: never below ``retry.backoff.ms``."""
    return max(_RECONNECT_BACKOFF_MAX_MS, config.quorum_retry_backoff_ms)


def controller_config(config: ServerConfig, cluster_id: str) -> ControllerConfig:
    """The controller state machine's settings (Kafka's names in ServerConfig)."""
    # min.insync.replicas not set: new topics get a majority of their replication
    # factor as an explicit topic config (pykraft's safer default than Kafka's 1)
    return ControllerConfig(
        node_id=config.node_id,
        cluster_id=cluster_id,
        broker_session_timeout_ms=config.broker_session_timeout_ms,
        broker_heartbeat_interval_ms=config.broker_heartbeat_interval_ms,
        num_partitions=config.num_partitions,
        default_replication_factor=config.default_replication_factor,
        min_insync_replicas=config.min_insync_replicas_config,
        unclean_leader_election_enable=config.unclean_leader_election_enable,
        auto_leader_rebalance_enable=config.auto_leader_rebalance_enable,
        leader_imbalance_check_interval_ms=config.leader_imbalance_check_interval_seconds * 1000,
    )
