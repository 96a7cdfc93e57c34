"""``kraft metadata-quorum``: Kafka's ``kafka-metadata-quorum.sh`` for a pykraft cluster.

``describe --status`` and ``describe --replication [--human-readable]``
with Kafka's options, error texts (stderr, exit status 1) and output. The
connection goes to ``--bootstrap-controller`` addresses (controller
listeners) or ``--bootstrap-server`` addresses (broker listeners, which
forward DescribeQuorum to the quorum leader; a controller listener
answers such a call with Kafka's endpoint-type error).
Through the client library's ``Admin``; ``--command-config`` gives it
settings (``default.api.timeout.ms``, ``request.timeout.ms``,
``retry.backoff.ms``, ...). Not offered yet:
``add-controller`` and ``remove-controller`` (static quorums only).
"""

from __future__ import annotations

import time
from typing import Final

import click

from broker.client import Admin, KafkaError
from cli.admin_target import admin_config, run_admin
from cli.console import fail
from cli.quorum_render import RelativeTimeError, render_replication, render_status
from quorum.describe import DescribeQuorumError, QuorumInfo

__all__ = ["metadata_quorum"]

_PROG: Final = "kraft metadata-quorum"


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
    ctx.obj = admin_config(
        server=bootstrap_server, controller=bootstrap_controller, command_config=command_config,
        both=f"{_PROG}: error: argument --bootstrap-controller: not allowed with argument "
             "--bootstrap-server",
        neither=f"{_PROG}: error: one of the arguments --bootstrap-server "
                "--bootstrap-controller is required",
    )


def _describe(config: dict[str, str], *, with_cluster_id: bool) -> tuple[QuorumInfo, str | None]:
    async def body(admin: Admin) -> tuple[QuorumInfo, str | None]:
        info = await admin.describe_metadata_quorum()
        cluster_id = (await admin.describe_cluster()).cluster_id if with_cluster_id else None
        return info, cluster_id

    try:
        return run_admin(config, body)
    except KafkaError as exc:
        fail(str(exc))


@metadata_quorum.command(name="describe")
@click.option("--status", is_flag=True,
              help="A short summary of the quorum status and the other provides detailed "
              "information about the status of replication.")
@click.option("--replication", is_flag=True,
              help="Detailed information about the status of replication")
@click.option("--human-readable", is_flag=True, help="Human-readable output")
@click.pass_obj
def describe(config: dict[str, str], status: bool, replication: bool,
             human_readable: bool) -> None:
    """Describe the metadata quorum info."""
    if status and replication:
        fail("Only one of --status or --replication should be specified with describe sub-command")
    if not status and not replication:
        fail("One of --status or --replication must be specified with describe sub-command")
    if status and human_readable:
        fail("The option --human-readable is only supported along with --replication")
    info, cluster_id = _describe(config, with_cluster_id=status)
    try:
        if status:
            text = render_status(cluster_id or "", info)
        else:
            now_ms = time.time_ns() // 1_000_000
            text = render_replication(info, human_readable=human_readable, now_ms=now_ms)
    except (DescribeQuorumError, RelativeTimeError) as exc:
        fail(str(exc))
    click.echo(text, nl=False)
