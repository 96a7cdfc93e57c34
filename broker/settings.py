"""``BrokerSettings``: what a broker process needs from its ``ServerConfig``, mapped once.

The boundary between Kafka's setting names and the broker: the voters and
the address of each one's controller listener (from
``controller.quorum.voters``), the broker listeners it registers (advertised
name, host, port and security protocol code), the listener it serves, its
rack, the heartbeat and session timeouts, the metadata log's directory and
the Raft timeouts its observer core runs with (``controller.quorum.*``, as
a controller's) and how often it snapshots its image
(``metadata.log.max.record.bytes.between.snapshots``): the parts every
metadata node shares come from ``quorum.node.settings`` and are mapped the
same way. A config that cannot run a broker raises ``BrokerStartupError``
naming the setting to change.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

import attrs

from broker.errors import BrokerStartupError
from broker.group.config import GroupCoordinatorConfig
from broker.replica import ReplicaConfig
from quorum.config import Endpoint, SecurityProtocol, ServerConfig
from quorum.controller.results import ControllerConfig
from quorum.log import LogConfig
from quorum.log.config import data_log_config
from quorum.node.settings import (
    RaftNodeSettings,
    controller_config,
    metadata_log_config,
    metadata_raft_config,
    reconnect_backoff_max_ms,
)
from quorum.storage import METADATA_PARTITION_DIR

__all__ = [
    "SECURITY_PROTOCOL_CODES",
    "BrokerListener",
    "BrokerSettings",
    "OffsetsTopicSettings",
    "broker_settings",
    "group_coordinator_config",
]

# Kafka's SecurityProtocol ids, as BrokerRegistration carries them
SECURITY_PROTOCOL_CODES: Final[Mapping[SecurityProtocol, int]] = {
    SecurityProtocol.PLAINTEXT: 0,
    SecurityProtocol.SSL: 1,
    SecurityProtocol.SASL_PLAINTEXT: 2,
    SecurityProtocol.SASL_SSL: 3,
}
# an advertised listener without a host (bind every interface) is advertised as this
_DEFAULT_ADVERTISED_HOST: Final = "localhost"


@attrs.frozen
class BrokerListener:
    """One advertised broker listener as the broker registers it."""

    name: str
    host: str
    port: int  # 0: the port the listener is bound to, known once it is
    security_protocol: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


@attrs.frozen(kw_only=True)
class BrokerSettings(RaftNodeSettings):
    controller_listener_name: str
    # the listener this process serves (the first broker listener of ``listeners``)
    listener_name: str
    bind_host: str | None
    bind_port: int
    # every advertised broker listener, in config order
    advertised_listeners: tuple[BrokerListener, ...]
    rack: str | None
    heartbeat_interval_ms: int
    session_timeout_ms: int
    initial_registration_timeout_ms: int
    controller_socket_timeout_ms: int
    # the broker-level config values this node reports for itself (DescribeConfigs)
    static_configs: ControllerConfig
    # the data plane: where partition logs live (the first of log.dirs), their default
    # config (the topic configs' server defaults), the replica core's settings
    data_log_dir: Path
    data_log: LogConfig
    replica: ReplicaConfig
    inter_broker_listener_name: str
    high_watermark_checkpoint_interval_ms: int
    retention_check_interval_ms: int
    data_plane: bool  # broker.data.plane.enable
    auto_create_topics: bool  # auto.create.topics.enable
    # the group coordinator (group.*, offsets.*) and its __consumer_offsets topic
    groups: GroupCoordinatorConfig
    offsets_topic: OffsetsTopicSettings
    offsets_commit_timeout_ms: int

    @property
    def served_listener(self) -> BrokerListener:
        """The advertised form of the listener this process serves."""
        found = [e for e in self.advertised_listeners if e.name == self.listener_name]
        assert found, "broker_settings keeps the served listener among the advertised ones"
        return found[0]


def broker_settings(config: ServerConfig, cluster_id: str) -> BrokerSettings:
    """Map a checked ``ServerConfig`` with the broker role onto the broker's settings."""
    if not config.is_broker:
        roles = ",".join(sorted(r.value for r in config.process_roles))
        raise BrokerStartupError(
            f"process.roles={roles}: a broker needs the broker role (process.roles=broker)"
        )
    if not config.quorum_voters:
        raise BrokerStartupError(
            "controller.quorum.voters is empty: pykraft runs static quorums only; list "
            "every voter as id@host:port (the address of its controller listener)"
        )
    if not config.controller_listener_names:
        raise BrokerStartupError(
            "controller.listener.names is empty: name the listener the controllers serve "
            "(e.g. controller.listener.names=CONTROLLER)"
        )
    bound = _served_listener(config)
    return BrokerSettings(
        node_id=config.node_id,
        cluster_id=cluster_id,
        voters={v.node_id: (v.host, v.port) for v in config.quorum_voters},
        controller_listener_name=config.controller_listener_names[0],
        listener_name=bound.listener_name,
        bind_host=bound.host,
        bind_port=bound.port,
        advertised_listeners=_advertised(config, bound),
        rack=config.broker_rack,
        heartbeat_interval_ms=config.broker_heartbeat_interval_ms,
        session_timeout_ms=config.broker_session_timeout_ms,
        initial_registration_timeout_ms=config.initial_broker_registration_timeout_ms,
        controller_socket_timeout_ms=config.controller_socket_timeout_ms,
        static_configs=controller_config(config, cluster_id),
        data_log_dir=Path(config.log_dirs[0]),
        data_log=attrs.evolve(data_log_config(config), max_message_bytes=config.message_max_bytes),
        replica=replica_config(config),
        inter_broker_listener_name=config.inter_broker_listener_name,
        high_watermark_checkpoint_interval_ms=config.replica_high_watermark_checkpoint_interval_ms,
        retention_check_interval_ms=config.log_retention_check_interval_ms,
        data_plane=config.broker_data_plane_enable,
        auto_create_topics=config.auto_create_topics_enable,
        groups=group_coordinator_config(config),
        offsets_topic=OffsetsTopicSettings(
            partitions=config.offsets_topic_num_partitions,
            replication_factor=config.offsets_topic_replication_factor,
            segment_bytes=config.offsets_topic_segment_bytes,
        ),
        offsets_commit_timeout_ms=config.offsets_commit_timeout_ms,
        metadata_partition_dir=Path(config.metadata_log_dir) / METADATA_PARTITION_DIR,
        raft=metadata_raft_config(config),
        log=metadata_log_config(config),
        max_request_bytes=config.socket_request_max_bytes,
        snapshot_max_bytes=config.metadata_snapshot_max_bytes,
        snapshot_max_interval_ms=config.metadata_snapshot_max_interval_ms,
        metrics_listener=config.metrics_http_listener,
        reconnect_backoff_max_ms=reconnect_backoff_max_ms(config),
    )


@attrs.frozen(kw_only=True)
class OffsetsTopicSettings:
    """How ``__consumer_offsets`` is created on first use (``offsets.topic.*``)."""

    partitions: int
    replication_factor: int
    segment_bytes: int


def group_coordinator_config(config: ServerConfig) -> GroupCoordinatorConfig:
    """The group coordinator's settings (Kafka's ``group.*`` and ``offsets.*`` keys)."""
    if config.group_min_session_timeout_ms > config.group_max_session_timeout_ms:
        raise BrokerStartupError(
            f"group.min.session.timeout.ms={config.group_min_session_timeout_ms} is above "
            f"group.max.session.timeout.ms={config.group_max_session_timeout_ms}"
        )
    return GroupCoordinatorConfig(
        min_session_timeout_ms=config.group_min_session_timeout_ms,
        max_session_timeout_ms=config.group_max_session_timeout_ms,
        initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
        max_size=config.group_max_size,
        offsets_retention_ms=config.offsets_retention_minutes * 60_000,
        offsets_retention_check_interval_ms=config.offsets_retention_check_interval_ms,
        offset_metadata_max_bytes=config.offset_metadata_max_bytes,
        offsets_topic_num_partitions=config.offsets_topic_num_partitions,
    )


def replica_config(config: ServerConfig) -> ReplicaConfig:
    """The replica core's settings (Kafka's ``replica.*`` keys and the topic defaults)."""
    return ReplicaConfig(
        broker_id=config.node_id,
        replica_lag_time_max_ms=config.replica_lag_time_max_ms,
        replica_fetch_max_bytes=config.replica_fetch_max_bytes,
        replica_fetch_response_max_bytes=config.replica_fetch_response_max_bytes,
        replica_fetch_wait_max_ms=config.replica_fetch_wait_max_ms,
        replica_fetch_min_bytes=config.replica_fetch_min_bytes,
        replica_fetch_backoff_ms=config.replica_fetch_backoff_ms,
        max_incremental_fetch_session_cache_slots=config.max_incremental_fetch_session_cache_slots,
        min_insync_replicas=config.min_insync_replicas,
        message_max_bytes=config.message_max_bytes,
        log_append_time=config.log_message_timestamp_type == "LogAppendTime",
        producer_id_expiration_ms=config.producer_id_expiration_ms,
        producer_id_expiration_check_interval_ms=config.producer_id_expiration_check_interval_ms,
    )


def _served_listener(config: ServerConfig) -> Endpoint:
    names = config.controller_listener_names
    broker_listeners = [e for e in config.listeners if e.listener_name not in names]
    if not broker_listeners:
        listed = ",".join(str(e) for e in config.listeners)
        raise BrokerStartupError(
            f"listeners={listed} has no broker listener: every listener is named in "
            f"controller.listener.names={','.join(names)}; add one such as "
            "PLAINTEXT://:9092"
        )
    return broker_listeners[0]


def _advertised(config: ServerConfig, bound: Endpoint) -> tuple[BrokerListener, ...]:
    protocols = config.security_protocol_map
    advertised = list(config.advertised_broker_listeners)
    if all(e.listener_name != bound.listener_name for e in advertised):
        raise BrokerStartupError(
            f"advertised.listeners does not name the broker listener {bound.listener_name}: "
            f"advertise it (e.g. {bound.listener_name}://host:{bound.port})"
        )
    result = []
    for endpoint in advertised:
        protocol = protocols.get(endpoint.listener_name)
        if protocol is None:
            raise BrokerStartupError(
                f"listener.security.protocol.map has no protocol for listener "
                f"{endpoint.listener_name} (add {endpoint.listener_name}:PLAINTEXT)"
            )
        result.append(
            BrokerListener(
                name=endpoint.listener_name,
                host=endpoint.host or _DEFAULT_ADVERTISED_HOST,
                port=endpoint.port,
                security_protocol=SECURITY_PROTOCOL_CODES[protocol],
            )
        )
    return tuple(result)

