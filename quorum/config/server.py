"""``ServerConfig``: the settings of one pykraft node, one line per Kafka key.

The class body is the schema: each field names its Kafka key, parser,
Kafka's default (as text, checked against the apache/kafka sources) and
range checks. Adding a setting is adding one line here. Settings Kafka
derives from others (``log.dirs`` falling back to ``log.dir``, retention in
ms/minutes/hours, advertised listeners falling back to listeners) are
stored as given and resolved by the properties below.
"""

from __future__ import annotations

from attrs import frozen

from quorum.config.schema import (
    BOOLEAN,
    INT,
    LONG,
    REQUIRED,
    STRING,
    InvalidValue,
    at_least,
    one_of,
    setting,
)
from quorum.config.values import (
    Endpoint,
    HostPort,
    ProcessRole,
    SecurityProtocol,
    Voter,
    parse_host_port,
    parse_host_ports,
    parse_listener_names,
    parse_listeners,
    parse_paths,
    parse_process_roles,
    parse_security_protocol_map,
    parse_voters,
)

__all__ = ["DEFAULT_SECURITY_PROTOCOL_MAP", "ServerConfig"]

DEFAULT_SECURITY_PROTOCOL_MAP = {p.value: p for p in SecurityProtocol}
_MS_PER_MINUTE = 60_000
_MS_PER_HOUR = 60 * _MS_PER_MINUTE


def _listener_name(text: str) -> str:
    names = parse_listener_names(text)
    if len(names) != 1:
        raise InvalidValue("Expected one listener name")
    return names[0]


@frozen(kw_only=True)
class ServerConfig:
    # --- identity ---------------------------------------------------------------
    process_roles: frozenset[ProcessRole] = setting("process.roles", parse_process_roles, REQUIRED)
    node_id: int = setting("node.id", INT, REQUIRED, at_least(0))
    broker_rack: str | None = setting("broker.rack", STRING, None)

    # --- the metadata quorum (QuorumConfig) -------------------------------------------
    quorum_voters: tuple[Voter, ...] = setting("controller.quorum.voters", parse_voters, "")
    quorum_bootstrap_servers: tuple[HostPort, ...] = setting("controller.quorum.bootstrap.servers", parse_host_ports, "")
    quorum_election_timeout_ms: int = setting("controller.quorum.election.timeout.ms", INT, "1000", at_least(1))
    quorum_fetch_timeout_ms: int = setting("controller.quorum.fetch.timeout.ms", INT, "2000", at_least(1))
    quorum_election_backoff_max_ms: int = setting("controller.quorum.election.backoff.max.ms", INT, "1000", at_least(1))
    quorum_request_timeout_ms: int = setting("controller.quorum.request.timeout.ms", INT, "2000", at_least(1))
    quorum_retry_backoff_ms: int = setting("controller.quorum.retry.backoff.ms", INT, "20", at_least(0))
    quorum_append_linger_ms: int = setting("controller.quorum.append.linger.ms", INT, "25", at_least(0))
    # pykraft's own key: how long news of a higher high watermark waits for records to ride along
    quorum_high_watermark_notice_ms: int = setting("controller.quorum.high.watermark.notice.ms", INT, "5", at_least(0))

    # --- listeners ----------------------------------------------------------------
    listeners: tuple[Endpoint, ...] = setting("listeners", parse_listeners, "PLAINTEXT://:9092")
    advertised_listeners_config: tuple[Endpoint, ...] | None = setting("advertised.listeners", parse_listeners, None)
    controller_listener_names: tuple[str, ...] = setting("controller.listener.names", parse_listener_names, "")
    security_protocol_map_config: tuple[tuple[str, SecurityProtocol], ...] | None = setting("listener.security.protocol.map", parse_security_protocol_map, None)
    inter_broker_listener_name_config: str | None = setting("inter.broker.listener.name", _listener_name, None)
    socket_request_max_bytes: int = setting("socket.request.max.bytes", INT, "104857600", at_least(1))
    # pykraft's own key: where GET /metrics answers in Prometheus' text format (unset: nowhere)
    metrics_http_listener: HostPort | None = setting("metrics.http.listener", parse_host_port, None)

    # --- storage (log.dirs; the metadata log, KRaftConfigs) -----------------------------
    log_dirs_config: tuple[str, ...] | None = setting("log.dirs", parse_paths, None)
    log_dir: str = setting("log.dir", STRING, "/tmp/kafka-logs")
    metadata_log_dir_config: str | None = setting("metadata.log.dir", STRING, None)
    metadata_log_segment_bytes: int = setting("metadata.log.segment.bytes", INT, "1073741824", at_least(12))
    metadata_log_segment_ms: int = setting("metadata.log.segment.ms", LONG, "604800000", at_least(1))
    metadata_max_retention_bytes: int = setting("metadata.max.retention.bytes", LONG, "104857600")
    metadata_max_retention_ms: int = setting("metadata.max.retention.ms", LONG, "604800000")
    metadata_snapshot_max_bytes: int = setting("metadata.log.max.record.bytes.between.snapshots", LONG, "20971520", at_least(1))
    metadata_snapshot_max_interval_ms: int = setting("metadata.log.max.snapshot.interval.ms", LONG, "3600000", at_least(0))
    # pykraft's own key: Kafka's raft client applies the two retention settings
    # above every 60 s, hard-coded; tests need it sooner
    metadata_log_cleaner_interval_ms: int = setting("metadata.log.cleaner.interval.ms", LONG, "60000", at_least(1))

    # --- data logs (ServerLogConfigs) -------------------------------------------------
    log_segment_bytes: int = setting("log.segment.bytes", INT, "1073741824", at_least(14))
    log_roll_ms_config: int | None = setting("log.roll.ms", LONG, None, at_least(1))
    log_roll_hours: int = setting("log.roll.hours", INT, "168", at_least(1))
    log_roll_jitter_ms_config: int | None = setting("log.roll.jitter.ms", LONG, None, at_least(0))
    log_roll_jitter_hours: int = setting("log.roll.jitter.hours", INT, "0", at_least(0))
    log_index_size_max_bytes: int = setting("log.index.size.max.bytes", INT, "10485760", at_least(4))
    log_index_interval_bytes: int = setting("log.index.interval.bytes", INT, "4096", at_least(0))
    log_retention_ms_config: int | None = setting("log.retention.ms", LONG, None)
    log_retention_minutes: int | None = setting("log.retention.minutes", INT, None)
    log_retention_hours: int = setting("log.retention.hours", INT, "168")
    log_retention_bytes: int = setting("log.retention.bytes", LONG, "-1")
    log_retention_check_interval_ms: int = setting("log.retention.check.interval.ms", LONG, "300000", at_least(1))
    log_flush_interval_messages: int = setting("log.flush.interval.messages", LONG, "9223372036854775807", at_least(1))
    log_flush_interval_ms: int | None = setting("log.flush.interval.ms", LONG, None, at_least(0))
    log_flush_scheduler_interval_ms: int = setting("log.flush.scheduler.interval.ms", LONG, "9223372036854775807")
    log_flush_offset_checkpoint_interval_ms: int = setting("log.flush.offset.checkpoint.interval.ms", INT, "60000", at_least(0))
    log_flush_start_offset_checkpoint_interval_ms: int = setting("log.flush.start.offset.checkpoint.interval.ms", INT, "60000", at_least(0))
    num_recovery_threads_per_data_dir: int = setting("num.recovery.threads.per.data.dir", INT, "1", at_least(1))
    # pykraft's own key: segment files held open at once by all of a broker's logs (Kafka
    # holds every segment open and leaves the bound to the process's file limit)
    log_max_open_files: int = setting("log.max.open.files", INT, "1000", at_least(1))

    # --- brokers, replication, groups -------------------------------------------------
    broker_heartbeat_interval_ms: int = setting("broker.heartbeat.interval.ms", INT, "2000", at_least(1))
    broker_session_timeout_ms: int = setting("broker.session.timeout.ms", INT, "9000", at_least(1))
    replica_lag_time_max_ms: int = setting("replica.lag.time.max.ms", LONG, "30000", at_least(1))
    # pykraft's own key: false makes a broker a metadata observer that hosts no partition data
    # (no Produce or Fetch; the control-plane scale test runs its 100,000 partitions so)
    broker_data_plane_enable: bool = setting("broker.data.plane.enable", BOOLEAN, "true")
    replica_fetch_max_bytes: int = setting("replica.fetch.max.bytes", INT, "1048576", at_least(0))
    replica_fetch_response_max_bytes: int = setting("replica.fetch.response.max.bytes", INT, "10485760", at_least(0))
    replica_fetch_wait_max_ms: int = setting("replica.fetch.wait.max.ms", INT, "500", at_least(0))
    replica_fetch_min_bytes: int = setting("replica.fetch.min.bytes", INT, "1")
    replica_fetch_backoff_ms: int = setting("replica.fetch.backoff.ms", INT, "1000", at_least(0))
    replica_high_watermark_checkpoint_interval_ms: int = setting("replica.high.watermark.checkpoint.interval.ms", LONG, "5000", at_least(1))
    max_incremental_fetch_session_cache_slots: int = setting("max.incremental.fetch.session.cache.slots", INT, "1000", at_least(0))
    message_max_bytes: int = setting("message.max.bytes", INT, "1048588", at_least(0))
    log_message_timestamp_type: str = setting("log.message.timestamp.type", STRING, "CreateTime", one_of("CreateTime", "LogAppendTime"))
    auto_create_topics_enable: bool = setting("auto.create.topics.enable", BOOLEAN, "true")
    num_partitions: int = setting("num.partitions", INT, "1", at_least(1))
    default_replication_factor: int = setting("default.replication.factor", INT, "1", at_least(1))
    # unset: Kafka's 1 for brokers, while the controller gives new topics a majority
    min_insync_replicas_config: int | None = setting("min.insync.replicas", INT, None, at_least(1))
    unclean_leader_election_enable: bool = setting("unclean.leader.election.enable", BOOLEAN, "false")
    auto_leader_rebalance_enable: bool = setting("auto.leader.rebalance.enable", BOOLEAN, "true")
    leader_imbalance_check_interval_seconds: int = setting("leader.imbalance.check.interval.seconds", LONG, "300", at_least(1))
    initial_broker_registration_timeout_ms: int = setting("initial.broker.registration.timeout.ms", INT, "60000", at_least(1))
    # how long a broker waits for the controller's answer to a request that keeps no
    # session alive (its registration); heartbeats wait at most half a session
    controller_socket_timeout_ms: int = setting("controller.socket.timeout.ms", INT, "30000", at_least(1))
    group_initial_rebalance_delay_ms: int = setting("group.initial.rebalance.delay.ms", INT, "3000", at_least(0))
    group_min_session_timeout_ms: int = setting("group.min.session.timeout.ms", INT, "6000", at_least(1))
    group_max_session_timeout_ms: int = setting("group.max.session.timeout.ms", INT, "1800000", at_least(1))
    group_max_size: int = setting("group.max.size", INT, "2147483647", at_least(1))
    offsets_topic_num_partitions: int = setting("offsets.topic.num.partitions", INT, "50", at_least(1))
    offsets_topic_replication_factor: int = setting("offsets.topic.replication.factor", INT, "3", at_least(1))
    offsets_topic_segment_bytes: int = setting("offsets.topic.segment.bytes", INT, "104857600", at_least(1))
    offsets_retention_minutes: int = setting("offsets.retention.minutes", INT, "10080", at_least(1))
    offsets_retention_check_interval_ms: int = setting("offsets.retention.check.interval.ms", LONG, "600000", at_least(1))
    offsets_commit_timeout_ms: int = setting("offsets.commit.timeout.ms", INT, "5000", at_least(1))
    offsets_load_buffer_size: int = setting("offsets.load.buffer.size", INT, "5242880", at_least(1))
    offset_metadata_max_bytes: int = setting("offset.metadata.max.bytes", INT, "4096", at_least(0))
    producer_id_expiration_ms: int = setting("producer.id.expiration.ms", INT, "86400000", at_least(1))
    producer_id_expiration_check_interval_ms: int = setting("producer.id.expiration.check.interval.ms", INT, "600000", at_least(1))

    @property
    def min_insync_replicas(self) -> int:
        """``min.insync.replicas`` with Kafka's default of 1."""
        return 1 if self.min_insync_replicas_config is None else self.min_insync_replicas_config

    # --- roles ----------------------------------------------------------------
    @property
    def is_controller(self) -> bool:
        return ProcessRole.CONTROLLER in self.process_roles

    @property
    def is_broker(self) -> bool:
        return ProcessRole.BROKER in self.process_roles

    @property
    def voter_ids(self) -> frozenset[int]:
        return frozenset(v.node_id for v in self.quorum_voters)

    # --- storage --------------------------------------------------------------
    @property
    def log_dirs(self) -> tuple[str, ...]:
        """``log.dirs`` if set, else ``log.dir`` (both comma-separated lists)."""
        if self.log_dirs_config is not None:
            return self.log_dirs_config
        return parse_paths(self.log_dir)

    @property
    def metadata_log_dir(self) -> str:
        """``metadata.log.dir`` if set, else the first log directory."""
        if self.metadata_log_dir_config is not None:
            return self.metadata_log_dir_config
        assert self.log_dirs, "validation guarantees at least one log directory"
        return self.log_dirs[0]

    @property
    def log_retention_ms(self) -> int:
        """Retention in ms from ms, minutes or hours (first one set); -1 = unlimited."""
        if self.log_retention_ms_config is not None:
            millis = self.log_retention_ms_config
        elif self.log_retention_minutes is not None:
            millis = self.log_retention_minutes * _MS_PER_MINUTE
        else:
            millis = self.log_retention_hours * _MS_PER_HOUR
        return -1 if millis < 0 else millis

    @property
    def log_roll_ms(self) -> int:
        """``log.roll.ms``, else ``log.roll.hours`` (Kafka's ``logRollTimeMillis``)."""
        if self.log_roll_ms_config is not None:
            return self.log_roll_ms_config
        return self.log_roll_hours * _MS_PER_HOUR

    @property
    def log_roll_jitter_ms(self) -> int:
        """``log.roll.jitter.ms``, else ``log.roll.jitter.hours``."""
        if self.log_roll_jitter_ms_config is not None:
            return self.log_roll_jitter_ms_config
        return self.log_roll_jitter_hours * _MS_PER_HOUR

    @property
    def log_flush_ms(self) -> int:
        """``log.flush.interval.ms``, else ``log.flush.scheduler.interval.ms`` (Kafka's
        ``logFlushIntervalMs``: the default of the topic config ``flush.ms``)."""
        if self.log_flush_interval_ms is not None:
            return self.log_flush_interval_ms
        return self.log_flush_scheduler_interval_ms

    # --- listeners ------------------------------------------------------------
    @property
    def security_protocol_map(self) -> dict[str, SecurityProtocol]:
        """Listener name -> protocol; as in Kafka's KRaft mode, when the map is
        not set, controller listener names map to PLAINTEXT."""
        if self.security_protocol_map_config is not None:
            return dict(self.security_protocol_map_config)
        protocols = dict(DEFAULT_SECURITY_PROTOCOL_MAP)
        for name in self.controller_listener_names:
            protocols.setdefault(name, SecurityProtocol.PLAINTEXT)
        return protocols

    @property
    def advertised_listeners(self) -> tuple[Endpoint, ...]:
        if self.advertised_listeners_config is not None:
            return self.advertised_listeners_config
        return self.listeners

    @property
    def controller_listeners(self) -> tuple[Endpoint, ...]:
        """The listeners this node binds for controller traffic."""
        names = self.controller_listener_names
        return tuple(e for e in self.listeners if e.listener_name in names)

    @property
    def advertised_controller_listeners(self) -> tuple[Endpoint, ...]:
        """Per controller listener name (in order): advertised if given, else bound."""
        result = []
        for name in self.controller_listener_names:
            found = [e for e in self.advertised_listeners if e.listener_name == name]
            found += [e for e in self.listeners if e.listener_name == name]
            result.extend(found[:1])
        return tuple(result)

    @property
    def advertised_broker_listeners(self) -> tuple[Endpoint, ...]:
        names = self.controller_listener_names
        return tuple(e for e in self.advertised_listeners if e.listener_name not in names)

    @property
    def inter_broker_listener_name(self) -> str:
        """``inter.broker.listener.name``, else the PLAINTEXT listener (Kafka's default)."""
        return self.inter_broker_listener_name_config or SecurityProtocol.PLAINTEXT.value
