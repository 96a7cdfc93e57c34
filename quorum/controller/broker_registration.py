"""Broker registration checks and the RegisterBrokerRecord (Kafka's ClusterControlManager).

Checks in Kafka's order, the first failure answers: cluster id
(INCONSISTENT_CLUSTER_ID); a new incarnation while the registered one is
unfenced and its session alive (DUPLICATE_BROKER_REGISTRATION; a fenced
registration has no valid session, as in Kafka); a ZooKeeper broker
(BROKER_ID_NOT_REGISTERED); a finalized feature level outside what the
broker supports (UNSUPPORTED_VERSION: a broker that names no metadata.version
range supports only level 1, one that does not name another finalized
feature supports only level 0); listeners with a repeated name or an
unknown security protocol (INVALID_REGISTRATION; Kafka fails those with an
unknown server error).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from quorum.controller.broker_sessions import BrokerSessions
from quorum.controller.image import MetadataImage
from quorum.controller.results import ControllerContext
from quorum.wire.error_codes import Errors
from quorum.wire.messages.broker_lifecycle import (
    BrokerRegistrationRequest,
    BrokerRegistrationRequestFeature,
)
from quorum.wire.messages.metadata_records import (
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
    RegisterBrokerRecordBrokerFeature,
)

__all__ = ["METADATA_VERSION_FEATURE", "register_broker_record", "registration_problem"]

METADATA_VERSION_FEATURE: Final = "metadata.version"
# what a broker that names no metadata.version range supports (3.0-IV1, Kafka's rule)
_MINIMUM_KRAFT_METADATA_VERSION: Final = 1
# Kafka's SecurityProtocol ids: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
_SECURITY_PROTOCOLS: Final = frozenset({0, 1, 2, 3})


def _offered_features(
    request: BrokerRegistrationRequest,
) -> list[BrokerRegistrationRequestFeature]:
    offered = list({f.name: f for f in request.features}.values())
    if all(f.name != METADATA_VERSION_FEATURE for f in offered):
        offered.append(
            BrokerRegistrationRequestFeature(
                name=METADATA_VERSION_FEATURE,
                min_supported_version=_MINIMUM_KRAFT_METADATA_VERSION,
                max_supported_version=_MINIMUM_KRAFT_METADATA_VERSION,
            )
        )
    return offered


def _feature_problem(
    finalized: Mapping[str, int], offered: Sequence[BrokerRegistrationRequestFeature]
) -> str | None:
    """Why the broker cannot run at the finalized feature levels (None: it can)."""
    names = {f.name for f in offered}
    # a finalized feature the broker does not name: it supports level 0 only
    missing = [
        BrokerRegistrationRequestFeature(name=name)
        for name, level in sorted(finalized.items())
        if level != 0 and name not in names
    ]
    for feature in [*offered, *missing]:
        default = _MINIMUM_KRAFT_METADATA_VERSION if feature.name == METADATA_VERSION_FEATURE else 0
        level = finalized.get(feature.name, default)
        if not feature.min_supported_version <= level <= feature.max_supported_version:
            return (
                f"the broker does not support finalized version {level} of {feature.name}: "
                f"it supports versions {feature.min_supported_version} to "
                f"{feature.max_supported_version}"
            )
    return None


def _listener_problem(request: BrokerRegistrationRequest) -> str | None:
    names = [listener.name for listener in request.listeners]
    if len(set(names)) != len(names):
        return f"duplicate listener names in {names}"
    for listener in request.listeners:
        if listener.security_protocol not in _SECURITY_PROTOCOLS:
            return (
                f"unknown security protocol {listener.security_protocol} in listener "
                f"{listener.name}"
            )
    return None


def registration_problem(
    image: MetadataImage,
    request: BrokerRegistrationRequest,
    ctx: ControllerContext,
    sessions: BrokerSessions,
) -> tuple[Errors, str] | None:
    """The error and its reason when ``request`` may not register (None: it may)."""
    config = ctx.config
    if request.cluster_id != config.cluster_id:
        return Errors.INCONSISTENT_CLUSTER_ID, (
            f"expected cluster id {config.cluster_id}, but got cluster id {request.cluster_id}"
        )
    existing = image.broker(request.broker_id)
    if (
        existing is not None
        and existing.incarnation_id != request.incarnation_id
        and not existing.fenced
        and sessions.is_alive(request.broker_id, ctx.now_ms, config.broker_session_timeout_ms)
    ):
        return Errors.DUPLICATE_BROKER_REGISTRATION, (
            f"another broker is registered with id {request.broker_id} and its session is alive"
        )
    if request.is_migrating_zk_broker:
        return Errors.BROKER_ID_NOT_REGISTERED, "the controller does not register ZooKeeper brokers"
    problem = _feature_problem(image.features, _offered_features(request))
    if problem is not None:
        return Errors.UNSUPPORTED_VERSION, problem
    problem = _listener_problem(request)
    if problem is not None:
        return Errors.INVALID_REGISTRATION, problem
    return None


def register_broker_record(
    request: BrokerRegistrationRequest, epoch: int
) -> RegisterBrokerRecord:
    """A new incarnation's registration: fenced until it catches up, not shutting down."""
    return RegisterBrokerRecord(
        broker_id=request.broker_id,
        incarnation_id=request.incarnation_id,
        broker_epoch=epoch,
        end_points=tuple(
            RegisterBrokerRecordBrokerEndpoint(
                name=e.name, host=e.host, port=e.port, security_protocol=e.security_protocol
            )
            for e in request.listeners
        ),
        features=tuple(
            RegisterBrokerRecordBrokerFeature(
                name=f.name,
                min_supported_version=f.min_supported_version,
                max_supported_version=f.max_supported_version,
            )
            for f in _offered_features(request)
        ),
        rack=request.rack,
        fenced=True,
        in_controlled_shutdown=False,
    )
