"""``NodeSettings``: what a controller node needs from its ``ServerConfig``, mapped once.

The boundary between the Kafka-named settings and the node: the Raft
timeouts (``controller.quorum.*``), the listener to bind and the address to
advertise, the voters' addresses, the request size limit and the metadata
log's directory and log settings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import attrs

from quorum.config import ServerConfig
from quorum.controller.results import ControllerConfig
from quorum.log import LogConfig, partition_dir
from quorum.node.errors import NodeStartupError
from quorum.raft import RaftConfig
from quorum.raft.config import MAX_BATCH_SIZE_BYTES

__all__ = ["METADATA_TOPIC", "NodeSettings", "controller_config", "node_settings"]

METADATA_TOPIC: Final = "__cluster_metadata"
# room above the 8 MiB batch limit for one oversized record and batch framing
_METADATA_MAX_MESSAGE_BYTES: Final = MAX_BATCH_SIZE_BYTES + 1024 * 1024
# reconnects back off exponentially from retry.backoff.ms up to this (Kafka's
# reconnect.backoff.max.ms default)
_RECONNECT_BACKOFF_MAX_MS: Final = 1000


@attrs.frozen(kw_only=True)
class NodeSettings:
    node_id: int
    cluster_id: str
    # voter id -> (host, port) of its controller listener
    voters: dict[int, tuple[str, int]]
    listener_name: str
    bind_host: str | None
    bind_port: int
    advertised_host: str
    advertised_port: int
    metadata_partition_dir: Path
    raft: RaftConfig
    log: LogConfig
    max_request_bytes: int
    controller: ControllerConfig
    # the committed image is written as a snapshot after this many bytes of records
    snapshot_max_bytes: int = 20 * 1024 * 1024
    reconnect_backoff_max_ms: int = _RECONNECT_BACKOFF_MAX_MS
    # how long a resigning leader waits for EndQuorumEpoch answers on shutdown
    shutdown_grace_ms: int = 500


def node_settings(config: ServerConfig, cluster_id: str) -> NodeSettings:
    """Map a checked ``ServerConfig`` of a controller onto the node's settings."""
    if not config.is_controller or config.is_broker:
        roles = ",".join(sorted(r.value for r in config.process_roles))
        raise NodeStartupError(
            f"process.roles={roles}: this pykraft node runs process.roles=controller "
            f"only (brokers come with the data-plane issue)"
        )
    if not config.quorum_voters:
        raise NodeStartupError(
            "controller.quorum.voters is empty: pykraft runs static quorums only; list "
            "every voter as id@host:port"
        )
    bound = config.controller_listeners[0]
    advertised = config.advertised_controller_listeners[0]
    raft = RaftConfig(
        election_timeout_ms=config.quorum_election_timeout_ms,
        fetch_timeout_ms=config.quorum_fetch_timeout_ms,
        election_backoff_max_ms=config.quorum_election_backoff_max_ms,
        request_timeout_ms=config.quorum_request_timeout_ms,
        retry_backoff_ms=config.quorum_retry_backoff_ms,
        append_linger_ms=config.quorum_append_linger_ms,
        metadata_max_retention_bytes=config.metadata_max_retention_bytes,
    )
    log = LogConfig(
        segment_bytes=config.metadata_log_segment_bytes,
        max_message_bytes=_METADATA_MAX_MESSAGE_BYTES,
    )
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
        raft=raft,
        log=log,
        max_request_bytes=config.socket_request_max_bytes,
        controller=controller_config(config, cluster_id),
        snapshot_max_bytes=config.metadata_snapshot_max_bytes,
        reconnect_backoff_max_ms=max(_RECONNECT_BACKOFF_MAX_MS, config.quorum_retry_backoff_ms),
    )


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
