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
    assert settings.enable_idempotence is True


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
    with pytest.raises(ConfigError, match=r"classic group protocol only"):
        consumer_settings(BOOT | {"group.id": "g", "group.protocol": "consumer"})
    with pytest.raises(ConfigError, match=r"transactional\.id.*no transactions"):
        producer_settings(BOOT | {"transactional.id": "tx"})
    with pytest.raises(ConfigError, match="transactions"):
        consumer_settings(BOOT | {"isolation.level": "read_committed"})


def test_group_settings_take_kafkas_defaults_and_checks() -> None:
    settings = consumer_settings(BOOT | {"group.id": "g"})
    assert (settings.group_id, settings.enable_auto_commit, settings.session_timeout_ms,
            settings.heartbeat_interval_ms, settings.max_poll_interval_ms,
            settings.auto_commit_interval_ms) == ("g", True, 45_000, 3_000, 300_000, 5_000)
    assert settings.partition_assignment_strategy == ("range", "cooperative-sticky")
    # without a group, auto-commit is off; asked for explicitly, it is Kafka's error
    assert consumer_settings(BOOT).enable_auto_commit is False
    with pytest.raises(ConfigError, match="default group id"):
        consumer_settings(BOOT | {"enable.auto.commit": "true"})
    named = consumer_settings(BOOT | {"group.id": "g", "partition.assignment.strategy":
                                      "org.apache.kafka.clients.consumer.RoundRobinAssignor,"
                                      " cooperative-sticky"})
    assert named.partition_assignment_strategy == ("roundrobin", "cooperative-sticky")
    with pytest.raises(ConfigError, match="unknown assignor sticky"):
        consumer_settings(BOOT | {"group.id": "g", "partition.assignment.strategy": "sticky"})
    with pytest.raises(ConfigError, match=r"lower than session\.timeout\.ms"):
        consumer_settings(BOOT | {"group.id": "g", "heartbeat.interval.ms": "50000"})


def test_delivery_timeout_is_raised_quietly_only_when_the_user_did_not_set_it() -> None:
    settings = producer_settings(BOOT | {"request.timeout.ms": "200000"})
    assert settings.delivery_timeout_ms == 200_000
    with pytest.raises(ConfigError, match=r"linger\.ms \+ request\.timeout\.ms"):
        producer_settings(BOOT | {"request.timeout.ms": "200000", "delivery.timeout.ms": "1000"})
    assert isinstance(producer_settings(BOOT), ProducerSettings)


@pytest.mark.parametrize(
    ("conflict", "message"),
    [
        ({"acks": "1"}, "Must set acks to all in order to use the idempotent producer"),
        ({"acks": "0"}, "Must set acks to all"),
        ({"retries": "0"}, "Must set retries to non-zero when using the idempotent producer"),
    ],
)
def test_idempotence_conflicts_are_errors_when_set_and_turn_it_off_when_defaulted(
    conflict: dict[str, str], message: str
) -> None:
    assert producer_settings(BOOT | conflict).enable_idempotence is False
    with pytest.raises(ConfigError, match=message):
        producer_settings(BOOT | conflict | {"enable.idempotence": "true"})
    assert producer_settings(BOOT | conflict | {"enable.idempotence": "false"}) is not None


def test_idempotence_stays_on_within_its_limits() -> None:
    explicit = BOOT | {"enable.idempotence": "true", "acks": "all", "retries": "1",
                       "max.in.flight.requests.per.connection": "5"}
    assert producer_settings(explicit).enable_idempotence is True
    assert producer_settings(BOOT | {"acks": "-1"}).enable_idempotence is True


def test_more_than_five_in_flight_is_refused_unless_idempotence_is_turned_off() -> None:
    # Kafka 4.0 (KAFKA-17927): an error even when idempotence is only the default
    six = BOOT | {"max.in.flight.requests.per.connection": "6"}
    for properties in (six, six | {"enable.idempotence": "true"}):
        with pytest.raises(ConfigError, match="to at most 5 to use the idempotent producer"):
            producer_settings(properties)
    allowed = producer_settings(six | {"enable.idempotence": "false"})
    assert allowed.max_in_flight_requests_per_connection == 6
