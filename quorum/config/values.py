"""The structured values of server settings and their parsers (text -> value).

Parsers raise ``InvalidValue`` with the reason; the schema adds the key.
Texts follow Kafka's (``QuorumConfig``, ``SocketServerConfigs``) where Kafka
has one.
"""

from __future__ import annotations

import enum
import re

from attrs import frozen

from quorum.config.schema import INT, InvalidValue, csv_entries

__all__ = [
    "NON_ROUTABLE_HOST",
    "Endpoint",
    "HostPort",
    "ProcessRole",
    "SecurityProtocol",
    "Voter",
    "parse_host_port",
    "parse_host_ports",
    "parse_listener_names",
    "parse_listeners",
    "parse_paths",
    "parse_process_roles",
    "parse_security_protocol_map",
    "parse_voters",
]

NON_ROUTABLE_HOST = "0.0.0.0"
_HOST = r"\[(?P<ipv6>[0-9a-fA-F:.%]+)\]|(?P<host>[0-9a-zA-Z\-%._]+)"
_HOST_PORT = re.compile(rf"(?:{_HOST}):(?P<port>[0-9]+)")
_LISTENER = re.compile(rf"(?P<name>[^:/\s]+)://(?:{_HOST})?:(?P<port>-?[0-9]+)")
_LISTENER_NAME = re.compile(r"[A-Za-z0-9_.\-]+")
_VOTER_FORM = "Each entry should be in the form `{id}@{host}:{port}`."


class ProcessRole(enum.Enum):
    BROKER = "broker"
    CONTROLLER = "controller"


class SecurityProtocol(enum.Enum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"


@frozen
class HostPort:
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@frozen
class Voter:
    """One entry of ``controller.quorum.voters``: ``id@host:port``."""

    node_id: int
    host: str
    port: int

    @property
    def address(self) -> HostPort:
        return HostPort(self.host, self.port)

    def __str__(self) -> str:
        return f"{self.node_id}@{self.address}"


@frozen
class Endpoint:
    """One ``NAME://host:port`` listener; ``host=None`` binds every interface."""

    listener_name: str
    host: str | None
    port: int

    def __str__(self) -> str:
        host = self.host or ""
        if ":" in host:
            host = f"[{host}]"
        return f"{self.listener_name}://{host}:{self.port}"


def _port(text: str, *, low: int) -> int:
    port = int(text)
    if not low <= port <= 65535:
        raise InvalidValue(f"port {port} is not between {low} and 65535")
    return port


def _host_port(text: str) -> HostPort | None:
    match = _HOST_PORT.fullmatch(text)
    if match is None:
        return None
    return HostPort(match["ipv6"] or match["host"], _port(match["port"], low=1))


def parse_process_roles(text: str) -> frozenset[ProcessRole]:
    names = csv_entries(text)
    valid = [role.value for role in ProcessRole]
    if not names:
        raise InvalidValue("pykraft runs only in KRaft mode: set broker, controller or both")
    if any(name not in valid for name in names):
        raise InvalidValue(f"String must be one of: {', '.join(valid)}")
    if len(set(names)) != len(names):
        raise InvalidValue(f"Duplicate role names found in `process.roles`: {names}")
    return frozenset(ProcessRole(name) for name in names)


def parse_voters(text: str) -> tuple[Voter, ...]:
    voters: list[Voter] = []
    for entry in csv_entries(text):
        id_text, at, address = entry.partition("@")
        if not at or "@" in address:
            raise InvalidValue(f"{entry} is not an id@host:port entry. {_VOTER_FORM}")
        try:
            node_id = INT(id_text)
        except InvalidValue:
            raise InvalidValue(f"Failed to parse voter ID as an integer from {id_text}") from None
        host_port = _host_port(address)
        if node_id < 0 or host_port is None:
            what = "a negative voter ID" if node_id < 0 else "no valid host and port"
            raise InvalidValue(f"entry {entry} has {what}. {_VOTER_FORM}")
        if host_port.host == NON_ROUTABLE_HOST:
            raise InvalidValue(f"Host string ({NON_ROUTABLE_HOST}) is not routeable")
        if any(v.node_id == node_id for v in voters):
            raise InvalidValue(f"voter ID {node_id} appears more than once")
        voters.append(Voter(node_id, host_port.host, host_port.port))
    return tuple(voters)


def parse_host_port(text: str) -> HostPort:
    host_port = _host_port(text.strip())
    if host_port is None:
        raise InvalidValue(f"Failed to parse host and port from {text!r}: use {{host}}:{{port}}")
    return host_port


def parse_host_ports(text: str) -> tuple[HostPort, ...]:
    result = []
    for entry in csv_entries(text):
        host_port = _host_port(entry)
        if host_port is None:
            raise InvalidValue(f"Failed to parse host and port from {entry}: use {{host}}:{{port}}")
        result.append(host_port)
    return tuple(result)


def parse_listener_names(text: str) -> tuple[str, ...]:
    names = []
    for entry in csv_entries(text):
        if not _LISTENER_NAME.fullmatch(entry):
            raise InvalidValue(f"{entry!r} is not a listener name")
        # Kafka compares listener names normalised to upper case
        names.append(entry.upper())
    if len(set(names)) != len(names):
        raise InvalidValue("a listener name appears more than once")
    return tuple(names)


def parse_listeners(text: str) -> tuple[Endpoint, ...]:
    endpoints: list[Endpoint] = []
    for entry in csv_entries(text):
        match = _LISTENER.fullmatch(entry)
        if match is None:
            raise InvalidValue(f"Unable to parse {entry} to a broker endpoint (use NAME://host:port)")
        endpoint = Endpoint(
            listener_name=match["name"].upper(),
            host=match["ipv6"] or match["host"] or None,
            port=_port(match["port"], low=0),
        )
        if any(e.listener_name == endpoint.listener_name for e in endpoints):
            raise InvalidValue(f"Each listener must have a different name, listeners: {text}")
        endpoints.append(endpoint)
    return tuple(endpoints)


def parse_security_protocol_map(text: str) -> tuple[tuple[str, SecurityProtocol], ...]:
    pairs: dict[str, SecurityProtocol] = {}
    valid = ", ".join(p.value for p in SecurityProtocol)
    for entry in csv_entries(text):
        name, colon, protocol = (part.strip() for part in entry.partition(":"))
        if not colon or not _LISTENER_NAME.fullmatch(name):
            raise InvalidValue(f"Map entry '{entry}' is improperly formatted; use NAME:PROTOCOL")
        try:
            pairs[name.upper()] = SecurityProtocol(protocol.upper())
        except ValueError:
            raise InvalidValue(f"Unknown security protocol {protocol}; one of: {valid}") from None
    return tuple(pairs.items())


def parse_paths(text: str) -> tuple[str, ...]:
    # Kafka's Csv.parseCsvList: empty entries are dropped
    return tuple(entry for entry in csv_entries(text) if entry)
