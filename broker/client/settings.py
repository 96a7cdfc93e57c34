"""Client settings: Kafka's keys, defaults and checks, typed once at the edge.

``producer_settings({"bootstrap.servers": "localhost:9092", "acks": "1"})``
turns Kafka-style text properties (what ``--producer-property acks=1``
passes) into a frozen ``ProducerSettings``; ``consumer_settings`` and
``admin_settings`` do the same for the consumer and the admin client. The
defaults are those of Kafka's ``ProducerConfig``, ``ConsumerConfig`` and
``AdminClientConfig``, with these departures, each because the feature is
not built yet (the setting is still accepted with the value that matches
what we do, so a config written for Kafka says so rather than being
silently misread):

* ``transactional.id`` is refused: pykraft has no transactions;
* ``isolation.level`` accepts only ``read_uncommitted``;
* ``security.protocol`` accepts only ``PLAINTEXT``;
* ``group.protocol`` accepts only ``classic`` (KIP-848's ``consumer``
  protocol is not served);
* serializer classes and interceptors are refused with a sentence that
  says what to do instead.

Consumer groups: without ``group.id`` a consumer has no group (``assign``
only), and ``enable.auto.commit`` is then off; set to ``true`` explicitly it
is an error, as in Kafka's ``ConsumerConfig``.

Every problem (unknown key, bad value, missing ``bootstrap.servers``) is
reported at once in one ``ConfigError`` that names the keys.

``enable.idempotence`` is ``true`` by default, as in Kafka 3.0+, and checked
as Kafka 4's ``ProducerConfig.postProcessAndValidateIdempotenceConfigs``
does: it needs ``acks=all``, ``retries`` above 0 and at most 5
``max.in.flight.requests.per.connection``. Set explicitly, a conflict is a
``ConfigError``; left at its default, ``acks`` other than all or
``retries=0`` turn idempotence off quietly (Kafka logs it), while more than
5 in flight stays an error (KAFKA-17927, Kafka 4.0: 3.x turned it off).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Final, TypeVar

import attrs

from broker.client.assignors import ASSIGNOR_NAMES
from quorum.config import ConfigError, ConfigProblem, HostPort
from quorum.config.schema import (
    BOOLEAN,
    INT,
    LONG,
    REQUIRED,
    STRING,
    InvalidValue,
    at_least,
    between,
    csv_entries,
    setting,
    structure_settings,
)
from quorum.config.values import parse_host_ports
from quorum.wire.compression import Compression, codec_available

__all__ = [
    "MAX_IN_FLIGHT_FOR_IDEMPOTENCE",
    "AdminClientSettings",
    "ClientSettings",
    "ConsumerSettings",
    "IsolationLevel",
    "OffsetResetStrategy",
    "ProducerSettings",
    "admin_settings",
    "consumer_settings",
    "idempotence_conflicts",
    "producer_settings",
    "settings_from",
]

_INT_MAX: Final = 2**31 - 1

S = TypeVar("S", bound="ClientSettings")


class OffsetResetStrategy(enum.Enum):
    EARLIEST = "earliest"
    LATEST = "latest"
    NONE = "none"


class IsolationLevel(enum.IntEnum):
    """The wire values of Fetch's and ListOffsets' ``isolation_level``."""

    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1


# -- value parsers -------------------------------------------------------------------------


def _bootstrap(text: str) -> tuple[HostPort, ...]:
    servers = parse_host_ports(text)
    if not servers:
        raise InvalidValue("give at least one host:port to connect to")
    return servers


def _optional_bootstrap(text: str) -> tuple[HostPort, ...]:
    return parse_host_ports(text) if text.strip() else ()


def _acks(text: str) -> int:
    values = {"all": -1, "-1": -1, "0": 0, "1": 1}
    if text.lower() not in values:
        raise InvalidValue("String must be one of: all, -1, 0, 1")
    return values[text.lower()]


def _compression(text: str) -> Compression:
    names = {c.name.lower(): c for c in Compression}
    codec = names.get(text.lower())
    if codec is None:
        raise InvalidValue(f"String must be one of: {', '.join(names)}")
    if not codec_available(codec):
        raise InvalidValue(f"the {text} codec needs its package: install pykraft[compression]")
    return codec


def _reset(text: str) -> OffsetResetStrategy:
    try:
        return OffsetResetStrategy(text.lower())
    except ValueError:
        raise InvalidValue("String must be one of: earliest, latest, none") from None


def _isolation(text: str) -> IsolationLevel:
    if text.lower() == "read_uncommitted":
        return IsolationLevel.READ_UNCOMMITTED
    if text.lower() == "read_committed":
        raise InvalidValue("read_committed needs transactions, which pykraft does not have yet")
    raise InvalidValue("String must be one of: read_committed, read_uncommitted")


def _optional(text: str) -> str | None:
    return text or None


def _strategies(text: str) -> tuple[str, ...]:
    names = csv_entries(text)
    unknown = [name for name in names if name not in ASSIGNOR_NAMES]
    if unknown:
        raise InvalidValue(f"unknown assignor {', '.join(unknown)}: pykraft's client has "
                           "range, roundrobin and cooperative-sticky")
    if not names:
        raise InvalidValue("name at least one assignor")
    return tuple(dict.fromkeys(ASSIGNOR_NAMES[name] for name in names))


def _group_protocol(text: str) -> str:
    if text.lower() != "classic":
        raise InvalidValue("pykraft serves the classic group protocol only")
    return "classic"


def _plaintext(text: str) -> str:
    if text.upper() != "PLAINTEXT":
        raise InvalidValue("pykraft's client speaks PLAINTEXT only for now")
    return "PLAINTEXT"


# -- settings classes ----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ClientSettings:
    """What every client shares (Kafka's ``CommonClientConfigs``)."""

    bootstrap_servers: tuple[HostPort, ...] = setting("bootstrap.servers", _bootstrap, REQUIRED)
    client_id: str = setting("client.id", STRING, "")
    request_timeout_ms: int = setting("request.timeout.ms", INT, "30000", at_least(0))
    retry_backoff_ms: int = setting("retry.backoff.ms", LONG, "100", at_least(0))
    retry_backoff_max_ms: int = setting("retry.backoff.max.ms", LONG, "1000", at_least(0))
    reconnect_backoff_ms: int = setting("reconnect.backoff.ms", LONG, "50", at_least(0))
    reconnect_backoff_max_ms: int = setting("reconnect.backoff.max.ms", LONG, "1000", at_least(0))
    metadata_max_age_ms: int = setting("metadata.max.age.ms", LONG, "300000", at_least(0))
    socket_connection_setup_timeout_ms: int = setting(
        "socket.connection.setup.timeout.ms", LONG, "10000", at_least(0)
    )
    security_protocol: str = setting("security.protocol", _plaintext, "PLAINTEXT")


@attrs.frozen(kw_only=True)
class ProducerSettings(ClientSettings):
    acks: int = setting("acks", _acks, "all")
    linger_ms: int = setting("linger.ms", LONG, "0", at_least(0))
    batch_size: int = setting("batch.size", INT, "16384", at_least(0))
    max_request_size: int = setting("max.request.size", INT, "1048576", at_least(0))
    compression_type: Compression = setting("compression.type", _compression, "none")
    retries: int = setting("retries", INT, str(_INT_MAX), between(0, _INT_MAX))
    delivery_timeout_ms: int = setting("delivery.timeout.ms", INT, "120000", at_least(0))
    max_in_flight_requests_per_connection: int = setting(
        "max.in.flight.requests.per.connection", INT, "5", at_least(1)
    )
    buffer_memory: int = setting("buffer.memory", LONG, str(32 * 1024 * 1024), at_least(0))
    max_block_ms: int = setting("max.block.ms", LONG, "60000", at_least(0))
    enable_idempotence: bool = setting("enable.idempotence", BOOLEAN, "true")
    partitioner_ignore_keys: bool = setting("partitioner.ignore.keys", BOOLEAN, "false")


@attrs.frozen(kw_only=True)
class ConsumerSettings(ClientSettings):
    fetch_min_bytes: int = setting("fetch.min.bytes", INT, "1", at_least(0))
    fetch_max_wait_ms: int = setting("fetch.max.wait.ms", INT, "500", at_least(0))
    fetch_max_bytes: int = setting("fetch.max.bytes", INT, "52428800", at_least(0))
    max_partition_fetch_bytes: int = setting(
        "max.partition.fetch.bytes", INT, "1048576", at_least(0)
    )
    auto_offset_reset: OffsetResetStrategy = setting("auto.offset.reset", _reset, "latest")
    default_api_timeout_ms: int = setting("default.api.timeout.ms", INT, "60000", at_least(0))
    max_poll_records: int = setting("max.poll.records", INT, "500", at_least(1))
    check_crcs: bool = setting("check.crcs", BOOLEAN, "true")
    isolation_level: IsolationLevel = setting("isolation.level", _isolation, "read_uncommitted")
    client_rack: str = setting("client.rack", STRING, "")
    allow_auto_create_topics: bool = setting("allow.auto.create.topics", BOOLEAN, "true")
    # consumer groups (Kafka's ConsumerConfig defaults)
    group_id: str | None = setting("group.id", _optional, None)
    group_instance_id: str | None = setting("group.instance.id", _optional, None)
    group_protocol: str = setting("group.protocol", _group_protocol, "classic")
    enable_auto_commit: bool = setting("enable.auto.commit", BOOLEAN, "true")
    auto_commit_interval_ms: int = setting("auto.commit.interval.ms", INT, "5000", at_least(0))
    session_timeout_ms: int = setting("session.timeout.ms", INT, "45000", at_least(1))
    heartbeat_interval_ms: int = setting("heartbeat.interval.ms", INT, "3000", at_least(1))
    max_poll_interval_ms: int = setting("max.poll.interval.ms", INT, "300000", at_least(1))
    partition_assignment_strategy: tuple[str, ...] = setting(
        "partition.assignment.strategy", _strategies, "range,cooperative-sticky"
    )
    exclude_internal_topics: bool = setting("exclude.internal.topics", BOOLEAN, "true")


@attrs.frozen(kw_only=True)
class AdminClientSettings(ClientSettings):
    # exactly one of the two is given (checked by admin_settings): brokers, or controllers
    # talked to directly (KIP-919's bootstrap.controllers)
    bootstrap_servers: tuple[HostPort, ...] = setting(
        "bootstrap.servers", _optional_bootstrap, ""
    )
    bootstrap_controllers: tuple[HostPort, ...] = setting(
        "bootstrap.controllers", _optional_bootstrap, ""
    )
    default_api_timeout_ms: int = setting("default.api.timeout.ms", INT, "60000", at_least(0))
    retries: int = setting("retries", INT, str(_INT_MAX), between(0, _INT_MAX))


# -- parsing -------------------------------------------------------------------------------

_BYTES: Final = "pykraft's clients take and return bytes: (de)serialize in your own code"
_NOT_YET: Final[Mapping[str, str]] = {
    "key.serializer": _BYTES,
    "value.serializer": _BYTES,
    "key.deserializer": _BYTES,
    "value.deserializer": _BYTES,
    "transactional.id": "transactions are not supported yet (pykraft has no transactions)",
    "transaction.timeout.ms": "transactions are not supported yet (pykraft has no transactions)",
    "interceptor.classes": "interceptors are not supported",
    "partitioner.class": "only Kafka's default partitioner is built in",
}


def _parse(cls: type[S], properties: Mapping[str, str], source: str | None) -> S:
    not_yet = [
        ConfigProblem(f"Unsupported configuration `{key}`: {_NOT_YET[key]}.", key=key)
        for key in properties
        if key in _NOT_YET
    ]
    rest = {k: v for k, v in properties.items() if k not in _NOT_YET}
    try:
        parsed = structure_settings(cls, rest, source=source)
    except ConfigError as error:
        raise ConfigError([*not_yet, *error.problems], source=source) from None
    if not_yet:
        raise ConfigError(not_yet, source=source)
    return parsed


def producer_settings(
    properties: Mapping[str, str], *, source: str | None = None
) -> ProducerSettings:
    """``ProducerSettings`` from Kafka-style properties; raises ConfigError."""
    parsed = _parse(ProducerSettings, properties, source)
    floor = parsed.linger_ms + parsed.request_timeout_ms
    if parsed.delivery_timeout_ms < floor:
        if "delivery.timeout.ms" in properties:
            raise ConfigError.single(
                "delivery.timeout.ms should be equal to or larger than linger.ms + "
                f"request.timeout.ms ({floor})",
                key="delivery.timeout.ms",
                source=source,
            )
        # Kafka raises it quietly when the user did not set it
        parsed = attrs.evolve(parsed, delivery_timeout_ms=floor)
    return _check_idempotence(parsed, "enable.idempotence" in properties, source)


# Kafka's ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION_FOR_IDEMPOTENCE
MAX_IN_FLIGHT_FOR_IDEMPOTENCE: Final = 5
_IN_FLIGHT_KEY: Final = "max.in.flight.requests.per.connection"


def idempotence_conflicts(settings: ProducerSettings) -> list[tuple[str, str]]:
    """(key, Kafka's ConfigException text) for each setting idempotence cannot work with."""
    conflicts = []
    if settings.retries == 0:
        conflicts.append(("retries", "Must set retries to non-zero when using the idempotent "
                                     "producer."))
    if settings.acks != -1:
        conflicts.append(("acks", "Must set acks to all in order to use the idempotent "
                                  "producer. Otherwise we cannot guarantee idempotence."))
    if settings.max_in_flight_requests_per_connection > MAX_IN_FLIGHT_FOR_IDEMPOTENCE:
        conflicts.append((_IN_FLIGHT_KEY,
                          "Must set max.in.flight.requests.per.connection to at most 5 to use "
                          "the idempotent producer."))
    return conflicts


def _check_idempotence(
    parsed: ProducerSettings, user_set: bool, source: str | None
) -> ProducerSettings:
    if not parsed.enable_idempotence:
        return parsed
    conflicts = idempotence_conflicts(parsed)
    # Kafka 4 refuses more than 5 in flight even when idempotence is only defaulted
    errors = conflicts if user_set else [c for c in conflicts if c[0] == _IN_FLIGHT_KEY]
    if errors:
        raise ConfigError([ConfigProblem(text, key=key) for key, text in errors], source=source)
    if conflicts:
        # Kafka: "Idempotence will be disabled because acks is set to 1, not set to 'all'."
        return attrs.evolve(parsed, enable_idempotence=False)
    return parsed


def consumer_settings(
    properties: Mapping[str, str], *, source: str | None = None
) -> ConsumerSettings:
    """``ConsumerSettings`` from Kafka-style properties; raises ConfigError."""
    parsed = _parse(ConsumerSettings, properties, source)
    if parsed.group_id is None and parsed.enable_auto_commit:
        if "enable.auto.commit" in properties:
            # Kafka's ConsumerConfig.maybeOverrideEnableAutoCommit text
            raise ConfigError.single(
                "enable.auto.commit cannot be set to true when default group id (null) is used.",
                key="enable.auto.commit", source=source,
            )
        parsed = attrs.evolve(parsed, enable_auto_commit=False)
    if parsed.group_id is not None and parsed.heartbeat_interval_ms >= parsed.session_timeout_ms:
        # Kafka's GroupRebalanceConfig / AbstractCoordinator check
        raise ConfigError.single(
            "heartbeat.interval.ms must be set lower than session.timeout.ms",
            key="heartbeat.interval.ms", source=source,
        )
    return parsed


def admin_settings(
    properties: Mapping[str, str], *, source: str | None = None
) -> AdminClientSettings:
    """``AdminClientSettings`` from Kafka-style properties; raises ConfigError."""
    parsed = _parse(AdminClientSettings, properties, source)
    if bool(parsed.bootstrap_servers) == bool(parsed.bootstrap_controllers):
        # Kafka's AdminBootstrapAddresses texts
        text = ("You cannot set both bootstrap.servers and bootstrap.controllers."
                if parsed.bootstrap_servers
                else "You must set either bootstrap.servers or bootstrap.controllers")
        raise ConfigError.single(text, key="bootstrap.servers", source=source)
    return parsed


def settings_from(cls: type[S], config: S | Mapping[str, Any]) -> S:
    """Settings given either as an instance or as Kafka-style properties."""
    if isinstance(config, cls):
        return config
    assert isinstance(config, Mapping), f"settings are {cls.__name__} or a mapping"
    parsers: dict[type, Any] = {
        ProducerSettings: producer_settings,
        ConsumerSettings: consumer_settings,
        AdminClientSettings: admin_settings,
    }
    parsed: S = parsers[cls]({str(k): str(v) for k, v in config.items()})
    return parsed
