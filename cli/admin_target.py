"""How the admin tools reach a cluster: the client library's ``Admin``, built from options.

Kafka's tools take ``--bootstrap-server`` (brokers) or
``--bootstrap-controller`` (controllers, KIP-919) and a properties file of
admin client settings (``--command-config``; ``--admin.config`` in
``kafka-leader-election``). ``admin_config`` checks them with Kafka's texts
and turns them into the properties an ``Admin`` takes; ``run_admin`` runs
one async body with that ``Admin`` under trio. Bad settings and option
errors end the command through ``cli.console.fail`` (stderr, exit 1).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import trio

from broker.client import Admin
from broker.client.types import TopicPartition as ClientPartition
from cli.console import fail
from quorum.config import ConfigError, InvalidValue, read_properties_file
from quorum.config.values import HostPort, parse_host_ports
from quorum.controller.image import TopicPartition

__all__ = [
    "admin_config",
    "bootstrap_addresses",
    "client_partition",
    "image_partition",
    "read_command_config",
    "run_admin",
]

T = TypeVar("T")


def bootstrap_addresses(text: str, key: str) -> tuple[HostPort, ...]:
    """The addresses of ``text``; as Kafka's client: blank entries skipped, any other bad one
    fatal (``key`` is the setting named in the message)."""
    addresses: list[HostPort] = []
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        try:
            addresses += parse_host_ports(entry)
        except InvalidValue:
            fail(f"Invalid url in {key}: {entry}")
    if not addresses:
        fail(f"No resolvable bootstrap urls given in {key}")
    return tuple(addresses)


def read_command_config(path: str | None) -> dict[str, str]:
    """The admin client properties of ``--command-config`` (none when not given)."""
    if path is None:
        return {}
    if not Path(path).exists():
        fail(f"Properties file {path} does not exists!")  # sic, Kafka's text
    try:
        return dict(read_properties_file(path))
    except (ConfigError, OSError) as exc:
        fail(str(exc))


def admin_config(
    *, server: str | None, controller: str | None, both: str, neither: str,
    command_config: str | None = None,
) -> dict[str, str]:
    """Admin properties for exactly one of ``server`` / ``controller``.

    ``both`` and ``neither`` are the tool's own texts for giving both or none.
    The addresses on the command line win over any in the properties file.
    """
    if server is not None and controller is not None:
        fail(both)
    if server is None and controller is None:
        fail(neither)
    properties = read_command_config(command_config)
    properties.pop("bootstrap.servers", None)
    properties.pop("bootstrap.controllers", None)
    key, text = (
        ("bootstrap.controllers", controller) if controller is not None
        else ("bootstrap.servers", server)
    )
    assert text is not None
    bootstrap_addresses(text, key)  # Kafka's texts for bad entries
    properties[key] = ",".join(e.strip() for e in text.split(",") if e.strip())
    return properties


def run_admin(config: dict[str, str], body: Callable[[Admin], Awaitable[T]]) -> T:
    """``body(admin)`` under trio with an ``Admin`` of ``config``; bad settings fail the command."""
    try:
        admin = Admin(config)
    except ConfigError as exc:
        fail(str(exc))

    async def main() -> T:
        async with admin:
            return await body(admin)

    return trio.run(main)


def client_partition(tp: TopicPartition) -> ClientPartition:
    return ClientPartition(tp.topic, tp.partition)


def image_partition(tp: ClientPartition) -> TopicPartition:
    return TopicPartition(tp.topic, tp.partition)
