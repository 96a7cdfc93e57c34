"""``kraft storage``: Kafka's ``kafka-storage.sh`` for pykraft nodes.

``random-uuid``, ``format`` and ``info`` with kafka-storage's options and
output. Not offered: ``--standalone``, ``--initial-controllers`` and
``--no-initial-controllers`` (pykraft formats static quorums only so far),
``--release-version``, ``--feature`` and ``--add-scram``.
"""

from __future__ import annotations

import click
from rich.text import Text

from cli.console import fail, show
from quorum.config import ConfigError, ServerConfig, load_server_config
from quorum.storage import (
    FormatResult,
    StorageError,
    StorageInfo,
    format_storage,
    storage_info,
)
from quorum.wire.uuids import random_uuid, uuid_to_str

__all__ = ["render_format_result", "render_storage_info", "storage"]

_CONFIG_HELP = "The pykraft (Kafka-style) server .properties file to use."


def render_format_result(result: FormatResult) -> Text:
    lines = [f"I/O error trying to read log directory {path}. Ignoring..." for path in result.unreadable]
    if not result.formatted:
        lines.append("All of the log directories are already formatted.")
    lines += [
        f"Formatting {d.kind.value} {d.path} with metadata.version {result.metadata_version}."
        for d in result.formatted
    ]
    return Text("\n".join(lines))


def _section(singular: str, plural: str, items: tuple[str, ...]) -> list[str]:
    heading = singular if len(items) == 1 else plural
    return [f"{heading}:", *(f"  {item}" for item in items), ""]


def render_storage_info(info: StorageInfo) -> Text:
    """The text of ``kafka-storage info``, line for line."""
    if not info.directories:
        return Text("No directories specified.")
    lines: list[str] = []
    if info.found_directories:
        lines += _section(
            "Found log directory", "Found log directories", info.found_directories
        )
    if info.metadata is not None:
        pairs = sorted(info.metadata.to_properties().items())
        lines += ["Found metadata: {" + ", ".join(f"{k}={v}" for k, v in pairs) + "}", ""]
    if info.problems:
        lines += _section("Found problem", "Found problems", info.problems)
    return Text("\n".join(lines))


def _load(config_path: str) -> ServerConfig:
    try:
        return load_server_config(config_path)
    except ConfigError as exc:
        fail(str(exc))


@click.group(name="storage")
def storage() -> None:
    """Format and inspect the log directories of a node (kafka-storage)."""


@storage.command(name="random-uuid")
def random_uuid_command() -> None:
    """Print a random UUID, e.g. for a new cluster id."""
    show(Text(uuid_to_str(random_uuid())))


@storage.command(name="format")
@click.option("-c", "--config", "config_path", required=True, help=_CONFIG_HELP)
@click.option("-t", "--cluster-id", required=True, help="The cluster ID to use.")
@click.option(
    "-g",
    "--ignore-formatted",
    is_flag=True,
    help="Skip directories that are already formatted instead of failing.",
)
def format_command(config_path: str, cluster_id: str, ignore_formatted: bool) -> None:
    """Format the log directories of this node."""
    config = _load(config_path)
    try:
        result = format_storage(config, cluster_id, ignore_formatted)
    except StorageError as exc:
        fail(str(exc))
    show(render_format_result(result))


@storage.command(name="info")
@click.option("-c", "--config", "config_path", required=True, help=_CONFIG_HELP)
def info_command(config_path: str) -> None:
    """Get information about the log directories of this node."""
    info = storage_info(_load(config_path))
    show(render_storage_info(info))
    if not info.ok:
        raise click.exceptions.Exit(1)
