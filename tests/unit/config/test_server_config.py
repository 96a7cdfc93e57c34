"""ServerConfig: Kafka's names and defaults, one ConfigError per bad file, cross-field rules."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from quorum.config import (
    TEST_PROFILE_OVERRIDES,
    ConfigError,
    Endpoint,
    ProcessRole,
    SecurityProtocol,
    ServerConfig,
    Voter,
    load_server_config,
    server_config_from_properties,
    settings_of,
)

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "deploy" / "config"

CONTROLLER = {
    "process.roles": "controller",
    "node.id": "1",
    "controller.quorum.voters": "1@localhost:9093,2@localhost:9094,3@localhost:9095",
    "listeners": "CONTROLLER://localhost:9093",
    "controller.listener.names": "CONTROLLER",
    "log.dirs": "/var/lib/kraft",
}
BROKER = {
    "process.roles": "broker",
    "node.id": "4",
    "controller.quorum.voters": "1@localhost:9093,2@localhost:9094,3@localhost:9095",
    "listeners": "PLAINTEXT://localhost:9092",
    "controller.listener.names": "CONTROLLER",
    "log.dirs": "/var/lib/kraft",
}


def config_of(base: dict[str, str], **changes: str | None) -> ServerConfig:
    """``base`` with changes (keys spelled with _ for .; None removes a key)."""
    properties = dict(base)
    for name, value in changes.items():
        key = name.replace("_", ".")
        if value is None:
            properties.pop(key, None)
        else:
            properties[key] = value
    return server_config_from_properties(properties, source="test.properties")


def error_of(base: dict[str, str], **changes: str | None) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        config_of(base, **changes)
    return caught.value


# Defaults read from apache/kafka: QuorumConfig, KRaftConfigs, ServerLogConfigs,
# LogConfig, ReplicationConfigs, SocketServerConfigs, GroupCoordinatorConfig.
KAFKA_DEFAULTS = {
    "quorum_election_timeout_ms": 1000,
    "quorum_fetch_timeout_ms": 2000,
    "quorum_election_backoff_max_ms": 1000,
    "quorum_request_timeout_ms": 2000,
    "quorum_retry_backoff_ms": 20,
    "quorum_append_linger_ms": 25,
    "quorum_high_watermark_notice_ms": 5,
    "quorum_bootstrap_servers": (),
    "broker_session_timeout_ms": 9000,
    "broker_heartbeat_interval_ms": 2000,
    "replica_lag_time_max_ms": 30000,
    "num_partitions": 1,
    "default_replication_factor": 1,
    "min_insync_replicas": 1,
    "unclean_leader_election_enable": False,
    "auto_leader_rebalance_enable": True,
    "log_segment_bytes": 1073741824,
    "log_retention_ms": 7 * 24 * 3600 * 1000,
    "log_retention_bytes": -1,
    "log_retention_check_interval_ms": 300000,
    "socket_request_max_bytes": 104857600,
    "metadata_log_segment_bytes": 1073741824,
    "metadata_log_segment_ms": 7 * 24 * 3600 * 1000,
    "metadata_max_retention_bytes": 100 * 1024 * 1024,
    "metadata_max_retention_ms": 7 * 24 * 3600 * 1000,
    "group_initial_rebalance_delay_ms": 3000,
    "metadata_snapshot_max_bytes": 20 * 1024 * 1024,
    "metadata_snapshot_max_interval_ms": 3600 * 1000,
    # not Kafka keys: Kafka's raft client's hard-coded cleaner interval; metrics off
    "metrics_http_listener": None,
    "metadata_log_cleaner_interval_ms": 60 * 1000,
    "leader_imbalance_check_interval_seconds": 300,
    "initial_broker_registration_timeout_ms": 60000,
    "log_flush_interval_messages": 2**63 - 1,
    "log_flush_interval_ms": None,
    "log_flush_ms": 2**63 - 1,
    "log_flush_scheduler_interval_ms": 2**63 - 1,
    "log_flush_offset_checkpoint_interval_ms": 60000,
    "log_flush_start_offset_checkpoint_interval_ms": 60000,
    "log_roll_ms": 7 * 24 * 3600 * 1000,
    "log_roll_jitter_ms": 0,
    "log_index_size_max_bytes": 10 * 1024 * 1024,
    "log_index_interval_bytes": 4096,
    "num_recovery_threads_per_data_dir": 1,
    # not a Kafka key: Kafka holds every segment open
    "log_max_open_files": 1000,
    # not a Kafka key: a Kafka broker always hosts its partitions
    "broker_data_plane_enable": True,
    "auto_create_topics_enable": True,
    "replica_fetch_max_bytes": 1048576,
    "replica_fetch_response_max_bytes": 10485760,
    "replica_fetch_wait_max_ms": 500,
    "replica_fetch_min_bytes": 1,
    "replica_fetch_backoff_ms": 1000,
    "replica_high_watermark_checkpoint_interval_ms": 5000,
    "max_incremental_fetch_session_cache_slots": 1000,
    "message_max_bytes": 1048588,
    "log_message_timestamp_type": "CreateTime",
    "broker_rack": None,
    "inter_broker_listener_name": "PLAINTEXT",
}


@pytest.mark.parametrize(("attribute", "expected"), sorted(KAFKA_DEFAULTS.items()))
def test_unset_settings_take_kafkas_defaults(attribute: str, expected: object) -> None:
    assert getattr(config_of(CONTROLLER), attribute) == expected


def test_the_listener_default_is_kafkas_plaintext_9092() -> None:
    config = config_of(BROKER, listeners=None)
    assert config.listeners == (Endpoint("PLAINTEXT", None, 9092),)


def test_every_field_is_one_kafka_key_and_keys_are_unique() -> None:
    table = settings_of(ServerConfig)
    assert len(table) == len(attrs.fields(ServerConfig))
    assert all(key == key.lower() and " " not in key for key in table)


def test_a_valid_controller_config_is_structured() -> None:
    config = config_of(CONTROLLER)
    assert config.process_roles == frozenset({ProcessRole.CONTROLLER})
    assert config.node_id == 1
    assert config.quorum_voters[1] == Voter(2, "localhost", 9094)
    assert config.controller_listeners == (Endpoint("CONTROLLER", "localhost", 9093),)
    assert config.is_controller and not config.is_broker
    assert config.metadata_log_dir == "/var/lib/kraft"


def test_a_combined_node_is_valid_with_both_listeners() -> None:
    config = config_of(
        CONTROLLER, process_roles="broker,controller",
        listeners="PLAINTEXT://:9092,CONTROLLER://localhost:9093",
    )
    assert config.is_broker and config.is_controller
    assert [e.listener_name for e in config.advertised_broker_listeners] == ["PLAINTEXT"]


# --- one key, one message -------------------------------------------------------

def test_an_unknown_key_is_named_with_a_suggestion() -> None:
    error = error_of(CONTROLLER, **{"num.partition": "3"})
    assert error.keys == ("num.partition",)
    assert "Unknown configuration `num.partition`" in str(error)
    assert "Did you mean `num.partitions`?" in str(error)


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("node.id", "one", "Not a number of type INT"),
        ("node.id", "-1", "Value must be at least 0"),
        ("node.id", "2147483648", "Not a number of type INT"),
        ("node.id", "1.0", "Not a number of type INT"),
        ("controller.quorum.fetch.timeout.ms", "0", "Value must be at least 1"),
        ("replica.lag.time.max.ms", "1e3", "Not a number of type LONG"),
        ("unclean.leader.election.enable", "yes", "Expected value to be either true or false"),
        ("num.partitions", "0", "Value must be at least 1"),
        ("min.insync.replicas", "0", "Value must be at least 1"),
        ("process.roles", "controller,zookeeper", "String must be one of: broker, controller"),
        ("process.roles", "controller,controller", "Duplicate role names"),
        ("process.roles", " ", "pykraft runs only in KRaft mode"),
        ("listeners", "CONTROLLER:localhost:9093", "Unable to parse CONTROLLER:localhost:9093"),
        ("listeners", "CONTROLLER://localhost", "Unable to parse"),
        ("listeners", "CONTROLLER://localhost:70000", "port 70000 is not between 0 and 65535"),
        ("listeners", "A://:1,a://:2", "Each listener must have a different name"),
        ("controller.quorum.voters", "1@localhost", "no valid host and port"),
        ("controller.quorum.voters", "localhost:9093", "is not an id@host:port entry"),
        ("controller.quorum.voters", "x@localhost:9093", "Failed to parse voter ID"),
        ("controller.quorum.voters", "1@a@b:1", "is not an id@host:port entry"),
        ("controller.quorum.voters", "1@0.0.0.0:9093", "Host string (0.0.0.0) is not routeable"),
        ("controller.quorum.voters", "1@a:1,1@b:2", "voter ID 1 appears more than once"),
        ("controller.quorum.voters", "1@a:1,,2@b:2", "is not an id@host:port entry"),
        ("controller.quorum.bootstrap.servers", "localhost", "Failed to parse host and port"),
        ("listener.security.protocol.map", "CONTROLLER", "improperly formatted"),
        ("listener.security.protocol.map", "CONTROLLER:TLS", "Unknown security protocol TLS"),
        ("inter.broker.listener.name", "A,B", "Expected one listener name"),
    ],
)
def test_a_bad_value_names_the_key_and_the_reason(key: str, value: str, reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        server_config_from_properties({**CONTROLLER, key: value}, source="test.properties")
    assert caught.value.keys == (key,)
    message = str(caught.value)
    assert message.startswith(f"test.properties: Invalid value {value.strip()} for configuration {key}: ")
    assert reason in message


@pytest.mark.parametrize("key", ["process.roles", "node.id"])
def test_a_missing_required_key_is_named(key: str) -> None:
    error = error_of(CONTROLLER, **{key.replace(".", "_"): None})
    assert error.keys == (key,)
    assert f'Missing required configuration "{key}" which has no default value.' in str(error)


def test_every_problem_of_a_file_is_reported_at_once_in_line_order(tmp_path: Path) -> None:
    path = tmp_path / "bad.properties"
    path.write_text("num.partitions=0\nbogus=1\nnode.id=x\n")
    with pytest.raises(ConfigError) as caught:
        load_server_config(path)
    assert caught.value.keys == ("num.partitions", "bogus", "node.id", "process.roles")
    assert [p.line for p in caught.value.problems] == [1, 2, 3, None]
    assert str(caught.value).startswith(f"4 configuration problems in {path}:\n  line 1: ")


def test_a_single_problem_in_a_file_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "one.properties"
    lines = [f"{k}={v}" for k, v in CONTROLLER.items()] + ["num.partitions=-2"]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError) as caught:
        load_server_config(path)
    assert str(caught.value) == (
        f"{path}:{len(lines)}: Invalid value -2 for configuration num.partitions: "
        "Value must be at least 1"
    )


def test_a_blank_nullable_setting_means_unset() -> None:
    config = config_of(CONTROLLER, advertised_listeners="  ", broker_rack="")
    assert config.advertised_listeners_config is None and config.broker_rack is None
    assert config.advertised_listeners == config.listeners


def test_values_are_trimmed_as_kafka_trims_them() -> None:
    config = config_of(CONTROLLER, node_id=" 1  ", num_partitions="\t3 ")
    assert (config.node_id, config.num_partitions) == (1, 3)


# --- cross-field rules ------------------------------------------------------------

def test_a_controller_must_be_one_of_the_voters() -> None:
    error = error_of(CONTROLLER, node_id="7")
    assert error.keys == ("controller.quorum.voters",)
    assert "the node id 7 must be included in the set of voters" in str(error)


def test_a_broker_must_not_be_one_of_the_voters() -> None:
    error = error_of(BROKER, node_id="2")
    assert error.keys == ("controller.quorum.voters",)
    assert "just the 'broker' role, the node id 2 must not be included" in str(error)


def test_a_controller_needs_controller_listener_names() -> None:
    error = error_of(CONTROLLER, controller_listener_names=None)
    assert "controller.listener.names" in error.keys
    assert "must contain at least one value appearing in the 'listeners'" in str(error)


def test_a_controller_listener_name_must_be_a_listener() -> None:
    error = error_of(CONTROLLER, controller_listener_names="CONTROLLER,OTHER")
    assert error.keys == ("controller.listener.names",)
    assert "must only contain values appearing in the 'listeners'" in str(error)
    assert "missing: OTHER" in str(error)


def test_a_controller_only_node_binds_only_controller_listeners() -> None:
    error = error_of(CONTROLLER, listeners="CONTROLLER://localhost:9093,PLAINTEXT://:9092")
    assert error.keys == ("listeners",)
    assert "must only contain KRaft controller listeners" in str(error)


def test_a_broker_needs_controller_listener_names_it_does_not_bind() -> None:
    assert "must contain at least one value when running KRaft with just the broker role" in str(
        error_of(BROKER, controller_listener_names=None)
    )
    error = error_of(BROKER, listeners="PLAINTEXT://:9092,CONTROLLER://:9093")
    assert "must not contain a value appearing in the 'listeners'" in str(error)


def test_a_broker_needs_a_listener_that_is_not_a_controller_listener() -> None:
    error = error_of(
        CONTROLLER, process_roles="broker,controller", node_id="1",
        listeners="CONTROLLER://localhost:9093",
    )
    assert "There must be at least one broker advertised listener." in str(error)


def test_the_inter_broker_listener_must_be_advertised() -> None:
    error = error_of(BROKER, listeners="CLIENT://:9092", listener_security_protocol_map=(
        "CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    ))
    assert error.keys == ("inter.broker.listener.name",)
    assert "valid options based on currently configured listeners are CLIENT" in str(error)
    config = config_of(
        BROKER, listeners="CLIENT://:9092", inter_broker_listener_name="client",
        listener_security_protocol_map="CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    )
    assert config.inter_broker_listener_name == "CLIENT"


def test_advertised_listeners_must_be_bound_listeners() -> None:
    error = error_of(BROKER, advertised_listeners="OTHER://h:1", listener_security_protocol_map=(
        "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT,CONTROLLER:PLAINTEXT"
    ))
    assert "advertised.listeners" in error.keys
    assert "must be equal to or a subset of the ones defined in listeners" in str(error)


def test_advertising_the_wildcard_address_is_refused() -> None:
    error = error_of(BROKER, listeners="PLAINTEXT://0.0.0.0:9092")
    assert error.keys == ("listeners",)
    assert "cannot use the nonroutable meta-address 0.0.0.0" in str(error)
    config = config_of(
        BROKER, listeners="PLAINTEXT://0.0.0.0:9092", advertised_listeners="PLAINTEXT://h1:9092"
    )
    assert config.advertised_broker_listeners == (Endpoint("PLAINTEXT", "h1", 9092),)


def test_only_plaintext_listeners_are_supported() -> None:
    error = error_of(CONTROLLER, listener_security_protocol_map="CONTROLLER:SSL")
    assert "Listener CONTROLLER uses security protocol SSL" in str(error)


def test_a_listener_needs_a_security_protocol() -> None:
    error = error_of(
        BROKER, listeners="CLIENT://:9092",
        listener_security_protocol_map="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    )
    assert "No security protocol defined for listener CLIENT" in str(error)


def test_listeners_need_distinct_ports_except_ephemeral_ones() -> None:
    error = error_of(
        CONTROLLER, process_roles="broker,controller",
        listeners="PLAINTEXT://:9093,CONTROLLER://localhost:9093",
    )
    assert "Each listener must have a different port" in str(error)
    config_of(
        CONTROLLER, process_roles="broker,controller",
        listeners="PLAINTEXT://:0,CONTROLLER://localhost:0",
    )


def test_a_node_needs_voters_or_bootstrap_servers() -> None:
    error = error_of(BROKER, controller_quorum_voters=None)
    assert "either controller.quorum.bootstrap.servers must contain" in str(error)
    config = config_of(BROKER, controller_quorum_voters=None,
                       controller_quorum_bootstrap_servers="localhost:9093, [::1]:9094")
    assert [str(a) for a in config.quorum_bootstrap_servers] == ["localhost:9093", "[::1]:9094"]


def test_zero_retention_is_refused_and_the_key_is_the_one_set() -> None:
    assert error_of(CONTROLLER, log_retention_minutes="0").keys == ("log.retention.minutes",)
    assert error_of(CONTROLLER, log_retention_hours="0").keys == ("log.retention.hours",)


def test_cross_field_problems_point_at_the_line_of_their_key(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    text = "\n".join(f"{k}={v}" for k, v in CONTROLLER.items()).replace("node.id=1", "node.id=9")
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_server_config(path)
    assert caught.value.problems[0].line == 3  # the controller.quorum.voters line


# --- derived settings -------------------------------------------------------------

def test_log_dirs_fall_back_to_log_dir_and_the_metadata_dir_to_the_first() -> None:
    config = config_of(CONTROLLER, log_dirs=None, log_dir="/a, /b")
    assert config.log_dirs == ("/a", "/b") and config.metadata_log_dir == "/a"
    assert config_of(CONTROLLER, log_dirs=None).log_dirs == ("/tmp/kafka-logs",)
    assert config_of(CONTROLLER, metadata_log_dir="/m").metadata_log_dir == "/m"


def test_retention_ms_takes_ms_then_minutes_then_hours() -> None:
    assert config_of(CONTROLLER, log_retention_hours="2").log_retention_ms == 7_200_000
    assert config_of(CONTROLLER, log_retention_minutes="3", log_retention_hours="2")\
        .log_retention_ms == 180_000
    assert config_of(CONTROLLER, log_retention_ms="5", log_retention_minutes="3")\
        .log_retention_ms == 5
    assert config_of(CONTROLLER, log_retention_ms="-7").log_retention_ms == -1


def test_roll_time_and_jitter_take_ms_then_hours() -> None:
    assert config_of(CONTROLLER, log_roll_hours="2").log_roll_ms == 7_200_000
    assert config_of(CONTROLLER, log_roll_ms="500", log_roll_hours="2").log_roll_ms == 500
    assert config_of(CONTROLLER, log_roll_jitter_hours="1").log_roll_jitter_ms == 3_600_000
    assert config_of(CONTROLLER, log_roll_jitter_ms="9").log_roll_jitter_ms == 9
    assert error_of(CONTROLLER, log_roll_ms="0").keys == ("log.roll.ms",)
    assert error_of(CONTROLLER, log_roll_hours="0").keys == ("log.roll.hours",)


def test_flush_ms_falls_back_to_the_flush_scheduler_interval() -> None:
    assert config_of(CONTROLLER, log_flush_interval_ms="250").log_flush_ms == 250
    assert config_of(CONTROLLER, log_flush_scheduler_interval_ms="900").log_flush_ms == 900


def test_controller_listener_names_map_to_plaintext_only_when_the_map_is_unset() -> None:
    config = config_of(CONTROLLER, controller_listener_names="controller")
    assert config.security_protocol_map["CONTROLLER"] is SecurityProtocol.PLAINTEXT
    assert config.security_protocol_map["SSL"] is SecurityProtocol.SSL


def test_advertised_controller_listeners_prefer_advertised_addresses() -> None:
    config = config_of(
        CONTROLLER, listeners="CONTROLLER://:9093", advertised_listeners="CONTROLLER://c1:9093"
    )
    assert config.advertised_controller_listeners == (Endpoint("CONTROLLER", "c1", 9093),)


# --- files: loading, overrides, samples, the test profile ------------------------

def test_overrides_replace_file_settings(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text("\n".join(f"{k}={v}" for k, v in CONTROLLER.items()))
    config = load_server_config(path, overrides={"num.partitions": "6", "node.id": "2"})
    assert (config.num_partitions, config.node_id) == (6, 2)
    with pytest.raises(ConfigError) as caught:
        load_server_config(path, overrides={"node.id": "x"})
    assert caught.value.problems[0].line is None


@pytest.mark.parametrize("node", [1, 2, 3])
def test_the_sample_controllers_form_one_quorum_on_distinct_ports(node: int) -> None:
    configs = [load_server_config(SAMPLES / f"controller-{n}.properties") for n in (1, 2, 3)]
    config = configs[node - 1]
    assert config.process_roles == frozenset({ProcessRole.CONTROLLER})
    assert config.node_id == node
    assert all(c.quorum_voters == config.quorum_voters for c in configs)
    voter = next(v for v in config.quorum_voters if v.node_id == node)
    assert [e.port for e in config.controller_listeners] == [voter.port]
    assert len({c.controller_listeners[0].port for c in configs}) == 3
    directories = [set(c.log_dirs) | {c.metadata_log_dir} for c in configs]
    assert not (directories[0] & directories[1] or directories[1] & directories[2])


def test_the_dev_controller_is_a_single_voter_on_9093_with_relative_dirs() -> None:
    config = load_server_config(SAMPLES / "dev-controller.properties")
    assert config.quorum_voters == (Voter(1, "localhost", 9093),)
    assert config.controller_listeners[0].port == 9093
    assert all(not Path(d).is_absolute() for d in (*config.log_dirs, config.metadata_log_dir))


def test_the_test_profile_only_overrides_known_settings_with_new_values() -> None:
    table = settings_of(ServerConfig)
    for key, value in TEST_PROFILE_OVERRIDES.items():
        assert key in table
        assert table[key].convert(value) != table[key].convert(str(table[key].default))


def test_the_test_profile_applies_to_every_sample() -> None:
    for path in sorted(SAMPLES.glob("*.properties")):
        config = load_server_config(path, overrides=TEST_PROFILE_OVERRIDES)
        assert config.quorum_election_timeout_ms == 300
        assert config.quorum_fetch_timeout_ms == 1000
        assert config.broker_heartbeat_interval_ms < config.broker_session_timeout_ms
        assert config.replica_lag_time_max_ms == 2000
        assert config.group_initial_rebalance_delay_ms == 0
        assert config.log_retention_check_interval_ms == 1000
