"""Reading a server ``.properties`` file into a checked ``ServerConfig``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from quorum.config.errors import ConfigError
from quorum.config.properties import PropertyEntry, read_property_entries
from quorum.config.schema import structure_settings, with_lines
from quorum.config.server import ServerConfig
from quorum.config.validate import check_server_config

__all__ = ["load_server_config", "server_config_from_properties"]


def server_config_from_properties(
    properties: Mapping[str, str],
    *,
    source: str | None = None,
    lines: Mapping[str, int] | None = None,
) -> ServerConfig:
    """Structure and cross-check raw settings; raises one ConfigError listing
    every unknown key, bad value, missing key or conflict."""
    config = structure_settings(ServerConfig, properties, source=source, lines=lines)
    problems = check_server_config(config)
    if problems:
        raise ConfigError(with_lines(problems, lines), source=source)
    return config


def load_server_config(
    path: str | Path, overrides: Mapping[str, str] | None = None
) -> ServerConfig:
    """Load a server config file; ``overrides`` (e.g. ``TEST_PROFILE_OVERRIDES``)
    replace or add settings on top of the file."""
    entries: list[PropertyEntry] = read_property_entries(path)
    properties = {e.key: e.value for e in entries}
    lines = {e.key: e.line for e in entries}
    for key, value in (overrides or {}).items():
        properties[key] = value
        lines.pop(key, None)
    return server_config_from_properties(properties, source=str(path), lines=lines)
