"""Kafka-style ``.properties`` configuration: parsing, the typed server config,
its validation, and the shared test profile."""

from quorum.config.errors import ConfigError, ConfigProblem
from quorum.config.load import load_server_config, server_config_from_properties
from quorum.config.profiles import TEST_PROFILE_OVERRIDES
from quorum.config.properties import (
    PropertyEntry,
    format_properties,
    parse_properties,
    parse_property_entries,
    read_properties_file,
    read_property_entries,
)
from quorum.config.schema import (
    BOOLEAN,
    INT,
    LONG,
    REQUIRED,
    STRING,
    InvalidValue,
    Setting,
    at_least,
    between,
    setting,
    settings_of,
    structure_settings,
)
from quorum.config.server import ServerConfig
from quorum.config.values import Endpoint, HostPort, ProcessRole, SecurityProtocol, Voter

__all__ = [
    "BOOLEAN",
    "INT",
    "LONG",
    "REQUIRED",
    "STRING",
    "TEST_PROFILE_OVERRIDES",
    "ConfigError",
    "ConfigProblem",
    "Endpoint",
    "HostPort",
    "InvalidValue",
    "ProcessRole",
    "PropertyEntry",
    "SecurityProtocol",
    "ServerConfig",
    "Setting",
    "Voter",
    "at_least",
    "between",
    "format_properties",
    "load_server_config",
    "parse_properties",
    "parse_property_entries",
    "read_properties_file",
    "read_property_entries",
    "server_config_from_properties",
    "setting",
    "settings_of",
    "structure_settings",
]
