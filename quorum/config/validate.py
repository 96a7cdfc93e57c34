"""Cross-field checks of a ``ServerConfig`` (Kafka's ``KafkaConfig.validateValues``).

Each check returns problems naming the key a user should change; the texts
follow Kafka's so that its documentation and answers apply. pykraft adds
one rule of its own: every listener must use PLAINTEXT.
"""

from __future__ import annotations

from collections.abc import Callable

from quorum.config.errors import ConfigProblem
from quorum.config.server import ServerConfig
from quorum.config.values import NON_ROUTABLE_HOST, ProcessRole, SecurityProtocol

__all__ = ["check_server_config"]

_ROLES = "process.roles"
_VOTERS = "controller.quorum.voters"
_BOOTSTRAP = "controller.quorum.bootstrap.servers"
_NAMES = "controller.listener.names"
_LISTENERS = "listeners"
_ADVERTISED = "advertised.listeners"
_PROTOCOLS = "listener.security.protocol.map"
_INTER_BROKER = "inter.broker.listener.name"

Problems = list[ConfigProblem]


def _voter_set(config: ServerConfig) -> str:
    return f"{_VOTERS}={sorted(config.voter_ids)}"


def _check_log_dirs(config: ServerConfig) -> Problems:
    problems = []
    if not config.log_dirs:
        problems.append(ConfigProblem(
            "At least one log directory must be defined via log.dirs or log.dir.", key="log.dirs"
        ))
    if config.log_retention_ms == 0:
        key = (
            "log.retention.ms" if config.log_retention_ms_config is not None
            else "log.retention.minutes" if config.log_retention_minutes is not None
            else "log.retention.hours"
        )
        problems.append(ConfigProblem(
            "log.retention.ms must be unlimited (-1) or, greater than or equal to 1", key=key
        ))
    return problems


def _check_quorum(config: ServerConfig) -> Problems:
    if config.quorum_voters or config.quorum_bootstrap_servers:
        return []
    return [ConfigProblem(
        f"If using {_ROLES}, either {_BOOTSTRAP} must contain the set of bootstrap controllers "
        f"or {_VOTERS} must contain a parseable set of controllers.",
        key=_VOTERS,
    )]


def _check_protocols(config: ServerConfig) -> Problems:
    protocols = config.security_protocol_map
    problems = []
    named = [(_LISTENERS, e.listener_name) for e in config.listeners]
    named += [(_ADVERTISED, e.listener_name) for e in config.advertised_listeners_config or ()]
    named += [(_NAMES, name) for name in config.controller_listener_names]
    for key, name in dict.fromkeys(named):
        protocol = protocols.get(name)
        if protocol is None:
            problems.append(ConfigProblem(
                f"No security protocol defined for listener {name} "
                f"(add {name}:PLAINTEXT to {_PROTOCOLS}).", key=key
            ))
        elif protocol is not SecurityProtocol.PLAINTEXT:
            problems.append(ConfigProblem(
                f"Listener {name} uses security protocol {protocol.value}; "
                "pykraft supports only PLAINTEXT listeners.", key=key
            ))
    return problems


def _check_addresses(config: ServerConfig) -> Problems:
    problems = []
    ports = [e.port for e in config.listeners if e.port != 0]
    if len(set(ports)) != len(ports):
        listeners = ",".join(str(e) for e in config.listeners)
        problems.append(ConfigProblem(
            f"Each listener must have a different port, listeners: {listeners}", key=_LISTENERS
        ))
    advertised = config.advertised_broker_listeners + config.advertised_controller_listeners
    if any(e.host == NON_ROUTABLE_HOST for e in advertised):
        key = _ADVERTISED if config.advertised_listeners_config is not None else _LISTENERS
        problems.append(ConfigProblem(
            f"{_ADVERTISED} cannot use the nonroutable meta-address {NON_ROUTABLE_HOST}. "
            "Use a routable IP address.", key=key
        ))
    return problems


def _check_controller_listeners(config: ServerConfig) -> Problems:
    """Rules shared by controller-only and combined nodes."""
    problems = []
    if config.quorum_voters and config.node_id not in config.voter_ids:
        problems.append(ConfigProblem(
            f"If {_ROLES} contains the 'controller' role, the node id {config.node_id} "
            f"must be included in the set of voters {_voter_set(config)}", key=_VOTERS
        ))
    if not config.advertised_controller_listeners:
        problems.append(ConfigProblem(
            f"{_NAMES} must contain at least one value appearing in the '{_LISTENERS}' "
            "configuration when running the KRaft controller role", key=_NAMES
        ))
    bound = {e.listener_name for e in config.listeners}
    missing = [n for n in config.controller_listener_names if n not in bound]
    if config.advertised_controller_listeners and missing:
        problems.append(ConfigProblem(
            f"{_NAMES} must only contain values appearing in the '{_LISTENERS}' "
            f"configuration when running the KRaft controller role (missing: "
            f"{', '.join(missing)})", key=_NAMES
        ))
    return problems


def _check_controller_only(config: ServerConfig) -> Problems:
    problems = []
    if len(config.controller_listeners) != len(config.listeners):
        problems.append(ConfigProblem(
            f"The {_LISTENERS} config must only contain KRaft controller listeners from "
            f"{_NAMES} when {_ROLES}=controller", key=_LISTENERS
        ))
    return problems + _check_controller_listeners(config)


def _check_broker_only(config: ServerConfig) -> Problems:
    problems = []
    if config.node_id in config.voter_ids:
        problems.append(ConfigProblem(
            f"If {_ROLES} contains just the 'broker' role, the node id {config.node_id} "
            f"must not be included in the set of voters {_voter_set(config)}", key=_VOTERS
        ))
    if not config.controller_listener_names:
        problems.append(ConfigProblem(
            f"{_NAMES} must contain at least one value when running KRaft with just the "
            "broker role", key=_NAMES
        ))
    if config.controller_listeners:
        problems.append(ConfigProblem(
            f"{_NAMES} must not contain a value appearing in the '{_LISTENERS}' "
            "configuration when running KRaft with just the broker role", key=_NAMES
        ))
    return problems


def _check_broker_listeners(config: ServerConfig) -> Problems:
    """Rules for every node with the broker role."""
    advertised = [e.listener_name for e in config.advertised_broker_listeners]
    if not advertised:
        return [ConfigProblem(
            "There must be at least one broker advertised listener. "
            f"Perhaps all listeners appear in {_NAMES}?", key=_LISTENERS
        )]
    problems = []
    if config.inter_broker_listener_name not in advertised:
        problems.append(ConfigProblem(
            f"{_INTER_BROKER} must be a listener name defined in {_ADVERTISED}. The valid "
            f"options based on currently configured listeners are {','.join(advertised)}",
            key=_INTER_BROKER,
        ))
    bound = [e.listener_name for e in config.listeners]
    if not set(advertised) <= set(bound):
        problems.append(ConfigProblem(
            f"{_ADVERTISED} listener names must be equal to or a subset of the ones defined in "
            f"{_LISTENERS}. Found {','.join(advertised)}. The valid options based on the "
            f"current configuration are {','.join(bound)}", key=_ADVERTISED
        ))
    return problems


_BROKER = frozenset({ProcessRole.BROKER})
_CONTROLLER = frozenset({ProcessRole.CONTROLLER})
_COMBINED = _BROKER | _CONTROLLER

_ROLE_CHECKS: dict[frozenset[ProcessRole], tuple[Callable[[ServerConfig], Problems], ...]] = {
    _BROKER: (_check_broker_only, _check_broker_listeners),
    _CONTROLLER: (_check_controller_only,),
    _COMBINED: (_check_controller_listeners, _check_broker_listeners),
}


def check_server_config(config: ServerConfig) -> list[ConfigProblem]:
    """Every cross-field problem of ``config`` (empty when it is usable)."""
    checks: tuple[Callable[[ServerConfig], Problems], ...] = (
        _check_log_dirs, _check_quorum, _check_protocols, _check_addresses,
        *_ROLE_CHECKS[config.process_roles],
    )
    return [problem for check in checks for problem in check(config)]
