"""Client settings from Kafka-style properties: Kafka's names, defaults and errors."""

from __future__ import annotations

import pytest

from broker.client import (
    OffsetResetStrategy,
    ProducerSettings,
    admin_settings,
    consumer_settings,
    producer_settings,
)
from quorum.config import ConfigError
from quorum.wire.compression import Compression

BOOT = {"bootstrap.servers": "a:9092,b:9093"}


def test_producer_defaults_are_kafkas() -> None:
    settings = producer_settings(BOOT)
    assert [(s.host, s.port) for s in settings.bootstrap_servers] == [("a", 9092), ("b", 9093)]
    assert settings.acks == -1
    assert (settings.linger_ms, settings.batch_size, settings.max_request_size) == (0, 16384, 1 << 20)
    assert settings.compression_type is Compression.NONE
    assert (settings.retries, settings.retry_backoff_ms) == (2**31 - 1, 100)
    assert (settings.request_timeout_ms, settings.delivery_timeout_ms) == (30_000, 120_000)
    assert settings.max_in_flight_requests_per_connection == 5
    assert settings.metadata_max_age_ms == 300_000


def test_consumer_and_admin_defaults_are_kafkas() -> None:
    consumer = consumer_settings(BOOT)
    assert (consumer.fetch_min_bytes, consumer.fetch_max_wait_ms) == (1, 500)
    assert (consumer.fetch_max_bytes, consumer.max_partition_fetch_bytes) == (52428800, 1048576)
    assert consumer.auto_offset_reset is OffsetResetStrategy.LATEST
    assert consumer.default_api_timeout_ms == 60_000
    assert admin_settings(BOOT).default_api_timeout_ms == 60_000


def test_values_are_parsed_from_text_as_the_console_tools_pass_them() -> None:
    settings = producer_settings(BOOT | {"acks": "1", "linger.ms": "20", "compression.type": "gzip",
                                         "client.id": "bench"})
    assert (settings.acks, settings.linger_ms, settings.client_id) == (1, 20, "bench")
    assert settings.compression_type is Compression.GZIP
    assert producer_settings(BOOT | {"acks": "ALL"}).acks == -1
    earliest = consumer_settings(BOOT | {"auto.offset.reset": "earliest"})
    assert earliest.auto_offset_reset is OffsetResetStrategy.EARLIEST


def test_every_problem_is_reported_at_once_with_its_key() -> None:
    with pytest.raises(ConfigError) as raised:
        producer_settings(BOOT | {"acks": "2", "linger.ms": "soon", "no.such.key": "1"})
    assert set(raised.value.keys) >= {"acks", "linger.ms", "no.such.key"}
    assert "all, -1, 0, 1" in str(raised.value)


def test_bootstrap_servers_are_required() -> None:
    with pytest.raises(ConfigError, match=r"bootstrap\.servers"):
        consumer_settings({})


def test_features_not_built_yet_are_refused_with_what_to_do_instead() -> None:
    with pytest.raises(ConfigError, match=r"assign\(\) partitions and seek\(\) instead"):
        consumer_settings(BOOT | {"group.id": "g"})
    with pytest.raises(ConfigError, match=r"enable\.idempotence=false"):
        producer_settings(BOOT | {"enable.idempotence": "true"})
    with pytest.raises(ConfigError, match="transactions"):
        consumer_settings(BOOT | {"isolation.level": "read_committed"})


def test_delivery_timeout_is_raised_quietly_only_when_the_user_did_not_set_it() -> None:
    settings = producer_settings(BOOT | {"request.timeout.ms": "200000"})
    assert settings.delivery_timeout_ms == 200_000
    with pytest.raises(ConfigError, match=r"linger\.ms \+ request\.timeout\.ms"):
        producer_settings(BOOT | {"request.timeout.ms": "200000", "delivery.timeout.ms": "1000"})
    assert isinstance(producer_settings(BOOT), ProducerSettings)
