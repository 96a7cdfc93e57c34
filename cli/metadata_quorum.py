"""``kraft metadata-quorum``: Kafka's ``kafka-metadata-quorum.sh`` for a pykraft cluster.

``describe --status`` and ``describe --replication [--human-readable]``
with Kafka's options, error texts (stderr, exit status 1) and output. The
connection goes to ``--bootstrap-controller`` addresses (controller
listeners) or ``--bootstrap-server`` addresses (broker listeners, which
forward DescribeQuorum to the quorum leader; a controller listener
answers such a call with Kafka's endpoint-type error).
``--command-config`` reads the admin client's ``default.api.timeout.ms``,
``request.timeout.ms`` and ``retry.backoff.ms``. Not offered yet:
``add-controller`` and ``remove-controller`` (static quorums only).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Final

import attrs
import click
import trio

from cli.console import fail
from cli.quorum_render import RelativeTimeError, render_replication, render_status
from quorum.config import ConfigError, InvalidValue, read_properties_file
from quorum.config.values import HostPort, parse_host_ports
from quorum.describe import DescribeQuorumError
from quorum.quorum_admin import (
    AdminSettings,
    EndpointType,
    QuorumAdminError,
    QuorumDescription,
    describe_metadata_quorum,
)

__all__ = ["metadata_quorum"]

_PROG: Final = "kraft metadata-quorum"
# admin client setting -> AdminSettings field
_ADMIN_SETTINGS: Final = {
    "default.api.timeout.ms": "api_timeout_ms",
    "request.timeout.ms": "request_timeout_ms",
    "retry.backoff.ms": "retry_backoff_ms",
}


@attrs.frozen
class _Target:
    bootstrap: tuple[HostPort, ...]
    endpoint_type: EndpointType
    settings: AdminSettings


def _bootstrap(text: str, key: str) -> tuple[HostPort, ...]:
    # as Kafka's client: blank entries are skipped, any other bad one is fatal
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


def _admin_settings(path: str | None) -> AdminSettings:
    if path is None:
        return AdminSettings()
    if not Path(path).exists():
        fail(f"Properties file {path} does not exists!")  # sic, Kafka's text
    try:
        properties = read_properties_file(path)
    except (ConfigError, OSError) as exc:
        fail(str(exc))
    values: dict[str, int] = {}
    for key, name in _ADMIN_SETTINGS.items():
        if key not in properties:
            continue
        try:
            values[name] = int(properties[key])
        except ValueError:
            fail(f"Invalid value {properties[key]} for configuration {key}: Not a number of type INT")
    return AdminSettings(**values)


@click.group(name="metadata-quorum")
@click.option("--bootstrap-server", metavar="HOST:PORT[,...]",
              help="A comma-separated list of host:port pairs to use for establishing the "
              "connection to the Kafka cluster.")
@click.option("--bootstrap-controller", metavar="HOST:PORT[,...]",
              help="A comma-separated list of host:port pairs to use for establishing the "
              "connection to the Kafka controllers.")
@click.option("--command-config", metavar="FILE",
              help="Property file containing configs to be passed to Admin Client.")
@click.pass_context
def metadata_quorum(
    ctx: click.Context,
    bootstrap_server: str | None,
    bootstrap_controller: str | None,
    command_config: str | None,
) -> None:
    """Describe the KRaft metadata quorum (kafka-metadata-quorum)."""
    if bootstrap_server is not None and bootstrap_controller is not None:
        fail(f"{_PROG}: error: argument --bootstrap-controller: not allowed with argument "
             "--bootstrap-server")
    if bootstrap_server is None and bootstrap_controller is None:
        fail(f"{_PROG}: error: one of the arguments --bootstrap-server --bootstrap-controller "
             "is required")
    if bootstrap_controller is not None:
        target = _Target(_bootstrap(bootstrap_controller, "bootstrap.controllers"),
                         EndpointType.CONTROLLER, _admin_settings(command_config))
    else:
        assert bootstrap_server is not None
        target = _Target(_bootstrap(bootstrap_server, "bootstrap.servers"),
                         EndpointType.BROKER, _admin_settings(command_config))
    ctx.obj = target


def _describe(target: _Target, *, with_cluster_id: bool) -> QuorumDescription:
    try:
        return trio.run(
            lambda: describe_metadata_quorum(
                target.bootstrap,
                endpoint_type=target.endpoint_type,
                with_cluster_id=with_cluster_id,
                settings=target.settings,
            )
        )
    except QuorumAdminError as exc:
        fail(str(exc))


@metadata_quorum.command(name="describe")
@click.option("--status", is_flag=True,
              help="A short summary of the quorum status and the other provides detailed "
              "information about the status of replication.")
@click.option("--replication", is_flag=True,
              help="Detailed information about the status of replication")
@click.option("--human-readable", is_flag=True, help="Human-readable output")
@click.pass_obj
def describe(target: _Target, status: bool, replication: bool, human_readable: bool) -> None:
    """Describe the metadata quorum info."""
    if status and replication:
        fail("Only one of --status or --replication should be specified with describe sub-command")
    if not status and not replication:
        fail("One of --status or --replication must be specified with describe sub-command")
    if status and human_readable:
        fail("The option --human-readable is only supported along with --replication")
    description = _describe(target, with_cluster_id=status)
    try:
        if status:
            assert description.cluster_id is not None
            text = render_status(description.cluster_id, description.info)
        else:
            now_ms = time.time_ns() // 1_000_000
            text = render_replication(description.info, human_readable=human_readable,
                                      now_ms=now_ms)
    except (DescribeQuorumError, RelativeTimeError) as exc:
        fail(str(exc))
    click.echo(text, nl=False)
