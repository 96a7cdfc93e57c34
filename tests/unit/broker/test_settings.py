"""A broker's settings from its server config, and the configs that cannot run a broker."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker import BrokerListener, BrokerStartupError, broker_settings
from quorum.config import (
    ServerConfig,
    load_server_config,
    server_config_from_properties,
    structure_settings,
)
from quorum.node import node_settings

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
BROKER = {
    "process.roles": "broker",
    "node.id": "4",
    "controller.quorum.voters": "1@c1:9093,2@c2:9093,3@c3:9093",
    "controller.listener.names": "CONTROLLER",
    "listeners": "PLAINTEXT://:9092,EXTERNAL://0.0.0.0:19092",
    "advertised.listeners": "PLAINTEXT://b4.internal:9092,EXTERNAL://b4.example:19092",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "broker.rack": "rack-a",
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "2000",
    "initial.broker.registration.timeout.ms": "7000",
    "controller.quorum.fetch.timeout.ms": "1000",
    "log.dirs": "/data/kafka",
    "metadata.log.dir": "/data/meta",
    "metadata.max.retention.bytes": "5000",
    "metadata.max.retention.ms": "86400000",
    "metadata.log.cleaner.interval.ms": "1500",
    "metadata.log.max.snapshot.interval.ms": "2500",
    "metrics.http.listener": "0.0.0.0:9404",
}


def config(**changes: str) -> ServerConfig:
    properties = {**BROKER, **{k.replace("_", "."): v for k, v in changes.items()}}
    return server_config_from_properties(properties)


def unchecked(properties: dict[str, str]) -> ServerConfig:
    """A config past parsing but not the cross-field checks (what a caller could build)."""
    return structure_settings(ServerConfig, properties)


def test_a_broker_config_maps_onto_the_broker_settings() -> None:
    settings = broker_settings(config(), CLUSTER_ID)
    assert (settings.node_id, settings.cluster_id) == (4, CLUSTER_ID)
    assert settings.voters == {1: ("c1", 9093), 2: ("c2", 9093), 3: ("c3", 9093)}
    assert settings.controller_listener_name == "CONTROLLER"
    assert (settings.listener_name, settings.bind_host, settings.bind_port) == (
        "PLAINTEXT", None, 9092
    )
    assert settings.advertised_listeners == (
        BrokerListener("PLAINTEXT", "b4.internal", 9092, 0),
        BrokerListener("EXTERNAL", "b4.example", 19092, 0),
    )
    assert str(settings.served_listener) == "PLAINTEXT://b4.internal:9092"
    assert settings.rack == "rack-a"
    assert (
        settings.heartbeat_interval_ms,
        settings.session_timeout_ms,
        settings.initial_registration_timeout_ms,
    ) == (500, 2000, 7000)
    assert settings.metadata_partition_dir == Path("/data/meta/__cluster_metadata-0")
    assert settings.raft.fetch_timeout_ms == 1000
    assert (settings.raft.metadata_max_retention_bytes, settings.raft.log_cleaner_interval_ms) == (
        5000, 1500
    )
    assert settings.snapshot_max_interval_ms == 2500
    assert settings.raft.metadata_max_retention_ms == 86_400_000
    assert settings.metrics_listener is not None and settings.metrics_listener.port == 9404


def test_an_advertised_listener_without_a_host_is_advertised_as_localhost() -> None:
    settings = broker_settings(
        config(listeners="PLAINTEXT://:0", advertised_listeners="PLAINTEXT://:0"), CLUSTER_ID
    )
    assert settings.advertised_listeners == (BrokerListener("PLAINTEXT", "localhost", 0, 0),)


def test_a_controller_only_config_is_not_a_broker() -> None:
    controller = {
        **BROKER, "process.roles": "controller", "node.id": "1",
        "listeners": "CONTROLLER://:9093",
    }
    del controller["advertised.listeners"]
    with pytest.raises(BrokerStartupError, match="needs the broker role"):
        broker_settings(server_config_from_properties(controller), CLUSTER_ID)


def test_a_broker_without_voters_is_refused_with_the_key_to_set() -> None:
    properties = {**BROKER, "controller.quorum.voters": ""}
    with pytest.raises(BrokerStartupError, match=r"controller\.quorum\.voters is empty"):
        broker_settings(unchecked(properties), CLUSTER_ID)


def test_a_broker_without_a_broker_listener_is_refused() -> None:
    properties = {**BROKER, "listeners": "CONTROLLER://:9093"}
    del properties["advertised.listeners"]
    with pytest.raises(BrokerStartupError, match="has no broker listener"):
        broker_settings(unchecked(properties), CLUSTER_ID)


def test_a_broker_without_controller_listener_names_is_refused() -> None:
    properties = {**BROKER, "controller.listener.names": ""}
    with pytest.raises(BrokerStartupError, match=r"controller\.listener\.names is empty"):
        broker_settings(unchecked(properties), CLUSTER_ID)


def test_a_served_listener_that_is_not_advertised_is_refused() -> None:
    properties = {**BROKER, "advertised.listeners": "EXTERNAL://b4.example:19092"}
    with pytest.raises(BrokerStartupError, match="does not name the broker listener PLAINTEXT"):
        broker_settings(unchecked(properties), CLUSTER_ID)


def test_the_sample_combined_node_maps_both_parts_onto_one_metadata_log() -> None:
    sample = Path(__file__).parents[3] / "deploy" / "config" / "combined.properties"
    combined = load_server_config(sample)
    broker = broker_settings(combined, CLUSTER_ID)
    controller = node_settings(combined, CLUSTER_ID)
    assert str(broker.served_listener) == "PLAINTEXT://localhost:9092"
    assert (controller.listener_name, controller.bind_port) == ("CONTROLLER", 9093)
    assert broker.voters == controller.voters == {1: ("localhost", 9093)}
    # the parts every metadata node shares are mapped the same way for both
    shared = ("node_id", "metadata_partition_dir", "raft", "log", "snapshot_max_bytes",
              "snapshot_max_interval_ms", "metrics_listener", "reconnect_backoff_max_ms",
              "max_request_bytes")
    assert [getattr(broker, f) for f in shared] == [getattr(controller, f) for f in shared]
